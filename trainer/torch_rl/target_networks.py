"""RLlib's target-network helpers (`ray.rllib.core.learner.utils`): a frozen copy of a network,
and its soft (Polyak) update from the main network."""

from __future__ import annotations

import copy

import torch


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
    """`target = tau * main + (1 - tau) * target`, parameter by parameter (tau=1.0: a copy)."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"update_target_network(tau={tau!r}): tau must be in [0.0, 1.0]")
    with torch.no_grad():
        main_state = main_net.state_dict()
        for name, target_value in target_net.state_dict().items():
            if target_value.is_floating_point():
                target_value.mul_(1.0 - tau).add_(main_state[name], alpha=tau)
            else:
                target_value.copy_(main_state[name])
