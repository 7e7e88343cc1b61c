"""RLlib's `Catalog` (`ray.rllib.core.models.catalog`) as a name a spec can carry; an
algorithm's catalog (RLlib's `PPOCatalog`) subclasses it in the algorithm's folder.

In RLlib a catalog builds a module's torch networks from its model config, and the default
modules build their encoders and heads through their algorithm's catalog. Here the default
modules build their networks themselves, with the same layout, so a spec naming a default module
and its algorithm's catalog describes exactly what RLlib's default module is, and is accepted:
the module gets the catalog as `module.catalog` (its spaces and model config) and builds as it
always does.

What is refused (with an error naming the class or the method):
- a catalog class other than a default module's own (a user's subclass overriding the builders,
  RLlib's base `Catalog`), and a catalog on a module other than the default module it
  describes (`check_catalog_class`);
- the model builders (`build_encoder`, `build_actor_critic_encoder`, `build_pi_head`,
  `build_vf_head`, `get_tokenizer_config`, `get_preprocessor`, `latent_dims`): they return
  RLlib's model classes (`Encoder`, `Model` with configs), which do not exist here.
  `get_action_dist_cls("torch")` works: the torch distribution class of the action space.

This module imports no torch (a spec names its catalog before any module is built).
"""

from __future__ import annotations

import importlib
from typing import Any

from trainer.capabilities import OLD_API_STACK, TORCH
from trainer.errors import ConfigError, RLlibNotAvailable, UnsupportedValue

#: The torch backend and its action distributions (`get_action_dist_cls("torch")`).
_TORCH_BACKEND = "trainer.torch_rl"
_TORCH_DISTRIBUTIONS = "trainer.torch_rl.distributions"
#: What a module builds its networks with here, instead of a catalog's builders.
_INSTEAD = (
    "the default modules (numpy and torch) build their networks from model_config "
    "themselves; a custom TorchRLModule builds its nn layers in setup()"
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "builds" in cls.__dict__:
            Catalog.default_module_catalogs.append(cls)

    @classmethod
    def builds(cls, module_class: Any) -> bool:
        """Whether the default module class `module_class` builds its networks as this catalog
        describes (an algorithm's catalog overrides it; the base describes no module)."""
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
        raise self._not_available("latent_dims")

    def build_encoder(self, framework: str) -> Any:
        raise self._not_available("build_encoder")

    def get_tokenizer_config(self, *args: Any, **kwargs: Any) -> Any:
        raise self._not_available("get_tokenizer_config")

    @staticmethod
    def get_preprocessor(observation_space: Any, **kwargs: Any) -> Any:
        raise RLlibNotAvailable(
            f"{Catalog.rllib_path}.get_preprocessor",
            TORCH,
            "gymnasium wrappers or env-to-module connectors (FlattenObservations)",
        )

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


def check_catalog_class(where: str, catalog_class: Any, module_class: Any) -> None:
    """Raises ConfigError unless `catalog_class` is None, or a default module's own catalog
    (one that defines `builds`, such as RLlib's PPOCatalog) on a module class it builds
    (`module_class`, the spec's class with None resolved to the algorithm's default)."""
    if catalog_class is None:
        return
    shown = getattr(catalog_class, "__qualname__", repr(catalog_class))
    if catalog_class not in Catalog.default_module_catalogs:
        raise ConfigError(
            f"{where}: catalog_class={shown} is not supported: only {_catalog_names()} (what "
            "RLlib's default modules build with) is accepted, on its default module; "
            f"catalogs that build other networks are not available here ({_INSTEAD})",
            TORCH,
        )
    if not catalog_class.builds(module_class):
        module_shown = getattr(module_class, "__qualname__", repr(module_class))
        raise ConfigError(
            f"{where}: catalog_class={shown} with module_class={module_shown}: {shown} "
            f"is accepted on its default module ({catalog_class.module_names}) only; leave "
            f"catalog_class=None ({_INSTEAD})",
            TORCH,
        )


__all__ = ["Catalog", "check_catalog_class"]
