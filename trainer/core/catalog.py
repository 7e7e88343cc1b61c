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

The base `Catalog` decides its components as RLlib's does when it is made
(`_determine_components_hook`): `_get_encoder_config` gives RLlib's model config of the default
encoder for the observation space (`trainer.core.model_configs`: an `MLPEncoderConfig` for a 1D
Box, a `CNNEncoderConfig` for an image, preset filters from `get_filter_config` unless
`conv_filters`, a `RecurrentEncoderConfig` with `use_lstm`; ValueError for any other space),
`latent_dims` its output dims, `build_encoder("torch")` builds it, `get_tokenizer_config` gives
the encoder config without the LSTM. `get_action_dist_cls("torch")` gives the torch
distribution class of the action space; `get_preprocessor` the old stack's preprocessor
(`trainer.compat.preprocessors`). The algorithms' catalogs (PPOCatalog, DQNCatalog) decide
their components themselves, lazily (a numpy module never imports torch through them).

What is refused (with an error naming the class or the method): a catalog class that is not a
default module's catalog or a subclass of one (RLlib's base `Catalog`, a user's class of its
own) as a spec's `catalog_class`, a catalog on a module other than the default module it
describes, and a subclass that overrides builders on a numpy module, which cannot run torch
networks (`check_catalog_class`).

This module imports no torch (a spec names its catalog before any module is built).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
from typing import Any

import gymnasium as gym

from trainer.capabilities import OLD_API_STACK, TORCH
from trainer.core.model_configs import (
    CNNEncoderConfig,
    MLPEncoderConfig,
    ModelConfig,
    RecurrentEncoderConfig,
    get_filter_config,
)
from trainer.errors import ConfigError, RLlibNotAvailable, UnsupportedValue

