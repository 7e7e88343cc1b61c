"""The torch building blocks of the default torch modules as the export's description
(`trainer.core.policy_description.PolicyDescription`): a `TorchMLP`'s layers (`nn.Linear`
weights transposed to `(in, out)`, the activation modules that follow them), an `MLPEncoder`,
an `MLPHead` with its free or clipped log-std, and an `LSTMEncoder`'s tokenizer and cell.

The algorithms' folders describe their torch modules with these (their `export_describer`);
anything but these exact classes (a subclass, a CNN, a catalog's own network) is refused with
an ExportError, since the export could not say what it computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from trainer.core.policy_description import (
    ACTIVATION,
    BIAS,
    CELL_SIZE,
    CLIP,
    ENCODER,
    FREE,
    LOG_STD,
    WEIGHT,
    WEIGHT_HH,
    WEIGHT_IH,
    ExportError,
    PolicyDescription,
    check_activation,
    unexpressible,
)
from trainer.torch_rl.networks import LSTMEncoder, MLPEncoder, MLPHead, TorchMLP
from trainer.torch_rl.numpy_inference import ACTIVATION_NAMES

#: What refuses a torch module that is not one of the default modules the export describes
#: (a subclass of one, a user's own).
NOT_A_DEFAULT_MODULE = "(not a default PPO, DQN or SAC torch module)"


def tensor_array(tensor: torch.Tensor) -> np.ndarray:
    """`tensor`'s values as a float32 numpy array on the CPU."""
    return tensor.detach().to("cpu", torch.float32).numpy()


def refuse(module: Any, detail: str) -> ExportError:
    """The ExportError that refuses `module` (`detail`: which part, where)."""
    return ExportError(unexpressible(module, detail))


def refuse_unless_exactly(module: Any, module_class: type) -> None:
    """Refuses `module` unless its class is `module_class` itself: a subclass may override
    the forward passes the description stands for."""
    if type(module) is not module_class:
        raise refuse(module, NOT_A_DEFAULT_MODULE)


def torch_layers(mlp: TorchMLP, prefix: str, description: PolicyDescription) -> list[dict]:
    """A `TorchMLP`'s layers: each `nn.Linear` with the activation module after it (none:
    "linear")."""
    if type(mlp) is not TorchMLP:
        raise refuse(mlp, f"at {prefix}")
    layers: list[dict] = []
    for part in mlp.mlp:
        if type(part) is nn.Linear and part.bias is not None:
            index = len(layers)
            layers.append(
                {
                    WEIGHT: description.add(
                        f"{prefix}.{index}.weight", tensor_array(part.weight).T
                    ),
                    BIAS: description.add(f"{prefix}.{index}.bias", tensor_array(part.bias)),
                    ACTIVATION: "linear",
                }
            )
            continue
        name = ACTIVATION_NAMES.get(type(part))
        if name is None or not layers or layers[-1][ACTIVATION] != "linear":
            raise refuse(part, f"layer at {prefix}")
        if isinstance(part, nn.ELU) and part.alpha != 1.0:
            raise refuse(part, f"(alpha={part.alpha}) at {prefix}")
        layers[-1][ACTIVATION] = check_activation(name, prefix)
    return layers


def encoder_layers(encoder: nn.Module, prefix: str, description: PolicyDescription) -> list:
    """An `MLPEncoder`'s layers (its output activated); any other encoder is refused."""
    if type(encoder) is not MLPEncoder:
        raise refuse(encoder, f"encoder at {prefix} (a CNN or a catalog's own)")
    return torch_layers(encoder.net, f"{prefix}.net", description)


def head_layers(head: nn.Module, prefix: str, description: PolicyDescription) -> list:
    """An `MLPHead`'s layers; its free log-std and log-std clip go into the description."""
    if type(head) is not MLPHead:
        raise refuse(head, f"head at {prefix}")
    layers = torch_layers(head.net, f"{prefix}.net", description)
    if head.free_log_std or head.clip_log_std:
        description.spec[LOG_STD] = {
            FREE: description.add(f"{prefix}.log_std", tensor_array(head.log_std))
            if head.free_log_std
            else None,
            CLIP: head.log_std_clip_param if head.clip_log_std else None,
        }
    return layers


def lstm_layers(encoder: nn.Module, prefix: str, description: PolicyDescription) -> dict:
    """An `LSTMEncoder`'s tokenizer layers into the encoder, and its one LSTM layer: the input
    and hidden weights `(in, 4H)` (torch's gate order i, f, g, o) and the two biases summed."""
    if type(encoder) is not LSTMEncoder or encoder.lstm.num_layers != 1:
        raise refuse(encoder, f"encoder at {prefix}")
    description.spec[ENCODER] = encoder_layers(
        encoder.tokenizer, f"{prefix}.tokenizer", description
    )
    lstm = encoder.lstm
    return {
        WEIGHT_IH: description.add(f"{prefix}.lstm.weight_ih", tensor_array(lstm.weight_ih_l0).T),
        WEIGHT_HH: description.add(f"{prefix}.lstm.weight_hh", tensor_array(lstm.weight_hh_l0).T),
        BIAS: description.add(
            f"{prefix}.lstm.bias", tensor_array(lstm.bias_ih_l0) + tensor_array(lstm.bias_hh_l0)
        ),
        CELL_SIZE: int(encoder.cell_size),
    }
