"""RLlib's `DQNCatalog` (`ray.rllib.algorithms.dqn.dqn_catalog`): the catalog RLlib's default DQN
module builds with. The default torch module (`DefaultDQNTorchRLModule`) builds its encoder and
heads through it when a spec names it (or a subclass, whose overridden builders then shape the
networks); the numpy `QModule` builds the same layout itself, so it takes DQNCatalog as a name
only (see `trainer.core.catalog`).

    _get_encoder_config(observation_space=, model_config_dict=, action_space=)
                              the encoder's config: an object with `output_dims` and
                              `build(framework)`; by default `DefaultEncoderConfig`, the default
                              encoder (`fcnet_hiddens` MLP, or RLlib's CNN for images)
    build_encoder("torch")    `_get_encoder_config()`'s config built
    latent_dims               the encoder's output dims `(D,)` (the config's `output_dims`), the
                              heads' input
    build_af_head("torch")    `head_fcnet_hiddens`, then `action_space.n * num_atoms` outputs:
                              the Q-values, or with `dueling` the advantages
    build_vf_head("torch")    `head_fcnet_hiddens`, then one output: the value (with `dueling`)
    num_atoms                 the model config's `num_atoms`

An encoder of the default kind (`trainer.torch_rl.networks.MLPEncoder`, `CNNEncoder`) takes the
encoded observations (one-hot Discrete, flattened Boxes) as a tensor; any other encoder (one a
subclass's `_get_encoder_config` or `build_encoder` gives) is called as RLlib calls its encoders,
with the batch (`{"obs": ...}`, observations as tensors, nested for Dict / Tuple spaces), and
returns `{ENCODER_OUT: features}`: so a subclass serves observation spaces the default encoders
do not (RLlib's own test of the module gives a Dict space this way).

This module imports no torch (a spec names its catalog before any module is built).
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

from trainer.algorithms.dqn.q_module import QModule, check_support
from trainer.core.catalog import Catalog
from trainer.core.models import check_model_config

#: The module of the default torch module (imported only when a module is built in torch).
_TORCH_MODULE = "trainer.algorithms.dqn.torch_module"

#: The keys RLlib's `DQNConfig` adds to the module's model config (`_model_config_auto_includes`)
#: and their defaults; the encoder's and heads' keys are the shared model config's.
DQN_MODEL_KEYS: dict[str, Any] = {
    "dueling": True,
    "double_q": True,
    "num_atoms": 1,
    "epsilon": [(0, 1.0), (10000, 0.05)],
    "std_init": 0.5,
    "v_min": -10.0,
    "v_max": 10.0,
    "noisy": False,
}


def split_model_config(model_config: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(DQN's settings, `DQN_MODEL_KEYS` with their defaults; the rest, the shared model config,
    checked and with its defaults) of a model config (a dict, a `DefaultModelConfig` or None).
    Raises ValueError naming `where` for a bad support (`num_atoms`, `v_min`, `v_max`) or
    model config."""
    given = _as_dict(model_config)
    settings = {key: given.pop(key, default) for key, default in DQN_MODEL_KEYS.items()}
    check_support(
        settings["num_atoms"], settings["v_min"], settings["v_max"], f"{where}: model_config"
    )
    return settings, check_model_config(given, setting=f"{where} model_config")


def _as_dict(model_config: Any) -> dict[str, Any]:
    import dataclasses

    if dataclasses.is_dataclass(model_config) and not isinstance(model_config, type):
        return dataclasses.asdict(model_config)
    return dict(model_config or {})


def _torch_module(method: str, framework: str, owner: str) -> Any:
    """The default torch module's module (its builders), for `owner.method(framework)`."""
    if framework != "torch":
        raise ValueError(
            f"{owner}.{method}(framework={framework!r}): only 'torch' networks are built here "
            "(RLlib: DQN Rainbow is only supported for framework `torch`)"
        )
    return importlib.import_module(_TORCH_MODULE)


class DefaultEncoderConfig:
    """The default encoder's config, what `DQNCatalog._get_encoder_config` returns (RLlib returns
    an `MLPEncoderConfig` or a `CNNEncoderConfig` there): `build("torch")` gives the default
    module's encoder for `observation_space` (an `fcnet_hiddens` MLP, or RLlib's CNN for an
    image), `output_dims` its output dims `(D,)`. A space the default encoders do not take
    (Dict, Tuple, a 4-D Box) fails when built or asked its dims, naming the space."""

    def __init__(self, observation_space: Any, model_config: dict, where: str) -> None:
        self.observation_space = observation_space
        self.model_config = model_config
        self._where = where

    @functools.cached_property
    def output_dims(self) -> tuple[int, ...]:
        parts = _torch_module("output_dims", "torch", type(self).__name__)
        return (parts.default_encoder_output_dim(self.observation_space, self.model_config),)

    def build(self, framework: str = "torch") -> Any:
        parts = _torch_module("build", framework, type(self).__name__)
        return parts.default_encoder(self.observation_space, self.model_config, self._where)


