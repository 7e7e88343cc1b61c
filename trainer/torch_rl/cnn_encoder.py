"""RLlib's default convolutional encoder for image observations (3-D Boxes), in torch.

The layout is RLlib 2.60's (`CNNEncoderConfig` built as `TorchCNNEncoder`):

- `net`: an `nn.Sequential` of the convolutional stack (`net.0`, a `TorchCNN` whose layers are
  `net.0.cnn`) and a flatten (`net.1`), so state-dict keys read as RLlib's
  (`net.0.cnn.1.weight` for the first convolution after its padding).
- Each `conv_filters` entry `[out_channels, kernel, stride]` (or `[..., padding]`, "same" or
  "valid"; "same" by default) is a `Conv2d` followed by `conv_activation`; "same" pads with zeros
  as TensorFlow does (`nn.ZeroPad2d` before the convolution, the image shrinks by `stride`).
- Observations come channels-last, `(B, height, width, channels)`; the stack permutes them to
  torch's channels-first and the output back to channels-last before flattening (so the
  flattened features are ordered as RLlib's).

Without `conv_filters` the stack is RLlib's preset for the image size (`default_conv_filters`:
`ray.rllib.models.utils.get_filter_config`); a size without a preset is an error naming
`conv_filters`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from trainer.core.model_configs import FILTER_PRESETS, has_filter_preset

#: RLlib's preset stacks by image size (`get_filter_config`), checked in this order.
CONV_FILTER_PRESETS = FILTER_PRESETS

#: RLlib's activation names for the convolutions; None and "linear" add no layer.
_CONV_ACTIVATIONS: dict[str, type[nn.Module] | None] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "swish": nn.SiLU,
    "silu": nn.SiLU,
    "elu": nn.ELU,
    "sigmoid": nn.Sigmoid,
    "linear": None,
}


def default_conv_filters(shape: tuple[int, ...]) -> list[list[Any]]:
    """RLlib's preset `conv_filters` for an image of `shape` (`[size, size, K]`, or
    channels-first `[K, size, size]`, as RLlib matches). Raises ValueError naming
    `conv_filters` when there is none."""
    dims = list(shape)
    for size, filters in CONV_FILTER_PRESETS.items():
        if has_filter_preset(dims, size):
            return [list(f) for f in filters]
    sizes = ", ".join(f"[{s}, {s}, K]" for s in CONV_FILTER_PRESETS)
    raise ValueError(
        f"model_config['conv_filters']=None: RLlib has no default CNN for observations of shape "
        f"{dims}; presets exist for {sizes}. Give the stack as model_config['conv_filters'] "
        "(a list of [out_channels, kernel, stride] or [out_channels, kernel, stride, padding])"
    )


def _pair(value: int | list[int] | tuple[int, ...]) -> tuple[int, int]:
    if isinstance(value, (list, tuple)):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def same_padding(
    in_size: tuple[int, int], kernel: Any, stride: Any
) -> tuple[tuple[int, int, int, int], tuple[int, int]]:
    """TensorFlow's "same" padding, as RLlib computes it: `(left, right, top, bottom)` zeros
    for `nn.ZeroPad2d` and the output `(height, width)` (the input divided by the stride,
    rounded up)."""
    (in_h, in_w), (k_h, k_w), (s_h, s_w) = in_size, _pair(kernel), _pair(stride)
    out_h, out_w = math.ceil(in_h / s_h), math.ceil(in_w / s_w)
    # RLlib's arithmetic as is: a kernel smaller than its stride gives a negative padding,
    # which ZeroPad2d applies as a crop.
    pad_h = (out_h - 1) * s_h + k_h - in_h
    pad_w = (out_w - 1) * s_w + k_w - in_w
    padding = (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2)
    return padding, (out_h, out_w)


def valid_padding(in_size: tuple[int, int], kernel: Any, stride: Any) -> tuple[int, int]:
    """The output `(height, width)` of a convolution without padding."""
    (in_h, in_w), (k_h, k_w), (s_h, s_w) = in_size, _pair(kernel), _pair(stride)
    return (in_h - k_h) // s_h + 1, (in_w - k_w) // s_w + 1


def _layer_padding(
    spec: list[Any], size: tuple[int, int]
) -> tuple[tuple[int, int, int, int] | None, tuple[int, int]]:
    """A `conv_filters` entry's zero padding (None: "valid", no padding) and the output
    `(height, width)` of its convolution over an input of `size`."""
    _, kernel, stride = spec[:3]
    padding = spec[3] if len(spec) == 4 else "same"
    if padding == "same":
        return same_padding(size, kernel, stride)
    return None, valid_padding(size, kernel, stride)


def conv_output_shape(
    input_shape: tuple[int, int, int], filters: list[list[Any]]
) -> tuple[int, int, int]:
    """The channels-last output shape of the convolutional stack `filters` over images of
    `input_shape` (what `TorchCNN.output_shape` is once built)."""
    height, width, channels = (int(d) for d in input_shape)
    size = (height, width)
    for spec in filters:
        _, size = _layer_padding(spec, size)
        channels = int(spec[0])
    return (size[0], size[1], channels)


def _initializer(value: Any) -> Any:
    """A `torch.nn.init` function for a name (validated by `check_model_config`), the callable
    itself, or None for torch's default."""
    if value is None or callable(value):
        return value
    return getattr(nn.init, str(value).lower())


