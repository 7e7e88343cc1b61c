"""One learner per trained module, behind the single `Learner` interface the Algorithm uses.

    MultiAgentEpisodes (from the MultiAgentEnvRunners)
        -> per module: the agents' SingleAgentEpisode chunks whose `module_id` it is
           (`episodes_by_module`)
        -> each trained module's own learner (PPO's, DQN's: its own optimizer, schedules, RNG)
        -> {module_id: that learner's results}

Weights travel as `{module_id: weights}` (`module.get_weights()`), which the
MultiAgentEnvRunners take as they come; the state of a checkpoint is `{module_id: learner
state}`. Modules that are not trained (not in `policies_to_train`, or a user's heuristic
RLModule) have no learner: the EnvRunners keep theirs as built.
"""

from __future__ import annotations

from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import numpy as np

from trainer.algorithms.multi_agent_setup import MultiAgentSetup, is_torch_module_class
from trainer.core.blas import free_cores, one_thread_each, user_sized_pools
from trainer.core.learner import Learner, UpdateResults
from trainer.core.learner_components import Names, own_learner_state, rllib_learner_state
from trainer.env.episode import SingleAgentEpisode
from trainer.errors import ConfigError
from trainer.util.seeding import module_seed
from trainer.util.state_checks import StateError, require_map


def episodes_by_module(episodes: list[Any]) -> dict[Any, list[SingleAgentEpisode]]:
    """The agents' episode chunks of `episodes` (MultiAgentEpisodes) by module id, in order;
    chunks without a step are left out."""
    by_module: dict[Any, list[SingleAgentEpisode]] = defaultdict(list)
    for episode in episodes:
        for agent_episode in episode.agent_episodes.values():
            if len(agent_episode) > 0:
                by_module[agent_episode.module_id].append(agent_episode)
    return dict(by_module)


class ModulesView:
    """The trained modules as one: `get_weights()` / `set_weights()` by module id."""

    def __init__(self, learners: dict[Any, Learner]) -> None:
        self._learners = learners

    def __getitem__(self, module_id: Any) -> Any:
        return self._learners[module_id].module

    def __contains__(self, module_id: Any) -> bool:
        return module_id in self._learners

    def keys(self) -> Any:
        return self._learners.keys()

    def items(self) -> list[tuple[Any, Any]]:
        return [(module_id, learner.module) for module_id, learner in self._learners.items()]

    def get_weights(self) -> dict[Any, dict[str, np.ndarray]]:
        return {module_id: learner.get_weights() for module_id, learner in self._learners.items()}

    def set_weights(self, weights: dict[Any, dict[str, np.ndarray]]) -> None:
        """Sets each trained module's weights. A module without weights (an EnvRunner-only
        module, RLlib's RandomRLModule: its state is empty) is passed over, as RLlib's learners
        take a whole MultiRLModule's state; any other id no learner trains is a KeyError."""
        unknown = [
            module_id
            for module_id, module_weights in weights.items()
            if module_id not in self._learners and module_weights
        ]
        if unknown:
            raise KeyError(
                f"set_weights(): no trained module {unknown[0]!r} (trained modules: "
                f"{sorted(map(str, self._learners))})"
            )
        for module_id, module_weights in weights.items():
            if module_id in self._learners:
                self._learners[module_id].set_weights(module_weights)


class ModuleBuilder:
    """Builds one module of a multi-agent algorithm from its spec, seeded by its id: the
    `build()` a `make_learner(config, build)` calls (`build.module_id` and `build.spec` say
    which module). A default numpy module builds itself (`from_rl_module_spec`); a
    `TorchRLModule` is built full (not inference-only) and returned in a `TorchModuleView`,
    which the torch learners train and whose weights travel as arrays."""

    def __init__(self, module_id: Any, spec: Any, seed: int | None) -> None:
        self.module_id = module_id
        self.spec = spec
        self.seed = seed

    @staticmethod
    def can_build(spec: Any) -> bool:
        """Whether a learner can train the module of `spec`: a default numpy module or a
        `TorchRLModule` (a user's numpy RLModule has no weights a learner updates)."""
        return hasattr(spec.module_class, "from_rl_module_spec") or is_torch_module_class(
            spec.module_class
        )

    def __call__(self) -> Any:
        if is_torch_module_class(self.spec.module_class):
            from trainer.torch_rl.runner_view import build_torch_module_from_spec

            return build_torch_module_from_spec(self.spec, seed=self.seed)
        return self.spec.module_class.from_rl_module_spec(self.spec, seed=self.seed)


