"""RLlib's model configs for the networks of a user's own RLModule
(`ray.rllib.core.models.configs`, `ray.rllib.core.models.base`): dataclasses that describe an
MLP encoder or head and `build(framework="torch")` it.

    MLPEncoderConfig(input_dims=[4], hidden_layer_dims=[256, 256]).build("torch")
      -> an nn.Module: {"obs": (B, 4)} -> {ENCODER_OUT: (B, 256)}   (RLlib's TorchMLPEncoder)
    MLPHeadConfig(input_dims=[256], hidden_layer_dims=[256], output_layer_dim=2).build("torch")
      -> an nn.Module: (B, 256) -> (B, 2)                            (RLlib's TorchMLPHead)

The layers are RLlib's: `hidden_layer_dims` Linear layers (each with an optional LayerNorm, then
`hidden_layer_activation`), then, with `output_layer_dim`, one more Linear layer with
`output_layer_activation`; weights start from torch's default initialization unless an
initializer is named (a `torch.nn.init` in-place function, by name ending in "_" or itself, with
its `*_config` as keyword arguments). Importing this module does not import torch; `build` does.
Other frameworks, and RLlib's other configs (CNN, recurrent, actor-critic encoders), are not
here: `build(framework="tf2")` raises naming torch.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The key of an encoder's output (RLlib's `ray.rllib.core.models.base.ENCODER_OUT`).
ENCODER_OUT = "encoder_out"
#: RLlib's keys of an actor-critic encoder's two outputs.
ACTOR = "actor"
CRITIC = "critic"

#: Where the torch networks are built (above this layer: resolved when a config builds).
TORCH_NETWORKS = "trainer.torch_rl.model_config_networks"

#: The activation names RLlib knows besides torch.nn's class names ("ReLU", "Tanh", ...).
ACTIVATION_NAMES = ("linear", "relu", "tanh", "elu", "swish", "silu", "softmax")


def check_activation(value: Any, setting: str) -> None:
    """RLlib's `get_activation_fn` check: a callable, None, a torch.nn class name or one of
    `ACTIVATION_NAMES`; raises ValueError naming the setting otherwise."""
    if value is None or callable(value):
        return
    if isinstance(value, str) and value.lower() in ACTIVATION_NAMES:
        return
    if isinstance(value, str) and value[:1].isupper():
        return  # a torch.nn class name, looked up when the network is built
    raise ValueError(
        f"{setting}={value!r}: an activation is a callable, None, a torch.nn class name "
        f"(e.g. 'ReLU') or one of {list(ACTIVATION_NAMES)}"
    )


def check_initializer(value: Any, setting: str) -> None:
    """RLlib's `get_initializer_fn` check: None, a callable, or the name of a torch.nn.init
    in-place initializer (ending in "_")."""
    if value is None or callable(value):
        return
    if not isinstance(value, str) or not value.endswith("_"):
        raise ValueError(
            f"{setting}={value!r}: an initializer is None, a callable, or the name of a "
            "torch.nn.init in-place initializer, ending in '_' (e.g. 'xavier_uniform_')"
        )


class Model(abc.ABC):
    """RLlib's base of a network built from a model config (`ray.rllib.core.models.base`):
    it holds `config` and computes `_forward(inputs)`; `TorchModel`
    (`trainer.torch_rl.model_config_networks`) is its torch form."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config

    @abc.abstractmethod
    def _forward(self, input_dict: dict, **kwargs: Any) -> Any:
        """The network's outputs for `input_dict`."""


class Encoder(Model, abc.ABC):
    """RLlib's encoder: a batch dict in, `{ENCODER_OUT: features}` out (and
    `Columns.STATE_OUT` for a recurrent one)."""


@dataclass
class ModelConfig:
    """RLlib's base of the model configs: `input_dims` (the input's shape without the batch
    axis)."""

    input_dims: list[int] | tuple[int, ...] | None = None
    always_check_shapes: bool = False

    def build(self, framework: str = "torch") -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not build a network")

    @property
    def output_dims(self) -> tuple[int, ...] | None:
        return None

    def _check_framework(self, framework: str) -> None:
        if framework != "torch":
            raise ValueError(
                f"{type(self).__name__}.build(framework={framework!r}): the networks here are "
                "torch's; build(framework='torch')"
            )


