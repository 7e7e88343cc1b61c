"""RLlib's `Catalog` (`ray.rllib.core.models.catalog`); an algorithm's catalog (RLlib's
`PPOCatalog`) subclasses it in the algorithm's folder.

In RLlib a catalog builds a module's torch networks from its model config, and the default
modules build their encoders and heads through their algorithm's catalog. Here the default
numpy modules build their networks themselves, with the same layout; the default torch PPO and
DQN modules build through their catalog when the spec names one (`RLModuleSpec(catalog_class=
...)`), so a `PPOCatalog` subclass that overrides `build_pi_head` / `build_vf_head` /
`build_actor_critic_encoder`, or a `DQNCatalog` subclass that overrides `_get_encoder_config` /
`build_encoder` / `build_af_head` / `build_vf_head`, changes the networks as in RLlib. Its builders return this
project's torch networks (`trainer.torch_rl.networks`), not RLlib's model-config classes.

What is refused (with an error naming the class or the method):
- a catalog class that is not a default module's catalog or a subclass of one (RLlib's base
  `Catalog`, a user's class of its own), a catalog on a module other than the default module
  it describes, and a subclass that overrides builders on a numpy module, which cannot run
  torch networks (`check_catalog_class`);
- the base catalog's model builders (`build_encoder`, `get_tokenizer_config`): they return
  RLlib's `Encoder` / `Model` configs (`get_preprocessor` works: the old stack's preprocessor,
  `trainer.compat.preprocessors`).
  `get_action_dist_cls("torch")` works: the torch distribution class of the action space.

This module imports no torch (a spec names its catalog before any module is built).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from trainer.capabilities import OLD_API_STACK, TORCH
from trainer.errors import ConfigError, RLlibNotAvailable, UnsupportedValue

#: The torch backend and its action distributions (`get_action_dist_cls("torch")`).
_TORCH_BACKEND = "trainer.torch_rl"
_TORCH_DISTRIBUTIONS = "trainer.torch_rl.distributions"
#: RLlib's old-stack observation preprocessors (`Catalog.get_preprocessor`).
_PREPROCESSORS = "trainer.compat.preprocessors"
#: What a module builds its networks with here, instead of a catalog's builders.
_INSTEAD = (
    "the default numpy modules build their networks from model_config themselves, the "
    "default torch PPO and DQN modules through PPOCatalog / DQNCatalog or a subclass of it; a "
    "custom TorchRLModule builds its nn layers in setup()"
)


class Catalog:
    """RLlib's `Catalog` (see the module docstring): holds the spaces and the model config;
    its model builders are not available here."""

    #: The RLlib path of the class (in error messages).
    rllib_path = "ray.rllib.core.models.catalog.Catalog"
    #: The default modules' catalogs (each class that defines `builds` itself): the catalogs a
    #: spec may name, each on the default module it describes.
    default_module_catalogs: list[type[Catalog]] = []
    #: The default modules a catalog describes, for error messages.
    module_names = ""
    #: The model builders a default module calls (a subclass overriding one of them builds
    #: torch networks of its own, which only a torch module runs).
    builders: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "builds" in cls.__dict__:
            Catalog.default_module_catalogs.append(cls)

    @classmethod
    def builds(cls, module_class: Any) -> bool:
        """Whether the default module class `module_class` builds its networks as this catalog
        describes (an algorithm's catalog overrides it; the base describes no module)."""
        return False

    @classmethod
    def builds_through_catalog(cls, module_class: Any) -> bool:
        """Whether `module_class` builds its networks by calling this catalog's builders (a
        torch module), rather than by itself in the catalog's layout (a numpy module)."""
        return False

    def __init__(
        self,
        observation_space: Any,
        action_space: Any,
        model_config_dict: dict | None = None,
        view_requirements: Any = None,
        **kwargs: Any,
    ) -> None:
        if view_requirements is not None:
            raise UnsupportedValue(
                f"{type(self).__name__}(view_requirements=...): view requirements belong to "
                "RLlib's old API stack and are not supported",
                OLD_API_STACK,
            )
        self.observation_space = observation_space
        self.action_space = action_space
        self._model_config_dict = dict(model_config_dict or {})
        self._latent_dims: Any = None

    @property
    def model_config(self) -> dict:
        return dict(self._model_config_dict)

    def _not_available(self, method: str) -> RLlibNotAvailable:
        return RLlibNotAvailable(
            f"{self.rllib_path}.{method}",
            TORCH,
            _INSTEAD,
            detail="RLlib's catalog model builders (Encoder/Model configs) are not part of "
            "this project",
        )

    @property
    def latent_dims(self) -> Any:
        """The encoder's output dims (`(D,)`), which the heads take as their input; set by the
        module that builds through the catalog, or by a subclass."""
        if self._latent_dims is None:
            raise self._not_available("latent_dims")
        return self._latent_dims

    @latent_dims.setter
    def latent_dims(self, value: Any) -> None:
        self._latent_dims = value

    def build_encoder(self, framework: str) -> Any:
        raise self._not_available("build_encoder")

    def get_tokenizer_config(self, *args: Any, **kwargs: Any) -> Any:
        raise self._not_available("get_tokenizer_config")

    @staticmethod
    def get_preprocessor(observation_space: Any, **kwargs: Any) -> Any:
        """RLlib's: the old stack's preprocessor for `observation_space`
        (`ray.rllib.models.preprocessors.get_preprocessor`'s class, made with
        `kwargs["options"]`)."""
        options = kwargs.get("options", {})
        if options.get("custom_preprocessor"):
            raise ValueError(
                "model_config['custom_preprocessor'] is deprecated (RLlib raises too): "
                "preprocess observations with gymnasium wrappers around your env instead"
            )
        # The RLlib surface sits above this module: reached by its declared path.
        preprocessors = importlib.import_module(_PREPROCESSORS)
        return preprocessors.get_preprocessor(observation_space)(observation_space, options)

    def get_action_dist_cls(self, framework: str) -> type:
        """The torch action distribution class of the action space (RLlib's for "torch":
        TorchCategorical for Discrete, TorchDiagGaussian for Box, TorchMultiCategorical for
        MultiDiscrete, TorchMultiDistribution for Tuple and Dict)."""
        if framework != "torch":
            raise ValueError(
                f"{type(self).__name__}.get_action_dist_cls(framework={framework!r}): only "
                "'torch' has distribution classes here"
            )
        # The torch backend sits above this module: reached by its declared path.
        importlib.import_module(_TORCH_BACKEND).require_torch(
            f"{type(self).__name__}.get_action_dist_cls('torch')"
        )
        return self._get_dist_cls_from_action_space(self.action_space, framework=framework)

    @classmethod
    def _get_dist_cls_from_action_space(cls, action_space: Any, *, framework: str) -> type:
        """RLlib's (private) helper behind `get_action_dist_cls`, for any action space."""
        if framework != "torch":
            raise ValueError(
                f"{cls.__name__}._get_dist_cls_from_action_space(framework={framework!r}): "
                "only 'torch' has distribution classes here"
            )
        importlib.import_module(_TORCH_BACKEND).require_torch(
            f"{cls.__name__}._get_dist_cls_from_action_space(framework='torch')"
        )
        distributions = importlib.import_module(_TORCH_DISTRIBUTIONS)
        return distributions.action_dist_cls_for(
            action_space, f"{cls.__name__}.get_action_dist_cls(): action_space"
        )


def _catalog_names() -> str:
    return " / ".join(sorted(c.__name__ for c in Catalog.default_module_catalogs)) or "none"


def default_catalog_of(catalog_class: Any) -> type[Catalog] | None:
    """The default module's catalog that `catalog_class` is or subclasses (None: neither)."""
    if not isinstance(catalog_class, type):
        return None
    for base in catalog_class.__mro__:
        if base in Catalog.default_module_catalogs:
            return base
    return None


def overridden_builders(catalog_class: type) -> list[str]:
    """The model builders a default catalog's subclass overrides."""
    base = default_catalog_of(catalog_class)
    if base is None:
        return []
    # Looked up statically: a classmethod builder (`_get_encoder_config`) is a new bound
    # method at each attribute access.
    return [
        name
        for name in base.builders
        if inspect.getattr_static(catalog_class, name) is not inspect.getattr_static(base, name)
    ]


def check_catalog_class(where: str, catalog_class: Any, module_class: Any) -> None:
    """Raises ConfigError unless `catalog_class` is None, or a default module's catalog (one
    that defines `builds`, such as RLlib's PPOCatalog) or a subclass of one, on a module class
    it builds (`module_class`; None: the algorithm's default module, numpy or torch, checked
    again once the framework is known). A subclass that overrides model builders needs a
    torch module, which builds through them."""
    if catalog_class is None:
        return
    shown = getattr(catalog_class, "__qualname__", repr(catalog_class))
    base = default_catalog_of(catalog_class)
    if base is None:
        raise ConfigError(
            f"{where}: catalog_class={shown} is not supported: only {_catalog_names()} (what "
            "RLlib's default modules build with) or a subclass of it is accepted, on its "
            f"default module; catalogs that build other networks are not available here "
            f"({_INSTEAD})",
            TORCH,
        )
    if module_class is None:
        return
    module_shown = getattr(module_class, "__qualname__", repr(module_class))
    if not base.builds(module_class):
        raise ConfigError(
            f"{where}: catalog_class={shown} with module_class={module_shown}: {shown} "
            f"is accepted on its default module ({base.module_names}) only; leave "
            f"catalog_class=None ({_INSTEAD})",
            TORCH,
        )
    overridden = overridden_builders(catalog_class)
    if overridden and not base.builds_through_catalog(module_class):
        raise ConfigError(
            f"{where}: catalog_class={shown} overrides {', '.join(overridden)}, which build "
            f"torch networks, but module_class={module_shown} is a numpy module that builds "
            "its own networks: use framework('torch') (or module_class=PPOTorchRLModule)",
            TORCH,
        )


def _multi_action_dist_partial_helper(catalog_cls: Any, action_space: Any, framework: str) -> type:
    """RLlib's helper: `TorchMultiDistribution` bound to the classes of a Tuple / Dict action
    space's leaves (each `catalog_cls._get_dist_cls_from_action_space`'s) and their input
    sizes, for distributions made from logits later."""
    distributions = _torch_distributions("_multi_action_dist_partial_helper", framework)
    return distributions.multi_distribution_for(
        action_space,
        lambda leaf: catalog_cls._get_dist_cls_from_action_space(leaf, framework=framework),
    )


def _multi_categorical_dist_partial_helper(action_space: Any, framework: str) -> type:
    """RLlib's helper: `TorchMultiCategorical` bound to a MultiDiscrete space's sizes."""
    distributions = _torch_distributions("_multi_categorical_dist_partial_helper", framework)
    return distributions.TorchMultiCategorical.get_partial_dist_cls(
        input_lens=[int(n) for n in action_space.nvec]
    )


def _torch_distributions(helper: str, framework: str) -> Any:
    if framework != "torch":
        raise ValueError(f"{helper}(framework={framework!r}): only 'torch' is supported here")
    importlib.import_module(_TORCH_BACKEND).require_torch(helper)
    return importlib.import_module(_TORCH_DISTRIBUTIONS)


__all__ = ["Catalog", "check_catalog_class", "default_catalog_of", "overridden_builders"]
