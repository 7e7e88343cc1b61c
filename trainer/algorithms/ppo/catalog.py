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

RLlib's attributes are there for a subclass to read and replace, decided lazily when first read:
`_encoder_config` (`_get_encoder_config`'s), `actor_critic_encoder_config` (an
`ActorCriticEncoderConfig` over it), `pi_and_vf_head_hiddens` / `pi_and_vf_head_activation`,
`vf_head_config` (an `MLPHeadConfig`) and `pi_head_config`. A subclass that sets
`actor_critic_encoder_config` or `vf_head_config` gets those configs built (RLlib's builders);
one that overrides `_get_encoder_config` gets `latent_dims` from its config's `output_dims`.
The model config (`_model_config_dict`) has the defaults of `DefaultModelConfig` under the
module's own keys, as RLlib's default modules get it.
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from trainer.algorithms.ppo.module import PolicyModule
from trainer.core.catalog import Catalog
from trainer.core.model_configs import ActorCriticEncoderConfig, MLPHeadConfig
from trainer.core.models import MODEL_DEFAULTS, check_model_config

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
        numpy module, which only names the catalog, never imports torch); the model config
        gets DefaultModelConfig's defaults under its own keys, as RLlib's catalog gets it."""
        self._model_config_dict = {**MODEL_DEFAULTS, **self._model_config_dict}
        #: RLlib's policy head config: set by `build_pi_head` (RLlib's; None until then).
        self.pi_head_config: Any = None

    # -- RLlib's component configs (see the module docstring) ---------------------------------
    def _set_by_user(self, name: str) -> bool:
        return name in self.__dict__

    @property
    def _encoder_config(self) -> Any:
        """RLlib's encoder config (`_get_encoder_config`'s), decided when first read."""
        if "_encoder_config_value" not in self.__dict__:
            self.__dict__["_encoder_config_value"] = self._get_encoder_config(
                observation_space=self.observation_space,
                model_config_dict=self._model_config_dict,
                action_space=self.action_space,
            )
        return self.__dict__["_encoder_config_value"]

    @_encoder_config.setter
    def _encoder_config(self, value: Any) -> None:
        self.__dict__["_encoder_config_value"] = value

    @property
    def pi_and_vf_head_hiddens(self) -> Any:
        return self.__dict__.get(
            "pi_and_vf_head_hiddens", self._model_config_dict["head_fcnet_hiddens"]
        )

    @pi_and_vf_head_hiddens.setter
    def pi_and_vf_head_hiddens(self, value: Any) -> None:
        self.__dict__["pi_and_vf_head_hiddens"] = value

    @property
    def pi_and_vf_head_activation(self) -> Any:
        return self.__dict__.get(
            "pi_and_vf_head_activation", self._model_config_dict["head_fcnet_activation"]
        )

    @pi_and_vf_head_activation.setter
    def pi_and_vf_head_activation(self, value: Any) -> None:
        self.__dict__["pi_and_vf_head_activation"] = value

    @property
    def actor_critic_encoder_config(self) -> Any:
        """RLlib's: an `ActorCriticEncoderConfig` over `_encoder_config` (`vf_share_layers`:
        shared)."""
        if "actor_critic_encoder_config" not in self.__dict__:
            return ActorCriticEncoderConfig(
                base_encoder_config=self._encoder_config,
                shared=bool(self._model_config_dict["vf_share_layers"]),
            )
        return self.__dict__["actor_critic_encoder_config"]

    @actor_critic_encoder_config.setter
    def actor_critic_encoder_config(self, value: Any) -> None:
        self.__dict__["actor_critic_encoder_config"] = value

    @property
    def vf_head_config(self) -> Any:
        """RLlib's: an `MLPHeadConfig` from `latent_dims` through the head's hidden layers to
        one value."""
        if "vf_head_config" not in self.__dict__:
            return MLPHeadConfig(
                input_dims=self.latent_dims,
                hidden_layer_dims=self.pi_and_vf_head_hiddens,
                hidden_layer_activation=self.pi_and_vf_head_activation,
                hidden_layer_use_layernorm=self._model_config_dict.get(
                    "head_fcnet_use_layernorm", False
                ),
                output_layer_activation="linear",
                output_layer_dim=1,
            )
        return self.__dict__["vf_head_config"]

    @vf_head_config.setter
    def vf_head_config(self, value: Any) -> None:
        self.__dict__["vf_head_config"] = value

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
        `RecurrentActorCriticEncoder`); a subclass's `actor_critic_encoder_config`, built,
        where it set one (RLlib's `ActorCriticEncoder` protocol)."""
        if self._set_by_user("actor_critic_encoder_config"):
            return self.actor_critic_encoder_config.build(framework=framework)
        parts, config = self._torch_parts("build_actor_critic_encoder", framework)
        return parts.default_actor_critic_encoder(
            self.observation_space, self.action_space, config, type(self).__name__
        )

    @property
    def latent_dims(self) -> Any:
        """The encoder's output dims `(D,)` (those of the default encoder, unless set)."""
        if self._latent_dims is None and _overrides(type(self), "_get_encoder_config"):
            self._latent_dims = tuple(self._encoder_config.output_dims)
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
        """The value head over `latent_dims`: one value per row (a subclass's
        `vf_head_config`, built, where it set one)."""
        if self._set_by_user("vf_head_config"):
            return self.vf_head_config.build(framework=framework)
        parts, config = self._torch_parts("build_vf_head", framework)
        return parts.default_vf_head(config, int(self.latent_dims[0]))


def _overrides(cls: type, name: str) -> bool:
    """Whether `cls` (a PPOCatalog subclass) defines its own `name`."""
    return getattr(cls, name) is not getattr(PPOCatalog, name)


def _check_if_diag_gaussian(
    action_distribution_cls: Any, framework: str, no_error: bool = False
) -> bool:
    """RLlib's check that a `free_log_std` head's distribution is a diagonal Gaussian: whether
    it is (`no_error`), else AssertionError unless it is."""
    if framework != "torch":
        raise ValueError(f"Framework {framework} not supported for free_log_std.")
    gaussian = importlib.import_module("trainer.torch_rl.distributions").TorchDiagGaussian
    is_diag_gaussian = isinstance(action_distribution_cls, type) and issubclass(
        action_distribution_cls, gaussian
    )
    if not no_error:
        assert is_diag_gaussian, (
            "free_log_std is only supported for DiagGaussian action distributions. Found "
            f"action distribution: {action_distribution_cls}."
        )
    return is_diag_gaussian
