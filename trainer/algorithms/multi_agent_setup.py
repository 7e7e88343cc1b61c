"""The multi-agent part of `AlgorithmConfig`: the checks of `multi_agent()`'s settings, RLlib's
default policy mapping, and `MultiAgentSetup`, which turns a config's policies into RLlib's
complete setup (`get_multi_agent_setup`: every policy's spaces and config) and into the
`MultiRLModuleSpec` of its modules (`get_multi_rl_module_spec`).

A policy's spaces come from its `PolicySpec`, else from the spaces the EnvRunners report
(`spaces[policy_id]`), else from the agents of a `MultiAgentEnv` that `policy_mapping_fn` maps
to it (or every agent's, when all agents' spaces are alike), else from the env, else from the
config's `observation_space` / `action_space`, as RLlib 2.60 infers them.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Collection
from typing import Any, Protocol

import gymnasium as gym

from trainer.algorithms.config.base import ConfigBase
from trainer.capabilities import MULTI_AGENT
from trainer.compat.rllib_utils import DEFAULT_POLICY_ID
from trainer.core.catalog import check_catalog_class
from trainer.core.models import (
    INPUT_ENV_SPACES,
    MODEL_DEFAULTS,
    FlatParameterModule,
    check_model_config,
)
from trainer.core.multi_rl_module import MultiRLModuleSpec
from trainer.core.policy_spec import PolicySpec
from trainer.core.rl_module import RLModule, RLModuleSpec, validate_module_id
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.errors import ConfigError
from trainer.util.checks import callable_taking

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class _DefaultPolicyMapping:
    """RLlib's default `policy_mapping_fn`: every agent to "default_policy". One value (copies
    are the same object and all compare equal), so a config that keeps it stores nothing."""

    def __call__(
        self, agent_id: Any, episode: Any = None, worker: Any = None, **kwargs: Any
    ) -> str:
        return DEFAULT_POLICY_ID

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _DefaultPolicyMapping)

    def __hash__(self) -> int:
        return hash(_DefaultPolicyMapping)

    def __deepcopy__(self, memo: dict) -> _DefaultPolicyMapping:
        return self

    def __copy__(self) -> _DefaultPolicyMapping:
        return self

    def __reduce__(self) -> str:
        return "DEFAULT_POLICY_MAPPING"

    def __repr__(self) -> str:
        return "AlgorithmConfig.DEFAULT_POLICY_MAPPING_FN"


#: The default `policy_mapping_fn` (pickles by reference to this name).
DEFAULT_POLICY_MAPPING = _DefaultPolicyMapping()


def check_policies(v: Any) -> str | None:
    """The settings-table check of `policies`."""

    allowed = (
        "a set, list or tuple of policy ids, or a dict {policy_id: PolicySpec or "
        "(policy_class, observation_space, action_space, config)}"
    )
    if not isinstance(v, (set, frozenset, list, tuple, dict)) or not v:
        return f"{allowed} (not empty)"
    for policy_id in v:
        try:
            validate_module_id(policy_id, error=True)
        except ValueError as error:
            return f"{allowed}; {error}"
    if isinstance(v, dict):
        for policy_id, spec in v.items():
            if isinstance(spec, PolicySpec):
                overrides = spec.config
            elif isinstance(spec, (list, tuple)) and len(spec) == 4:
                overrides = spec[3]
            else:
                return f"{allowed}; the value of {policy_id!r} is {spec!r}"
            if overrides is not None and not isinstance(overrides, (dict, ConfigBase)):
                return (
                    f"{allowed}; the config of policy {policy_id!r} must be a dict of settings "
                    f"or an AlgorithmConfig, not a {type(overrides).__name__}"
                )
    return None


def check_policy_mapping_fn(v: Any) -> str | None:
    """Any callable, as RLlib takes it (its signature is checked by `validate()`, with
    `check_policy_mapping_fn_call`: a config that is never built may hold an old one)."""
    return None if callable(v) else "a callable (agent_id, episode, **kwargs)"


def check_policy_mapping_fn_call(v: Any) -> str | None:
    """Whether `v` can be called as fn(agent_id, episode), as `MultiAgentEpisode.module_for`
    calls it (and RLlib's episode too)."""
    return callable_taking(2, "(agent_id, episode, **kwargs)")(v)


def check_policies_to_train(v: Any) -> str | None:
    if v is None:
        return None
    if callable(v):  # called as fn(policy_id, batch) (`is_policy_to_train`)
        return callable_taking(2, "(policy_id, batch) -> bool")(v)
    if isinstance(v, (set, frozenset, list, tuple)) and all(isinstance(p, str) for p in v):
        return None
    return (
        "None (train every policy), a set, list or tuple of policy ids, or a callable "
        "(policy_id, batch) -> bool"
    )


def check_overrides_per_module(v: Any) -> str | None:
    if isinstance(v, dict) and all(isinstance(o, dict) for o in v.values()):
        return None
    return (
        "a dict {module_id: {setting: value}} (AlgorithmConfig.overrides(...) makes the "
        "inner dicts)"
    )


def policy_dict(policies: Any) -> dict[str, Any]:
    """`policies` as `{policy_id: PolicySpec or 4-tuple}` (a collection of ids gets empty
    PolicySpecs, as RLlib converts it)."""
    if isinstance(policies, dict):
        return dict(policies)
    if isinstance(policies, (set, frozenset)):
        # In a fixed order: a set's order changes between processes (string hashing), and
        # the modules' order must not change a seeded run.
        policies = sorted(policies, key=str)
    return {policy_id: PolicySpec() for policy_id in policies}


def as_policy_specs(policies: Any) -> dict[str, PolicySpec]:
    """RLlib's unified form of `policies`: `{policy_id: PolicySpec}`."""
    return {
        pid: spec if isinstance(spec, PolicySpec) else PolicySpec(*spec)
        for pid, spec in policy_dict(policies).items()
    }


def is_torch_module_class(module_class: Any) -> bool:
    """Whether `module_class` is a `TorchRLModule` subclass (checked without importing torch:
    a class that subclasses it was made with torch imported)."""
    if not isinstance(module_class, type) or "trainer.torch_rl.rl_module" not in sys.modules:
        return False
    from trainer.torch_rl.rl_module import TorchRLModule

    return issubclass(module_class, TorchRLModule)


def check_multi_rl_module_spec(
    name: str, spec: MultiRLModuleSpec, default_module_class: type | None = None
) -> None:
    """Every module spec of a MultiRLModuleSpec names a numpy module class (an `RLModule`
    subclass, or None / a default numpy module) or a `TorchRLModule` subclass (trained by the
    torch learners), no catalog but `PPOCatalog` on PPO's default module, and, for a default
    module, a model config the default modules take. `default_module_class`: what a spec
    without a module class builds (the algorithm's default numpy module)."""
    specs = spec.rl_module_specs
    for module_id, module_spec in (
        specs.items() if isinstance(specs, dict) else [("(every module)", specs)]
    ):
        assert isinstance(module_spec, RLModuleSpec)  # MultiRLModuleSpec checked them
        where = f"{name}: the spec of module {module_id!r}"
        cls = module_spec.module_class
        torch_module = is_torch_module_class(cls)
        if (
            cls is not None
            and not torch_module
            and not (isinstance(cls, type) and issubclass(cls, (RLModule, FlatParameterModule)))
        ):
            raise ConfigError(
                f"{where}: module_class={getattr(cls, '__qualname__', cls)!r} is not an "
                "RLModule: subclass trainer.RLModule (ray.rllib.core.rl_module.RLModule, "
                "forward passes in numpy) or TorchRLModule "
                "(ray.rllib.core.rl_module.torch.TorchRLModule)",
                MULTI_AGENT,
            )
        check_catalog_class(where, module_spec.catalog_class, cls or default_module_class)
        default_torch = (
            torch_module
            and _is_default_torch_module(cls)
            and not _is_users_catalog(module_spec.catalog_class)
        )
        if cls is None or default_torch or issubclass(cls, FlatParameterModule):
            # DQN's `dueling` rides in the default module's model config (as in RLlib).
            model = {k: v for k, v in module_spec._get_model_config().items() if k != "dueling"}
            try:
                check_model_config(model, setting=f"{where}.model_config")
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None


def _is_default_torch_module(module_class: type | None) -> bool:
    """Whether `module_class` is (a subclass of) a default torch module that reads only the
    default model config's keys (`TorchRLModule.reads_default_model_config_only`). Not a
    subclass that defines its own `__init__` or `setup`: it may build its own parts (with a
    catalog of its own) from keys of its own, as RLlib lets it."""
    if not getattr(module_class, "reads_default_model_config_only", False):
        return False
    assert isinstance(module_class, type)
    for klass in module_class.__mro__:
        if "reads_default_model_config_only" in vars(klass):
            return True
        if "__init__" in vars(klass) or "setup" in vars(klass):
            return False
    return True


def _is_users_catalog(catalog_class: type | None) -> bool:
    """Whether a spec names a catalog class of the user's (which may read keys of its own)."""
    return catalog_class is not None and not catalog_class.__module__.startswith("trainer.")


class MultiAgentConfig(Protocol):
    """What `MultiAgentSetup` reads of a config (an `AlgorithmConfig`, whose multi-agent section
    makes the setup: the config imports this module, so it names no config class). The
    policies' spaces also fall back on its `observation_space` / `action_space`, read by
    name."""

    @property
    def policies(self) -> dict[str, PolicySpec]: ...

    @property
    def policy_mapping_fn(self) -> Callable[..., Any]: ...

    @property
    def policies_to_train(self) -> Collection[str] | Callable[..., bool] | None: ...

    @property
    def uses_torch(self) -> bool: ...

    @property
    def model_config(self) -> dict: ...

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]: ...

    def copy(self) -> Self: ...

    def update_from_dict(self, config_dict: dict[str, Any]) -> Self: ...

    def get_default_rl_module_spec(self) -> RLModuleSpec: ...

    def default_module_class(self) -> type: ...

    def default_torch_module_class(self) -> type: ...


