"""The `multi_agent()` section: the policies (modules), which agent acts with which, which are
trained, and the refusal of multi-agent configs an algorithm does not train."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym

from trainer.algorithms.config.base import ConfigBase, Flag, NotProvided, algorithm_registry
from trainer.algorithms.multi_agent_setup import (
    DEFAULT_POLICY_MAPPING,
    MultiAgentSetup,
    as_policy_specs,
    check_policies,
    check_policies_to_train,
    check_policy_mapping_fn,
    check_policy_mapping_fn_call,
    is_torch_module_class,
)
from trainer.algorithms.settings import Setting, settings_of
from trainer.capabilities import MULTI_AGENT
from trainer.compat.rllib_settings import DEFAULT_POLICY_ID
from trainer.core.apis import SelfSupervisedLossAPI
from trainer.core.multi_rl_module import MultiRLModuleSpec, runs_modules_together
from trainer.core.policy_spec import PolicySpec
from trainer.env.vectorize import vectorize_mode as normalized_vectorize_mode
from trainer.errors import ConfigError
from trainer.util.checks import one_of
from trainer.util.deprecation import warn_once

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

if TYPE_CHECKING:
    from trainer.core.rl_module import RLModuleSpec


def _check_count_steps_by(v: Any) -> str | None:
    """The `count_steps_by` check: "env_steps" or "agent_steps"; the problem also in RLlib's
    words (scripts match them)."""
    problem = one_of("env_steps", "agent_steps")(v)
    if problem is None:
        return None
    return (
        f"{problem} (RLlib: config.multi_agent(count_steps_by=..) must be one of "
        "[env_steps|agent_steps])"
    )


#: The settings of `multi_agent()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
MULTI_AGENT_SETTINGS: dict[str, Setting] = settings_of(
    "multi_agent",
    {
        "policies": (
            {DEFAULT_POLICY_ID: PolicySpec()},
            check_policies,
            "the policies (modules) by id: a set/list of ids or {id: PolicySpec}; "
            'more than one, or another id than "default_policy", is multi-agent',
        ),
        "policy_mapping_fn": (
            DEFAULT_POLICY_MAPPING,
            check_policy_mapping_fn,
            "(agent_id, episode, **kwargs) -> the policy (module) id the agent acts with",
        ),
        "policies_to_train": (
            None,
            check_policies_to_train,
            "the policies the learners update: None (all), a set of ids, or a callable "
            "(policy_id, batch) -> bool",
        ),
        "count_steps_by": (
            "env_steps",
            _check_count_steps_by,
            'what batch sizes and rollout lengths count in a multi-agent env: "env_steps" '
            '(one per env step) or "agent_steps" (one per acting agent)',
        ),
    },
)


class MultiAgentSection(ConfigBase):
    """The policies and their mapping (`multi_agent()`)."""

    if TYPE_CHECKING:  # what this section reads of the others
        algo_class: type | None
        observation_filter: str
        env_task_fn: Callable[..., Any] | None
        module_to_env_connector: Callable[..., Any] | None
        gym_env_vectorize_mode: str

        def rl_module(self, *args: Any, **kwargs: Any) -> Self: ...

        def learner_only_module_specs(self) -> dict[Any, RLModuleSpec]: ...

        # and what `MultiAgentSetup` reads of the config this section hands it
        @property
        def model_config(self) -> dict: ...

        @property
        def _model_config_auto_includes(self) -> dict[str, Any]: ...

        def copy(self, copy_frozen: bool | None = None) -> Self: ...

        def update_from_dict(self, config_dict: dict[str, Any]) -> Self: ...

        def get_default_rl_module_spec(self) -> RLModuleSpec: ...

        def default_module_class(self) -> type: ...

        def default_torch_module_class(self) -> type: ...

    policies: dict[str, PolicySpec]
    policy_mapping_fn: Callable[..., Any]
    policies_to_train: Collection[str] | Callable[..., bool] | None
    count_steps_by: str

    @property
    def is_multi_agent(self) -> Flag:
        """Whether the policies are a multi-agent setup (RLlib's rule: more than one policy, or
        one whose id is not "default_policy"); reads as a bool and as `is_multi_agent()`."""
        policies = self.policies
        return Flag(len(policies) > 1 or DEFAULT_POLICY_ID not in policies)

    def _has_multi_rl_module_spec(self) -> bool:
        return isinstance(self.__dict__.get("_rl_module_spec"), MultiRLModuleSpec)

    def _check_policy_configs(self, method: str, policies: Any) -> None:
        """Each policy's own settings (`PolicySpec(config={...})`, or a 4-tuple's last item)
        must be settings with valid values, as the per-module overrides must."""
        if not isinstance(policies, dict):
            return
        settings = self._settings()
        for policy_id, spec in policies.items():
            overrides = spec.config if isinstance(spec, PolicySpec) else None
            if isinstance(spec, (list, tuple)) and len(spec) == 4:
                overrides = spec[3]
            if not isinstance(overrides, dict):
                continue
            # The values of settings; other keys (RLlib's older names, its settings without an
            # effect here, unknown ones) are judged by update_from_dict when the policy's
            # config is made.
            for name, value in overrides.items():
                problem = settings[name].check(value) if name in settings else None
                if problem is not None:
                    raise ConfigError(
                        f"{type(self).__name__}.{method}(policies={{{policy_id!r}: "
                        f"PolicySpec(config={{{name!r}: {value!r}}})}}): {name} must be {problem}"
                    )

    def get_multi_agent_setup(
        self,
        *,
        policies: dict[str, PolicySpec] | None = None,
        env: Any = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        default_policy_class: type | None = None,
    ) -> tuple[dict[str, PolicySpec], Callable[..., bool]]:
        """RLlib's complete multi-agent setup: `({policy_id: PolicySpec with its spaces and
        its whole config (this one with the PolicySpec's config applied)},
        is_policy_to_train(policy_id, batch=None) -> bool)`. A policy's spaces come from its
        PolicySpec, else `spaces[policy_id]`, else a MultiAgentEnv's agents that map to it
        (`policy_mapping_fn`; all agents' spaces when they are alike), else the env's spaces,
        else the config's `observation_space` / `action_space`."""
        setup = MultiAgentSetup(self)
        return setup.policies(policies, env, spaces, default_policy_class), (
            setup.is_policy_to_train
        )

    def get_multi_rl_module_spec(
        self,
        *,
        env: Any = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        inference_only: bool = False,
        policy_dict: dict[str, PolicySpec] | None = None,
        single_agent_rl_module_spec: RLModuleSpec | None = None,
    ) -> MultiRLModuleSpec:
        """The `MultiRLModuleSpec` of this config's policies, as RLlib builds it: one module
        spec per policy (from `rl_module(rl_module_spec=MultiRLModuleSpec(...))` where it
        names the policy, else the single-module spec), each with its module class (None: the
        algorithm's default numpy module), its spaces (`get_multi_agent_setup`) and
        `model_config` merged over the config's. With `inference_only`, `learner_only`
        modules are left out."""
        return MultiAgentSetup(self).module_spec(
            env, spaces, inference_only, policy_dict, single_agent_rl_module_spec
        )

    def multi_agent(
        self,
        *,
        policies: Any = NotProvided,
        policy_map_capacity: int = NotProvided,
        policy_mapping_fn: Callable[..., Any] = NotProvided,
        policies_to_train: Any = NotProvided,
        policy_states_are_swappable: bool = NotProvided,
        observation_fn: Callable[..., Any] | None = NotProvided,
        count_steps_by: str = NotProvided,
        **unknown: Any,
    ) -> Self:
        """RLlib's multi-agent settings. `policies` is a set, list or tuple of policy (module)
        ids, or a dict `{policy_id: PolicySpec(...)}` (or RLlib's 4-tuples); a collection
        becomes `{policy_id: PolicySpec()}` and None the single "default_policy".
        `policy_mapping_fn(agent_id, episode, **kwargs)` names each agent's policy;
        `policies_to_train` is None (all), a collection of ids or a callable `(policy_id,
        batch) -> bool`; `count_steps_by` is "env_steps" or "agent_steps".
        `policy_map_capacity`, `policy_states_are_swappable` and `observation_fn` are RLlib's
        old-stack settings (accepted; a value other than RLlib's default warns at build).
        `algorithm_config_overrides_per_module` (RLlib's older place) is passed on to
        `rl_module()`, with a warning."""
        if "algorithm_config_overrides_per_module" in unknown:
            warn_once(
                "multi_agent(algorithm_config_overrides_per_module=...)",
                "rl_module(algorithm_config_overrides_per_module=...)",
            )
            self.rl_module(
                algorithm_config_overrides_per_module=unknown.pop(
                    "algorithm_config_overrides_per_module"
                )
            )
        old_stack = {
            "policy_map_capacity": policy_map_capacity,
            "policy_states_are_swappable": policy_states_are_swappable,
            "observation_fn": observation_fn,
        }
        unknown.update({k: v for k, v in old_stack.items() if v is not NotProvided})
        values = {
            "policies": policies,
            "policy_mapping_fn": policy_mapping_fn,
            "policies_to_train": policies_to_train,
            "count_steps_by": count_steps_by,
        }
        self._reject_unknown("multi_agent", unknown, values)
        if policies is None:  # RLlib's default: the one "default_policy"
            values["policies"] = {DEFAULT_POLICY_ID: PolicySpec()}
        self._check_policy_configs("multi_agent", policies)
        self._set("multi_agent", values)
        if policies is not NotProvided and policies is not None:
            # Stored as RLlib's unified form: {policy_id: PolicySpec}.
            self.policies = as_policy_specs(policies)
        if isinstance(policies_to_train, (set, frozenset, list, tuple)) and not policies_to_train:
            warnings.warn(
                f"{type(self).__name__}.multi_agent(policies_to_train={policies_to_train!r}) is "
                "empty: no policy will be trained",
                UserWarning,
                stacklevel=2,
            )
        return self

    @staticmethod
    def DEFAULT_AGENT_TO_MODULE_MAPPING_FN(agent_id: Any, episode: Any) -> str:  # noqa: N802
        """RLlib's default agent-to-module mapping: every agent to "default_policy"."""
        return DEFAULT_POLICY_ID

    @staticmethod
    def DEFAULT_POLICY_MAPPING_FN(
        aid: Any,
        episode: Any,
        worker: Any,  # noqa: N802
        **kwargs: Any,
    ) -> str:
        """RLlib's default policy mapping: every agent to "default_policy" (the default
        `policy_mapping_fn` does the same)."""
        return DEFAULT_POLICY_ID

    #: Whether this algorithm trains multi-agent configs (an algorithm's config says so).
    _MULTI_AGENT_TRAINING = False

    #: Whether this algorithm trains learner-only modules beside its module in single-agent
    #: configs (`trainer.torch_rl.self_supervised`; an algorithm's config says so).
    _LEARNER_ONLY_MODULES = False

    #: Whether this algorithm's learner trains the whole MultiRLModule at once, so that a
    #: container class that runs its modules together (RLlib's shared encoder) trains as it
    #: acts (an algorithm's config says so; the others train one learner per module).
    _JOINT_MODULES = False

    def _refuse_multi_agent_training(self, name: str) -> None:
        """A multi-agent config of an algorithm that does not train one yet, or with a
        setting the multi-agent EnvRunner does not run yet: one clear error, before any
        worker starts."""
        if not self.is_multi_agent and self._has_learner_only_modules(name):
            return
        if self._MULTI_AGENT_TRAINING:
            if self.is_multi_agent:
                self._refuse_multi_agent_settings(name)
            elif self._has_multi_rl_module_spec():
                raise ConfigError(
                    f"{name}: rl_module(rl_module_spec=MultiRLModuleSpec(...)) needs a "
                    "multi-agent config: add multi_agent(policies=..., policy_mapping_fn=...) "
                    "naming the spec's modules (a single-agent config takes one of "
                    f"{DEFAULT_POLICY_ID!r} and learner-only modules, "
                    "RLModuleSpec(learner_only=True))",
                    MULTI_AGENT,
                )
            return
        if self.is_multi_agent:
            asked = f"multi_agent(policies={sorted(map(str, self.policies))})"
        elif self._has_multi_rl_module_spec():
            asked = "rl_module(rl_module_spec=MultiRLModuleSpec(...))"
        else:
            return
        raise ConfigError(
            f"{name}: {self.algo_class.__name__ if self.algo_class else 'this algorithm'} "
            f"does not train a multi-agent config yet: the config asks for {asked}; "
            f"{_multi_agent_algorithms()} train multi-agent configs",
            MULTI_AGENT,
        )

    def _has_learner_only_modules(self, name: str) -> bool:
        """Whether the config's MultiRLModuleSpec is "default_policy" and learner-only
        modules (RLlib's `RLModuleSpec(learner_only=True)`) that this algorithm trains; raises
        ConfigError for learner-only modules it cannot train."""
        learner_only = self.learner_only_module_specs()
        spec = self.__dict__.get("_rl_module_spec")
        if not learner_only or not isinstance(spec, MultiRLModuleSpec):
            return False
        module_ids = set(cast(dict[Any, Any], spec.rl_module_specs))
        if DEFAULT_POLICY_ID not in module_ids or module_ids - {DEFAULT_POLICY_ID} != set(
            learner_only
        ):
            return False  # (modules the EnvRunners would run too: a multi-agent config's)
        shown = sorted(map(str, learner_only))
        if not self._LEARNER_ONLY_MODULES:
            algorithm = self.algo_class.__name__ if self.algo_class else "this algorithm"
            raise ConfigError(
                f"{name}: learner-only modules {shown} (RLModuleSpec(learner_only=True)): "
                f"{algorithm} does not train learner-only modules here (they train with "
                f"{_learner_only_algorithms()})",
            )
        for module_id in sorted(learner_only, key=str):
            module_class = learner_only[module_id].module_class
            if not (
                isinstance(module_class, type)
                and is_torch_module_class(module_class)
                and issubclass(module_class, SelfSupervisedLossAPI)
            ):
                shown_class = getattr(module_class, "__qualname__", repr(module_class))
                raise ConfigError(
                    f"{name}: learner-only module {module_id!r}: module_class={shown_class} "
                    "must be a TorchRLModule implementing SelfSupervisedLossAPI "
                    "(compute_self_supervised_loss): a learner-only module trains by its own "
                    "loss here, beside the default module",
                )
        return True

    def _refuse_multi_agent_settings(self, name: str) -> None:
        spec = self.__dict__.get("_rl_module_spec")
        container = getattr(spec, "multi_rl_module_class", None)
        if container is not None and runs_modules_together(container) and not self._JOINT_MODULES:
            raise ConfigError(
                f"{name}: MultiRLModuleSpec(multi_rl_module_class={container.__qualname__}) "
                "runs its modules together (it overrides the MultiRLModule's forward), but "
                f"{self.algo_class.__name__ if self.algo_class else 'this algorithm'} trains "
                "one learner per module here, which would train each module without the "
                f"container's forward; {_algorithms_whose_config('_JOINT_MODULES')} train the "
                "whole MultiRLModule",
                MULTI_AGENT,
            )
        unsupported = {
            # Env-to-module connectors: FlattenObservations(multi_agent=True) pieces run (the
            # EnvRunner checks what the factory makes); a filter would be a stateful piece.
            f"env_runners(observation_filter={self.observation_filter!r})": (
                self.observation_filter not in (None, "NoFilter")
            ),
            "environment(env_task_fn=...)": self.env_task_fn is not None,
            f"env_runners(gym_env_vectorize_mode={self.gym_env_vectorize_mode!r})": (
                normalized_vectorize_mode(self.gym_env_vectorize_mode) != "sync"
            ),
        }
        for setting, given in unsupported.items():
            if given:
                raise ConfigError(
                    f"{name}: {setting} is not available for multi-agent runs yet (the "
                    "MultiAgentEnvRunner steps its MultiAgentEnvs in order, without stateful "
                    "connector pieces or env tasks); leave it out",
                    MULTI_AGENT,
                )

    def _validate_multi_agent(self, name: str) -> None:
        """Each policy's own settings, the policies to train, and a multi-agent config the
        algorithm or the multi-agent EnvRunner does not run."""
        self._check_policy_configs("validate", self.policies)
        problem = check_policy_mapping_fn_call(self.policy_mapping_fn)
        if problem is not None:
            raise ConfigError(
                f"{name}: multi_agent(policy_mapping_fn={self.policy_mapping_fn!r}): "
                f"policy_mapping_fn must be {problem} (RLlib 2.60's episodes call it so too, "
                "and fail at the first step)"
            )
        if isinstance(self.policies_to_train, (set, frozenset, list, tuple)):
            for policy_id in self.policies_to_train:
                if policy_id not in self.policies:
                    raise ConfigError(
                        f"{name}: multi_agent(policies_to_train=...) names policy "
                        f"{policy_id!r}, which is not in multi_agent(policies=...) "
                        f"({sorted(map(str, self.policies))})"
                    )
        self._refuse_multi_agent_training(name)


def _algorithms_whose_config(flag: str) -> str:
    """The registered algorithms whose config class sets `flag` (`_MULTI_AGENT_TRAINING`,
    `_LEARNER_ONLY_MODULES`), as "A, B and C"."""
    names = [
        entry.name for entry in algorithm_registry().entries() if getattr(entry.config_cls, flag)
    ]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _learner_only_algorithms() -> str:
    return _algorithms_whose_config("_LEARNER_ONLY_MODULES")


def _multi_agent_algorithms() -> str:
    return _algorithms_whose_config("_MULTI_AGENT_TRAINING")