class DQNCatalog(Catalog):
    """RLlib's `DQNCatalog` (see the module docstring)."""

    rllib_path = "ray.rllib.algorithms.dqn.dqn_catalog.DQNCatalog"
    module_names = "DefaultDQNTorchRLModule, the numpy QModule"
    builders = ("_get_encoder_config", "build_encoder", "build_af_head", "build_vf_head")

    def __init__(
        self,
        observation_space: Any,
        action_space: Any,
        model_config_dict: dict | None = None,
        view_requirements: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            observation_space, action_space, model_config_dict, view_requirements, **kwargs
        )
        where = type(self).__name__
        self._dqn_settings, self._checked_model_config = split_model_config(
            self._model_config_dict, where
        )
        # As RLlib's: the model config with its defaults, DQN's settings included.
        self._model_config_dict = {**self._checked_model_config, **self._dqn_settings}
        #: The number of atoms of distributional Q-learning (1: expected Q-values).
        self.num_atoms = int(self._dqn_settings["num_atoms"])
        self._encoder_config = self._get_encoder_config(
            observation_space=observation_space,
            model_config_dict=dict(self._model_config_dict),
            action_space=action_space,
        )

    def _determine_components_hook(self) -> None:
        """Nothing when made: this catalog's components are decided when first built (so a
        numpy module, which only names the catalog, never imports torch)."""

    @classmethod
    def builds(cls, module_class: Any) -> bool:
        """DQN's default module (numpy or torch), or a subclass of the torch one (which builds
        with the same networks)."""
        return module_class is QModule or cls.builds_through_catalog(module_class)

    @classmethod
    def builds_through_catalog(cls, module_class: Any) -> bool:
        """The default torch module (or a subclass): it calls the catalog's builders."""
        if _TORCH_MODULE in sys.modules and isinstance(module_class, type):
            return issubclass(module_class, sys.modules[_TORCH_MODULE].DefaultDQNTorchRLModule)
        return False

    @classmethod
    def _get_encoder_config(
        cls,
        observation_space: Any,
        model_config_dict: dict,
        action_space: Any = None,
    ) -> Any:
        """The encoder's config (RLlib's hook: override it to give the module an encoder of
        your own, an object with `output_dims` and `build(framework)`); by default the
        default encoder's (`DefaultEncoderConfig`)."""
        _, config = split_model_config(model_config_dict, cls.__name__)
        return DefaultEncoderConfig(observation_space, config, cls.__name__)

    @property
    def latent_dims(self) -> Any:
        """The encoder's output dims `(D,)`: the encoder config's `output_dims`, unless set."""
        if self._latent_dims is None:
            self._latent_dims = tuple(int(d) for d in self._encoder_config.output_dims)
        return self._latent_dims

    @latent_dims.setter
    def latent_dims(self, value: Any) -> None:
        self._latent_dims = value

    def build_encoder(self, framework: str) -> Any:
        """The encoder: `_get_encoder_config()`'s config, built."""
        _torch_module("build_encoder", framework, type(self).__name__)
        return self._encoder_config.build(framework=framework)

    def build_af_head(self, framework: str) -> Any:
        """The Q (or, with `dueling`, advantage) head over `latent_dims`: `action_space.n *
        num_atoms` outputs."""
        parts = _torch_module("build_af_head", framework, type(self).__name__)
        return parts.default_head(
            int(self.latent_dims[0]),
            int(self.action_space.n) * self.num_atoms,
            self._checked_model_config,
        )

    def build_vf_head(self, framework: str) -> Any:
        """The value head over `latent_dims` (the dueling architecture's): one output."""
        parts = _torch_module("build_vf_head", framework, type(self).__name__)
        return parts.default_head(int(self.latent_dims[0]), 1, self._checked_model_config)

    def get_action_dist_cls(self, framework: str) -> type:
        """`TorchCategorical` (over the Q-values: its deterministic sample is the greedy
        action)."""
        _torch_module("get_action_dist_cls", framework, type(self).__name__)
        return importlib.import_module("trainer.torch_rl.distributions").TorchCategorical


__all__ = ["DQN_MODEL_KEYS", "DQNCatalog", "DefaultEncoderConfig", "split_model_config"]