class TorchCNN(nn.Module):
    """The convolutional stack of `conv_filters` (RLlib's TorchCNN: the layers are `cnn`),
    channels-last in and out."""

    def __init__(self, input_shape: tuple[int, int, int], model_config: dict) -> None:
        super().__init__()
        filters = model_config.get("conv_filters") or default_conv_filters(input_shape)
        activation = _CONV_ACTIVATIONS[model_config.get("conv_activation") or "linear"]
        kernel_init = _initializer(model_config.get("conv_kernel_initializer"))
        kernel_kwargs = model_config.get("conv_kernel_initializer_kwargs") or {}
        bias_init = _initializer(model_config.get("conv_bias_initializer"))
        bias_kwargs = model_config.get("conv_bias_initializer_kwargs") or {}
        height, width, in_channels = (int(d) for d in input_shape)
        size = (height, width)
        layers: list[nn.Module] = []
        for spec in filters:
            out_channels, kernel, stride = spec[:3]
            pads, size = _layer_padding(spec, size)
            if pads is not None:
                layers.append(nn.ZeroPad2d(pads))
            conv = nn.Conv2d(in_channels, int(out_channels), _pair(kernel), _pair(stride))
            with torch.no_grad():
                if kernel_init is not None:
                    kernel_init(conv.weight, **kernel_kwargs)
                if bias_init is not None:
                    bias_init(conv.bias, **bias_kwargs)
            layers.append(conv)
            if activation is not None:
                # ReLU in place: the convolution's output is not kept for its backward pass,
                # and a minibatch of frames allocates its largest maps once instead of twice.
                layers.append(nn.ReLU(inplace=True) if activation is nn.ReLU else activation())
            in_channels = int(out_channels)
        if size[0] < 1 or size[1] < 1:
            raise ValueError(
                f"model_config['conv_filters']={filters!r}: the stack shrinks an image of shape "
                f"{tuple(input_shape)} to nothing (a 'valid' layer's kernel is larger than its "
                "input)"
            )
        # The kernels channels-last, as the images arrive (`forward`).
        self.cnn = nn.Sequential(*layers).to(memory_format=torch.channels_last)
        #: The stack's output shape, channels-last.
        self.output_shape = (size[0], size[1], in_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The env's (height, width, channels) images as torch's (N, C, H, W) shape in
        # channels-last memory: a view of a batch of images, not a copy. On channels-last
        # images and kernels torch's CPU convolutions take the NHWC path: a Nature CNN
        # minibatch step of 256 84x84x4 frames took 48 ms against 92 ms on channels-first
        # copies (2 threads, AMD EPYC), a batch of 4 at inference 0.41 ms against 0.70 ms.
        images = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        return self.cnn(images).permute(0, 2, 3, 1)


class CNNEncoder(nn.Module):
    """RLlib's TorchCNNEncoder: the `TorchCNN` stack, then a flatten (`net`).
    `output_dim`: the number of features it outputs per observation."""

    def __init__(self, input_shape: tuple[int, int, int], model_config: dict) -> None:
        super().__init__()
        if len(input_shape) != 3:
            raise ValueError(
                f"CNNEncoder: observations of shape {tuple(input_shape)}: a CNN takes images "
                "of shape [height, width, channels]"
            )
        cnn = TorchCNN(input_shape, model_config)
        self.net = nn.Sequential(cnn, nn.Flatten())
        self.output_dim = int(math.prod(cnn.output_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
