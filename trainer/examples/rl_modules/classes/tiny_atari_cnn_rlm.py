"""RLlib's tiny Atari CNN (`ray.rllib.examples.rl_modules.classes.tiny_atari_cnn_rlm`): the
old API stack's default CNN as a torch RLModule, for (B, H, W, C) images and Discrete actions.
Needs the `torch` extra."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from trainer.compat.rllib_utils import Columns
from trainer.core.apis import TARGET_NETWORK_ACTION_DIST_INPUTS, TargetNetworkAPI, ValueFunctionAPI
from trainer.torch_rl.cnn_encoder import same_padding, valid_padding
from trainer.torch_rl.rl_module import TorchRLModule
from trainer.torch_rl.target_networks import make_target_network

#: RLlib's default stack: [out_channels, kernel, stride, padding] per layer.
DEFAULT_CONV_FILTERS = [
    [16, 4, 2, "same"],
    [32, 4, 2, "same"],
    [256, 11, 1, "valid"],
]


def normc_initializer(std: float = 1.0):
    """RLlib's `normc_initializer`: normal weights, each row (output unit) scaled to norm
    `std`."""

    def initializer(tensor: torch.Tensor) -> None:
        with torch.no_grad():
            tensor.normal_(0, 1)
            tensor.mul_(std / torch.sqrt(tensor.pow(2).sum(1, keepdim=True)))

    return initializer


class TinyAtariCNN(TorchRLModule, ValueFunctionAPI, TargetNetworkAPI):
    """Three convolutions from `model_config["conv_filters"]` (each `[out_channels, kernel,
    stride]` or `[..., padding]`, "same" by default; RLlib's default stack for 42x42 images
    without it), ReLU after each, then a 1x1 convolution with one filter per action whose
    output, squeezed, is the logits: the last hidden convolution must shrink the image to 1x1.
    The value head is one linear layer on the same (squeezed) features, initialized as RLlib
    does (normc, std 0.01).

    Observations are channels-last `(B, H, W, C)` (RLlib's Atari wrappers give
    `(B, 42, 42, 4)`); the module permutes them for torch. With `TargetNetworkAPI`, for
    algorithms that keep target networks."""

    def setup(self) -> None:
        conv_filters = self.model_config.get("conv_filters")
        if conv_filters is None:
            conv_filters = DEFAULT_CONV_FILTERS
        # As RLlib reads the shape: (width, height, channels); the images are square in
        # RLlib's use, and the padding arithmetic is symmetric.
        width, height, in_depth = self.observation_space.shape
        in_size = (width, height)
        layers: list[nn.Module] = []
        for filter_specs in conv_filters:
            if len(filter_specs) == 4:
                out_depth, kernel_size, strides, padding = filter_specs
            else:
                out_depth, kernel_size, strides = filter_specs
                padding = "same"
            if padding == "same":
                padding_size, out_size = same_padding(in_size, kernel_size, strides)
                layers.append(nn.ZeroPad2d(padding_size))
            else:
                out_size = valid_padding(in_size, kernel_size, strides)
            layer = nn.Conv2d(in_depth, out_depth, kernel_size, strides, bias=True)
            nn.init.xavier_uniform_(layer.weight)
            nn.init.zeros_(layer.bias)
            layers.append(layer)
            layers.append(nn.ReLU())
            in_size = out_size
            in_depth = out_depth
        self._base_cnn_stack = nn.Sequential(*layers)

        # A 1x1 convolution with one filter per action: reshaped, it gives the logits
        # (no flattening, no dense layer).
        final_conv = nn.Conv2d(in_depth, self.action_space.n, 1, 1, bias=True)
        nn.init.xavier_uniform_(final_conv.weight)
        nn.init.zeros_(final_conv.bias)
        self._logits = nn.Sequential(nn.ZeroPad2d(same_padding(in_size, 1, 1)[0]), final_conv)

        self._values = nn.Linear(in_depth, 1)
        # The old API stack's value-function initialization: normc with std 0.01.
        normc_initializer(0.01)(self._values.weight)

    @staticmethod
    def _channels_first(obs: torch.Tensor) -> torch.Tensor:
        """(B, H, W, C) images as torch's (B, C, H, W), copied into that layout: on a permuted
        view torch's convolutions take their channels-last path, about 3x slower for the
        EnvRunners' single-observation batches on a CPU (same results)."""
        return obs.permute(0, 3, 1, 2).contiguous()

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        _, logits = self._compute_embeddings_and_logits(batch)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        embeddings, logits = self._compute_embeddings_and_logits(batch)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: embeddings}

    # TargetNetworkAPI: for algorithms with target networks (RLlib's APPO).
    def make_target_networks(self) -> None:
        self._target_base_cnn_stack = make_target_network(self._base_cnn_stack)
        self._target_logits = make_target_network(self._logits)

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        return [
            (self._base_cnn_stack, self._target_base_cnn_stack),
            (self._logits, self._target_logits),
        ]

    def forward_target(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = self._channels_first(batch[Columns.OBS])
        embeddings = self._target_base_cnn_stack(obs)
        logits = self._target_logits(embeddings)
        return {TARGET_NETWORK_ACTION_DIST_INPUTS: torch.squeeze(logits, dim=[-1, -2])}

    # ValueFunctionAPI: for PPO (and other value-based algorithms).
    def compute_values(self, batch: dict[str, Any], embeddings: Any | None = None) -> torch.Tensor:
        """Values `(B,)` from `embeddings` (the features `_forward_train` returned), computed
        from `batch[Columns.OBS]` when None."""
        if embeddings is None:
            obs = batch[Columns.OBS]
            embeddings = self._base_cnn_stack(self._channels_first(obs))
            embeddings = torch.squeeze(embeddings, dim=[-1, -2])
        return self._values(embeddings).squeeze(-1)

    def _compute_embeddings_and_logits(
        self, batch: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        obs = self._channels_first(batch[Columns.OBS])
        embeddings = self._base_cnn_stack(obs)
        logits = self._logits(embeddings)
        return (
            torch.squeeze(embeddings, dim=[-1, -2]),
            torch.squeeze(logits, dim=[-1, -2]),
        )
