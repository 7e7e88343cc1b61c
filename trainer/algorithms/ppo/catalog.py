"""RLlib's `PPOCatalog` (`ray.rllib.algorithms.ppo.ppo_catalog`): the catalog RLlib's default
PPO module builds with. The default torch module builds its encoder and heads through it when a
spec names it (or a subclass, whose overridden builders then shape the networks); the numpy
module builds the same layout itself, so it takes PPOCatalog as a name only (see
`trainer.core.catalog`).

    build_actor_critic_encoder("torch")   the encoder (one shared, or one each for the policy
                                          and the value function; LSTM with use_lstm)
    latent_dims                           its output dims `(D,)`, the heads' input
    build_pi_head("torch")                `head_fcnet_hiddens`, then the action distribution's
                                          inputs
    build_vf_head("torch")                `head_fcnet_hiddens`, then one value
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from trainer.algorithms.ppo.module import PolicyModule
from trainer.core.catalog import Catalog
from trainer.core.models import check_model_config

#: The module of the default torch module (imported only when a config asks for torch).
_TORCH_MODULE = "trainer.algorithms.ppo.torch_module"


class PPOCatalog(Catalog):
    """RLlib's `PPOCatalog` (see the module docstring)."""

    rllib_path = "ray.rllib.algorithms.ppo.ppo_catalog.PPOCatalog"
    module_names = "PPOTorchRLModule / DefaultPPOTorchRLModule, the numpy PolicyModule"
    builders = ("build_actor_critic_encoder", "build_pi_head", "build_vf_head")

    @classmethod
    def builds(cls, module_class: Any) -> bool:
        """PPO's default module (numpy or torch), or a subclass of the torch one (which builds
        with the same networks)."""
        return module_class is PolicyModule or cls.builds_through_catalog(module_class)

    @classmethod
    def builds_through_catalog(cls, module_class: Any) -> bool:
        """The default torch module (or a subclass): it calls the catalog's builders."""
        if _TORCH_MODULE in sys.modules and isinstance(module_class, type):
            return issubclass(module_class, sys.modules[_TORCH_MODULE].DefaultPPOTorchRLModule)
        return False

    def _determine_components_hook(self) -> None:
        """Nothing when made: this catalog's components are decided when first built (so a
        numpy module, which only names the catalog, never imports torch)."""

    # -- the builders (torch) --------------------------------------------------------------
    def _torch_parts(self, method: str, framework: str) -> tuple[Any, dict]:
        """The torch module's builders and the checked model config, for `method`."""
        if framework != "torch":
            raise ValueError(
                f"{type(self).__name__}.{method}(framework={framework!r}): only 'torch' "
                "networks are built here"
            )
        return importlib.import_module(_TORCH_MODULE), self._checked_model_config

    @functools.cached_property
    def _checked_model_config(self) -> dict:
        """The model config with its defaults, checked once for the builders."""
        return check_model_config(
            self._model_config_dict, setting=f"{type(self).__name__}'s model_config_dict"
        )

    def build_actor_critic_encoder(self, framework: str) -> Any:
        """The default PPO module's encoder (`ActorCriticEncoder`, or with `use_lstm` a
        `RecurrentActorCriticEncoder`)."""
        parts, config = self._torch_parts("build_actor_critic_encoder", framework)
        return parts.default_actor_critic_encoder(
            self.observation_space, self.action_space, config, type(self).__name__
        )

    @property
    def latent_dims(self) -> Any:
        """The encoder's output dims `(D,)` (those of the default encoder, unless set)."""
        if self._latent_dims is None:
            encoder = PPOCatalog.build_actor_critic_encoder(self, framework="torch")
            self._latent_dims = (int(encoder.output_dim),)
        return self._latent_dims

    @latent_dims.setter
    def latent_dims(self, value: Any) -> None:
        self._latent_dims = value

    def build_pi_head(self, framework: str) -> Any:
        """The policy head over `latent_dims`: the action distribution's inputs."""
        parts, config = self._torch_parts("build_pi_head", framework)
        return parts.default_pi_head(self.action_space, config, int(self.latent_dims[0]))

    def build_vf_head(self, framework: str) -> Any:
        """The value head over `latent_dims`: one value per row."""
        parts, config = self._torch_parts("build_vf_head", framework)
        return parts.default_vf_head(config, int(self.latent_dims[0]))
