"""RLlib's target-network helpers (`ray.rllib.core.learner.utils`): a frozen copy of a network,
and its soft (Polyak) update from the main network; and the check a Q learner (DQN's, SAC's)
makes of the module it is given, which then makes its target networks."""

from __future__ import annotations

import copy
from typing import Any, cast

import torch

from trainer.core.apis import QNetAPI, TargetNetworkAPI
from trainer.torch_rl.runner_view import TorchModuleView
from trainer.torch_rl.torch_utils import update_target_network as polyak_update


def make_target_network(main_net: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of `main_net` (same weights) whose parameters take no gradients."""
    if not isinstance(main_net, torch.nn.Module):
        raise ValueError(
            f"make_target_network(main_net={main_net!r}): main_net must be a torch.nn.Module"
        )
    target_net = copy.deepcopy(main_net)
    target_net.requires_grad_(False)
    return target_net


def update_target_network(
    *, main_net: torch.nn.Module, target_net: torch.nn.Module, tau: float
) -> None:
    """`target = tau * main + (1 - tau) * target`, parameter by parameter (tau=1.0: a copy;
    `trainer.torch_rl.torch_utils.update_target_network`, RLlib's positional form)."""
    polyak_update(main_net, target_net, tau)


def with_target_networks(module: Any, learner: str, algorithm: str) -> Any:
    """`module` (a TorchRLModule, or a view of one) after its target networks were made, as
    RLlib's learner makes them when it builds: the target networks start as the main ones. A
    view is made anew when the module made its target networks only now (the Algorithm and
    the checkpoints read the new weights through it). Raises TypeError, naming `learner` and
    `algorithm`'s loss, unless the module has `QNetAPI` and `TargetNetworkAPI`."""
    rl_module = getattr(module, "rl_module", module)
    missing = [
        api.__name__ for api in (QNetAPI, TargetNetworkAPI) if not isinstance(rl_module, api)
    ]
    if missing:
        raise TypeError(
            f"{learner}: the module ({type(rl_module).__name__}) must implement "
            f"{' and '.join(missing)} (compute_q_values(batch); make_target_networks(), "
            f"get_target_network_pairs(), forward_target(batch)): {algorithm}'s loss needs them"
        )
    keys_before = set(rl_module.state_dict())
    cast(TargetNetworkAPI, rl_module).make_target_networks()
    if set(rl_module.state_dict()) != keys_before and hasattr(module, "rl_module"):
        return TorchModuleView(rl_module, module.spaces)
    return module