#: The torch backend and its action distributions (`get_action_dist_cls("torch")`).
_TORCH_BACKEND = "trainer.torch_rl"
_TORCH_DISTRIBUTIONS = "trainer.torch_rl.distributions"
#: The model config's check (`trainer.core.models` imports the module layer, which names this
#: catalog: reached by its declared path when a catalog decides its encoder).
_MODELS = "trainer.core.models"
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
        if dataclasses.is_dataclass(model_config_dict) and not isinstance(model_config_dict, type):
            model_config_dict = dataclasses.asdict(model_config_dict)
        self._model_config_dict = dict(model_config_dict or {})
        self._latent_dims: Any = None
        self._determine_components_hook()

    def _determine_components_hook(self) -> None:
        """RLlib's decision of the components, when the catalog is made: the encoder's config
        (`_get_encoder_config`), the action distribution's class (by framework) and
        `latent_dims`, the encoder's output dims. Raises ValueError for an observation space
        without a default encoder (RLlib's message; for the raw Atari frame, its hint). The
        algorithms' catalogs override it: they decide lazily."""
        self._encoder_config = self._get_encoder_config(
            observation_space=self.observation_space,
            model_config_dict=self._model_config_dict,
            action_space=self.action_space,
        )
        self._action_dist_class_fn = functools.partial(
            self._get_dist_cls_from_action_space, action_space=self.action_space
        )
        self.latent_dims = self._encoder_config.output_dims

    @classmethod
    def _get_encoder_config(
        cls,
        observation_space: Any,
        model_config_dict: dict,
        action_space: Any = None,
    ) -> Any:
        """RLlib's default encoder config for `observation_space` and the model config (a dict;
        missing keys take their defaults): with `use_lstm` a `RecurrentEncoderConfig` (one
        LSTM layer of `lstm_cell_size`, over `get_tokenizer_config`'s encoder); else for a 1D
        Box an `MLPEncoderConfig` (`fcnet_hiddens[:-1]` hidden, `fcnet_hiddens[-1]` out,
        `fcnet_activation`, `fcnet_use_layernorm` on every layer), for a 3D Box a
        `CNNEncoderConfig` (`conv_filters`, else `get_filter_config`'s preset). ValueError for
        any other space, naming it."""
        config = importlib.import_module(_MODELS).check_model_config(
            dict(model_config_dict),
            setting=f"{cls.__name__}._get_encoder_config(model_config_dict)",
        )
        shape = tuple(getattr(observation_space, "shape", None) or ())
        is_box = isinstance(observation_space, gym.spaces.Box)
        if config["use_lstm"]:
            return RecurrentEncoderConfig(
                input_dims=shape,
                recurrent_layer_type="lstm",
                hidden_dim=int(config["lstm_cell_size"]),
                hidden_weights_initializer=config["lstm_kernel_initializer"],
                hidden_weights_initializer_config=config["lstm_kernel_initializer_kwargs"],
                hidden_bias_initializer=config["lstm_bias_initializer"],
                hidden_bias_initializer_config=config["lstm_bias_initializer_kwargs"],
                batch_major=True,
                num_layers=1,
                tokenizer_config=cls.get_tokenizer_config(observation_space, config),
            )
        if is_box and len(shape) == 1:
            hiddens = list(config["fcnet_hiddens"])
            if not hiddens:
                raise ValueError(
                    f"{cls.__name__}._get_encoder_config: model_config['fcnet_hiddens']=[]: the "
                    "default encoder needs at least one layer (its last size is the latent size)"
                )
            layernorm = bool(config["fcnet_use_layernorm"])
            initializers = {
                f"{layer}_layer_{part}_initializer{suffix}": config[f"fcnet_{key}_initializer{kw}"]
                for layer in ("hidden", "output")
                for part, key in (("weights", "kernel"), ("bias", "bias"))
                for suffix, kw in (("", ""), ("_config", "_kwargs"))
            }
            return MLPEncoderConfig(
                input_dims=shape,
                hidden_layer_dims=hiddens[:-1],
                hidden_layer_activation=config["fcnet_activation"],
                hidden_layer_use_layernorm=layernorm,
                output_layer_dim=hiddens[-1],
                output_layer_activation=config["fcnet_activation"],
                output_layer_use_layernorm=layernorm,
                **initializers,
            )
        if is_box and len(shape) == 3:
            return CNNEncoderConfig(
                input_dims=shape,
                cnn_filter_specifiers=config["conv_filters"] or get_filter_config(shape),
                cnn_activation=config["conv_activation"],
                cnn_kernel_initializer=config["conv_kernel_initializer"],
                cnn_kernel_initializer_config=config["conv_kernel_initializer_kwargs"],
                cnn_bias_initializer=config["conv_bias_initializer"],
                cnn_bias_initializer_config=config["conv_bias_initializer_kwargs"],
            )
        why = (
            " 2D Box spaces are not supported. They should be either flattened to a 1D Box "
            "space or enhanced to be a 3D box space."
            if is_box and len(shape) == 2
            else ""
        )
        raise ValueError(
            f"No default encoder config for obs space={observation_space}, "
            f"lstm={config['use_lstm']} found.{why}"
        )

    @classmethod
    def get_tokenizer_config(
        cls, observation_space: Any, model_config_dict: dict, view_requirements: Any = None
    ) -> ModelConfig:
        """RLlib's: the encoder config a recurrent encoder tokenizes its inputs with (the
        default encoder's, without the LSTM)."""
        if view_requirements is not None:
            raise UnsupportedValue(
                f"{cls.__name__}.get_tokenizer_config(view_requirements=...): view "
                "requirements belong to RLlib's old API stack and are not supported",
                OLD_API_STACK,
            )
        return cls._get_encoder_config(
            observation_space=observation_space,
            model_config_dict={**model_config_dict, "use_lstm": False},
        )

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
        """The encoder: `_get_encoder_config()`'s config built (torch)."""
        encoder_config = getattr(self, "_encoder_config", None)
        if encoder_config is None:
            raise self._not_available("build_encoder")
        return encoder_config.build(framework=framework)

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
    def _get_dist_cls_from_action_space(
        cls, action_space: Any, *, framework: str | None = None
    ) -> type:
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