class MultiAgentSetup:
    """A config's policies made complete: their spaces, configs and module specs."""

    def __init__(self, config: MultiAgentConfig):
        self.config = config

    def policies(
        self,
        policies: Any = None,
        env: Any = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        default_policy_class: type | None = None,
    ) -> dict[str, PolicySpec]:
        """`{policy_id: PolicySpec}` with every field filled in: spaces (see the module
        docstring) and the whole config of the policy (the config with the PolicySpec's
        `config` applied)."""

        given = policies if policies is not None else self.config.policies
        complete = {pid: copy.deepcopy(spec) for pid, spec in as_policy_specs(given).items()}
        for pid, spec in complete.items():
            if spec.policy_class is None and default_policy_class is not None:
                spec.policy_class = default_policy_class
            for index, name in enumerate(("observation_space", "action_space")):
                if getattr(spec, name) is None:
                    setattr(spec, name, self.policy_space(pid, index, name, env, spaces))
            if not isinstance(spec.config, ConfigBase):
                spec.config = self.config.copy().update_from_dict(dict(spec.config or {}))
        return complete

    def policy_space(
        self, policy_id: str, index: int, name: str, env: Any, spaces: dict | None
    ) -> gym.Space:
        """The `name` space (index 0: observations, 1: actions) of `policy_id`."""
        if spaces is not None and policy_id in spaces:
            return spaces[policy_id][index]
        unwrapped = getattr(env, "unwrapped", env)
        if isinstance(unwrapped, MultiAgentEnv):
            found = self._agent_space(unwrapped, policy_id, name)
            if found is not None:
                return found
        elif env is not None:
            value = getattr(env, "single_" + name, None) or getattr(env, name, None)
            if isinstance(value, gym.Space):
                return value
        if spaces is not None and INPUT_ENV_SPACES in spaces:
            return spaces[INPUT_ENV_SPACES][index]
        value = getattr(self.config, name)
        if value is None:
            raise ValueError(
                f"{type(self.config).__name__}: no {name} for policy {policy_id!r}: give it in "
                f"its PolicySpec, pass env= or spaces=, or set environment({name}=...)"
            )
        return value

    def _agent_space(self, env: Any, policy_id: str, name: str) -> gym.Space | None:
        """A MultiAgentEnv's space for `policy_id`: every agent's when all are alike, else
        that of the agents mapped to the policy (which must agree)."""
        agents = list(getattr(env, "possible_agents", None) or env.agents)
        if not agents:
            return getattr(env, name)
        getter = getattr(env, f"get_{name}")
        agent_spaces = {agent: getter(agent) for agent in agents}
        first = next(iter(agent_spaces.values()))
        if all(space == first for space in agent_spaces.values()):
            return first
        mapping = self.config.policy_mapping_fn
        # Called as RLlib's EnvRunner maps agents to modules (its AgentToModuleMapping):
        # `(agent_id, episode)`, so `lambda aid, episode: ...` works as it does there.
        mapped = {
            agent: space
            for agent, space in agent_spaces.items()
            if mapping(agent, None) == policy_id
        }
        if not mapped:
            return None
        one = next(iter(mapped.values()))
        if any(space != one for space in mapped.values()):
            raise ValueError(
                f"agents {sorted(map(str, mapped))} map to policy {policy_id!r} (by "
                f"policy_mapping_fn) but have different {name}s: give the policy's "
                "spaces in its PolicySpec, or map them to different policies"
            )
        return one

    def is_policy_to_train(self, policy_id: str, batch: Any = None) -> bool:
        """Whether the learners update `policy_id` (`policies_to_train`)."""
        to_train = self.config.policies_to_train
        if to_train is None:
            return True
        if callable(to_train):
            return bool(to_train(policy_id, batch))
        return policy_id in to_train

    @staticmethod
    def _with_spec_spaces(
        current: Any, spaces: dict[str, tuple[gym.Space, gym.Space]] | None
    ) -> dict[str, tuple[gym.Space, gym.Space]] | None:
        """`spaces` and, for modules it lacks, the spaces a MultiRLModuleSpec's module spec
        gives (both of them): such a module needs no agent mapped to it to know its spaces
        (RLlib's heuristic opponents, picked at random per episode)."""
        if not isinstance(current, MultiRLModuleSpec) or not isinstance(
            current.rl_module_specs, dict
        ):
            return spaces
        given = {
            module_id: (spec.observation_space, spec.action_space)
            for module_id, spec in current.rl_module_specs.items()
            if spec.observation_space is not None and spec.action_space is not None
        }
        if not given:
            return spaces
        return {**given, **(spaces or {})}

    def module_spec(
        self,
        env: Any = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        inference_only: bool = False,
        policies: dict[str, PolicySpec] | None = None,
        single_agent_rl_module_spec: RLModuleSpec | None = None,
    ) -> MultiRLModuleSpec:
        """The `MultiRLModuleSpec` of the policies (see
        `AlgorithmConfig.get_multi_rl_module_spec`)."""
        config = self.config
        current: RLModuleSpec | MultiRLModuleSpec | None = config.__dict__.get("_rl_module_spec")
        if policies is None:
            policies = self.policies(env=env, spaces=self._with_spec_spaces(current, spaces))
        if isinstance(current, MultiRLModuleSpec):
            fallback = copy.deepcopy(single_agent_rl_module_spec or RLModuleSpec())
            fallback.inference_only = inference_only
            current_specs = current.rl_module_specs or {}
            if isinstance(current_specs, RLModuleSpec):
                current_specs = {pid: current_specs for pid in policies}
            module_ids = list(policies) + [m for m in current_specs if m not in policies]
            multi_spec = type(current)(
                multi_rl_module_class=current.multi_rl_module_class,
                observation_space=current.observation_space,
                action_space=current.action_space,
                model_config=current.model_config,
                rl_module_specs={
                    mid: copy.deepcopy(current_specs.get(mid, fallback)) for mid in module_ids
                },
                load_state_path=current.load_state_path,
                modules_to_load=current.modules_to_load,
            )
        else:
            single = copy.deepcopy(
                single_agent_rl_module_spec or current or config.get_default_rl_module_spec()
            )
            single.inference_only = inference_only
            if current is not None and single_agent_rl_module_spec is None:
                # The default models' keys are folded into the config's model config; a user's
                # module's own keys (which the config's leaves out) stay on the spec.
                own = {
                    key: value
                    for key, value in single._get_model_config().items()
                    if key not in MODEL_DEFAULTS
                }
                single.model_config = own or None
            multi_spec = MultiRLModuleSpec(
                rl_module_specs={pid: copy.deepcopy(single) for pid in policies}
            )
        specs = multi_spec.rl_module_specs
        assert isinstance(specs, dict)
        for module_id in list(specs):
            module_spec = specs[module_id]
            if inference_only and module_spec.learner_only:
                multi_spec.remove_modules(module_id)
                continue
            if module_spec.module_class is None:
                # With torch (framework("torch"), or torch modules in the spec) a module
                # without a class is the algorithm's default torch module, as in RLlib.
                module_spec.module_class = (
                    config.default_torch_module_class()
                    if config.uses_torch
                    else config.default_module_class()
                )
            policy_spec = policies.get(module_id, policies.get(DEFAULT_POLICY_ID))
            if policy_spec is not None:
                if module_spec.observation_space is None:
                    module_spec.observation_space = policy_spec.observation_space
                if module_spec.action_space is None:
                    module_spec.action_space = policy_spec.action_space
            module_spec.model_config = {
                **config.model_config,
                **config._model_config_auto_includes,
                **module_spec._get_model_config(),
            }
        return multi_spec


__all__ = [
    "DEFAULT_POLICY_MAPPING",
    "MultiAgentConfig",
    "MultiAgentSetup",
    "as_policy_specs",
    "check_multi_rl_module_spec",
    "check_overrides_per_module",
    "check_policies",
    "check_policies_to_train",
    "check_policy_mapping_fn",
    "policy_dict",
]
