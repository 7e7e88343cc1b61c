"""The `rl_module()` section: the networks' model config, the `RLModuleSpec` (or
`MultiRLModuleSpec`) they are built from, and the per-module setting overrides."""

from __future__ import annotations

import copy
import dataclasses
import sys
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym

from trainer.algorithms.config.base import ConfigBase, Flag, NotProvided
from trainer.algorithms.config.framework import default_config, is_torch_module_class
from trainer.algorithms.multi_agent_setup import (
    check_multi_rl_module_spec,
    check_overrides_per_module,
)
from trainer.algorithms.settings import Setting, settings_of
from trainer.capabilities import TORCH
from trainer.compat.rllib_settings import DEFAULT_POLICY_ID
from trainer.core.catalog import check_catalog_class
from trainer.core.models import (
    MODEL_DEFAULTS,
    check_model_config,
    refuse_torch_only_keys,
)
from trainer.core.multi_rl_module import MultiRLModuleSpec
from trainer.core.rl_module import RLModuleSpec
from trainer.errors import ConfigError
from trainer.util.deprecation import warn_once

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: The settings of `rl_module()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
RL_MODULE_SETTINGS: dict[str, Setting] = settings_of(
    "rl_module",
    {
        "algorithm_config_overrides_per_module": (
            {},
            check_overrides_per_module,
            "{module_id: {setting: value}}: settings that differ for one module "
            "(get_config_for_module(module_id) applies them)",
        ),
    },
)


class RLModuleSection(ConfigBase):
    """The networks (`rl_module()`)."""

    if TYPE_CHECKING:
        model: dict[str, Any]  # a setting of training() (RLlib's older place)
        _spec_model: dict[str, Any]  # set by `AlgorithmConfig.__init__`

        def copy(self, *args: Any, **kwargs: Any) -> Self: ...

        def update_from_dict(self, *args: Any, **kwargs: Any) -> Self: ...

        def training(self, *args: Any, **kwargs: Any) -> Self: ...

        @property
        def is_multi_agent(self) -> Flag: ...

        def default_torch_module_class(self) -> type: ...  # the framework section's

        def _declared_class(self, role: str) -> type | None: ...  # the framework section's

        def _build_torch_module(self, *args: Any, **kwargs: Any) -> Any: ...

    algorithm_config_overrides_per_module: dict[str, dict[str, Any]]
    #: The spec `rl_module(rl_module_spec=...)` gave (None: none).
    _rl_module_spec: RLModuleSpec | MultiRLModuleSpec | None

    def rl_module(
        self,
        *,
        model_config: dict | Any = NotProvided,
        rl_module_spec: Any = NotProvided,
        algorithm_config_overrides_per_module: dict = NotProvided,
        **unknown: Any,
    ) -> Self:
        """The networks: `model_config` is a dict or a `DefaultModelConfig` (RLlib's keys:
        `fcnet_*`, `head_fcnet_*` with their initializers, `vf_share_layers`, `free_log_std`). It
        replaces the model config given before, as in RLlib. `rl_module_spec` is an
        `RLModuleSpec` for the default module: its `model_config` is merged over the config's
        (as RLlib merges them) and its spaces are the ones the networks are built for (custom
        module classes are not supported in single-agent training); or a `MultiRLModuleSpec`
        of a multi-agent setup (`{module_id: RLModuleSpec}`, user RLModule classes included).
        `algorithm_config_overrides_per_module` updates the per-module setting overrides
        (`{module_id: {setting: value}}`, read with `get_config_for_module`)."""
        if "model_config_dict" in unknown:  # RLlib's older name, accepted with its warning
            warn_once("rl_module(model_config_dict=...)", "rl_module(model_config=...)")
            given = unknown.pop("model_config_dict")
            model_config = given if model_config is NotProvided else model_config
        self._reject_unknown(
            "rl_module",
            unknown,
            ["model_config", "rl_module_spec", "algorithm_config_overrides_per_module"],
        )
        if rl_module_spec is not NotProvided:
            self._set_rl_module_spec(rl_module_spec)
        if model_config is not NotProvided:
            self._set_model("rl_module", "model_config", model_config, replace=True)
        if algorithm_config_overrides_per_module is not NotProvided:
            self._set_overrides_per_module("rl_module", algorithm_config_overrides_per_module)
        return self

    def _set_overrides_per_module(self, method: str, overrides: Any) -> None:
        """Checks `{module_id: {setting: value}}` (every setting must exist, with a valid
        value) and merges it into `algorithm_config_overrides_per_module`, as RLlib updates
        that dict."""
        problem = check_overrides_per_module(overrides)
        if problem is not None:
            raise ConfigError(
                f"{type(self).__name__}.{method}(algorithm_config_overrides_per_module="
                f"{overrides!r}): algorithm_config_overrides_per_module must be {problem}"
            )
        self._check_module_overrides(method, overrides)
        merged = {**self.algorithm_config_overrides_per_module, **overrides}
        self._set(method, {"algorithm_config_overrides_per_module": merged})
        self.__dict__["_per_module_overrides"] = {}  # built anew from the new overrides

    def _check_module_overrides(
        self,
        method: str,
        overrides: dict,
        argument: str = "algorithm_config_overrides_per_module",
    ) -> None:
        """Every setting of each module's overrides must exist, with a valid value."""
        settings = self._settings()
        for module_id, module_overrides in overrides.items():
            label = f"{method}({argument}={{{module_id!r}: ...}})"
            unknown = {k: v for k, v in module_overrides.items() if k not in settings}
            self._reject_unknown(label, unknown, settings)
            for name, value in module_overrides.items():
                problem = settings[name].check(value)
                if problem is not None:
                    raise ConfigError(
                        f"{type(self).__name__}.{label}: {name}={value!r}: {name} must be {problem}"
                    )

    def _set_rl_module_spec(self, spec: Any) -> None:
        """Checks an `RLModuleSpec` for the default module, or a `MultiRLModuleSpec`, and
        applies it (see `rl_module`)."""
        name = f"{type(self).__name__}.rl_module(rl_module_spec={type(spec).__name__}(...))"
        if spec is None:
            self._rl_module_spec, self._spec_model = None, {}
            self._set_model("rl_module", "model_config", self.model)
            return
        if isinstance(spec, MultiRLModuleSpec):
            check_multi_rl_module_spec(name, spec, self.default_module_class())
            self._rl_module_spec, self._spec_model = copy.deepcopy(spec), {}
            self._set_model("rl_module", "model_config", self.model)
            return
        if not isinstance(spec, RLModuleSpec):
            raise ConfigError(
                f"{name}: must be an RLModuleSpec or a MultiRLModuleSpec "
                "(ray.rllib.core.rl_module, here trainer.RLModuleSpec and "
                "trainer.MultiRLModuleSpec)"
            )
        if spec.module_class is not None and spec.module_class is self.default_module_class():
            spec = copy.copy(spec)
            spec.module_class = None  # the default module, named (get_rl_module_spec's output)
        # Without a module class, the default module's framework is known when validated.
        check_catalog_class(name, spec.catalog_class, spec.module_class)
        # A module class this project cannot run is refused by validate(), as RLlib takes any
        # class here (`_refuse_unrunnable_module_spec`).
        spec_model = spec.model_config or {}
        if spec.module_class is None:  # the default module; a user's reads its own keys
            try:
                check_model_config(spec_model, setting=f"{name}.model_config")
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None
        spaces = {"observation_space": spec.observation_space, "action_space": spec.action_space}
        self._set("rl_module", {k: v for k, v in spaces.items() if v is not None})
        self._rl_module_spec = copy.deepcopy(spec)
        # A dict or a DefaultModelConfig: check_model_config took nothing else.
        self._spec_model = (
            dict(spec_model) if isinstance(spec_model, dict) else dataclasses.asdict(spec_model)
        )
        self._set_model("rl_module", "model_config", self.model)

    def learner_only_module_specs(self) -> dict[Any, RLModuleSpec]:
        """The learner-only modules of a single-agent config by id: the specs with
        `learner_only=True` beside "default_policy" in its `MultiRLModuleSpec` (RLlib's
        curiosity model); none otherwise (see `trainer.torch_rl.self_supervised`)."""
        spec = self.__dict__.get("_rl_module_spec")
        if not isinstance(spec, MultiRLModuleSpec) or self.is_multi_agent:
            return {}
        specs = cast(dict[Any, RLModuleSpec], spec.rl_module_specs)
        return {
            module_id: module_spec
            for module_id, module_spec in specs.items()
            if module_id != DEFAULT_POLICY_ID and module_spec.learner_only
        }

    def _runner_module_spec(self) -> Any:
        """The spec of the module the EnvRunners run: the config's `rl_module_spec`, or, in a
        single-agent config with learner-only modules, its "default_policy" spec."""
        spec = self.__dict__.get("_rl_module_spec")
        if isinstance(spec, MultiRLModuleSpec) and self.learner_only_module_specs():
            return cast(dict[Any, RLModuleSpec], spec.rl_module_specs)[DEFAULT_POLICY_ID]
        return spec

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """The spec of this algorithm's default module: with torch, RLlib's default torch
        module class (`DefaultPPOTorchRLModule`, ...), as RLlib's; with numpy the default
        numpy module's class (`default_module_class`: the policy or Q network)."""
        if self.uses_torch:
            return RLModuleSpec(module_class=self.default_torch_module_class())
        return RLModuleSpec(module_class=self.default_module_class())

    @property
    def rl_module_spec(self) -> RLModuleSpec | MultiRLModuleSpec:
        """RLlib's: the spec the module is built from, the algorithm's default
        (`get_default_rl_module_spec`) updated with the one `rl_module(rl_module_spec=...)`
        gave (its class, spaces, model config); a given `MultiRLModuleSpec` with the default
        filling what its module specs leave unset."""
        default = self.get_default_rl_module_spec()
        given = self.__dict__.get("_rl_module_spec")
        if given is None:
            return default
        if isinstance(given, RLModuleSpec):
            if isinstance(default, MultiRLModuleSpec):
                raise ValueError("Cannot merge MultiRLModuleSpec with RLModuleSpec!")
            default.update(given)
            return default
        merged = copy.deepcopy(given)
        merged.update(default)
        return merged

    def get_rl_module_spec(
        self,
        env: gym.Env | None = None,
        spaces: dict[str, tuple[gym.Space, gym.Space]] | None = None,
        inference_only: bool | None = None,
    ) -> RLModuleSpec:
        """The `RLModuleSpec` the default module is built from, as RLlib fills it in: the
        spaces from the spec given to `rl_module()`, else `spaces[DEFAULT_POLICY_ID]` (what
        `EnvRunner.get_spaces()` returns), else `env`, else the config's
        `observation_space`/`action_space`; `model_config` is this config's, with the spec's
        own keys over it (RLlib's merge)."""
        current: RLModuleSpec | MultiRLModuleSpec | None = self._runner_module_spec()
        if isinstance(current, MultiRLModuleSpec):
            raise ValueError(
                f"{type(self).__name__}.get_rl_module_spec(): rl_module(rl_module_spec=...) "
                "is a MultiRLModuleSpec; use get_multi_rl_module_spec()"
            )
        spec = copy.deepcopy(current) if current is not None else self.get_default_rl_module_spec()
        for index, name in enumerate(("observation_space", "action_space")):
            if getattr(spec, name) is not None:
                continue
            if spaces is not None:
                value = spaces[DEFAULT_POLICY_ID][index]
            elif env is not None:
                value = getattr(
                    getattr(env, "unwrapped", env), "single_" + name, getattr(env, name)
                )
            else:
                value = getattr(self, name)
            if value is None:
                raise ValueError(
                    f"{type(self).__name__}.get_rl_module_spec(): no {name} to "
                    "build the module for: pass env= or spaces=, or set "
                    f"environment({name}=...)"
                )
            setattr(spec, name, value)
        # RLlib's merge: the config's model config, the spec's own keys over it.
        spec.model_config = {
            **self.model_config,
            **self._model_config_auto_includes,
            **spec._get_model_config(),
        }
        spec.module_class = spec.module_class or self.get_default_rl_module_spec().module_class
        spec.module_class = spec.module_class or self.default_module_class()
        if inference_only is not None:
            spec.inference_only = inference_only
        return spec

    def default_module_class(self) -> type:
        """The class of this algorithm's default numpy module (what an `RLModuleSpec`
        without a module class builds): the one its config declares (`_CLASSES`), as RLlib's
        `get_default_rl_module_spec` names it. The base config (and an algorithm with torch
        modules only), from which RLlib builds no numpy module, builds the default
        algorithm's here (`registry.DEFAULT_ALGORITHM`), so that an EnvRunner of
        `AlgorithmConfig()` samples with a module as every other does."""
        declared = self._declared_class("numpy_module")
        return declared if declared is not None else default_config().default_module_class()

    def _numpy_module_kwargs(self, inference_only: bool) -> dict[str, Any]:
        """What the default numpy module is built with besides its spaces, model config and
        seed (`build_module`): none here; an algorithm's config adds the settings its module
        takes (DQN's dueling head, SAC's twin critics)."""
        return {}

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        """Settings of the algorithm that its default module reads from its model config (as
        RLlib adds them there): none here; an algorithm's config adds its own."""
        return {}

    def get_config_for_module(self, module_id: str) -> Self:
        """The config of one module: this one with
        `algorithm_config_overrides_per_module[module_id]` applied (built once, then kept);
        this config itself for a module without overrides."""
        overrides = self.algorithm_config_overrides_per_module.get(module_id)
        if overrides is None:
            return self
        cache = self.__dict__.setdefault("_per_module_overrides", {})
        if module_id not in cache:
            module_config = self.copy()
            module_config.__dict__["_per_module_overrides"] = {}
            cache[module_id] = module_config.update_from_dict(dict(overrides))
        return cache[module_id]

    @property
    def model_config(self) -> dict:
        """The model config the networks are built from (RLlib's property)."""
        return dict(self.model)

    def _set_model(self, method: str, name: str, model: dict, *, replace: bool = False) -> None:
        try:
            merged = check_model_config(
                model, setting=f"{type(self).__name__}.{method}({name}=...)"
            )
        except ValueError as error:
            raise ConfigError(str(error), getattr(error, "capability", None)) from None
        given = {
            key: merged[key]
            for key in (dataclasses.asdict(model) if dataclasses.is_dataclass(model) else model)
            if key in MODEL_DEFAULTS
        }
        # An RLModuleSpec's model_config wins over the config's, whichever came first (RLlib
        # merges the two when it builds the module).
        given_by_spec = self.__dict__.get("_spec_model") or {}
        if getattr(self.__dict__.get("_rl_module_spec"), "module_class", None) is not None:
            # A user's module reads its own keys too (they stay on its spec).
            given_by_spec = {k: v for k, v in given_by_spec.items() if k in MODEL_DEFAULTS}
        spec_model = check_model_config(given_by_spec) if given_by_spec else {}
        from_spec = {key: spec_model[key] for key in given_by_spec if key in MODEL_DEFAULTS}
        # A replaced model config starts from the algorithm's defaults (RLlib's
        # `_model_config_auto_includes`: PPO's separate value encoder), which a dict's keys and
        # all of a `DefaultModelConfig`'s fields override.
        base = self._DEFAULT_OVERRIDES.get("model", MODEL_DEFAULTS) if replace else self.model
        self.model = {**base, **given, **from_spec}

    def build_module(
        self, spaces: Any, seed: int | None = None, *, inference_only: bool = False
    ) -> Any:
        """The RL module (networks) this algorithm's EnvRunners and learner use: the numpy
        default module (`default_module_class()`, built from the spaces and the model config),
        or with torch (`uses_torch`) a view of the spec's or the default torch module
        (`inference_only`: the EnvRunners' copy)."""
        if self.uses_torch:
            return self._build_torch_module(spaces, seed, inference_only)
        return self.default_module_class()(
            spaces, self.model, seed=seed, **self._numpy_module_kwargs(inference_only)
        )

    def _refuse_unrunnable_module_spec(self, name: str) -> None:
        """A single-agent `RLModuleSpec` this project cannot run: a module class that is no
        TorchRLModule (the numpy default is the only other module that trains), or the
        default module asked to be inference- or learner-only."""
        spec = self.__dict__.get("_rl_module_spec")
        if not isinstance(spec, RLModuleSpec):
            return
        refusals = {
            "module_class": "RLModules other than TorchRLModule subclasses are not supported "
            "in single-agent training (the algorithm's default numpy module runs there): leave "
            "module_class=None and configure the default module with model_config",
            "inference_only": "the default module here has no inference-only form (it is "
            "the same on the EnvRunners and the learner)",
            "learner_only": "the default module here always runs on the EnvRunners too",
        }
        if is_torch_module_class(spec.module_class):
            refusals.pop("module_class")  # a TorchRLModule runs on the EnvRunners and learns
            refusals.pop("inference_only")
        where = f"{name}.rl_module(rl_module_spec=RLModuleSpec(...))"
        for field_name, why in refusals.items():
            value = getattr(spec, field_name)
            if value not in (None, False):
                shown = value.__qualname__ if isinstance(value, type) else repr(value)
                raise ConfigError(f"{where}: {field_name}={shown} is not supported: {why}", TORCH)

    def _validate_rl_module(self, name: str) -> None:
        """The model config for the networks that run it, and the per-module overrides."""
        self._refuse_unrunnable_module_spec(name)
        user_module = getattr(self.__dict__.get("_rl_module_spec"), "module_class", None)
        if not is_torch_module_class(user_module):  # a user's module reads its own keys
            try:
                check_model_config(
                    self.model, setting=f"{name} model config", numpy=not self.uses_torch
                )
                if not self.uses_torch:  # the numpy networks cannot convolve
                    refuse_torch_only_keys(self.model, setting=f"{name} model config")
            except ValueError as error:
                raise ConfigError(str(error), getattr(error, "capability", None)) from None
        catalog_class = getattr(self.__dict__.get("_rl_module_spec"), "catalog_class", None)
        if catalog_class is not None and user_module is None:
            check_catalog_class(
                f"{name}.rl_module(rl_module_spec=RLModuleSpec(...))",
                catalog_class,
                self.default_torch_module_class()
                if self.uses_torch
                else self.default_module_class(),
            )
        if self.algorithm_config_overrides_per_module:
            self._check_module_overrides("validate", self.algorithm_config_overrides_per_module)
