"""Adding and removing a module of a running multi-agent Algorithm (RLlib's
`Algorithm.add_module` / `remove_module`, for self-play).

A `ModuleChange` says what changes: the module (its id, and for an addition its spec and its
policy's spaces), its config overrides, and the new mapping function and modules to train, if
any. The same change is applied to every copy of the config (the Algorithm's, the evaluation
config, each EnvRunner's own, in its process), so a runner that is restarted later, or an
Algorithm built from a checkpoint's config, has the same modules as the running ones.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.policy_spec import PolicySpec
from trainer.core.rl_module import RLModuleSpec


@dataclass
class ModuleChange:
    """One module added (`spec` given) or removed (`spec` None), and the settings that change
    with it (None: kept as they are)."""

    module_id: str
    spec: RLModuleSpec | None = None
    config_overrides: dict | None = None
    mapping_fn: Callable[..., Any] | None = None
    policies_to_train: Any = None

    @property
    def adds(self) -> bool:
        return self.spec is not None

    def apply_to(self, config: Any) -> None:
        """Changes `config` in place (a frozen config is unfrozen for it, then frozen again)."""
        frozen = config.is_frozen
        object.__setattr__(config, "_frozen", False)
        try:
            self._apply(config)
        finally:
            if frozen:
                config.freeze()

    def _apply(self, config: Any) -> None:
        policies = dict(config.policies)
        current = config.__dict__.get("_rl_module_spec")
        multi_class: type = MultiRLModule
        if isinstance(current, MultiRLModuleSpec):
            multi_class = current.multi_rl_module_class
            given = current.rl_module_specs
            specs = (
                {pid: copy.deepcopy(given) for pid in policies}
                if isinstance(given, RLModuleSpec)
                else {mid: copy.deepcopy(spec) for mid, spec in (given or {}).items()}
            )
        else:
            # The modules were built from the config's model config: say so per module.
            specs = {pid: RLModuleSpec() for pid in policies}
        if self.spec is not None:
            policies[self.module_id] = PolicySpec(
                observation_space=self.spec.observation_space,
                action_space=self.spec.action_space,
            )
            specs[self.module_id] = copy.deepcopy(self.spec)
        else:
            policies.pop(self.module_id, None)
            specs.pop(self.module_id, None)
            overrides = dict(config.algorithm_config_overrides_per_module)
            if overrides.pop(self.module_id, None) is not None:
                config.algorithm_config_overrides_per_module = overrides
                config.__dict__["_per_module_overrides"] = {}
        config.multi_agent(policies=policies)
        # Module states named for loading were loaded when the learners were built.
        config.rl_module(
            rl_module_spec=MultiRLModuleSpec(
                multi_rl_module_class=multi_class, rl_module_specs=specs
            )
        )
        if self.config_overrides is not None:
            config.rl_module(
                algorithm_config_overrides_per_module={self.module_id: self.config_overrides}
            )
        if self.mapping_fn is not None:
            config.multi_agent(policy_mapping_fn=self.mapping_fn)
        if self.policies_to_train is not None:
            config.multi_agent(policies_to_train=self.policies_to_train)


def runner_add_module(runner: Any, change: ModuleChange) -> None:
    """On an EnvRunner (in its process): `runner.add_module(change)`."""
    runner.add_module(change)


def runner_remove_module(runner: Any, change: ModuleChange) -> None:
    """On an EnvRunner (in its process): `runner.remove_module(change)`."""
    runner.remove_module(change)


def completed_spec(module_id: str, spec: RLModuleSpec, env_spaces: Any) -> RLModuleSpec:
    """`spec` with its spaces: its own, else the env's when all agents share one observation
    space and one action space (else the error asks for them)."""
    if not isinstance(spec, RLModuleSpec):
        raise ValueError(
            f"add_module({module_id!r}, module_spec={spec!r}): module_spec must be an "
            "RLModuleSpec (for example RLModuleSpec.from_module(algo.get_module('p0')))"
        )
    spec = copy.deepcopy(spec)
    # RLlib's Learner.add_module builds the learner's copy whole: a spec taken from an
    # EnvRunner's inference-only module (`RLModuleSpec.from_module(algo.get_module(...))`)
    # adds a module the learners can train.
    if getattr(spec, "inference_only", False):
        spec.inference_only = False
    if spec.observation_space is not None and spec.action_space is not None:
        return spec
    observation_spaces, action_spaces = env_spaces or ({}, {})
    spaces: dict[Any, Any]
    for name, spaces in (
        ("observation_space", observation_spaces),
        ("action_space", action_spaces),
    ):
        if getattr(spec, name) is not None:
            continue
        distinct = list({repr(space): space for space in spaces.values()}.values())
        if len(distinct) != 1:
            raise ValueError(
                f"add_module({module_id!r}): module_spec has no {name}, and the env's agents "
                f"do not share one ({len(distinct)} different): give "
                f"RLModuleSpec({name}=...)"
            )
        setattr(spec, name, distinct[0])
    return spec
