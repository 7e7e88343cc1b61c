"""The torch networks RLlib's model configs build (`trainer.core.model_configs`): RLlib's
`TorchMLP` layer stack, `TorchMLPHead`, `TorchFreeLogStdMLPHead`, `TorchMLPEncoder`,
`TorchCNNEncoder`, `TorchCNNTransposeHead`, `TorchLSTMEncoder` and `TorchGRUEncoder`, layer for
layer as RLlib 2.60 lays them out (so a state dict's keys are RLlib's: `net.mlp.0.weight`, ...).
Each is a `TorchModel`: `get_num_parameters()` and `_set_to_dummy_weights()` (what RLlib's
`ModelChecker` compares) work on all of them."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from trainer.compat.rllib_utils import Columns
from trainer.core.model_configs import (
    ENCODER_OUT,
    ActorCriticEncoder,
    Model,
    same_padding,
    same_padding_transpose_after_stride,
    valid_padding,
)

#: RLlib's activation names -> torch classes (None: no layer).
_ACTIVATIONS: dict[str, type[nn.Module] | None] = {
    "linear": None,
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "swish": nn.SiLU,
    "silu": nn.SiLU,
    "softmax": nn.Softmax,
}


def activation_class(value: Any) -> Any:
    """RLlib's `get_activation_fn(value, framework="torch")`: a torch.nn class by its name
    (e.g. "ReLU"), one of RLlib's lower-case names, a callable as it is; None for "linear"."""
    if value is None or callable(value):
        return value
    by_class_name = getattr(nn, value, None)
    if isinstance(by_class_name, type) and issubclass(by_class_name, nn.Module):
        return by_class_name
    if value.lower() in _ACTIVATIONS:
        return _ACTIVATIONS[value.lower()]
    raise ValueError(f"activation {value!r} is not a torch.nn class nor one of RLlib's names")


def initializer(value: Any) -> Any:
    """RLlib's `get_initializer_fn(value, framework="torch")`: a torch.nn.init in-place
    function by name, a callable as it is, None for the layer's default."""
    if value is None or callable(value):
        return value
    function = getattr(nn.init, value.lower(), None)
    if function is None:
        raise ValueError(
            f"Unknown initializer name: {value.lower()} is not a method in `torch.nn.init`!"
        )
    return function


class TorchMLP(nn.Module):
    """RLlib's TorchMLP: Linear layers of `hidden_layer_dims` (each, optionally, with a
    LayerNorm, then the hidden activation) and, with `output_dim`, one output Linear layer
    (optionally a LayerNorm, then the output activation); the stack is `mlp`."""

    def __init__(self, config: Any, output_dim: int | None = None) -> None:
        super().__init__()
        input_dim = int(config.input_dims[0])
        hidden_activation = activation_class(config.hidden_layer_activation)
        if output_dim is None:
            output_dim = config.output_layer_dim
        dims = [input_dim, *config.hidden_layer_dims] + ([output_dim] if output_dim else [])
        layers: list[nn.Module] = []
        for i in range(len(dims) - 1):
            is_output = output_dim is not None and i == len(dims) - 2
            prefix = "output_layer" if is_output else "hidden_layer"
            layer = nn.Linear(
                dims[i],
                dims[i + 1],
                bias=config.output_layer_use_bias if is_output else config.hidden_layer_use_bias,
            )
            weights_init = initializer(getattr(config, f"{prefix}_weights_initializer"))
            if weights_init is not None:
                weights_init(
                    layer.weight, **(getattr(config, f"{prefix}_weights_initializer_config") or {})
                )
            bias_init = initializer(getattr(config, f"{prefix}_bias_initializer"))
            if bias_init is not None and layer.bias is not None:
                bias_init(
                    layer.bias, **(getattr(config, f"{prefix}_bias_initializer_config") or {})
                )
            layers.append(layer)
            if not is_output:
                if config.hidden_layer_use_layernorm:
                    layers.append(nn.LayerNorm(dims[i + 1], eps=0.001))
                if hidden_activation is not None:
                    layers.append(hidden_activation())
            elif config.output_layer_use_layernorm:
                layers.append(nn.LayerNorm(dims[i + 1], eps=0.001))
        output_activation = activation_class(config.output_layer_activation)
        if output_dim is not None and output_activation is not None:
            layers.append(output_activation())
        self.mlp = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