class MultiAgentLearner(Learner):
    """The learners of a multi-agent Algorithm (see the module docstring)."""

    #: The algorithm's whole config (`get_config_for_module` gives each module's): as
    #: RLlib's Learner holds it, an unfrozen copy of its own, so that a callback may change
    #: it through `learner_group.foreach_learner` (RLlib's league-based self-play callback
    #: sets `learner.config.multi_agent(policies_to_train=...)`).
    config: Any

    def __init__(
        self,
        config: Any,
        learners: dict[Any, Learner],
        trained: list[Any] | None = None,
        make_learner: Any = None,
    ) -> None:
        self.config = config.copy(copy_frozen=False)
        if trained is not None:  # RLlib's should_module_be_updated, as a list
            self.config.multi_agent(policies_to_train=list(trained))
        #: A learner per module with weights; only those `trained` names update (the others'
        #: weights still reach every EnvRunner, so all act alike).
        self.learners = dict(learners)
        self.module = ModulesView(self.learners)
        #: `make_learner(config, build)` of `build_multi_agent_learner`: what `add_module`
        #: makes a new module's learner with.
        self._make_learner = make_learner

    @property
    def trained(self) -> list[Any]:
        """The modules this learner updates: those of its config's `policies_to_train`
        (RLlib's `should_module_be_updated`, read at each update), in their learners'
        order."""
        is_trained = MultiAgentSetup(self.config).is_policy_to_train
        return [module_id for module_id in self.learners if is_trained(module_id)]

    # -- modules added and removed at run time (Algorithm.add_module / remove_module) --------
    def add_module(self, module_id: Any, spec: Any) -> bool:
        """Adds a learner for module `module_id`, built from `spec` (a complete RLModuleSpec,
        as `config.get_multi_rl_module_spec()` gives it) with this learner's config (which
        already holds the module). Returns False for a module without weights (a user's
        RLModule), which gets no learner."""
        if module_id in self.learners:
            raise ValueError(f"add_module({module_id!r}): the learners hold that module already")
        if not ModuleBuilder.can_build(spec):
            return False
        if self._make_learner is None:
            raise ConfigError(
                f"add_module({module_id!r}): this algorithm's learners cannot add modules"
            )
        self.learners[module_id] = self._make_learner(
            self.config.get_config_for_module(module_id),
            ModuleBuilder(module_id, spec, module_seed(self.config.seed, module_id)),
        )
        return True

    def remove_module(self, module_id: Any) -> None:
        """Drops module `module_id`'s learner (its optimizer state goes with it)."""
        self.learners.pop(module_id, None)

    def update(  # type: ignore[override]
        self, data: Any, /, *, num_env_steps_sampled_lifetime: int
    ) -> dict[Any, UpdateResults]:
        """Each trained module's update on its agents' chunks of `data` (MultiAgentEpisodes);
        a module without chunks in this batch is not updated."""
        by_module = episodes_by_module(data)
        module_ids = [module_id for module_id in self.trained if by_module.get(module_id)]

        def update(module_id: Any) -> UpdateResults:
            return self.learners[module_id].update(
                by_module[module_id],
                num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
            )

        threads = self._side_by_side(module_ids)
        if threads < 2:
            return {module_id: update(module_id) for module_id in module_ids}
        with (
            one_thread_each(),
            ThreadPoolExecutor(threads, thread_name_prefix="module-update") as pool,
        ):
            futures = {module_id: pool.submit(update, module_id) for module_id in module_ids}
            return {module_id: future.result() for module_id, future in futures.items()}

    def _side_by_side(self, module_ids: list[Any]) -> int:
        """How many modules' updates run side by side, each on a thread of its own with one
        BLAS thread (0: one after the other): two or more modules to update, each learner's
        update its own numpy work (`Learner._updates_independently`: its module, optimizer,
        RNG and statistics; the numpy products and array operations release the GIL), a core
        for each of two at least, and BLAS pools this process sizes. The results are the same
        as one after the other on one BLAS thread each: nothing is shared."""
        if len(module_ids) < 2 or user_sized_pools():
            return 0
        threads = min(len(module_ids), free_cores())
        if threads < 2 or not all(
            self.learners[module_id]._updates_independently() for module_id in module_ids
        ):
            return 0
        return threads

    def update_modules(
        self,
        chunks_by_module: dict[Any, list[SingleAgentEpisode]],
        /,
        *,
        num_env_steps_sampled_lifetime: int,
        **per_module: dict[Any, Any],
    ) -> dict[Any, UpdateResults]:
        """Each module's update on its own chunks, in the order given (data-parallel
        learners: `trainer.algorithms.data_parallel`); each keyword of `per_module` is
        `{module_id: value}`, its value going to that module's learner's update."""
        return {
            module_id: self.learners[module_id].update(
                chunks,
                num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
                **{name: values[module_id] for name, values in per_module.items()},
            )
            for module_id, chunks in chunks_by_module.items()
        }

    def update_module(self, module_id: Any, /, *args: Any, **kwargs: Any) -> UpdateResults:
        """One module's learner's `update(*args, **kwargs)` (data-parallel learners reach a
        module's learner through this)."""
        return self.learners[module_id].update(*args, **kwargs)

    def advance_module_clock(self, module_id: Any, num_env_steps_new: int, /) -> dict:
        """One module's learner's `advance_clock(num_env_steps_new)` (APPO's target clock of a
        module without steps in a batch; data-parallel learners reach it through this)."""
        return cast(Any, self.learners[module_id]).advance_clock(num_env_steps_new)

    def get_state(
        self, components: Names = None, *, not_components: Names = None, **kwargs: Any
    ) -> dict:
        """Each module's learner's state by module id (RLlib's layout with `components=` /
        `not_components=`: `trainer.core.learner_components`)."""
        own = {str(module_id): learner.get_state() for module_id, learner in self.learners.items()}
        if components is None and not_components is None:
            return own
        return rllib_learner_state(self, own, components, not_components)

    def check_state(self, state: dict, where: str = "learner") -> None:
        names = [str(module_id) for module_id in self.learners]
        require_map(state, where, names)
        extra = sorted(set(state) - set(names))
        if extra:
            raise StateError(where, f"has modules this algorithm does not train: {extra[:4]}")
        for module_id, learner in self.learners.items():
            learner.check_state(state[str(module_id)], f"{where}[{str(module_id)!r}]")

    def set_state(self, state: dict) -> None:
        state = own_learner_state(self, state, lambda: MultiAgentLearner.get_state(self))
        for module_id, learner in self.learners.items():
            learner.set_state(state[str(module_id)])