@dataclass
class _MLPConfig(ModelConfig):
    """An MLP's layers (see the module docstring), RLlib's fields and defaults."""

    hidden_layer_dims: list[int] | tuple[int, ...] = (256, 256)
    hidden_layer_use_bias: bool = True
    hidden_layer_activation: str | Callable | None = "relu"
    hidden_layer_use_layernorm: bool = False
    hidden_layer_weights_initializer: str | Callable | None = None
    hidden_layer_weights_initializer_config: dict | None = None
    hidden_layer_bias_initializer: str | Callable | None = None
    hidden_layer_bias_initializer_config: dict | None = None
    output_layer_dim: int | None = None
    output_layer_use_layernorm: bool = False
    output_layer_use_bias: bool = True
    output_layer_activation: str | Callable | None = "linear"
    output_layer_weights_initializer: str | Callable | None = None
    output_layer_weights_initializer_config: dict | None = None
    output_layer_bias_initializer: str | Callable | None = None
    output_layer_bias_initializer_config: dict | None = None
    clip_log_std: bool = False
    log_std_clip_param: float = 20.0

    @property
    def output_dims(self) -> tuple[int, ...]:
        if self.output_layer_dim is None and not self.hidden_layer_dims:
            raise ValueError(
                "If `output_layer_dim` is None, you must specify at least one hidden layer "
                "dim, e.g. `hidden_layer_dims=[32]`!"
            )
        return (int(self.output_layer_dim or self.hidden_layer_dims[-1]),)

    def _validate(self, framework: str = "torch") -> None:
        """RLlib's checks, and those of the values the network reads (ValueError naming the
        field and the value)."""
        self._check_framework(framework)
        name = type(self).__name__
        dims = self.input_dims
        if (
            dims is None
            or len(dims) != 1
            or not isinstance(dims[0], int)
            or isinstance(dims[0], bool)
            or dims[0] < 1
        ):
            raise ValueError(
                f"{name}(input_dims={dims!r}): an MLP's input_dims is one positive int, e.g. [32]"
            )
        for dim in self.hidden_layer_dims:
            if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
                raise ValueError(
                    f"{name}(hidden_layer_dims={list(self.hidden_layer_dims)!r}): each "
                    "layer's size is a positive int"
                )
        out = self.output_layer_dim
        if out is not None and (not isinstance(out, int) or isinstance(out, bool) or out < 1):
            raise ValueError(f"{name}(output_layer_dim={out!r}): a positive int or None")
        self.output_dims  # noqa: B018 - raises without any layer
        if self.log_std_clip_param is None:
            raise ValueError(f"{name}: `log_std_clip_param` must be a float value, but is `None`.")
        check_activation(self.hidden_layer_activation, f"{name}.hidden_layer_activation")
        check_activation(self.output_layer_activation, f"{name}.output_layer_activation")
        for field in (
            "hidden_layer_weights_initializer",
            "hidden_layer_bias_initializer",
            "output_layer_weights_initializer",
            "output_layer_bias_initializer",
        ):
            check_initializer(getattr(self, field), f"{name}.{field}")


@dataclass
class MLPHeadConfig(_MLPConfig):
    """An MLP head (RLlib's): a tensor in, a tensor out; with `clip_log_std` the second half
    of the output (a Gaussian's log-stds) is clipped to `[-log_std_clip_param,
    log_std_clip_param]`."""

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        return importlib.import_module(TORCH_NETWORKS).TorchMLPHead(self)


@dataclass
class MLPEncoderConfig(_MLPConfig):
    """An MLP encoder (RLlib's): a batch dict in, `{ENCODER_OUT: net(batch["obs"])}` out."""

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        return importlib.import_module(TORCH_NETWORKS).TorchMLPEncoder(self)
