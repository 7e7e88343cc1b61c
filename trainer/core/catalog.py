"""RLlib's `Catalog` and `PPOCatalog` (`ray.rllib.core.models.catalog`,
`ray.rllib.algorithms.ppo.ppo_catalog`) as names a spec can carry.

In RLlib a catalog builds a module's torch networks from its model config, and the default PPO
module builds its encoder and heads through `PPOCatalog`. Here the default modules (the numpy
`PolicyModule` and `DefaultPPOTorchRLModule`) build their networks themselves, with the same
layout, so `RLModuleSpec(module_class=PPOTorchRLModule, catalog_class=PPOCatalog)` describes
exactly what RLlib's default module is, and is accepted: the module gets a `PPOCatalog` as
`module.catalog` (its spaces and model config) and builds as it always does.

What is refused (with an error naming the class or the method):
- a catalog class other than `PPOCatalog` (a user's subclass overriding the builders, RLlib's
  base `Catalog`, another algorithm's catalog), and any catalog on a module other than the
  default PPO module (`check_catalog_class`);
- the model builders (`build_encoder`, `build_actor_critic_encoder`, `build_pi_head`,
  `build_vf_head`, `get_tokenizer_config`, `get_preprocessor`, `latent_dims`): they return
  RLlib's model classes (`Encoder`, `Model` with configs), which do not exist here.
  `get_action_dist_cls("torch")` works: the torch distribution class of the action space.

This module imports no torch (a spec names its catalog before any module is built).
"""

from __future__ import annotations

from typing import Any

from trainer.capabilities import OLD_API_STACK, TORCH
from trainer.errors import ConfigError, RLlibNotAvailable, UnsupportedValue

#: What a module builds its networks with here, instead of a catalog's builders.
_INSTEAD = (
    "the default modules (PPOTorchRLModule / DefaultPPOTorchRLModule, the numpy default "
    "module) build their networks from model_config themselves; a custom TorchRLModule "
    "builds its nn layers in setup()"
)


class Catalog:
    """RLlib's `Catalog` (see the module docstring): holds the spaces and the model config;
    its model builders are not available here."""

    #: The RLlib path of the class (in error messages).
    rllib_path = "ray.rllib.core.models.catalog.Catalog"

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
        TorchCategorical for Discrete, TorchDiagGaussian for Box)."""
        if framework != "torch":
            raise ValueError(
                f"{type(self).__name__}.get_action_dist_cls(framework={framework!r}): only "
                "'torch' has distribution classes here"
            )
        import gymnasium as gym

        from trainer.torch_rl import require_torch

        require_torch(f"{type(self).__name__}.get_action_dist_cls('torch')")
        from trainer.torch_rl.distributions import TorchCategorical, TorchDiagGaussian

        if isinstance(self.action_space, gym.spaces.Discrete):
            return TorchCategorical
        if isinstance(self.action_space, gym.spaces.Box):
            return TorchDiagGaussian
        raise ValueError(
            f"{type(self).__name__}.get_action_dist_cls(): no distribution for the action "
            f"space {self.action_space} (Discrete and Box have one)"
        )


class PPOCatalog(Catalog):
    """RLlib's `PPOCatalog`: the catalog RLlib's default PPO module builds with (see the module
    docstring: accepted on the default PPO module, its builders not available)."""

    rllib_path = "ray.rllib.algorithms.ppo.ppo_catalog.PPOCatalog"

    def build_actor_critic_encoder(self, framework: str) -> Any:
        raise self._not_available("build_actor_critic_encoder")

    def build_pi_head(self, framework: str) -> Any:
        raise self._not_available("build_pi_head")

    def build_vf_head(self, framework: str) -> Any:
        raise self._not_available("build_vf_head")


def _is_default_ppo_module_class(module_class: Any) -> bool:
    """Whether `module_class` is PPO's default module (numpy or torch), or a subclass of the
    torch one (which builds with the same networks)."""
    import sys

    from trainer.core.models import PolicyModule

    if module_class is PolicyModule:
        return True
    if "trainer.torch_rl.default_ppo_module" in sys.modules and isinstance(module_class, type):
        from trainer.torch_rl.default_ppo_module import DefaultPPOTorchRLModule

        return issubclass(module_class, DefaultPPOTorchRLModule)
    return False


def check_catalog_class(where: str, catalog_class: Any, module_class: Any) -> None:
    """Raises ConfigError unless `catalog_class` is None, or `PPOCatalog` on PPO's default
    module class (`module_class`, the spec's class with None resolved to the algorithm's
    default)."""
    if catalog_class is None:
        return
    shown = getattr(catalog_class, "__qualname__", repr(catalog_class))
    if catalog_class is not PPOCatalog:
        raise ConfigError(
            f"{where}: catalog_class={shown} is not supported: only PPOCatalog (what RLlib's "
            "default PPO module builds with) is accepted, on the default PPO module; "
            f"catalogs that build other networks are not available here ({_INSTEAD})",
            TORCH,
        )
    if not _is_default_ppo_module_class(module_class):
        module_shown = getattr(module_class, "__qualname__", repr(module_class))
        raise ConfigError(
            f"{where}: catalog_class=PPOCatalog with module_class={module_shown}: PPOCatalog "
            "is accepted on PPO's default module (PPOTorchRLModule / DefaultPPOTorchRLModule) "
            f"only; leave catalog_class=None ({_INSTEAD})",
            TORCH,
        )


__all__ = ["Catalog", "PPOCatalog", "check_catalog_class"]
