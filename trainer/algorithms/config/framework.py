"""The `framework()` section: numpy or torch networks and learners, and what makes a config
run on torch (`torch_reason`). torch stays an optional dependency: it is imported only where a
config runs on it."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import warnings
from typing import TYPE_CHECKING, Any, ClassVar, cast

from trainer.algorithms.config.base import ConfigBase, Flag, NotProvided, algorithm_registry
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.settings import Setting, settings_of
from trainer.capabilities import TORCH
from trainer.core.model_configs import FILTER_PRESETS, has_filter_preset
from trainer.core.models import torch_only_request
from trainer.errors import ConfigError
from trainer.torch_rl import missing_torch, require_torch, torch_installed
from trainer.util.checks import one_of
from trainer.util.import_paths import resolve_import_path

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def is_torch_module_class(module_class: Any) -> bool:
    """Whether `module_class` is a `TorchRLModule` subclass (checked without importing torch:
    a class that subclasses it was made with torch imported)."""
    if not isinstance(module_class, type) or "trainer.torch_rl.rl_module" not in sys.modules:
        return False
    from trainer.torch_rl.rl_module import TorchRLModule

    return issubclass(module_class, TorchRLModule)


def _spec_names_torch_module(spec: Any) -> bool:
    """Whether `spec` (an RLModuleSpec or a MultiRLModuleSpec, or None) names a
    `TorchRLModule` subclass (a MultiRLModuleSpec: in any of its module specs)."""
    specs = getattr(spec, "rl_module_specs", None)
    if isinstance(specs, dict):
        return any(is_torch_module_class(sub.module_class) for sub in specs.values())
    if specs is not None:  # one RLModuleSpec for every module
        return is_torch_module_class(specs.module_class)
    return is_torch_module_class(getattr(spec, "module_class", None))


def launcher_default_framework() -> str:
    """The framework a config gets when none is chosen: "numpy", this project's default, except
    where RLlib's imports are served by the launcher (`python -m trainer run script.py`, or
    `trainer.launcher.install()`): there an unmodified RLlib script gets RLlib's default,
    "torch", when torch is installed (its EnvRunners infer with the torch modules' numpy
    twins), and "numpy" without it."""
    finder = sys.modules.get("trainer.launcher.finder")
    if finder is None or finder.installed_finder() is None:
        return "numpy"
    return "torch" if importlib.util.find_spec("torch") is not None else "numpy"


#: The settings of `framework()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
FRAMEWORK_SETTINGS: dict[str, Setting] = settings_of(
    "framework",
    {
        "framework_str": (
            "numpy",
            one_of("numpy", "torch", "tf2", "tf"),
            "numpy (the default numpy modules and learners) or torch (torch "
            "RLModules and learners, the torch extra); tf2 and tf are accepted "
            "with a warning at build and run on numpy",
        ),
    },
)


class FrameworkSection(ConfigBase):
    """The networks' framework (`framework()`)."""

    if TYPE_CHECKING:  # what this section reads of the others
        model: dict[str, Any]

        @property
        def is_multi_agent(self) -> Flag: ...

        @property
        def _model_config_auto_includes(self) -> dict[str, Any]: ...

        def _runner_module_spec(self) -> Any: ...

    framework_str: str
    #: The algorithm's learners and default modules, by import path (`AlgorithmClasses`): an
    #: algorithm's config declares its own; None (the base config): its algorithm's, see
    #: `get_default_learner_class`.
    _CLASSES: ClassVar[AlgorithmClasses | None] = None

    def framework(self, framework: str = NotProvided, **unknown: Any) -> Self:
        """The networks' framework: "numpy" (the default numpy modules and learners) or
        "torch" (RLlib's default torch modules and torch learners; the torch extra). "tf2"
        and "tf" are accepted so RLlib scripts run unchanged, and run on numpy (`build()`
        warns once). TF and torch options are accepted with a warning at build when set.
        `framework(None)`, which RLlib takes, leaves the framework to the default (numpy, or
        torch where a torch module or learner class asks for it; under the launcher, RLlib's
        default: `launcher_default_framework`)."""
        self._reject_unknown("framework", unknown, ["framework"])
        if framework is None:  # RLlib takes None (and fails at build); here: the default
            self.framework_str = launcher_default_framework()
            self._given.discard("framework_str")
            return self
        return self._set(
            "framework", {"framework_str": framework}, spelled={"framework_str": "framework"}
        )

    # -- torch ---------------------------------------------------------------------------------
    @property
    def uses_torch(self) -> bool:
        """Whether the networks and learners are torch's (`torch_reason` says why)."""
        return self.torch_reason is not None

    @property
    def torch_reason(self) -> str | None:
        """What makes this config run on torch, in the user's words, or None (numpy):
        `framework("torch")`, a `TorchRLModule` subclass in `rl_module(rl_module_spec=...)` (a
        MultiRLModuleSpec: in any of its specs), a torch `learner_class`, torch lr schedulers
        (`experimental(_torch_lr_scheduler_classes=...)`), or, when no framework was chosen,
        a model only torch builds (`use_lstm=True`, `conv_*` keys): RLlib's default framework
        is torch, and an RLlib script asking for an LSTM gets one."""
        name = type(self).__name__
        if self.framework_str == "torch":
            return f"{name}.framework('torch')"
        if _spec_names_torch_module(self.__dict__.get("_rl_module_spec")):
            return f"{name}.rl_module(rl_module_spec=...) naming a TorchRLModule subclass"
        learner_class = self.__dict__.get("_learner_class")
        if learner_class is not None:
            learner_name = getattr(learner_class, "__name__", learner_class)
            return f"{name}.training(learner_class={learner_name})"
        if self.__dict__.get("_torch_lr_scheduler_classes"):
            return f"{name}.experimental(_torch_lr_scheduler_classes=...)"
        if not self.is_given("framework_str"):
            request = self._torch_only_model_request()
            if request is not None:
                return f"{name} model config {request} (a model only the torch modules build)"
        return None

    def image_torch_reason(self, spaces: Any) -> str | None:
        """Why a config that chose no framework should run on torch for `spaces` (the
        EnvRunners' module spaces: a `SpaceInfo`, or `{module_id: (obs space, action
        space)}`), or None. RLlib's default module for image observations (3-D Boxes) is its
        CNN, on RLlib's default framework, torch; the numpy networks here are MLPs, which would
        take the image as one flat row. So a config without `framework()`, without its own
        module or learner classes and without a torch request of its own runs such
        observations on torch's default modules, where torch is installed (without it: the
        numpy MLP, with a warning naming the torch extra)."""
        if self.is_given("framework_str") or self.torch_reason is not None:
            return None
        spec = self.__dict__.get("_rl_module_spec")
        own_specs = getattr(spec, "rl_module_specs", None)
        named = list(own_specs.values()) if isinstance(own_specs, dict) else [own_specs or spec]
        if any(getattr(each, "module_class", None) is not None for each in named):
            return None  # the user's own modules decide their networks
        if self.__dict__.get("_learner_class") is not None:
            return None
        shapes = (
            [getattr(obs, "shape", None) for obs, _ in spaces.values()]
            if isinstance(spaces, dict)
            else [spaces.obs_shape]
        )
        image = next((s for s in shapes if s is not None and len(s) == 3), None)
        if image is None:
            return None
        if not any(has_filter_preset(image, size) for size in FILTER_PRESETS):
            warnings.warn(
                f"{type(self).__name__}: the observations are images of shape {tuple(image)}, "
                "for which RLlib has no preset CNN (RLlib raises, naming "
                "model_config['conv_filters']); the numpy MLP takes each image as one flat "
                "row. Give rl_module(model_config={'conv_filters': [...]}) for a CNN (on torch).",
                stacklevel=2,
            )
            return None
        reason = (
            f"the observations are images of shape {tuple(image)}: RLlib's default module for "
            "them is its CNN encoder, which the torch modules build (the numpy networks are "
            "MLPs); set framework('numpy') to keep the MLP"
        )
        if importlib.util.find_spec("torch") is None:
            warnings.warn(
                f"{type(self).__name__}: {reason}; torch is not installed, so the numpy MLP "
                "takes each image as one flat row. Install the torch extra (pip install -e "
                "'.[torch]') for RLlib's CNN, or set framework('numpy') to keep the MLP.",
                stacklevel=2,
            )
            return None
        return reason

    def _torch_only_model_request(self) -> str | None:
        """What the config's model config, or a module spec's own over it (a
        MultiRLModuleSpec's: any of them), asks that only torch builds; None otherwise."""
        model = self.__dict__.get("model", {})
        spec = self.__dict__.get("_rl_module_spec")
        specs = getattr(spec, "rl_module_specs", None)
        if isinstance(specs, dict):
            candidates = list(specs.values())
        else:
            candidates = [specs if specs is not None else spec]
        for candidate in candidates:
            given: Any = getattr(candidate, "model_config", None) or {}
            own = dict(given) if isinstance(given, dict) else dataclasses.asdict(given)
            request = torch_only_request({**model, **own})
            if request is not None:
                return request
        return None

    # -- the algorithm's classes (`AlgorithmClasses`) ----------------------------------------
    def _algorithm_classes(self) -> AlgorithmClasses | None:
        """The classes this config's algorithm declares: its class's `_CLASSES`; the base
        config's (RLlib's `AlgorithmConfig(algo_class=...)`), its algorithm's config's; None
        without either (a config of a user's own algorithm, or of none)."""
        classes = type(self)._CLASSES
        algo_class = getattr(self, "algo_class", None)
        if classes is None and algo_class is not None:
            classes = getattr(type(algo_class.get_default_config()), "_CLASSES", None)
        return classes

    def _declared_class(self, role: str) -> type | None:
        """The class of `role` ("numpy_learner", "torch_module", ...) this config's class
        declares (`_CLASSES`), imported (a torch one once torch is found there); None where it
        declares none."""
        classes = type(self)._CLASSES
        path = None if classes is None else getattr(classes, role)
        if path is None:
            return None
        if role.startswith("torch"):
            require_torch(f"{type(self).__name__}.framework('torch')")
        return resolve_import_path(path)

    def get_default_learner_class(self) -> type:
        """The algorithm's learner class (RLlib's method, behind `learner_class`): the numpy
        learner its config declares (`_CLASSES`), or with torch (`uses_torch`) the torch one;
        an algorithm with torch learners only answers its torch learner. The base config
        answers for its `algo_class`'s config, else for the registry's default algorithm
        (whose modules it builds: `default_module_class`)."""
        classes = type(self)._CLASSES
        if classes is None:  # the base config
            algo_class = getattr(self, "algo_class", None)
            own = algo_class.get_default_config() if algo_class is not None else default_config()
            method = type(own).get_default_learner_class
            if method is not FrameworkSection.get_default_learner_class:
                return method(self)  # (a config class that names its learner itself)
            classes = type(own)._CLASSES
        if classes is None:
            raise NotImplementedError(
                f"{type(self).__name__} names no learner class: give one with "
                "training(learner_class=...)"
            )
        on_torch = self.uses_torch or classes.numpy_learner is None
        if on_torch:
            require_torch(f"{type(self).__name__}.framework('torch')")
        path = classes.torch_learner if on_torch else classes.numpy_learner
        if path is None:
            raise NotImplementedError(
                f"{type(self).__name__} names no torch learner: give one with "
                "training(learner_class=...)"
            )
        return resolve_import_path(path)

    def default_torch_module_class(self) -> type:
        """The class of this algorithm's default torch module (what an `RLModuleSpec` without a
        module class builds with torch): the one its config declares (`_CLASSES`), as RLlib's
        `get_default_rl_module_spec` names it; the base config builds the default algorithm's
        (see `default_module_class`)."""
        declared = self._declared_class("torch_module")
        return declared if declared is not None else default_config().default_torch_module_class()

    def _check_learner_class(self, name: str) -> None:
        """A `training(learner_class=...)` that this algorithm's learner must be a subclass of
        and is not (`AlgorithmClasses.required_learner_base`): ConfigError."""
        classes = type(self)._CLASSES
        given = self.__dict__.get("_learner_class")
        if given is None or classes is None or classes.required_learner_base is None:
            return
        base = cast(type, self._declared_class("torch_learner"))
        if not issubclass(given, base):
            reason = classes.required_learner_reason
            raise ConfigError(
                f"{name}: learner_class={given.__qualname__} is not a subclass of "
                f"{base.__name__} ({base.__module__}, RLlib's {classes.required_learner_base})"
                + (f": {reason}" if reason else "")
            )

    def _check_torch_config(self, name: str) -> None:
        """Raises ConfigError for a torch config that cannot run: torch not installed (found
        without importing it: the build imports it, `prestart_workers` overlapping that with
        the worker template's start), or a GPU setting the machine cannot give."""
        if not torch_installed():
            raise ConfigError(
                missing_torch(self.torch_reason or f"{name}.framework('torch')"), TORCH
            )
        gpus = self["num_gpus_per_learner"]
        if gpus:
            import torch

            if gpus != 1:
                raise ConfigError(
                    f"{name}.learners(num_gpus_per_learner={gpus!r}): one learner runs here, "
                    "on one GPU (1) or the CPU (0)"
                )
            if not torch.cuda.is_available():
                raise ConfigError(
                    f"{name}.learners(num_gpus_per_learner=1): this machine has no CUDA "
                    "device torch can use (torch.cuda.is_available() is False); use "
                    "num_gpus_per_learner=0 to learn on the CPU"
                )

    @property
    def runners_import_torch(self) -> bool:
        """Whether this config's EnvRunners build torch modules as they start (the worker
        template then imports torch for them): a torch config's do, unless its algorithm's
        stand-in acts for them until a torch object is asked of them
        (`AlgorithmClasses.deferred_torch`: PPO's default module)."""
        if not self.uses_torch:
            return False
        deferred = self._deferred_torch()
        return deferred is None or not deferred.defers(self)

    def _deferred_torch(self) -> Any:
        """The algorithm's stand-ins for its default torch objects
        (`AlgorithmClasses.deferred_torch`), or None: none declared, or torch not installed
        (the torch path then names what is missing)."""
        classes = type(self)._CLASSES
        path = None if classes is None else classes.deferred_torch
        if path is None or not torch_installed():
            return None
        return resolve_import_path(path)

    def _build_torch_module(self, spaces: Any, seed: int | None, inference_only: bool) -> Any:
        deferred = self._deferred_torch() if inference_only else None
        if deferred is not None:
            # An EnvRunner's copy of the default module, acting in numpy until a torch object
            # is asked of it.
            view = deferred.module_view(
                self, spaces, lambda: self._build_torch_view(spaces, seed, inference_only)
            )
            if view is not None:
                return view
        return self._build_torch_view(spaces, seed, inference_only)

    def _build_torch_view(self, spaces: Any, seed: int | None, inference_only: bool) -> Any:
        """A view of the spec's (or the default) torch module, built now (torch imported)."""
        require_torch(f"{type(self).__name__}: a torch RLModule")
        from trainer.torch_rl.runner_view import build_torch_module

        spec = self._runner_module_spec()
        module_class = getattr(spec, "module_class", None) or self.default_torch_module_class()
        # The config's model config and the algorithm's settings its module reads (RLlib's
        # auto-includes, `_model_config_auto_includes`), under the spec's own (a user's module reads
        # its own keys).
        given: Any = getattr(spec, "model_config", None) or {}
        spec_model: dict = (
            dict(given) if isinstance(given, dict) else dataclasses.asdict(given)  # a dataclass
        )
        return build_torch_module(
            module_class,
            spaces,
            {**self.model, **self._model_config_auto_includes, **spec_model},
            observation_space=getattr(spec, "observation_space", None),
            action_space=getattr(spec, "action_space", None),
            inference_only=inference_only,
            seed=seed,
            catalog_class=getattr(spec, "catalog_class", None),
        )

    def _validate_framework(self, name: str) -> None:
        if self.uses_torch:
            self._check_torch_config(name)
            self._check_learner_class(name)
            return
        classes = type(self)._CLASSES
        if classes is not None and classes.numpy_learner is None and self.is_given("framework_str"):
            # An algorithm with torch learners only: a numpy framework asked for by name cannot
            # train it, and would fail deep in the build.
            raise ConfigError(
                f"{name}.framework({self.framework_str!r}): {name} declares torch learners "
                "only, no numpy learner; use framework('torch') (the torch extra)"
            )


def default_config() -> Any:
    """A config of the registry's default algorithm: what the base config's default modules
    come from."""
    registry = algorithm_registry()
    return registry.entry(registry.DEFAULT_ALGORITHM).config_cls()