class TorchModel(nn.Module, Model):
    """RLlib's `TorchModel` (`ray.rllib.core.models.torch.base`): a `Model` that is an
    `nn.Module`; calling it runs `_forward`."""

    def __init__(self, config: Any) -> None:
        nn.Module.__init__(self)
        Model.__init__(self, config)

    def forward(self, inputs: Any, **kwargs: Any) -> Any:
        return self._forward(inputs, **kwargs)

    def get_num_parameters(self) -> tuple[int, int]:
        """RLlib's: (the number of trainable, of frozen) parameter values."""
        trainable = sum(p.numel() for p in self.parameters() if p.requires_grad)
        frozen = sum(p.numel() for p in self.parameters() if not p.requires_grad)
        return trainable, frozen

    def _set_to_dummy_weights(self, value_sequence: Any = (-0.02, -0.01, 0.01, 0.02)) -> None:
        """RLlib's: fills each parameter (the trainable ones first) with the next value of
        `value_sequence`, cycling, so that two builds of one config compute the same."""
        params = list(self.parameters())
        ordered = [p for p in params if p.requires_grad] + [
            p for p in params if not p.requires_grad
        ]
        with torch.no_grad():
            for i, param in enumerate(ordered):
                param.fill_(float(value_sequence[i % len(value_sequence)]))


class TorchMLPHead(TorchModel):
    """RLlib's TorchMLPHead (`MLPHeadConfig.build`): a tensor in, `net`'s output out, the
    log-stds half clipped with `clip_log_std`."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.net = TorchMLP(config)
        self.clip_log_std = bool(config.clip_log_std)
        self.register_buffer(
            "log_std_clip_param_const", torch.tensor([float(config.log_std_clip_param)])
        )

    def _forward(self, input_dict: Any, **kwargs: Any) -> torch.Tensor:
        out = self.net(input_dict)
        if not self.clip_log_std:
            return out
        means, log_stds = torch.chunk(out, chunks=2, dim=-1)
        clip = self.log_std_clip_param_const
        return torch.cat((means, torch.clamp(log_stds, -clip, clip)), dim=-1)


class TorchFreeLogStdMLPHead(TorchModel):
    """RLlib's TorchFreeLogStdMLPHead (`FreeLogStdMLPHeadConfig.build`): `net` computes the
    means (half of `output_dims`), the parameter `log_std` the log-stds (clipped with
    `clip_log_std`), repeated over the batch and appended."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        half = int(config.output_dims[0]) // 2
        self.net = TorchMLP(config, output_dim=half)
        self.log_std = nn.Parameter(torch.zeros(half))
        self.clip_log_std = bool(config.clip_log_std)
        self.register_buffer(
            "log_std_clip_param_const", torch.tensor([float(config.log_std_clip_param)])
        )

    def _forward(self, input_dict: Any, **kwargs: Any) -> torch.Tensor:
        mean = self.net(input_dict)
        log_std = self.log_std
        if self.clip_log_std:
            clip = self.log_std_clip_param_const
            log_std = torch.clamp(log_std, -clip, clip)
        return torch.cat([mean, log_std.unsqueeze(0).expand(mean.shape[0], -1)], dim=1)


class TorchActorCriticEncoder(TorchModel, ActorCriticEncoder):
    """RLlib's TorchActorCriticEncoder (`ActorCriticEncoderConfig.build("torch")`): see
    `ActorCriticEncoder`."""

    framework = "torch"

    def __init__(self, config: Any) -> None:
        TorchModel.__init__(self, config)
        ActorCriticEncoder.__init__(self, config)


class TorchMLPEncoder(TorchModel):
    """RLlib's TorchMLPEncoder (`MLPEncoderConfig.build`): a batch dict in,
    `{ENCODER_OUT: net(batch["obs"])}` out."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.net = TorchMLP(config)

    def _forward(self, input_dict: Any, **kwargs: Any) -> dict[str, Any]:
        return {ENCODER_OUT: self.net(input_dict[Columns.OBS])}


def _init_layer(layer: nn.Module, config: Any, weights: str, bias: str) -> None:
    """Runs the config's initializers named by the fields `weights` and `bias` (each with its
    `*_config` keyword arguments) on `layer`'s weight and bias."""
    for field, param in ((weights, layer.weight), (bias, getattr(layer, "bias", None))):
        function = initializer(getattr(config, field))
        if function is not None and param is not None:
            with torch.no_grad():
                function(param, **(getattr(config, f"{field}_config") or {}))


