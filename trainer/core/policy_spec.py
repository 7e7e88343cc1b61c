"""RLlib's `PolicySpec` (`ray.rllib.policy.policy.PolicySpec`): one entry of
`config.multi_agent(policies={policy_id: PolicySpec(...)})`.

On RLlib's new API stack (the one here) a policy is a module: `observation_space` and
`action_space` (None: inferred from the env) are the spaces its module is built for, and
`config` is a dict of settings that override the algorithm's for this module (as
`rl_module(algorithm_config_overrides_per_module=...)` does). `policy_class` is an old-stack
Policy class; it has no effect on the new stack (RLlib ignores it there too).
"""

from __future__ import annotations

from typing import Any

from trainer.checkpoints.config_data import import_path, register_spec_class, resolve_import_path
from trainer.core.spaces import space_from_dict, space_to_dict


@register_spec_class
class PolicySpec:
    """A policy (module) of a multi-agent config: its class (old stack), spaces and config
    overrides; any field left None is filled in from the algorithm and the env."""

    def __init__(
        self,
        policy_class: type | None = None,
        observation_space: Any = None,
        action_space: Any = None,
        config: Any = None,
    ):
        self.policy_class = policy_class
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = config

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PolicySpec):
            return NotImplemented
        return (
            self.policy_class == other.policy_class
            and self.observation_space == other.observation_space
            and self.action_space == other.action_space
            and self.config == other.config
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value (as RLlib's)

    def get_state(self) -> tuple:
        """RLlib's state of a spec: `(policy_class, observation_space, action_space,
        config)`."""
        return (self.policy_class, self.observation_space, self.action_space, self.config)

    @classmethod
    def from_state(cls, state: Any) -> PolicySpec:
        """The spec `get_state()` (a 4-tuple) or its `__dict__` describes."""
        if isinstance(state, dict):
            spec = cls()
            spec.__dict__.update(state)
            return spec
        return cls(*state)

    def serialize(self) -> dict[str, Any]:
        """The spec as plain data: `policy_class` by "module:qualname" import path, the
        spaces described (`trainer.core.spaces.space_to_dict`), `config` as it is."""
        policy_class = None if self.policy_class is None else import_path(self.policy_class)
        if self.policy_class is not None and policy_class is None:
            raise ValueError(
                f"PolicySpec.serialize(): policy_class={self.policy_class!r} has no import path"
            )
        return {
            "policy_class": policy_class,
            "observation_space": space_to_dict(self.observation_space),
            "action_space": space_to_dict(self.action_space),
            "config": self.config,
        }

    @classmethod
    def deserialize(cls, spec: dict[str, Any]) -> PolicySpec:
        """The spec `serialize()` described."""
        policy_class = spec.get("policy_class")
        return cls(
            policy_class=resolve_import_path(policy_class)
            if isinstance(policy_class, str)
            else policy_class,
            observation_space=space_from_dict(spec.get("observation_space")),
            action_space=space_from_dict(spec.get("action_space")),
            config=spec.get("config"),
        )

    def __repr__(self) -> str:
        fields = {
            "policy_class": self.policy_class,
            "observation_space": self.observation_space,
            "action_space": self.action_space,
            "config": self.config,
        }
        given = ", ".join(
            f"{name}={value!r}" for name, value in fields.items() if value is not None
        )
        return f"PolicySpec({given})"


__all__ = ["PolicySpec"]
