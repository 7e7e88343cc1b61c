"""RLlib's `MultiRLModule` and `MultiRLModuleSpec` (`ray.rllib.core.rl_module.multi_rl_module`):
several modules under their module ids, each built from its own `RLModuleSpec`.

A `MultiRLModule` is a dict of modules (`multi["p0"]`, `keys()`, `items()`, `"p0" in multi`)
that modules can be added to and removed from at run time; its forward passes take and return
`{module_id: batch}`, calling each module's own pass; its state is `{module_id: state}`; it is
itself an `RLModule`, so it is saved and restored as one (one subdirectory per module: see
`trainer.core.module_checkpoint`).
"""

from __future__ import annotations

import dataclasses
import importlib
import pprint
from collections.abc import Callable, Collection, ItemsView, KeysView, ValuesView
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from trainer.capabilities import OLD_API_STACK
from trainer.checkpoints.config_data import register_spec_class
from trainer.core.rl_module import (
    MODULE_CHECKPOINT,
    RLModule,
    RLModuleSpec,
    _class_of,
    _class_path,
    validate_module_id,
)
from trainer.core.spaces import space_from_dict, space_to_dict
from trainer.util.rllib_members import refuse


def _as_set(value: str | Collection[str] | None) -> set[str] | None:
    if value is None:
        return None
    return {value} if isinstance(value, str) else set(value)


def _selected(module_id: str, components: Any, not_components: Any) -> bool:
    """RLlib's component selection: `module_id` is taken when `components` (None: all) names it
    or one of its subcomponents ("module_id/..."), and `not_components` does not name it."""
    wanted, unwanted = _as_set(components), _as_set(not_components)
    if unwanted is not None and module_id in unwanted:
        return False
    if wanted is None:
        return True
    return any(name == module_id or name.startswith(f"{module_id}/") for name in wanted)


def _subcomponents(module_id: str, components: Any) -> set[str] | None:
    """The parts of `components` below `module_id` ("module_id/x" -> "x"), or None."""
    names = _as_set(components)
    if names is None:
        return None
    below = {name.split("/", 1)[1] for name in names if name.startswith(f"{module_id}/")}
    return below or None


#: The forward passes a `MultiRLModule` subclass overrides to run its modules together.
_CONTAINER_FORWARDS = ("_forward", "_forward_inference", "_forward_exploration", "_forward_train")


def runs_modules_together(module_class: type) -> bool:
    """Whether `module_class` (a MultiRLModule class) overrides the container's forward passes,
    as RLlib's shared-encoder example does: its modules then act and train through the
    container's forward (`{module_id: batch} -> {module_id: output}`), not each on its own."""
    return any(
        getattr(module_class, name, None) is not getattr(MultiRLModule, name)
        for name in _CONTAINER_FORWARDS
    )