class LayerNorm1D(nn.Module):
    """RLlib's LayerNorm1D: a LayerNorm over the channels of a channels-first image."""

    def __init__(self, num_features: int, **kwargs: Any) -> None:
        super().__init__()
        self.layer_norm = nn.LayerNorm(num_features, **kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class TorchCNN(nn.Module):
    """RLlib's TorchCNN over a `CNNEncoderConfig`: per filter specifier a zero padding ("same"),
    a Conv2d, an optional `LayerNorm1D`, the activation; channels-last in and out (`cnn`)."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        activation = activation_class(config.cnn_activation)
        width, height, in_depth = (int(d) for d in config.input_dims)
        size: tuple[int, int] = (width, height)
        layers: list[nn.Module] = []
        for spec in config.cnn_filter_specifiers:
            out_depth, kernel, stride = int(spec[0]), spec[1], spec[2]
            if (spec[3] if len(spec) == 4 else "same") == "same":
                padding, size = same_padding(size, kernel, stride)
                layers.append(nn.ZeroPad2d(padding))
            else:
                size = valid_padding(size, kernel, stride)
            conv = nn.Conv2d(in_depth, out_depth, kernel, stride, bias=config.cnn_use_bias)
            _init_layer(conv, config, "cnn_kernel_initializer", "cnn_bias_initializer")
            layers.append(conv)
            if config.cnn_use_layernorm:
                layers.append(LayerNorm1D(out_depth, eps=0.001))
            if activation is not None:
                layers.append(activation())
            in_depth = out_depth
        self.cnn = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cnn(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)


class TorchCNNEncoder(TorchModel):
    """RLlib's TorchCNNEncoder (`CNNEncoderConfig.build`): `net` is the `TorchCNN` and, with
    `flatten_at_end`, a flatten; `{ENCODER_OUT: net(batch["obs"])}` out."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        layers: list[nn.Module] = [TorchCNN(config)]
        if config.flatten_at_end:
            layers.append(nn.Flatten())
        self.net = nn.Sequential(*layers)

    def _forward(self, input_dict: Any, **kwargs: Any) -> dict[str, Any]:
        return {ENCODER_OUT: self.net(input_dict[Columns.OBS])}


class Stride2D(nn.Module):
    """RLlib's Stride2D: spreads a channels-first image's pixels `stride` apart, zeros
    between (what a TensorFlow-style "same" transposed convolution convolves)."""

    def __init__(self, width: int, height: int, stride_w: int, stride_h: int) -> None:
        super().__init__()
        self.stride_w, self.stride_h = stride_w, stride_h
        self.out_width = width * stride_w - (stride_w - 1)
        self.out_height = height * stride_h - (stride_h - 1)
        # RLlib's buffers (in its state dicts, so in these): the zero image and where the
        # input's pixels go; the forward here does not need them.
        size = (1, 1, self.out_width, self.out_height)
        self.register_buffer("zeros", torch.zeros(size, dtype=torch.float32))
        where = torch.zeros(size, dtype=torch.bool)
        where[:, :, ::stride_w, ::stride_h] = True
        self.register_buffer("where_template", where)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.new_zeros((*x.shape[:2], self.out_width, self.out_height))
        out[:, :, :: self.stride_w, :: self.stride_h] = x
        return out


class TorchCNNTranspose(nn.Module):
    """RLlib's TorchCNNTranspose (`cnn_transpose`): per filter specifier a `Stride2D`, a zero
    padding and a ConvTranspose2d (stride 1); each but the last layer with an optional
    `LayerNorm1D` and the activation (the last always has a bias)."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        activation = activation_class(config.cnn_transpose_activation)
        width, height, in_depth = (int(d) for d in config.initial_image_dims)
        layers: list[nn.Module] = []
        specs = config.cnn_transpose_filter_specifiers
        for i, (out_depth, kernel, stride) in enumerate(specs):
            last = i == len(specs) - 1
            s_w, s_h = (stride, stride) if isinstance(stride, int) else stride
            k_w, k_h = (kernel, kernel) if isinstance(kernel, int) else kernel
            strider = Stride2D(width, height, s_w, s_h)
            layers.append(strider)
            padding, size = same_padding_transpose_after_stride(
                (strider.out_width, strider.out_height), kernel, stride
            )
            layers.append(nn.ZeroPad2d(padding))
            conv = nn.ConvTranspose2d(
                in_depth,
                int(out_depth),
                (k_w, k_h),
                1,
                padding=(k_w - 1, k_h - 1),
                bias=bool(config.cnn_transpose_use_bias) or last,
            )
            _init_layer(
                conv,
                config,
                "cnn_transpose_kernel_initializer",
                "cnn_transpose_bias_initializer",
            )
            layers.append(conv)
            if config.cnn_transpose_use_layernorm and not last:
                layers.append(LayerNorm1D(int(out_depth), eps=0.001))
            if activation is not None and not last:
                layers.append(activation())
            width, height, in_depth = size[0], size[1], int(out_depth)
        self.cnn_transpose = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.cnn_transpose(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)


class TorchCNNTransposeHead(TorchModel):
    """RLlib's TorchCNNTransposeHead (`CNNTransposeHeadConfig.build`): `initial_dense` to
    `initial_image_dims`, then `cnn_transpose_net`; the output offset by 0.5."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.initial_dense = nn.Linear(
            int(config.input_dims[0]), int(math.prod(config.initial_image_dims))
        )
        _init_layer(
            self.initial_dense,
            config,
            "initial_dense_weights_initializer",
            "initial_dense_bias_initializer",
        )
        self.cnn_transpose_net = TorchCNNTranspose(config)

    def _forward(self, input_dict: Any, **kwargs: Any) -> torch.Tensor:
        out = self.initial_dense(input_dict)
        out = out.reshape((-1, *(int(d) for d in self.config.initial_image_dims)))
        return self.cnn_transpose_net(out) + 0.5


