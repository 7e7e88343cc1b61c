"""RLlib's RLModule API (`ray.rllib.core.rl_module.rl_module`) on numpy: `RLModule`, the base
class of a user's own module, and `RLModuleSpec`, what builds one.

A user subclasses `RLModule` as in RLlib: the constructor takes `observation_space=`,
`action_space=`, `inference_only=`, `learner_only=`, `model_config=` and `catalog_class=`, and
calls `setup()` once; `forward_inference` / `forward_exploration` / `forward_train` call the
subclass's `_forward_inference` / `_forward_exploration` / `_forward_train`, which default to
`_forward`. Batches are dicts keyed by RLlib's `Columns` names (`"obs"`, `"actions"`, ...)
holding numpy arrays. A module's state (`get_state` / `set_state`) is plain data: it is saved
with `save_to_path` into this project's msgpack checkpoint format and read back with
`restore_from_path` / `from_checkpoint` (no pickle: the class is stored by import path).

The algorithms' default numpy modules (PPO's `PolicyModule`, DQN's `QModule`)
answer the same questions through `RLModuleAPI`, the part of the API that needs no
constructor of RLlib's form. They count as RLModules: `isinstance(module, RLModule)` is True
for every `RLModuleAPI` module (as it is for RLlib's default modules), while the subclasses of
`RLModule` (`MultiRLModule`, `TorchRLModule`, a user's class) keep Python's own checks.

`RLModuleSpec` is also what `config.rl_module(rl_module_spec=...)` takes for the default module:
its `model_config` is merged over the config's and its spaces are the ones the networks are
built for.
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from trainer.capabilities import REMOTE_FILESYSTEMS
from trainer.checkpoints.config_data import import_path, register_spec_class, resolve_import_path
from trainer.checkpoints.format import library_version
from trainer.compat.rllib_utils import DEFAULT_MODULE_ID
from trainer.core.catalog import check_catalog_class
from trainer.core.spaces import space_from_dict, space_to_dict
from trainer.errors import UnsupportedValue

#: What RLlib's RLModule API hands out or calls that sits above this module in `trainer.core`
#: (each imports this one): the MultiRLModule a module wraps itself in (`as_multi_rl_module`),
#: its spec (`as_multi_rl_module_spec`), and the module checkpoints that save and load modules.
#: Named by import path (and typed here as what this module knows: an `RLModule`, and `Any`
#: for the spec).
MULTI_RL_MODULE = "trainer.core.multi_rl_module:MultiRLModule"
MULTI_RL_MODULE_SPEC = "trainer.core.multi_rl_module:MultiRLModuleSpec"
MODULE_CHECKPOINT = "trainer.core.module_checkpoint"

#: Characters a module id may not hold: it names a directory in checkpoints (RLlib's rule).
_BAD_ID_CHARACTERS = re.compile(r'[<>:"/\\|?]')


def validate_module_id(module_id: Any, error: bool = False) -> None:
    """RLlib's check of a module (policy) id: a non-empty string without characters that file
    systems refuse (`<>:"/\\|?`) and not ending in a dot or a space. With `error`, a bad id
    raises ValueError; without, it passes (RLlib only logs a warning then)."""
    if (
        not isinstance(module_id, str)
        or not module_id
        or _BAD_ID_CHARACTERS.search(module_id)
        or module_id[-1] in (" ", ".")
    ):
        if error:
            raise ValueError(
                f"PolicyID `{module_id}` not valid! A module (policy) id must be a "
                'non-empty string without any of <>:"/\\|? and must not end with a dot or '
                "a space (it names a directory in checkpoints); module id "
                f"{module_id!r} is not valid"
            )


def _model_config_dict(model_config: Any) -> dict:
    """A model config given as a dict, a `DefaultModelConfig` or None, as a dict."""
    if dataclasses.is_dataclass(model_config) and not isinstance(model_config, type):
        return dataclasses.asdict(model_config)
    return dict(model_config or {})


def _class_path(cls: type | None, what: str) -> str | None:
    """`cls` as a "module:qualname" import path (None stays None)."""
    if cls is None:
        return None
    path = import_path(cls)
    if path is None:
        raise ValueError(
            f"{what}={cls.__qualname__} has no import path (defined in __main__ or inside a "
            "function), so it cannot be written as plain data"
        )
    return path


def _class_of(path: str | None) -> Any:
    """The class a "module:qualname" import path names (None stays None)."""
    if path is None:
        return None
    return resolve_import_path(path)


@dataclass
class RLModuleConfig:
    """RLlib's deprecated bundle of a module's constructor arguments. RLlib 2.60 still sets it
    on every module as `module.config` (its tests read `module.config.observation_space`), so
    every module here answers it too (`RLModuleAPI.config`); a module is built from keyword
    arguments, never from one of these (`RLModule(config=...)` is refused)."""

    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None
    inference_only: bool = False
    learner_only: bool = False
    model_config_dict: dict[str, Any] = dataclasses.field(default_factory=dict)
    catalog_class: type | None = None

    def get_catalog(self) -> Any:
        """The catalog built for these spaces and model config (None without a class)."""
        if self.catalog_class is None:
            return None
        return self.catalog_class(
            observation_space=self.observation_space,
            action_space=self.action_space,
            model_config_dict=self.model_config_dict,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the spaces as dicts and the catalog class as an import path."""
        return {
            "observation_space": space_to_dict(self.observation_space),
            "action_space": space_to_dict(self.action_space),
            "inference_only": self.inference_only,
            "learner_only": self.learner_only,
            "model_config_dict": self.model_config_dict,
            "catalog_class_path": import_path(self.catalog_class) if self.catalog_class else "",
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RLModuleConfig:
        """The config `to_dict` wrote."""
        path = d["catalog_class_path"]
        return cls(
            observation_space=space_from_dict(d["observation_space"]),
            action_space=space_from_dict(d["action_space"]),
            inference_only=d["inference_only"],
            learner_only=d["learner_only"],
            model_config_dict=d["model_config_dict"],
            catalog_class=resolve_import_path(path) if path else None,
        )


@register_spec_class
@dataclass
class RLModuleSpec:
    """RLlib's single-module spec: the module class (None: the algorithm's default module,
    which `AlgorithmConfig.get_rl_module_spec()` fills in), the spaces it is built for,
    `inference_only`, `learner_only`, `model_config`, `catalog_class` and `load_state_path`."""

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

    def build(self) -> Any:
        """The module this spec describes: `module_class(observation_space=...,
        action_space=..., inference_only=..., model_config=..., catalog_class=...)` for an
        `RLModule` subclass; the default numpy modules build from the spec themselves."""
        if self.module_class is None:
            raise ValueError(
                "RLModuleSpec.build(): module_class is not set; give the RLModule class, or "
                "build the algorithm's default module from config.get_rl_module_spec(...)"
            )
        if self.observation_space is None:
            raise ValueError(
                f"RLModuleSpec.build(): observation_space is not set (module_class="
                f"{self.module_class.__qualname__})"
            )
        from_spec = getattr(self.module_class, "from_rl_module_spec", None)
        if from_spec is not None:  # the default numpy modules (`RLModuleAPI`)
            return from_spec(self)
        return self.module_class(
            observation_space=self.observation_space,
            action_space=self.action_space,
            inference_only=self.inference_only,
            learner_only=self.learner_only,
            model_config=self._get_model_config(),
            catalog_class=self.catalog_class,
        )

    @classmethod
    def from_module(cls, module: Any) -> RLModuleSpec:
        """The spec that builds a module like `module` (its class, spaces, flags and model
        config)."""
        if isinstance(module, resolve_import_path(MULTI_RL_MODULE)):
            raise ValueError("a MultiRLModule cannot be described by an RLModuleSpec")
        if isinstance(module, RLModuleAPI):
            _, kwargs = module.get_ctor_args_and_kwargs()
        else:  # any object with RLlib's attributes
            catalog = getattr(module, "catalog", None)
            kwargs = {
                "observation_space": module.observation_space,
                "action_space": module.action_space,
                "inference_only": module.inference_only,
                "learner_only": module.learner_only,
                "model_config": module.model_config,
                "catalog_class": type(catalog) if catalog is not None else None,
            }
        return cls(
            module_class=type(module),
            observation_space=kwargs["observation_space"],
            action_space=kwargs["action_space"],
            inference_only=bool(kwargs["inference_only"]),
            learner_only=bool(kwargs["learner_only"]),
            model_config=kwargs["model_config"],
            catalog_class=kwargs["catalog_class"],
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

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data: classes by "module:qualname" import path, spaces
        described (`trainer.core.spaces.space_to_dict`)."""
        return {
            "module_class": _class_path(self.module_class, "module_class"),
            "observation_space": space_to_dict(self.observation_space),
            "action_space": space_to_dict(self.action_space),
            "inference_only": self.inference_only,
            "learner_only": self.learner_only,
            "model_config": self._get_model_config(),
            "catalog_class": _class_path(self.catalog_class, "catalog_class"),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RLModuleSpec:
        """The spec `to_dict()` described."""
        return cls(
            module_class=_class_of(d.get("module_class")),
            observation_space=space_from_dict(d.get("observation_space")),
            action_space=space_from_dict(d.get("action_space")),
            inference_only=bool(d.get("inference_only", False)),
            learner_only=bool(d.get("learner_only", False)),
            model_config=d.get("model_config"),
            catalog_class=_class_of(d.get("catalog_class")),
        )

    def as_multi_rl_module_spec(self) -> Any:
        """A `MultiRLModuleSpec` holding this spec under "default_policy"."""
        return resolve_import_path(MULTI_RL_MODULE_SPEC)(
            rl_module_specs={DEFAULT_MODULE_ID: self}, load_state_path=self.load_state_path
        )

    def _get_model_config(self) -> dict:
        return _model_config_dict(self.model_config)

    def get_rl_module_config(self) -> RLModuleConfig:
        """RLlib's deprecated `RLModuleConfig` of this spec's constructor arguments."""
        return RLModuleConfig(
            observation_space=self.observation_space,
            action_space=self.action_space,
            inference_only=self.inference_only,
            learner_only=self.learner_only,
            model_config_dict=self._get_model_config(),
            catalog_class=self.catalog_class,
        )


class RLModuleAPI:
    """The part of RLlib's RLModule API every module here answers, the default numpy modules
    included: the flags and spaces, `get_initial_state` / `is_stateful`, `unwrapped`,
    `as_multi_rl_module`, and checkpoints (`save_to_path`, `restore_from_path`,
    `from_checkpoint`) of the state `get_state` returns."""

    #: RLlib's name of a module's state file in its checkpoint (`module_state.msgpack`).
    STATE_FILE_NAME = "module_state"
    #: The checkpoint's description (format, class, constructor arguments, files).
    METADATA_FILE_NAME = "metadata.json"
    #: RLlib's framework attribute: None (numpy here).
    framework: str | None = None

    observation_space: Any
    action_space: Any
    inference_only: bool
    learner_only: bool
    model_config: Any

    @property
    def config(self) -> RLModuleConfig:
        """RLlib's deprecated `RLModuleConfig` of the module's constructor arguments (RLlib
        2.60 sets it on every module, and its tests read `module.config.observation_space`):
        the one set on the module, else one made from its spaces, flags and model config."""
        config = self.__dict__.get("_rl_module_config")
        if config is None:
            catalog = getattr(self, "catalog", None)
            config = RLModuleConfig(
                observation_space=self.observation_space,
                action_space=self.action_space,
                inference_only=bool(self.inference_only),
                learner_only=bool(self.learner_only),
                model_config_dict=_model_config_dict(self.model_config),
                catalog_class=type(catalog) if catalog is not None else None,
            )
        return config

    @config.setter
    def config(self, config: RLModuleConfig) -> None:
        self.__dict__["_rl_module_config"] = config

    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        inference_only: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def set_state(self, state: dict[str, Any]) -> None:
        raise NotImplementedError

    # RLlib 2.60 keeps its modules' spec methods as deprecated no-ops (no spec is checked).
    def input_specs_train(self) -> Any:
        """RLlib's deprecated spec hook: nothing is checked, None."""
        return None

    def input_specs_inference(self) -> Any:
        """RLlib's deprecated spec hook: nothing is checked, None."""
        return None

    def input_specs_exploration(self) -> Any:
        """RLlib's deprecated spec hook: nothing is checked, None."""
        return None

    def output_specs_train(self) -> Any:
        """RLlib's deprecated spec hook: nothing is checked, None."""
        return None

    def output_specs_inference(self) -> Any:
        """RLlib's deprecated spec hook: nothing is checked, None."""
        return None

    def output_specs_exploration(self) -> Any:
        """RLlib's deprecated spec hook: nothing is checked, None."""
        return None

    def _default_input_specs(self) -> Any:
        """RLlib's deprecated spec hook: nothing is checked, None."""
        return None

    def get_initial_state(self) -> Any:
        """The initial recurrent state: `{}` (a module without state)."""
        return {}

    def is_stateful(self) -> bool:
        """Whether the module is recurrent: its initial state is a non-empty dict."""
        initial_state = self.get_initial_state()
        if not isinstance(initial_state, dict):
            raise ValueError(
                f"{type(self).__name__}.get_initial_state() must return a dict, got "
                f"{type(initial_state).__name__}"
            )
        return bool(initial_state)

    def unwrapped(self) -> Any:
        """The module itself (RLlib unwraps distributed wrappers here; there are none)."""
        return self

    def as_multi_rl_module(self) -> RLModule:
        """A `MultiRLModule` holding this module under "default_policy" (this very
        instance, with its weights)."""
        multi = resolve_import_path(MULTI_RL_MODULE)(
            observation_space=self.observation_space,
            action_space=self.action_space,
            inference_only=self.inference_only,
        )
        multi.add_module(DEFAULT_MODULE_ID, self)
        return multi

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        """RLlib's constructor arguments of this module: `((), {observation_space, ...})`."""
        catalog = getattr(self, "catalog", None)
        return (), {
            "observation_space": self.observation_space,
            "action_space": self.action_space,
            "inference_only": self.inference_only,
            "learner_only": self.learner_only,
            "model_config": self.model_config,
            "catalog_class": type(catalog) if catalog is not None else None,
        }

    # -- checkpoints -----------------------------------------------------------------------
    def get_metadata(self) -> dict[str, Any]:
        """What the checkpoint's metadata.json says besides the constructor arguments: the
        state file's name and the library version (RLlib names Ray's version here)."""
        return {"state_file": self.STATE_FILE_NAME, "library_version": library_version()}

    def get_checkpointable_components(self) -> list[tuple[str, Any]]:
        """Sub-components saved in their own subdirectories: none (a MultiRLModule's
        modules)."""
        return []

    def save_to_path(
        self,
        path: str | os.PathLike | None = None,
        *,
        state: dict[str, Any] | None = None,
        filesystem: Any = None,
        use_msgpack: bool = False,
    ) -> str:
        """Writes this module (or `state`) as a checkpoint directory at `path` (default: a new
        temporary directory) and returns the path. The state file is msgpack whatever
        `use_msgpack` says (nothing here is pickled); `filesystem` (pyarrow) is not supported
        for modules."""
        _refuse_filesystem(filesystem, "save_to_path")
        return importlib.import_module(MODULE_CHECKPOINT).save_module(self, path, state=state)

    def restore_from_path(
        self,
        path: str | os.PathLike,
        *,
        component: str | None = None,
        filesystem: Any = None,
        **kwargs: Any,
    ) -> None:
        """Sets this module's state from the module checkpoint at `path` (for a MultiRLModule,
        `component` names the one module to restore, as "module_id" or
        "rl_module/module_id")."""
        _refuse_filesystem(filesystem, "restore_from_path")
        importlib.import_module(MODULE_CHECKPOINT).restore_module(self, path, component=component)

    @classmethod
    def from_checkpoint(cls, path: str | os.PathLike, filesystem: Any = None, **kwargs: Any) -> Any:
        """A new module built and restored from the module checkpoint at `path` (its class is
        the one stored there, imported by path; it must be `cls` or a subclass, any module
        class when `cls` is `RLModule` itself: RLlib's generic loader, which also loads this
        project's default numpy and torch modules)."""
        _refuse_filesystem(filesystem, "from_checkpoint")
        expected = RLModuleAPI if cls is RLModule else cls
        return importlib.import_module(MODULE_CHECKPOINT).load_module(path, expected=expected)


def _refuse_filesystem(filesystem: Any, method: str) -> None:
    if filesystem is not None:
        raise UnsupportedValue(
            f"RLModule.{method}(filesystem=...) is not supported: module checkpoints are "
            "local directories (use a local path or a file:// URI)",
            REMOTE_FILESYSTEMS,
        )


class RLModule(RLModuleAPI, metaclass=abc.ABCMeta):
    """RLlib's RLModule base class for a user's own numpy module.

    Override `setup()` to build what the module needs (called once by the constructor), and
    `_forward` (used in every phase) or `_forward_inference` / `_forward_exploration` /
    `_forward_train`; each takes a batch dict keyed by `Columns` names and returns one (a
    heuristic module returns `{"actions": ...}`). Override `get_state` / `set_state` for a
    module with parameters (plain data: dicts, lists, numbers, strings, numpy arrays) and
    `get_initial_state` for a recurrent one. Do not override the constructor without passing
    its keyword arguments on (`super().__init__(*args, **kwargs)`), as in RLlib.

    Its metaclass is `abc.ABCMeta`, as RLlib's (an `abc.ABC`), so abstract mixins combine
    with it; `isinstance(x, RLModule)` also holds for the default numpy modules
    (`__subclasshook__`).
    """

    @classmethod
    def __subclasshook__(cls, subclass: type) -> Any:
        """`RLModule` itself counts every `RLModuleAPI` class (the default numpy modules, which
        answer its API without its constructor) as a subclass, so `isinstance(module,
        RLModule)` holds for every module an EnvRunner or Learner holds, as in RLlib. Its
        subclasses keep Python's own check."""
        if cls is RLModule and issubclass(subclass, RLModuleAPI):
            return True
        return NotImplemented

    def __init__(
        self,
        config: Any = None,
        *,
        observation_space: gym.Space | None = None,
        action_space: gym.Space | None = None,
        inference_only: bool | None = None,
        learner_only: bool = False,
        model_config: dict | Any | None = None,
        catalog_class: type | None = None,
        **kwargs: Any,
    ):
        if config is not None:
            raise ValueError(
                f"{type(self).__name__}(config=...) (RLlib's removed RLModuleConfig) is not "
                "supported: pass observation_space=, action_space=, inference_only=, "
                "learner_only=, model_config= as keyword arguments"
            )
        self.catalog: Any = None
        if catalog_class is not None:
            # PPOCatalog on PPO's default module (what RLlib builds it with) is accepted: the
            # module builds its own networks; any other catalog is refused, naming it.
            check_catalog_class(
                f"{type(self).__name__}(catalog_class=...)", catalog_class, type(self)
            )
            self.catalog = catalog_class(
                observation_space, action_space, _model_config_dict(model_config)
            )
        self.observation_space = observation_space
        self.action_space = action_space
        self.inference_only = bool(inference_only)
        self.learner_only = bool(learner_only)
        self.model_config = model_config
        self.action_dist_cls: Any = None
        if getattr(self, "_is_setup", False):
            raise RuntimeError(
                f"RLModule.setup() called twice in {type(self).__name__}: override setup(), "
                "not the constructor, or call the constructor once"
            )
        self.setup()
        self._is_setup = True

    def setup(self) -> None:
        """Builds the module's parts (called once by the constructor)."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The forward pass of every phase, unless a phase's own method is overridden."""
        return {}

    def forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Action computation without exploration (do not override: override
        `_forward_inference`)."""
        return self._forward_inference(batch, **kwargs)

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward(batch, **kwargs)

    def forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Action computation with exploration (do not override: override
        `_forward_exploration`)."""
        return self._forward_exploration(batch, **kwargs)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward(batch, **kwargs)

    def forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The forward pass before the loss (do not override: override `_forward_train`); not
        allowed on an inference-only module."""
        if self.inference_only:
            raise RuntimeError(
                f"{type(self).__name__}.forward_train() on an inference_only module: build it "
                "with inference_only=False (RLModuleSpec(inference_only=False))"
            )
        return self._forward_train(batch, **kwargs)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward(batch, **kwargs)

    def get_state(
        self,
        components: str | Collection[str] | None = None,
        *,
        not_components: str | Collection[str] | None = None,
        inference_only: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """The module's state: `{}` here (a module without parameters); override it."""
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        """Sets the state `get_state` returned (nothing here; override it)."""

    def get_inference_action_dist_cls(self) -> Any:
        raise NotImplementedError

    def get_exploration_action_dist_cls(self) -> Any:
        raise NotImplementedError

    def get_train_action_dist_cls(self) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(observation_space={self.observation_space}, "
            f"action_space={self.action_space})"
        )
