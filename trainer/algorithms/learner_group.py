"""RLlib's learners on their own: `AlgorithmConfig.build_learner(env=..., spaces=...)`,
`AlgorithmConfig.build_learner_group(...)` and the `LearnerGroup` over the one learner (a
standalone one, or an Algorithm's: `algo.learner_group`).

    config.build_learner(env=gym.make("CartPole-v1"))
      -> a copy of the config (RLlib's learner works on its own)
      -> the spaces: `spaces` ({module_id: (observation space, action space)}), else the env's,
         else the config's observation_space / action_space, else an env made from the
         config's env (closed again)
      -> an algorithm's config: the learner its Algorithm builds (`Algorithm.learner_for`,
         from the classes the config declares: `config.learner_class` over the algorithm's
         module, a learner per module multi-agent); a config without an algorithm of its own
         (RLlib's testing config, a user's algorithm that declares no classes):
         `config.learner_class`, a torch learner, over the whole MultiRLModule of
         `get_multi_rl_module_spec` (or `rl_module_spec`), as RLlib's learner holds its modules
      -> the learner's `build()` hook (a torch learner's), then the learner

A LearnerGroup holds one learner, in this process; an Algorithm's with data-parallel learners
(`num_learners` >= 2) reaches them all through `foreach_learner` (`len()` is their number), and
its weights, state and checkpoints are learner 0's.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from trainer.capabilities import (
    CHECKPOINTABLE,
    LEARNER_CONNECTORS,
    MULTI_AGENT,
    RAY_INTERNALS,
    TORCH,
)
from trainer.core.learner_components import (
    COMPONENT_LEARNER,
    Names,
    in_rllib_layout,
    subcomponents,
    wants,
)
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.env.envs import EnvContext, make_env_creator
from trainer.errors import ConfigError, UnsupportedCall
from trainer.torch_rl import require_torch
from trainer.util.call_results import RemoteCallResults
from trainer.util.rllib_members import refuse


def _spaces_of_env(env: Any) -> tuple[Any, Any]:
    """A single-agent env's (or vector env's) spaces for one sub-env."""
    unwrapped = getattr(env, "unwrapped", env)
    observation_space = getattr(
        unwrapped, "single_observation_space", getattr(env, "observation_space", None)
    )
    action_space = getattr(unwrapped, "single_action_space", getattr(env, "action_space", None))
    return observation_space, action_space


def _made_env(config: Any) -> Any:
    """An env made from the config's env (the main process's, worker index 0)."""
    if config.env is None:
        raise ConfigError(
            f"{type(config).__name__}.build_learner(): no spaces to build the module for: "
            "pass env= or spaces=, or set environment(env=...) or environment("
            "observation_space=..., action_space=...)"
        )
    return make_env_creator(config.env)(EnvContext(dict(config.env_config or {})))


def learner_spaces(config: Any, env: Any = None, spaces: dict | None = None) -> Any:
    """The spaces an algorithm's learner is built for, as the EnvRunners give them: a
    `SpaceInfo` (single-agent) or `{module_id: (observation space, action space)}`."""
    made = None
    if (
        env is None
        and spaces is None
        and (
            config.is_multi_agent or config.observation_space is None or config.action_space is None
        )
    ):
        env = made = _made_env(config)
    try:
        if config.is_multi_agent:
            spec = config.get_multi_rl_module_spec(env=env, spaces=spaces)
            return {
                module_id: (module_spec.observation_space, module_spec.action_space)
                for module_id, module_spec in spec.rl_module_specs.items()
            }
        if spaces is not None:
            observation_space, action_space = spaces[DEFAULT_MODULE_ID]
        elif env is not None:
            observation_space, action_space = _spaces_of_env(env)
        else:
            observation_space, action_space = config.observation_space, config.action_space
        return SpaceInfo.from_spaces(
            observation_space, action_space, nested_obs=bool(config.uses_torch)
        )
    finally:
        if made is not None:
            made.close()


def _whole_module_learner(config: Any, env: Any, spaces: dict | None, spec: Any) -> Any:
    """RLlib's learner: `config.learner_class` (a torch learner) over the MultiRLModule of
    `spec` (else the config's `get_multi_rl_module_spec`)."""
    if not config.uses_torch:
        raise UnsupportedCall(
            f"{type(config).__name__}.build_learner(): a config without an algorithm of its own "
            "builds RLlib's learner over a whole MultiRLModule, which needs torch "
            "(framework('torch') and a TorchLearner subclass as learner_class); the numpy "
            "learners are built by an algorithm's config (PPOConfig().build_learner(...))",
            TORCH,
        )
    require_torch(f"{type(config).__name__}.build_learner()")
    from trainer.torch_rl.module_group import build_seeded

    if spec is None:
        made = None
        if (
            env is None
            and spaces is None
            and (config.observation_space is None or config.action_space is None)
        ):
            env = made = _made_env(config)
        try:
            spec = config.get_multi_rl_module_spec(env=env, spaces=spaces)
        finally:
            if made is not None:
                made.close()
    return config.learner_class(config, build_seeded(spec, config.seed))


def _spaces_of_spec(spec: Any) -> dict:
    """{module_id: (observation space, action space)} of a MultiRLModuleSpec (or of an
    RLModuleSpec, as "default_policy")."""
    specs = getattr(spec, "rl_module_specs", None)
    if not isinstance(specs, dict):
        specs = {DEFAULT_MODULE_ID: spec}
    return {
        module_id: (module_spec.observation_space, module_spec.action_space)
        for module_id, module_spec in specs.items()
    }


def call_build_hooks(learner: Any) -> None:
    """RLlib's `Learner.build()` on the learner (each module's of a learner per module)."""
    nested = getattr(learner, "learners", None)
    for each in nested.values() if isinstance(nested, dict) else [learner]:
        build = getattr(each, "build", None)
        if callable(build):
            build()


def build_learner(
    config: Any, *, env: Any = None, spaces: dict | None = None, rl_module_spec: Any = None
) -> Any:
    """`AlgorithmConfig.build_learner` (see the module docstring); `rl_module_spec`: the
    MultiRLModuleSpec a learner of a whole MultiRLModule trains (an algorithm's learner takes
    only its spaces: the algorithm builds its own modules)."""
    config = config.copy()
    learner_for: Callable[..., Any] | None = getattr(config.algo_class, "learner_for", None)
    if learner_for is None or config._algorithm_classes() is None:
        learner = _whole_module_learner(config, env, spaces, rl_module_spec)
    else:
        if spaces is None and env is None and rl_module_spec is not None:
            spaces = _spaces_of_spec(rl_module_spec)
        learner = built_learner(learner_for(config, learner_spaces(config, env, spaces)))
    call_build_hooks(learner)
    return learner


def built_learner(learner: Any) -> Any:
    """`learner` itself; for a stand-in of a default torch learner (which updates in numpy
    until a torch object is asked of it, `AlgorithmClasses.deferred_torch`), the torch
    learner, built now: what a user asks for by RLlib's learner handles."""
    materialize = getattr(type(learner), "materialize", None)
    return materialize(learner) if materialize is not None else learner


_LEARNER_GROUP = "ray.rllib.core.learner.learner_group.LearnerGroup"


@refuse(
    _LEARNER_GROUP,
    MULTI_AGENT,
    "modules are added to and removed from the learners and the EnvRunners together, by "
    "Algorithm.add_module / remove_module",
    "add_module",
    "remove_module",
)
@refuse(
    _LEARNER_GROUP,
    LEARNER_CONNECTORS,
    "a learner here makes no batch from episodes through learner connectors; train through "
    "algo.train(), or call update(batch=...)",
    "update_from_episodes",
)
@refuse(
    _LEARNER_GROUP,
    RAY_INTERNALS,
    "the statistics of Ray's actor manager over remote learner actors, which do not exist here",
    "get_stats",
)
@refuse(
    _LEARNER_GROUP,
    CHECKPOINTABLE,
    "module checkpoints load through restore_from_path(path, component=...) of the "
    "Algorithm or LearnerGroup",
    "load_module_state",
    "get_checkpointable_components",
    "get_ctor_args_and_kwargs",
    "get_metadata",
    "from_checkpoint",
)
class LearnerGroup:
    """RLlib's `LearnerGroup` over the one learner here, in this process: a standalone one
    (`LearnerGroup(config=..., module_spec=...)`, `config.build_learner_group(...)`) or an
    Algorithm's (`algo.learner_group`, whose weights and state go on to the EnvRunners).

    `get_state()` is the learner's state itself (RLlib nests it under "learner"); a
    checkpoint (`save_to_path`) is the learner's (`Learner.save_to_path`) under `learner/`."""

    #: The learner checkpoint's folder in a LearnerGroup checkpoint (RLlib's component name).
    LEARNER_COMPONENT = "learner"

    def __init__(
        self,
        config: Any = None,
        module_spec: Any = None,
        *,
        learner: Any = None,
        algorithm: Any = None,
        **kwargs: Any,
    ) -> None:
        """`config` and `module_spec` (RLlib's arguments: the learner is built from them,
        `build_learner`), or the `learner` itself, or the `algorithm` whose learner it is.
        RLlib's other arguments (a placement group) have no effect here."""
        if learner is None and algorithm is None:
            if config is None:
                raise ValueError("LearnerGroup(config=...): give the config to build from")
            learner = build_learner(config, rl_module_spec=module_spec)
        self._own_learner = learner
        self._algorithm = algorithm

    @property
    def _replicas(self) -> Any:
        """An algorithm's data-parallel learners (`learner_replicas`), or None."""
        return getattr(self._algorithm, "learner_replicas", None)

    @property
    def is_local(self) -> bool:
        """RLlib's: whether the one learner is in this process (False with data-parallel
        learners, `num_learners` >= 2)."""
        return self._replicas is None

    @property
    def _learner(self) -> Any:
        """RLlib's local learner attribute (its tests read `learner_group._learner.config`):
        the learner itself (a stand-in for the default torch PPO learner builds it first,
        `trainer.algorithms.ppo.deferred_torch`)."""
        if self._algorithm is not None:
            return built_learner(self._algorithm.learner)
        return self._own_learner

    @property
    def is_remote(self) -> bool:
        return not self.is_local

    @property
    def config(self) -> Any:
        return self._learner.config

    def __len__(self) -> int:
        """The number of (remote) learners: 0 for the one learner in this process, as RLlib's
        local LearnerGroup; N for N data-parallel learners."""
        replicas = self._replicas
        return 0 if replicas is None else int(replicas.num_learners)

    def update(self, *args: Any, **kwargs: Any) -> list:
        """RLlib's: the learner's `update` (RLlib's `update(batch=..., timesteps=...)` for a
        learner of a whole MultiRLModule), its results in a list of one."""
        return [self._learner.update(*args, **kwargs)]

    def update_from_batch(self, batch: Any, **kwargs: Any) -> list:
        return self.update(batch=batch, **kwargs)

    def get_weights(self, module_ids: Any = None) -> dict:
        """`{module_id: weights}` (of `module_ids`, or all)."""
        algorithm = self._algorithm
        if algorithm is None:
            learner = self._learner
            weights = learner.get_weights()
            if not (getattr(learner, "is_multi_module", False) or hasattr(learner, "learners")):
                weights = {DEFAULT_MODULE_ID: weights}
            wanted = None if module_ids is None else set(module_ids)
            return {k: v for k, v in weights.items() if wanted is None or k in wanted}
        if algorithm.config.is_multi_agent:
            wanted = None if module_ids is None else set(module_ids)
            # A torch module's whole state (its view gives the EnvRunners' inference-only one).
            return {
                module_id: sub.rl_module.get_state()
                if hasattr(sub, "rl_module")
                else sub.get_weights()
                for module_id, sub in algorithm.learner.module.items()
                if wanted is None or module_id in wanted
            }
        module = algorithm.learner.module
        # A torch module's view gives the EnvRunners' inference-only weights; the learner's
        # are the whole module's (value function included), as RLlib's learner group returns.
        rl_module = getattr(module, "rl_module", None)
        weights = rl_module.get_state() if rl_module is not None else module.get_weights()
        return {DEFAULT_MODULE_ID: weights}

    def set_weights(self, weights: dict) -> None:
        """Sets the learner's weights (`{module_id: {...}}`, or single-agent the weights
        dict itself); an Algorithm's then go to its EnvRunners."""
        algorithm, learner = self._algorithm, self._learner
        if not (getattr(learner, "is_multi_module", False) or hasattr(learner, "learners")):
            weights = weights.get(DEFAULT_MODULE_ID, weights)
        if algorithm is None:
            learner.set_weights(weights)
            return
        algorithm.set_weights(weights)

    def get_state(
        self, components: Names = None, *, not_components: Names = None, **kwargs: Any
    ) -> dict:
        """RLlib's layout: `{"learner": the learner's state in RLlib's layout}`
        (`trainer.core.learner_components`), with only the components asked for
        (`"learner/rl_module"`, `"learner/rl_module/<module_id>"`, `"learner/optimizer"`, ...;
        `not_components` leaves some out)."""
        if not wants(COMPONENT_LEARNER, components, not_components):
            return {}
        inner = subcomponents(COMPONENT_LEARNER, components)
        inner_left_out = subcomponents(COMPONENT_LEARNER, not_components)
        return {
            COMPONENT_LEARNER: self._learner.get_state(
                inner, not_components=() if inner_left_out is None else inner_left_out, **kwargs
            )
        }

    def set_state(self, state: dict) -> None:
        """Takes `get_state()`'s form back (`{"learner": ...}`, either learner layout; only the
        components present change); an Algorithm's EnvRunners then get the weights. A learner's
        own state without the outer `"learner"` is taken too."""
        learner_state = state.get(COMPONENT_LEARNER, state) if isinstance(state, dict) else state
        if learner_state is state and not in_rllib_layout(state) and not state:
            return  # RLlib's rule: no learner component, nothing changes
        self._learner.set_state(learner_state)
        if self._algorithm is not None:
            self._algorithm.sync_weights()

    def foreach_learner(
        self,
        func: Callable[..., Any],
        *,
        healthy_only: bool = True,
        remote_actor_ids: list[int] | None = None,
        timeout_seconds: float | None = None,
        return_obj_refs: bool = False,
        mark_healthy: bool = False,
        **kwargs: Any,
    ) -> RemoteCallResults:
        """`func(learner, **kwargs)` on each learner: the one, or every data-parallel learner
        (learner 0's first), as RLlib's `RemoteCallResults` (iterate: one `CallResult` per
        learner, `.get()` its value; `.values()` all of them). RLlib's options for its learner actors (`healthy_only`,
        `remote_actor_ids`, `timeout_seconds`, `return_obj_refs`, `mark_healthy`) are taken
        and not passed to `func`: the learners here answer in process (a data-parallel
        worker within its own bound)."""
        if return_obj_refs:
            raise UnsupportedCall(
                "LearnerGroup.foreach_learner(return_obj_refs=True): the learners here are not "
                "Ray actors and return values, not object refs",
                RAY_INTERNALS,
            )
        replicas = self._replicas
        if replicas is not None:
            return RemoteCallResults.of_values(list(replicas.foreach_learner(func, **kwargs)))
        return RemoteCallResults.of_values([func(self._learner, **kwargs)])

    def save_to_path(
        self, path: str | os.PathLike | None = None, *, state: dict | None = None, **kwargs: Any
    ) -> str:
        """Writes the learner's checkpoint under `<path>/learner` (default path: a new
        temporary directory); returns the path."""
        if path is None:
            import tempfile

            path = tempfile.mkdtemp(prefix="learner_group_")
        path = os.fspath(path)
        os.makedirs(path, exist_ok=True)
        self._learner.save_to_path(os.path.join(path, self.LEARNER_COMPONENT), state=state)
        return path

    def restore_from_path(
        self, path: str | os.PathLike, *, component: str | None = None, **kwargs: Any
    ) -> None:
        """Takes the learner's state back from a LearnerGroup checkpoint (or a learner's)."""
        path = os.fspath(path)
        inner = os.path.join(path, self.LEARNER_COMPONENT)
        self._learner.restore_from_path(inner if os.path.isdir(inner) else path)
        if self._algorithm is not None:
            self._algorithm.sync_weights()

    def shutdown(self) -> None:
        """Nothing to stop: the learner lives in this process."""


__all__ = ["LearnerGroup", "build_learner", "call_build_hooks", "learner_spaces"]