class _TorchRecurrentEncoder(TorchModel):
    """RLlib's recurrent encoders' shared part: the optional tokenizer (a config's encoder,
    applied per time step), the recurrent layer's input size, and the state's layout (the
    batch first, `(B, num_layers, hidden_dim)`, as RLlib keeps it)."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        tokenizer_config = config.tokenizer_config
        self.tokenizer = None if tokenizer_config is None else tokenizer_config.build("torch")
        dims = config.input_dims if tokenizer_config is None else tokenizer_config.output_dims
        self._input_dim = int(dims[0])

    def _inputs(self, inputs: dict[str, Any]) -> torch.Tensor:
        obs = inputs[Columns.OBS]
        if self.tokenizer is None:
            return obs.float()
        batch, time = obs.shape[:2]
        flat = obs.reshape(batch * time, *obs.shape[2:])
        tokens = self.tokenizer({Columns.OBS: flat})[ENCODER_OUT]
        return tokens.reshape(batch, time, -1)

    def _init_weights(self, rnn: nn.RNNBase) -> None:
        weights = initializer(self.config.hidden_weights_initializer)
        bias = initializer(self.config.hidden_bias_initializer)
        with torch.no_grad():
            for name, param in rnn.named_parameters():
                if name.startswith("weight") and weights is not None:
                    weights(param, **(self.config.hidden_weights_initializer_config or {}))
                if name.startswith("bias") and bias is not None:
                    bias(param, **(self.config.hidden_bias_initializer_config or {}))

    def _zeros(self) -> torch.Tensor:
        return torch.zeros(int(self.config.num_layers), int(self.config.hidden_dim))


class TorchLSTMEncoder(_TorchRecurrentEncoder):
    """RLlib's TorchLSTMEncoder: `lstm`; state `{"h", "c"}`."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.lstm = nn.LSTM(
            self._input_dim,
            int(config.hidden_dim),
            int(config.num_layers),
            batch_first=bool(config.batch_major),
            bias=bool(config.use_bias),
        )
        self._init_weights(self.lstm)

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        return {"h": self._zeros(), "c": self._zeros()}

    def _forward(self, input_dict: Any, **kwargs: Any) -> dict[str, Any]:
        state = input_dict[Columns.STATE_IN]
        h, c = state["h"].transpose(0, 1), state["c"].transpose(0, 1)
        out, (h, c) = self.lstm(self._inputs(input_dict), (h.float(), c.float()))
        state_out = {"h": h.transpose(0, 1), "c": c.transpose(0, 1)}
        return {ENCODER_OUT: out, Columns.STATE_OUT: state_out}


class TorchGRUEncoder(_TorchRecurrentEncoder):
    """RLlib's TorchGRUEncoder: `gru`; state `{"h"}`."""

    def __init__(self, config: Any) -> None:
        super().__init__(config)
        self.gru = nn.GRU(
            self._input_dim,
            int(config.hidden_dim),
            int(config.num_layers),
            batch_first=bool(config.batch_major),
            bias=bool(config.use_bias),
        )
        self._init_weights(self.gru)

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        return {"h": self._zeros()}

    def _forward(self, input_dict: Any, **kwargs: Any) -> dict[str, Any]:
        h = input_dict[Columns.STATE_IN]["h"].transpose(0, 1).float()
        out, h = self.gru(self._inputs(input_dict), h)
        return {ENCODER_OUT: out, Columns.STATE_OUT: {"h": h.transpose(0, 1)}}
