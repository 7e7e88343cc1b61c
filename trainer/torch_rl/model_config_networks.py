"""The torch networks RLlib's model configs build (`trainer.core.model_configs`): RLlib's
`TorchMLP` layer stack, `TorchMLPHead` and `TorchMLPEncoder`, layer for layer as RLlib 2.60
lays them out (so a state dict's keys are RLlib's: `net.mlp.0.weight`, ...)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainer.compat.rllib_utils import Columns
from trainer.core.model_configs import ENCODER_OUT, Model

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

    def __init__(self, config: Any) -> None:
        super().__init__()
        input_dim = int(config.input_dims[0])
        hidden_activation = activation_class(config.hidden_layer_activation)
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


class TorchMLPHead(nn.Module):
    """RLlib's TorchMLPHead (`MLPHeadConfig.build`): a tensor in, `net`'s output out, the
    log-stds half clipped with `clip_log_std`."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.config = config
        self.net = TorchMLP(config)
        self.clip_log_std = bool(config.clip_log_std)
        self.register_buffer(
            "log_std_clip_param_const", torch.tensor([float(config.log_std_clip_param)])
        )

    def forward(self, inputs: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        out = self.net(inputs)
        if not self.clip_log_std:
            return out
        means, log_stds = torch.chunk(out, chunks=2, dim=-1)
        clip = self.log_std_clip_param_const
        return torch.cat((means, torch.clamp(log_stds, -clip, clip)), dim=-1)


class TorchMLPEncoder(nn.Module):
    """RLlib's TorchMLPEncoder (`MLPEncoderConfig.build`): a batch dict in,
    `{ENCODER_OUT: net(batch["obs"])}` out."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.config = config
        self.net = TorchMLP(config)

    def forward(self, inputs: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {ENCODER_OUT: self.net(inputs[Columns.OBS])}