class MultiRLModule(RLModule):
    """A container of modules keyed by module id (RLlib's `MultiRLModule`).

    Built from `rl_module_specs={module_id: RLModuleSpec}` (each spec's `build()`), or empty
    and filled with `add_module`. With `inference_only=True` every sub-spec is built
    inference-only; with None, the container is inference-only when all its specs are.
    """

    def __init__(
        self,
        config: Any = None,
        *,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        inference_only: bool | None = None,
        learner_only: bool | None = None,
        model_config: dict | None = None,
        rl_module_specs: dict[Any, RLModuleSpec] | None = None,
        **kwargs: Any,
    ):
        specs = dict(rl_module_specs or {})
        for module_id, spec in specs.items():
            if not isinstance(spec, RLModuleSpec):
                raise ValueError(
                    f"MultiRLModule(rl_module_specs=...): the spec of module {module_id!r} is a "
                    f"{type(spec).__name__}, not an RLModuleSpec"
                )
        specs = {module_id: dataclasses.replace(spec) for module_id, spec in specs.items()}
        if inference_only is None:
            inference_only = bool(specs) and all(spec.inference_only for spec in specs.values())
        if inference_only:
            for spec in specs.values():
                spec.inference_only = True
        self.rl_module_specs: dict[Any, RLModuleSpec] = specs
        super().__init__(
            config,
            observation_space=observation_space,
            action_space=action_space,
            inference_only=inference_only,
            learner_only=False,
            model_config=model_config,
            **kwargs,
        )

    def setup(self) -> None:
        """Builds every module from its spec."""
        self._rl_modules: dict[Any, Any] = {
            module_id: spec.build() for module_id, spec in self.rl_module_specs.items()
        }

    # -- forward passes: {module_id: batch} -> {module_id: output} ----------------------------
    def _forward(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        return {
            mid: self._rl_modules[mid]._forward(module_batch, **kwargs)
            for mid, module_batch in batch.items()
            if mid in self
        }

    def _forward_inference(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        return {
            mid: self._rl_modules[mid].forward_inference(module_batch, **kwargs)
            for mid, module_batch in batch.items()
            if mid in self
        }

    def _forward_exploration(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        return {
            mid: self._rl_modules[mid].forward_exploration(module_batch, **kwargs)
            for mid, module_batch in batch.items()
            if mid in self
        }

    def _forward_train(self, batch: dict[Any, Any], **kwargs: Any) -> dict[Any, Any]:
        return {
            mid: self._rl_modules[mid].forward_train(module_batch, **kwargs)
            for mid, module_batch in batch.items()
            if mid in self
        }

    def get_initial_state(self) -> dict[Any, Any]:
        return {mid: module.get_initial_state() for mid, module in self._rl_modules.items()}

    def is_stateful(self) -> bool:
        return any(bool(state) for state in self.get_initial_state().values())

    # -- the modules ---------------------------------------------------------------------------
    def add_module(self, module_id: Any, module: Any, *, override: bool = False) -> None:
        """Adds `module` under `module_id`; an id already present raises ValueError unless
        `override`."""
        validate_module_id(module_id)
        if module_id in self._rl_modules and not override:
            raise ValueError(
                f"MultiRLModule.add_module({module_id!r}): module id {module_id!r} already "
                "exists; pass override=True to replace it"
            )
        if not module.inference_only:
            self.inference_only = False
        self._rl_modules[module_id] = module
        self.rl_module_specs[module_id] = RLModuleSpec.from_module(module)

    def remove_module(self, module_id: Any, *, raise_err_if_not_found: bool = True) -> None:
        """Removes the module `module_id` (KeyError if absent, unless
        `raise_err_if_not_found=False`)."""
        if raise_err_if_not_found:
            self._check_module_exists(module_id)
        self._rl_modules.pop(module_id, None)
        self.rl_module_specs.pop(module_id, None)

    def foreach_module(
        self, func: Callable[..., Any], *, return_dict: bool = False, **kwargs: Any
    ) -> list[Any] | dict[Any, Any]:
        """`func(module_id, module, **kwargs)` for every module: the results as a list, or a
        dict by module id with `return_dict`."""
        results = {
            mid: func(mid, module.unwrapped(), **kwargs) for mid, module in self._rl_modules.items()
        }
        return results if return_dict else list(results.values())

    def __contains__(self, module_id: Any) -> bool:
        return module_id in self._rl_modules

    def __getitem__(self, module_id: Any) -> Any:
        self._check_module_exists(module_id)
        return self._rl_modules[module_id]

    def get(self, module_id: Any, default: Any = None) -> Any:
        return self._rl_modules.get(module_id, default)

    def items(self) -> ItemsView[Any, Any]:
        return self._rl_modules.items()

    def keys(self) -> KeysView[Any]:
        return self._rl_modules.keys()

    def values(self) -> ValuesView[Any]:
        return self._rl_modules.values()

    def __len__(self) -> int:
        return len(self._rl_modules)

    def __repr__(self) -> str:
        return f"MARL({pprint.pformat(self._rl_modules)})"

    def _check_module_exists(self, module_id: Any) -> None:
        if module_id not in self._rl_modules:
            raise KeyError(
                f"module {module_id!r} not found in this MultiRLModule; its modules: "
                f"{sorted(map(str, self._rl_modules))}"
            )

    # -- state -----------------------------------------------------------------------------------
    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        inference_only: bool = False,
        **kwargs: Any,
    ) -> dict[Any, Any]:
        """`{module_id: module state}` for the selected modules (`components`: module ids, or
        "module_id/part" for part of one; `not_components`: module ids to leave out)."""
        return {
            mid: module.get_state(
                components=_subcomponents(mid, components),
                not_components=_subcomponents(mid, not_components),
                inference_only=inference_only,
            )
            for mid, module in self._rl_modules.items()
            if _selected(mid, components, not_components)
        }

    def set_state(self, state: dict[Any, Any]) -> None:
        """Sets each module's state from `{module_id: state}` (ids not held here are skipped;
        modules without an entry keep theirs)."""
        for mid, module_state in state.items():
            if mid in self:
                self._rl_modules[mid].set_state(module_state)

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {
            "observation_space": self.observation_space,
            "action_space": self.action_space,
            "inference_only": self.inference_only,
            "learner_only": self.learner_only,
            "model_config": self.model_config,
            "rl_module_specs": self.rl_module_specs,
        }

    def get_checkpointable_components(self) -> list[tuple[Any, Any]]:
        return list(self._rl_modules.items())

    def as_multi_rl_module(self) -> MultiRLModule:
        """This module itself (it is one already)."""
        return self


@register_spec_class
@dataclass
@refuse(
    "ray.rllib.core.rl_module.multi_rl_module.MultiRLModuleSpec",
    OLD_API_STACK,
    "RLlib's deprecated RLModuleConfig form of a module's constructor arguments; modules "
    "here take RLlib's keyword arguments (observation_space=, action_space=, "
    "model_config=, ...)",
    "get_rl_module_config",
)
class MultiRLModuleSpec:
    """RLlib's spec of a MultiRLModule: its class, its own spaces, `inference_only` and
    `model_config`, and `rl_module_specs` (`{module_id: RLModuleSpec}`, or one RLModuleSpec
    that `AlgorithmConfig.get_multi_rl_module_spec` uses for every policy). `load_state_path`
    and `modules_to_load` say which modules' states to load from a checkpoint before training
    (`load_states()`)."""

    multi_rl_module_class: type = MultiRLModule
    observation_space: Any = None
    action_space: Any = None
    inference_only: bool | None = None
    model_config: dict | None = None
    rl_module_specs: dict[Any, RLModuleSpec] | RLModuleSpec | None = None
    load_state_path: str | None = None
    modules_to_load: set[Any] | None = None
    # RLlib's removed spelling of `rl_module_specs`: an error when given (there too); after
    # construction the same dict as `rl_module_specs`, as RLlib 2.60 keeps it.
    module_specs: dict[Any, RLModuleSpec] | None = None

    def __post_init__(self) -> None:
        if self.module_specs is not None and self.module_specs is not self.rl_module_specs:
            raise ValueError(
                "MultiRLModuleSpec(module_specs=...) was renamed: use "
                "MultiRLModuleSpec(rl_module_specs=...)"
            )
        if self.rl_module_specs is None:  # RLlib 2.60's check and words
            raise ValueError(
                "`MultiRLModuleSpec.rl_module_specs` must be a dict mapping ModuleIDs to "
                "RLModuleSpecs. To use one RLModule for all agents, pass your `RLModuleSpec` "
                "directly to `config.rl_module(rl_module_spec=..)`, which RLlib replicates "
                "across your policies; to configure modules individually, pass a dict, e.g. "
                '`{"my_module": RLModuleSpec(..)}`.'
            )
        specs = self.rl_module_specs
        if isinstance(specs, dict):
            for module_id, spec in specs.items():
                if not isinstance(spec, RLModuleSpec):
                    raise ValueError(
                        f"MultiRLModuleSpec(rl_module_specs=...): the spec of module "
                        f"{module_id!r} is a {type(spec).__name__}, not an RLModuleSpec"
                    )
        elif not isinstance(specs, RLModuleSpec):
            raise ValueError(
                "MultiRLModuleSpec(rl_module_specs=...) must be a dict {module_id: "
                f"RLModuleSpec}} or one RLModuleSpec, got {type(specs).__name__}"
            )
        if not (
            isinstance(self.multi_rl_module_class, type)
            and issubclass(self.multi_rl_module_class, MultiRLModule)
        ):
            raise ValueError(
                f"MultiRLModuleSpec(multi_rl_module_class={self.multi_rl_module_class!r}) must "
                "be MultiRLModule or a subclass"
            )
        if self.modules_to_load is not None:
            self.modules_to_load = set(self.modules_to_load)
        # RLlib's older name, read back as the same specs (as RLlib 2.60 sets it).
        self.module_specs = specs if isinstance(specs, dict) else None
        if self.inference_only is None:
            self.inference_only = isinstance(specs, dict) and all(
                spec.inference_only for spec in specs.values()
            )

    def build(self, module_id: Any = None) -> Any:
        """The MultiRLModule, or with `module_id` only that module."""
        specs = self._specs_dict("build")
        if module_id is not None:
            return specs[module_id].build()
        model_config = self.model_config
        if dataclasses.is_dataclass(model_config) and not isinstance(model_config, type):
            model_config = dataclasses.asdict(model_config)
        return self.multi_rl_module_class(
            observation_space=self.observation_space,
            action_space=self.action_space,
            inference_only=self.inference_only,
            model_config=model_config,
            rl_module_specs=specs,
        )

    def load_states(self, module: MultiRLModule) -> None:
        """Loads the states of `modules_to_load` (None: every module both hold) from the
        MultiRLModule checkpoint at `load_state_path` into `module`."""
        if self.load_state_path is None:
            return
        restore_module = importlib.import_module(MODULE_CHECKPOINT).restore_module
        if self.modules_to_load is None:
            restore_module(module, self.load_state_path)
            return
        for module_id in sorted(self.modules_to_load, key=str):
            restore_module(module, self.load_state_path, component=module_id)

    def _specs_dict(self, what: str) -> dict[Any, RLModuleSpec]:
        if not isinstance(self.rl_module_specs, dict):
            raise ValueError(
                f"MultiRLModuleSpec.{what}(): rl_module_specs must be a dict {{module_id: "
                "RLModuleSpec} (one RLModuleSpec is expanded per policy by "
                "AlgorithmConfig.get_multi_rl_module_spec())"
            )
        return self.rl_module_specs

    def add_modules(self, module_specs: dict[Any, RLModuleSpec], override: bool = True) -> None:
        """Adds specs; an id present already is replaced (`override`) or updated with the new
        spec's set fields."""
        specs = self._specs_dict("add_modules")
        for module_id, spec in module_specs.items():
            if override or module_id not in specs:
                if not spec.inference_only:
                    self.inference_only = False
                specs[module_id] = spec
            else:
                specs[module_id].update(spec)

    def remove_modules(self, module_ids: Any) -> None:
        """Removes the specs of `module_ids` (one id or a collection; absent ids are
        skipped)."""
        specs = self._specs_dict("remove_modules")
        ids = (
            [module_ids]
            if isinstance(module_ids, str) or not isinstance(module_ids, Collection)
            else list(module_ids)
        )
        for module_id in ids:
            specs.pop(module_id, None)

    @classmethod
    def from_module(cls, module: MultiRLModule) -> MultiRLModuleSpec:
        """The spec that builds a MultiRLModule like `module`."""
        return cls(
            multi_rl_module_class=type(module),
            observation_space=module.observation_space,
            action_space=module.action_space,
            inference_only=module.inference_only,
            model_config=module.model_config,
            rl_module_specs={
                mid: RLModuleSpec.from_module(sub.unwrapped()) for mid, sub in module.items()
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (classes by import path, spaces described, each module's
        spec by `RLModuleSpec.to_dict`)."""
        return {
            "multi_rl_module_class": _class_path(
                self.multi_rl_module_class, "multi_rl_module_class"
            ),
            "observation_space": space_to_dict(self.observation_space),
            "action_space": space_to_dict(self.action_space),
            "inference_only": self.inference_only,
            "model_config": self.model_config,
            "rl_module_specs": {
                module_id: spec.to_dict() for module_id, spec in self._specs_dict("to_dict").items()
            },
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MultiRLModuleSpec:
        """The spec `to_dict()` described."""
        return cls(
            multi_rl_module_class=_class_of(d["multi_rl_module_class"]),
            observation_space=space_from_dict(d.get("observation_space")),
            action_space=space_from_dict(d.get("action_space")),
            model_config=d.get("model_config"),
            inference_only=d.get("inference_only"),
            rl_module_specs={
                module_id: RLModuleSpec.from_dict(spec)
                for module_id, spec in (d.get("rl_module_specs") or {}).items()
            },
        )

    def update(self, other: MultiRLModuleSpec | RLModuleSpec, override: bool = False) -> None:
        """RLlib's merge: an RLModuleSpec fills the unset fields of every module spec; a
        MultiRLModuleSpec's module specs are added (`override`) or merged."""
        if isinstance(other, RLModuleSpec):
            if not other.inference_only:
                self.inference_only = False
            for spec in self._specs_dict("update").values():
                spec.update(other, override=False)
            return
        if not isinstance(other, MultiRLModuleSpec):
            raise ValueError(
                "MultiRLModuleSpec.update() takes a MultiRLModuleSpec or an RLModuleSpec, got "
                f"{type(other).__name__}"
            )
        self.add_modules(other._specs_dict("update"), override=override)

    def as_multi_rl_module_spec(self) -> MultiRLModuleSpec:
        return self

    def __contains__(self, module_id: Any) -> bool:
        return isinstance(self.rl_module_specs, dict) and module_id in self.rl_module_specs

    def __getitem__(self, module_id: Any) -> RLModuleSpec:
        return self._specs_dict("__getitem__")[module_id]


__all__ = ["MultiRLModule", "MultiRLModuleSpec"]
