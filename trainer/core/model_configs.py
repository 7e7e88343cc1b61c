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
Besides the MLPs: `FreeLogStdMLPHeadConfig` (an MLP for the means and free log-std
parameters), `CNNEncoderConfig` (RLlib's TorchCNNEncoder: "same"/"valid"-padded convolutions,
channels-last images in), `CNNTransposeHeadConfig` (RLlib's TorchCNNTransposeHead: a dense layer
to an image, then TF-style "same" transposed convolutions) and `RecurrentEncoderConfig` (RLlib's
TorchLSTMEncoder / TorchGRUEncoder) and `ActorCriticEncoderConfig` (RLlib's
TorchActorCriticEncoder over a base encoder config: shared, or one each for the policy and the
value function; what a user's PPOCatalog builds its own encoders with); each config's
`output_dims` is computed without torch, as RLlib's. Other frameworks, RLlib's stateful
actor-critic and multi-stream encoder configs are not here: `build(framework="tf2")` raises
naming torch.
"""

from __future__ import annotations

import abc
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
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
        # Any: each network reads its own config class's fields.
        self.config: Any = config

    @abc.abstractmethod
    def _forward(self, input_dict: Any, **kwargs: Any) -> Any:
        """The network's outputs for `input_dict`."""

    def get_initial_state(self) -> Any:
        """The recurrent state a sequence starts from (RLlib's: `{}` for a stateless model)."""
        return {}

    def get_input_specs(self) -> Any:
        """RLlib's hook for the model's input specs: none (RLlib's default too; no spec is
        checked here)."""
        return None

    def get_output_specs(self) -> Any:
        """RLlib's hook for the model's output specs: none (as `get_input_specs`)."""
        return None

    @property
    def input_specs(self) -> Any:
        """`get_input_specs()`'s answer."""
        return self.get_input_specs()

    @property
    def output_specs(self) -> Any:
        """`get_output_specs()`'s answer."""
        return self.get_output_specs()

    def get_num_parameters(self) -> tuple[int, int]:
        """(trainable, non-trainable) parameter counts: a framework's model counts its own
        (`TorchModel`); a numpy network's are its arrays (`parameters()` where it has one)."""
        parameters = getattr(self, "parameters", None)
        if not callable(parameters):
            return 0, 0
        trainable = frozen = 0
        for parameter in parameters():
            numel = getattr(parameter, "numel", None)
            size = int(numel() if callable(numel) else getattr(parameter, "size", 0))
            if getattr(parameter, "requires_grad", True):
                trainable += size
            else:
                frozen += size
        return trainable, frozen


class Encoder(Model, abc.ABC):
    """RLlib's encoder: a batch dict in, `{ENCODER_OUT: features}` out (and
    `Columns.STATE_OUT` for a recurrent one)."""


class ActorCriticEncoder(Encoder):
    """RLlib's actor-critic encoder (`ActorCriticEncoderConfig`): one encoder shared by the
    policy and the value function (`encoder`), or one each (`actor_encoder`,
    `critic_encoder`; no critic encoder when `inference_only`), each built from
    `config.base_encoder_config` with the class's `framework`. Its output is
    `{ENCODER_OUT: {ACTOR: ..., CRITIC: ...}}` (no `CRITIC` when `inference_only`)."""

    framework: str | None = None

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        acc: Any = config
        if acc.shared:
            self.encoder = acc.base_encoder_config.build(framework=self.framework)
        else:
            self.actor_encoder = acc.base_encoder_config.build(framework=self.framework)
            self.critic_encoder = None
            if not acc.inference_only:
                self.critic_encoder = acc.base_encoder_config.build(framework=self.framework)

    def _forward(self, input_dict: Any, **kwargs: Any) -> dict:
        inputs = input_dict
        if self.config.shared:
            out = self.encoder(inputs, **kwargs)[ENCODER_OUT]
            return {
                ENCODER_OUT: {ACTOR: out, **({} if self.config.inference_only else {CRITIC: out})}
            }
        actor_out = self.actor_encoder(inputs, **kwargs)[ENCODER_OUT]
        outputs = {ACTOR: actor_out}
        if not self.config.inference_only and self.critic_encoder is not None:
            outputs[CRITIC] = self.critic_encoder(inputs, **kwargs)[ENCODER_OUT]
        return {ENCODER_OUT: outputs}


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
        for setting in (
            "hidden_layer_weights_initializer",
            "hidden_layer_bias_initializer",
            "output_layer_weights_initializer",
            "output_layer_bias_initializer",
        ):
            check_initializer(getattr(self, setting), f"{name}.{setting}")


@dataclass
class MLPHeadConfig(_MLPConfig):
    """An MLP head (RLlib's): a tensor in, a tensor out; with `clip_log_std` the second half
    of the output (a Gaussian's log-stds) is clipped to `[-log_std_clip_param,
    log_std_clip_param]`."""

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        return importlib.import_module(TORCH_NETWORKS).TorchMLPHead(self)


@dataclass
class ActorCriticEncoderConfig(ModelConfig):
    """RLlib's config of an actor-critic encoder (`ActorCriticEncoder`): `base_encoder_config`
    built once (`shared`) or twice (policy and value function; the value function's left
    out with `inference_only`). A recurrent base encoder is not taken here."""

    base_encoder_config: ModelConfig | None = None
    shared: bool = True
    inference_only: bool = False

    def build(self, framework: str = "torch") -> Any:
        self._check_framework(framework)
        if isinstance(self.base_encoder_config, RecurrentEncoderConfig):
            raise ValueError(
                "ActorCriticEncoderConfig(base_encoder_config=RecurrentEncoderConfig(...)): "
                "RLlib's stateful actor-critic encoder is not built here; a default module's "
                "model_config(use_lstm=True) builds its recurrent encoder itself"
            )
        return importlib.import_module(TORCH_NETWORKS).TorchActorCriticEncoder(self)

    @property
    def output_dims(self) -> tuple[int, ...] | None:
        base = self.base_encoder_config
        return None if base is None else base.output_dims


@dataclass
class MLPEncoderConfig(_MLPConfig):
    """An MLP encoder (RLlib's): a batch dict in, `{ENCODER_OUT: net(batch["obs"])}` out."""

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        return importlib.import_module(TORCH_NETWORKS).TorchMLPEncoder(self)


@dataclass
class FreeLogStdMLPHeadConfig(_MLPConfig):
    """RLlib's head for a Gaussian with free (observation-independent) log-stds: the MLP
    outputs the means (half of `output_dims`), a parameter vector the log-stds (the other
    half, clipped with `clip_log_std`); `output_dims` must be even."""

    def _validate(self, framework: str = "torch") -> None:
        super()._validate(framework)
        if self.output_dims[0] % 2 == 1:
            raise ValueError(
                f"FreeLogStdMLPHeadConfig: `output_layer_dim` ({self.output_layer_dim}) or the "
                f"last value in `hidden_layer_dims` ({list(self.hidden_layer_dims)}) must be an "
                "even int (dividable by 2), e.g. `output_layer_dim=8`"
            )

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        return importlib.import_module(TORCH_NETWORKS).TorchFreeLogStdMLPHead(self)


def _pair(value: int | list[int] | tuple[int, ...]) -> tuple[int, int]:
    """A kernel or stride given as one int (square) or as `[a, b]`."""
    if isinstance(value, (list, tuple)):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def same_padding(
    in_size: Any, filter_size: Any, stride_size: Any
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """RLlib's `same_padding` (TensorFlow's "same"): the zero padding `(left, right, top,
    bottom)` and the output size (the input divided by the stride, rounded up)."""
    (in_h, in_w), (k_h, k_w), (s_h, s_w) = _pair(in_size), _pair(filter_size), _pair(stride_size)
    out_h, out_w = math.ceil(in_h / s_h), math.ceil(in_w / s_w)
    pad_h = (out_h - 1) * s_h + k_h - in_h
    pad_w = (out_w - 1) * s_w + k_w - in_w
    return (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2), (out_h, out_w)


def valid_padding(in_size: Any, filter_size: Any, stride_size: Any) -> tuple[int, int]:
    """RLlib's `valid_padding`: the output size of a convolution without padding."""
    (in_h, in_w), (k_h, k_w), (s_h, s_w) = _pair(in_size), _pair(filter_size), _pair(stride_size)
    return math.ceil((in_h - k_h + 1) / s_h), math.ceil((in_w - k_w + 1) / s_w)


def same_padding_transpose_after_stride(
    strided_size: Any, kernel: Any, stride: Any
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """RLlib's padding of a transposed convolution (TensorFlow's Conv2DTranspose "same"):
    the zeros `(left, right, top, bottom)` around the already strided image and the size
    after padding (before the kernel)."""
    (k_w, k_h), (s_w, s_h) = _pair(kernel), _pair(stride)
    total_w, total_h = k_w - 1 + s_w - 1, k_h - 1 + s_h - 1
    right, bottom = total_w // 2, total_h // 2
    padding = (right + total_w % 2, right, bottom + total_h % 2, bottom)
    size = _pair(strided_size)
    return padding, (size[0] + total_w - k_w + 1, size[1] + total_h - k_h + 1)


#: RLlib's preset convolution stacks by image size (`get_filter_config`), in its order.
FILTER_PRESETS: dict[int, list[list[Any]]] = {
    96: [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 2]],
    84: [[16, [8, 8], 4], [32, [4, 4], 2], [256, [11, 11], 1]],
    64: [[16, [4, 4], 2], [32, [4, 4], 2], [64, [4, 4], 2], [128, [4, 4], 2]],
    42: [[16, [4, 4], 2], [32, [4, 4], 2], [256, [11, 11], 1]],
    10: [[16, [5, 5], 2], [32, [5, 5], 2]],
}
#: RLlib's hint for the raw Atari frame (an env not wrapped as RLlib's Atari examples do).
ATARI_HELP = (
    "This is the default atari obs shape. You may want to look at one of RLlib's Atari "
    "examples for an example of how to wrap an Atari env. "
)


def has_filter_preset(shape: Any, size: int) -> bool:
    """Whether an image `shape` is `[size, size, K]` or `[K, size, size]`: RLlib's match of
    a preset `conv_filters` stack (`FILTER_PRESETS[size]`)."""
    dims = [int(d) for d in shape]
    return dims[:2] == [size, size] or dims[1:] == [size, size]


def get_filter_config(shape: Any) -> list[list[Any]]:
    """RLlib's `ray.rllib.models.utils.get_filter_config`: the preset `conv_filters` for an
    image `shape` (`[size, size, K]` or `[K, size, size]`); ValueError naming `conv_filters`
    (and, for the raw Atari frame `[210, 160, 3]`, RLlib's Atari hint) for any other."""
    dims = [int(d) for d in shape]
    if len(dims) in (2, 3):
        for size, filters in FILTER_PRESETS.items():
            if has_filter_preset(dims, size):
                return [list(f) for f in filters]
    atari_help = ATARI_HELP if dims == [210, 160, 3] else ""
    sizes = ", ".join(f"{s}x{s}" for s in FILTER_PRESETS)
    raise ValueError(
        f"No default configuration for obs shape {dims}, you must specify `conv_filters` "
        f"manually as a model option. Default configurations are only available for inputs "
        f"of the following shapes: {sizes}. {atari_help}You may alternatively want to use a "
        "custom model or preprocessor."
    )


def _conv_spec(spec: Any, setting: str) -> tuple[int, Any, Any, str]:
    """A filter specifier `[num_filters, kernel, stride]` or `[..., padding]` ("same" by
    default), checked."""
    if not isinstance(spec, (list, tuple)) or len(spec) not in (3, 4):
        raise ValueError(
            f"{setting}: each entry is [num_filters, kernel, stride] or [num_filters, kernel, "
            f"stride, padding], got {spec!r}"
        )
    padding = spec[3] if len(spec) == 4 else "same"
    if padding not in ("same", "valid"):
        raise ValueError(f"{setting}: padding {padding!r} of {spec!r}: 'same' or 'valid'")
    return int(spec[0]), spec[1], spec[2], padding


@dataclass
class CNNEncoderConfig(ModelConfig):
    """RLlib's convolutional encoder: channels-last images `input_dims` `[w, h, c]` in; each
    `cnn_filter_specifiers` entry a Conv2d ("same" padding as TensorFlow's unless "valid"),
    optionally a LayerNorm over the channels, then `cnn_activation`; flattened at the end
    (`flatten_at_end`)."""

    cnn_filter_specifiers: list = field(
        default_factory=lambda: [[16, [4, 4], 2], [32, [4, 4], 2], [64, [8, 8], 2]]
    )
    cnn_use_bias: bool = True
    cnn_activation: str | Callable | None = "relu"
    cnn_use_layernorm: bool = False
    cnn_kernel_initializer: str | Callable | None = None
    cnn_kernel_initializer_config: dict | None = None
    cnn_bias_initializer: str | Callable | None = None
    cnn_bias_initializer_config: dict | None = None
    flatten_at_end: bool = True

    @property
    def output_dims(self) -> tuple[int, ...] | None:
        if not self.input_dims:
            return None
        dims: list[int] = [int(d) for d in self.input_dims]
        for spec in self.cnn_filter_specifiers:
            num_filters, kernel, stride, padding = _conv_spec(
                spec, "CNNEncoderConfig.cnn_filter_specifiers"
            )
            if padding == "same":
                _, size = same_padding(dims[:2], kernel, stride)
            else:
                size = valid_padding(dims[:2], kernel, stride)
            dims = [size[0], size[1], num_filters]
        if self.flatten_at_end:
            return (int(math.prod(dims)),)
        return tuple(dims)

    def _validate(self, framework: str = "torch") -> None:
        self._check_framework(framework)
        if self.input_dims is None or len(self.input_dims) != 3:
            raise ValueError(
                f"CNNEncoderConfig(input_dims={self.input_dims!r}): a 3D image shape, width x "
                "height x channels, e.g. [64, 64, 3]"
            )
        dims = self.output_dims or ()
        if self.flatten_at_end and (len(dims) != 1 or dims[0] < 1):
            raise ValueError(
                f"CNNEncoderConfig: the stack {self.cnn_filter_specifiers!r} shrinks images "
                f"of shape {list(self.input_dims)} to nothing"
            )
        check_activation(self.cnn_activation, "CNNEncoderConfig.cnn_activation")
        check_initializer(self.cnn_kernel_initializer, "CNNEncoderConfig.cnn_kernel_initializer")
        check_initializer(self.cnn_bias_initializer, "CNNEncoderConfig.cnn_bias_initializer")

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        return importlib.import_module(TORCH_NETWORKS).TorchCNNEncoder(self)


@dataclass
class CNNTransposeHeadConfig(ModelConfig):
    """RLlib's transposed-convolution head (an image decoder): a 1D input `input_dims`, a
    dense layer to `initial_image_dims` `[w, h, c]`, then each
    `cnn_transpose_filter_specifiers` entry `[num_filters, kernel, stride]` a transposed
    convolution with TensorFlow's "same" padding (the image grows by `stride`), each but the
    last with an optional LayerNorm and `cnn_transpose_activation`; the output is offset by
    0.5 (RLlib's, for images in [0, 1])."""

    initial_image_dims: list[int] | tuple[int, ...] = field(default_factory=lambda: [4, 4, 96])
    initial_dense_weights_initializer: str | Callable | None = None
    initial_dense_weights_initializer_config: dict | None = None
    initial_dense_bias_initializer: str | Callable | None = None
    initial_dense_bias_initializer_config: dict | None = None
    cnn_transpose_filter_specifiers: list = field(
        default_factory=lambda: [[48, [4, 4], 2], [24, [4, 4], 2], [3, [4, 4], 2]]
    )
    cnn_transpose_use_bias: bool = True
    cnn_transpose_activation: str | Callable | None = "relu"
    cnn_transpose_use_layernorm: bool = False
    cnn_transpose_kernel_initializer: str | Callable | None = None
    cnn_transpose_kernel_initializer_config: dict | None = None
    cnn_transpose_bias_initializer: str | Callable | None = None
    cnn_transpose_bias_initializer_config: dict | None = None

    @property
    def output_dims(self) -> tuple[int, ...]:
        dims = [int(d) for d in self.initial_image_dims]
        for spec in self.cnn_transpose_filter_specifiers:
            num_filters, kernel, stride = spec
            (s_w, s_h), (k_w, k_h) = _pair(stride), _pair(kernel)
            strided = (dims[0] * s_w - (s_w - 1), dims[1] * s_h - (s_h - 1))
            _, padded = same_padding_transpose_after_stride(strided, kernel, stride)
            dims = [padded[0] - (k_w - 1), padded[1] - (k_h - 1), int(num_filters)]
        return tuple(dims)

    def _validate(self, framework: str = "torch") -> None:
        self._check_framework(framework)
        if self.input_dims is None or len(self.input_dims) != 1:
            raise ValueError(
                f"CNNTransposeHeadConfig(input_dims={self.input_dims!r}): a 1D input, e.g. [32]"
            )
        if len(self.initial_image_dims) != 3:
            raise ValueError(
                f"CNNTransposeHeadConfig(initial_image_dims={self.initial_image_dims!r}): "
                "width x height x channels, e.g. [4, 4, 96]"
            )
        for spec in self.cnn_transpose_filter_specifiers:
            if not isinstance(spec, (list, tuple)) or len(spec) != 3:
                raise ValueError(
                    "CNNTransposeHeadConfig.cnn_transpose_filter_specifiers: each entry is "
                    f"[num_filters, kernel, stride], got {spec!r}"
                )
        check_activation(
            self.cnn_transpose_activation, "CNNTransposeHeadConfig.cnn_transpose_activation"
        )

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        return importlib.import_module(TORCH_NETWORKS).TorchCNNTransposeHead(self)


@dataclass
class RecurrentEncoderConfig(ModelConfig):
    """RLlib's recurrent encoder: an LSTM or GRU (`recurrent_layer_type`) of `num_layers`
    layers of `hidden_dim` units over `input_dims` (or over a `tokenizer_config`'s output);
    inputs `{"obs": (B, T, ...), "state_in": {"h": (B, L, H)[, "c": ...]}}`, outputs
    `{ENCODER_OUT: (B, T, H), "state_out": ...}` (batch-major, state batch-first)."""

    recurrent_layer_type: str = "lstm"
    hidden_dim: int | None = None
    num_layers: int | None = None
    batch_major: bool = True
    hidden_weights_initializer: str | Callable | None = None
    hidden_weights_initializer_config: dict | None = None
    use_bias: bool = True
    hidden_bias_initializer: str | Callable | None = None
    hidden_bias_initializer_config: dict | None = None
    tokenizer_config: ModelConfig | None = None

    @property
    def output_dims(self) -> tuple[int, ...]:
        return (self.hidden_dim,)  # type: ignore[return-value]

    def _validate(self, framework: str = "torch") -> None:
        self._check_framework(framework)
        if self.recurrent_layer_type not in ("gru", "lstm"):
            raise ValueError(
                f"RecurrentEncoderConfig(recurrent_layer_type={self.recurrent_layer_type!r}): "
                "'gru' or 'lstm'"
            )
        if self.input_dims is not None and len(self.input_dims) != 1:
            raise ValueError(
                f"RecurrentEncoderConfig(input_dims={self.input_dims!r}): 1D, e.g. [32]"
            )
        for name in ("hidden_dim", "num_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"RecurrentEncoderConfig({name}={value!r}): a positive int")
        for name in ("hidden_weights_initializer", "hidden_bias_initializer"):
            check_initializer(getattr(self, name), f"RecurrentEncoderConfig.{name}")

    def build(self, framework: str = "torch") -> Any:
        self._validate(framework)
        networks = importlib.import_module(TORCH_NETWORKS)
        if self.recurrent_layer_type == "lstm":
            return networks.TorchLSTMEncoder(self)
        return networks.TorchGRUEncoder(self)
