"""RLlib's target-network helpers (`ray.rllib.core.learner.utils`): a frozen copy of a network,
and its soft (Polyak) update from the main network; and the check a Q learner (DQN's, SAC's)
makes of the module it is given, which then makes its target networks."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, MutableMapping
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


class TargetUpdateSteps(MutableMapping):
    """RLlib's `learner.last_update_ts_by_mid` (its DQN and SAC learners': module id -> the
    env step of the last target update; 0 for any other id) over a learner of one module,
    whose `last_target_update_step` it reads and writes."""

    def __init__(self, learner: Any):
        self._learner = learner

    def __getitem__(self, module_id: Any) -> int:
        if module_id == self._learner.module_id:
            return int(self._learner.last_target_update_step)
        return 0

    def __setitem__(self, module_id: Any, step: int) -> None:
        if module_id != self._learner.module_id:
            raise KeyError(
                f"last_update_ts_by_mid[{module_id!r}]: this learner trains "
                f"{self._learner.module_id!r} only"
            )
        self._learner.last_target_update_step = int(step)

    def __delitem__(self, module_id: Any) -> None:
        self[module_id] = 0

    def __iter__(self) -> Iterator[Any]:
        return iter([self._learner.module_id])

    def __len__(self) -> int:
        return 1


class TargetUpdateStepsAPI:
    """`last_update_ts_by_mid` (`TargetUpdateSteps`) for the torch DQN and SAC learners;
    setting it (RLlib's learners' `set_state` overrides do) sets their own module's step."""

    module_id: Any
    last_target_update_step: int

    @property
    def last_update_ts_by_mid(self) -> TargetUpdateSteps:
        return TargetUpdateSteps(self)

    @last_update_ts_by_mid.setter
    def last_update_ts_by_mid(self, steps: Mapping[Any, int]) -> None:
        self.last_target_update_step = int(dict(steps).get(self.module_id, 0))
