"""The default torch modules' networks as the export's description (`PolicyDescription`):
PPO's `DefaultPPOTorchRLModule` (MLP encoder, or with `use_lstm` the LSTM encoder's tokenizer
and cell), DQN's `DefaultDQNTorchRLModule` and SAC's `DefaultSACTorchRLModule`. Their layers are
read from their torch layers (`nn.Linear` weights transposed to `(in, out)`, the activation
modules that follow them); imported only for torch modules, so an export of a numpy module
never imports torch."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.algorithms.sac.torch_module import DefaultSACTorchRLModule
from trainer.export.description import (
    ACTIVATION,
    BIAS,
    CATEGORICAL,
    CELL_SIZE,
    CLIP,
    DIAG_GAUSSIAN,
    DISTRIBUTION,
    ENCODER,
    EXPORTABLE,
    FREE,
    HEADS,
    LOG_STD,
    LSTM,
    Q_VALUES,
    SQUASHED_GAUSSIAN,
    WEIGHT,
    WEIGHT_HH,
    WEIGHT_IH,
    ExportError,
    PolicyDescription,
    check_activation,
)
from trainer.torch_rl.networks import LSTMEncoder, MLPEncoder, MLPHead, TorchMLP
from trainer.torch_rl.numpy_inference import ACTIVATION_NAMES


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to("cpu", torch.float32).numpy()


def _refuse(module: Any, detail: str) -> ExportError:
    return ExportError(
        f"a {type(module).__name__} {detail} is not a module the export can express; "
        f"allowed: {EXPORTABLE}"
    )


def torch_layers(mlp: TorchMLP, prefix: str, description: PolicyDescription) -> list[dict]:
    """A `TorchMLP`'s layers: each `nn.Linear` with the activation module after it (none:
    "linear")."""
    if type(mlp) is not TorchMLP:
        raise _refuse(mlp, f"at {prefix}")
    layers: list[dict] = []
    for part in mlp.mlp:
        if type(part) is nn.Linear and part.bias is not None:
            index = len(layers)
            layers.append(
                {
                    WEIGHT: description.add(f"{prefix}.{index}.weight", _array(part.weight).T),
                    BIAS: description.add(f"{prefix}.{index}.bias", _array(part.bias)),
                    ACTIVATION: "linear",
                }
            )
            continue
        name = ACTIVATION_NAMES.get(type(part))
        if name is None or not layers or layers[-1][ACTIVATION] != "linear":
            raise _refuse(part, f"layer at {prefix}")
        if isinstance(part, nn.ELU) and part.alpha != 1.0:
            raise _refuse(part, f"(alpha={part.alpha}) at {prefix}")
        layers[-1][ACTIVATION] = check_activation(name, prefix)
    return layers


def _encoder_layers(encoder: nn.Module, prefix: str, description: PolicyDescription) -> list:
    if type(encoder) is not MLPEncoder:
        raise _refuse(encoder, f"encoder at {prefix} (a CNN or a catalog's own)")
    return torch_layers(encoder.net, f"{prefix}.net", description)


def _head(head: nn.Module, prefix: str, description: PolicyDescription) -> list:
    """A head's layers; its free log-std and log-std clip go into the description."""
    if type(head) is not MLPHead:
        raise _refuse(head, f"head at {prefix}")
    layers = torch_layers(head.net, f"{prefix}.net", description)
    if head.free_log_std or head.clip_log_std:
        description.spec[LOG_STD] = {
            FREE: description.add(f"{prefix}.log_std", _array(head.log_std))
            if head.free_log_std
            else None,
            CLIP: head.log_std_clip_param if head.clip_log_std else None,
        }
    return layers


def _lstm(encoder: nn.Module, prefix: str, description: PolicyDescription) -> dict:
    """An `LSTMEncoder`'s tokenizer layers into the encoder, and its one LSTM layer: the input
    and hidden weights `(in, 4H)` (torch's gate order i, f, g, o) and the two biases summed."""
    if type(encoder) is not LSTMEncoder or encoder.lstm.num_layers != 1:
        raise _refuse(encoder, f"encoder at {prefix}")
    description.spec[ENCODER] = _encoder_layers(
        encoder.tokenizer, f"{prefix}.tokenizer", description
    )
    lstm = encoder.lstm
    return {
        WEIGHT_IH: description.add(f"{prefix}.lstm.weight_ih", _array(lstm.weight_ih_l0).T),
        WEIGHT_HH: description.add(f"{prefix}.lstm.weight_hh", _array(lstm.weight_hh_l0).T),
        BIAS: description.add(
            f"{prefix}.lstm.bias", _array(lstm.bias_ih_l0) + _array(lstm.bias_hh_l0)
        ),
        CELL_SIZE: int(encoder.cell_size),
    }


def describe_torch_module(module: nn.Module, description: PolicyDescription) -> None:
    """Fills `description` with a default torch module's networks; an ExportError for any
    other module (a subclass, a user's, a CNN encoder, LSTM inputs of previous actions)."""
    spec = description.spec
    if any(p.device.type != "cpu" for p in module.parameters()):
        module = module.to("cpu")
    if type(module) is DefaultPPOTorchRLModule:
        discrete = isinstance(module.action_space, gym.spaces.Discrete)
        if not discrete and not isinstance(module.action_space, gym.spaces.Box):
            raise _refuse(module, f"with action_space={module.action_space}")
        encoder = module.encoder
        prefix = "encoder.encoder" if encoder.shared else "encoder.actor_encoder"
        actor = encoder.encoder if encoder.shared else encoder.actor_encoder
        if module._stateful:
            if module._prev_action_dim or module._prev_reward:
                raise _refuse(
                    module,
                    "with model_config['lstm_use_prev_action'] / ['lstm_use_prev_reward']=True "
                    "(the previous action and reward as LSTM inputs)",
                )
            spec[LSTM] = _lstm(actor, prefix, description)
        else:
            spec[ENCODER] = _encoder_layers(actor, prefix, description)
        spec[HEADS] = {"pi": _head(module.pi, "pi", description)}
        spec[DISTRIBUTION] = CATEGORICAL if discrete else DIAG_GAUSSIAN
        return
    if type(module) is DefaultDQNTorchRLModule:
        spec[ENCODER] = _encoder_layers(module.encoder, "encoder", description)
        if module.uses_dueling:
            spec[HEADS] = {
                "advantage": _head(module.af, "af", description),
                "value": _head(module.vf, "vf", description),
            }
        else:
            spec[HEADS] = {"q": _head(module.af, "af", description)}
        spec[DISTRIBUTION] = Q_VALUES
        return
    if type(module) is DefaultSACTorchRLModule:
        spec[ENCODER] = _encoder_layers(module.pi_encoder, "pi_encoder", description)
        spec[HEADS] = {"pi": _head(module.pi, "pi", description)}
        spec[DISTRIBUTION] = SQUASHED_GAUSSIAN if module.continuous else CATEGORICAL
        return
    raise _refuse(module, "(not a default PPO, DQN or SAC torch module)")