def build_multi_agent_learner(
    config: Any,
    spaces: dict[Any, tuple[Any, Any]],
    make_learner: Any,
) -> MultiAgentLearner:
    """A learner per module of `config`'s policies that has weights (the algorithm's default
    numpy modules and TorchRLModules; a user's numpy RLModule acts as built and trains
    nothing).
    `spaces` are the modules' spaces as the EnvRunners built them; `make_learner(config,
    build)` makes one module's learner from its config (`get_config_for_module`) and `build()`
    (a `ModuleBuilder`), which builds the module from its spec, seeded by its id (DQN builds
    its target network with it too)."""
    spec = config.get_multi_rl_module_spec(spaces=spaces)
    _, is_trained = config.get_multi_agent_setup(spaces=spaces)
    learners: dict[Any, Learner] = {}
    for module_id, module_spec in spec.rl_module_specs.items():
        if not ModuleBuilder.can_build(module_spec):
            if is_trained(module_id):
                raise ConfigError(
                    f"module {module_id!r} is a {module_spec.module_class.__qualname__}: the "
                    "learners here train the algorithm's default numpy modules and "
                    "TorchRLModules; leave it out of multi_agent(policies_to_train=...) (it "
                    "then acts as it is)"
                )
            continue
        learners[module_id] = make_learner(
            config.get_config_for_module(module_id),
            ModuleBuilder(module_id, module_spec, module_seed(config.seed, module_id)),
        )
    return MultiAgentLearner(config, learners, make_learner=make_learner)
