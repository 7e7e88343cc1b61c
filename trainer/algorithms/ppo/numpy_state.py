"""The numpy default PPO module's state as the default torch PPO module's `state_dict`:
the piece both modules import (the numpy one late, with torch), below both.

A numpy `PolicyModule` (what a PPO config without a framework trains here) and a
`DefaultPPOTorchRLModule` built with the same model config have the same networks: the same
layers, sizes and activations, in the same order. Only the names and the weight layout differ,
so a numpy checkpoint loads into the torch module (`RLModuleSpec(load_state_path=...)` on a
torch module pointing at a numpy module's checkpoint, as RLlib loads a pretrained module):

    numpy PolicyModule                           DefaultPPOTorchRLModule
    (weights `(in, out)`, biases `(out,)`)       (weights `(out, in)`: transposed)

    vf_share_layers=False (two towers):
      pi.<k>  (k < len(fcnet_hiddens))           encoder.actor_encoder.<k-th Linear>
      pi.<k>  (the rest: head layers, output)    pi.net.<(k - len(fcnet_hiddens))-th Linear>
      vf.<k>                                     encoder.critic_encoder... / vf.net... (same)
    vf_share_layers=True (with encoder layers):
      encoder.<k>                                encoder.encoder.<k-th Linear>
      pi.<k> / vf.<k>                            pi.net.<k-th Linear> / vf.net.<k-th Linear>
    log_std (free_log_std)                       pi.log_std

The "k-th Linear" is the k-th `nn.Linear` of that part in module order (activations sit
between them). Both modules compute the same function of the same observations (the numpy
module one-hot encodes Discrete observations and flattens Boxes as the torch one does); the one
difference is that the torch module clips Gaussian log-stds to `log_std_clip_param` (20) in its
outputs, where the numpy module's distribution clips them.

What cannot convert is refused, naming it: a model config that differs in what the weights
alone do not show (activations, vf_share_layers, free_log_std), any weight without a
counterpart (e.g. a CNN or LSTM torch module), or a shape that differs.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from torch import nn

from trainer.core.models import StateConversionError, check_model_config, mlp_names
from trainer.torch_rl.numpy_twin import linear_names

#: The module of the default torch PPO module, the one class the state converts into. That
#: module imports this one (its `start_as_numpy_module`), so this one names it instead and
#: looks the class up where it is loaded: a module that is one has had its class imported.
_TORCH_MODULE = "trainer.algorithms.ppo.torch_module"


def _is_default_torch_module(module: Any) -> bool:
    """Whether `module` is a `DefaultPPOTorchRLModule` (or of a subclass)."""
    loaded = sys.modules.get(_TORCH_MODULE)
    return loaded is not None and isinstance(module, loaded.DefaultPPOTorchRLModule)


#: Model-config keys both modules must agree on for the same weights to compute the same
#: function (the layer sizes are checked on the weights' shapes).
_SAME_FUNCTION_KEYS = (
    "fcnet_hiddens",
    "fcnet_activation",
    "head_fcnet_hiddens",
    "head_fcnet_activation",
    "free_log_std",
    "use_lstm",
)


def _shared_layers(config: dict) -> bool:
    """Whether one encoder feeds both heads (the numpy module has one only with encoder
    layers; without them both modules' heads read the observations)."""
    return bool(config["vf_share_layers"]) and bool(config["fcnet_hiddens"])


def torch_names_of_numpy_parameters(
    numpy_model_config: dict, module: nn.Module, where: str = "state"
) -> dict[str, str]:
    """{numpy `PolicyModule` parameter name: `module`'s parameter name} for a numpy module
    built with `numpy_model_config` and `module` (a `DefaultPPOTorchRLModule`, not
    inference-only); raises `StateConversionError` naming what differs in the two networks'
    structure (the shapes are the caller's to check). See the module docstring."""
    if not _is_default_torch_module(module):
        raise StateConversionError(
            f"{where}: a numpy PPO module's state converts into the default torch PPO module "
            f"(DefaultPPOTorchRLModule / PPOTorchRLModule) only, not a {type(module).__name__}"
        )
    if module.inference_only:
        raise StateConversionError(f"{where}: the torch module is inference-only")
    numpy_config = check_model_config(numpy_model_config or {}, setting=f"{where} model_config")
    torch_config = module._config
    for key in _SAME_FUNCTION_KEYS:
        if numpy_config[key] != torch_config[key]:
            raise StateConversionError(
                f"{where}: the numpy module was built with model_config[{key!r}]="
                f"{numpy_config[key]!r}, the torch module with {torch_config[key]!r}: the "
                "two networks differ (give the torch module the numpy module's model config)"
            )
    if _shared_layers(numpy_config) != _shared_layers(torch_config):
        raise StateConversionError(
            f"{where}: vf_share_layers differs (numpy module: "
            f"{numpy_config['vf_share_layers']!r}, torch module: "
            f"{torch_config['vf_share_layers']!r}): the two networks differ"
        )
    encoder = module.encoder
    pi_linears = linear_names(module.pi.net, "pi.net")
    vf_linears = linear_names(module.vf.net, "vf.net")
    if _shared_layers(numpy_config):
        shared = linear_names(getattr(encoder, "encoder", None), "encoder.encoder")
        chains = {"encoder": shared, "pi": pi_linears, "vf": vf_linears}
    else:
        actor = linear_names(getattr(encoder, "actor_encoder", None), "encoder.actor_encoder")
        critic = linear_names(getattr(encoder, "critic_encoder", None), "encoder.critic_encoder")
        chains = {"pi": actor + pi_linears, "vf": critic + vf_linears}
    names = {
        numpy_name: torch_name
        for numpy_net, torch_linears in chains.items()
        for numpy_name, torch_name in mlp_names(numpy_net, torch_linears).items()
    }
    if getattr(module.pi, "free_log_std", False):
        names["log_std"] = "pi.log_std"
    return names


def numpy_ppo_state_to_torch(
    state: dict[str, np.ndarray],
    numpy_model_config: dict,
    module: nn.Module,
    where: str = "state",
) -> dict[str, np.ndarray]:
    """`state` (a numpy `PolicyModule`'s `get_state()`, built with `numpy_model_config`) as
    the `state_dict` arrays of `module` (a `DefaultPPOTorchRLModule`, not inference-only);
    raises `StateConversionError` naming what differs. See the module docstring."""
    names = torch_names_of_numpy_parameters(numpy_model_config, module, where)
    own = module.state_dict()
    converted: dict[str, np.ndarray] = {}
    for source, target in names.items():
        if source == "log_std" and source not in state:
            continue  # checked below, with the weights the torch module misses
        if source not in state:
            raise StateConversionError(f"{where}: has no {source!r} (for {target!r})")
        value = np.asarray(state[source])
        value = value.T if source.endswith(".weight") else value
        expected = tuple(own[target].shape)
        if value.shape != expected:
            if source == "log_std":
                raise StateConversionError(
                    f"{where}['log_std']: shape {value.shape}, the torch module's pi.log_std "
                    f"is {expected}"
                )
            raise StateConversionError(
                f"{where}[{source!r}]: shape {value.shape} as {target!r}, whose shape is "
                f"{expected}: the observation or action spaces or the layer sizes differ"
            )
        converted[target] = np.ascontiguousarray(value, dtype=np.float32)
    unused = sorted(set(state) - set(names))
    missing = sorted(set(own) - set(converted))
    if unused or missing:
        raise StateConversionError(
            f"{where}: the networks differ: numpy weights without a torch counterpart "
            f"{unused[:4]}, torch weights without a numpy counterpart {missing[:4]}"
        )
    return converted


__all__ = [
    "StateConversionError",
    "numpy_ppo_state_to_torch",
    "torch_names_of_numpy_parameters",
]
