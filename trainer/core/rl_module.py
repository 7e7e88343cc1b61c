"""RLlib's `RLModuleSpec` (`ray.rllib.core.rl_module.rl_module.RLModuleSpec`): what
`config.rl_module(rl_module_spec=...)` takes.

Here it configures the algorithm's default (numpy) module: its `model_config` (a dict or a
`DefaultModelConfig`) is merged over the config's model config, as RLlib merges it, and its
`observation_space` / `action_space` are the spaces the networks are built for. A spec with a
`module_class` (a custom torch RLModule), a `catalog_class` or a `load_state_path` is refused
by `rl_module()` with what to do instead: custom RLModules are not supported yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class RLModuleSpec:
    """RLlib's single-module spec: the module class (None: the algorithm's default module),
    the spaces it is built for (None: the env's), `inference_only`, `learner_only`,
    `model_config`, `catalog_class` and `load_state_path`."""

    module_class: type | None = None
    observation_space: Any = None
    action_space: Any = None
    inference_only: bool = False
    learner_only: bool = False
    model_config: dict | Any | None = None
    catalog_class: type | None = None
    load_state_path: str | None = None
    # RLlib's removed spelling of `model_config` (an error there too).
    model_config_dict: dict | None = None

    def __post_init__(self) -> None:
        if self.model_config_dict is not None:
            raise ValueError(
                "RLModuleSpec(model_config_dict=...) was renamed: use "
                "RLModuleSpec(model_config=...)"
            )

    def update(self, other: RLModuleSpec, override: bool = True) -> None:
        """RLlib's merge of two specs (like `dict.update`): with `override`, every field
        `other` sets wins; without, only the fields unset here are taken from `other` (the two
        flags are then kept)."""
        if not isinstance(other, RLModuleSpec):
            raise ValueError(
                f"RLModuleSpec.update() takes another RLModuleSpec, got {type(other).__name__}"
            )
        fields = (
            "module_class",
            "observation_space",
            "action_space",
            "model_config",
            "catalog_class",
            "load_state_path",
        )
        for name in fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, (theirs or mine) if override else (mine or theirs))
        if override:
            self.inference_only = other.inference_only or self.inference_only
            self.learner_only = other.learner_only and self.learner_only
