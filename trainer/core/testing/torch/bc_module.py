"""RLlib's behaviour-cloning test modules (`ray.rllib.core.testing.torch.bc_module`). Needs the
`torch` extra.

- `DiscreteBCTorchModule`: one hidden ReLU layer (`model_config["fcnet_hiddens"][0]` wide) from
  a 1-D observation to a Discrete action's logits.
- `BCTorchRLModuleWithSharedGlobalEncoder`: a policy over a Dict observation {"global",
  "local"}: an encoder it is given (shared with other modules) encodes "global"; the head takes
  the encoding next to "local".
- `BCTorchMultiAgentModuleWithSharedEncoder`: a MultiRLModule that builds one encoder and hands
  it to every module of its specs, so that all of them train the same encoder weights.
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn

from trainer.capabilities import CHECKPOINTABLE
from trainer.compat.rllib_utils import Columns
from trainer.core.multi_rl_module import MultiRLModule
from trainer.torch_rl.distributions import TorchCategorical
from trainer.torch_rl.rl_module import TorchRLModule
from trainer.util.rllib_members import refuse


class DiscreteBCTorchModule(TorchRLModule):
    """A Discrete-action policy network: obs -> Linear -> ReLU -> Linear -> logits."""

    def setup(self) -> None:
        input_dim = self.observation_space.shape[0]
        hidden_dim = self.model_config["fcnet_hiddens"][0]
        output_dim = self.action_space.n
        self.policy = nn.Sequential(
            nn.Linear(input_dim, hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, output_dim),
        )
        self.input_dim = input_dim

    def get_train_action_dist_cls(self) -> type:
        return TorchCategorical

    def get_exploration_action_dist_cls(self) -> type:
        return TorchCategorical

    def get_inference_action_dist_cls(self) -> type:
        return TorchCategorical

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self.policy(batch[Columns.OBS])}


class BCTorchRLModuleWithSharedGlobalEncoder(TorchRLModule):
    """A policy whose "global" observation goes through `encoder`, an `nn.Module` other modules
    may hold too; its head maps [encoding, "local" observation] to the action logits.

    Built with the usual keyword arguments (spaces, `model_config`) plus `encoder`, `local_dim`,
    `hidden_dim` and `action_dim` (RLlib's constructor arguments of this module)."""

    def __init__(
        self,
        *,
        encoder: nn.Module,
        local_dim: int,
        hidden_dim: int,
        action_dim: int,
        **kwargs: Any,
    ) -> None:
        # setup() (run by the base constructor) builds the head from these; nn.Module's own
        # attribute bookkeeping does not exist yet, so they are set past it.
        object.__setattr__(self, "_parts", (encoder, local_dim, hidden_dim, action_dim))
        super().__init__(**kwargs)

    def setup(self) -> None:
        encoder, local_dim, hidden_dim, action_dim = self._parts
        self.encoder = encoder
        self.policy_head = nn.Sequential(
            nn.Linear(hidden_dim + local_dim, hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, action_dim),
        )

    def get_train_action_dist_cls(self) -> type:
        return TorchCategorical

    def get_exploration_action_dist_cls(self) -> type:
        return TorchCategorical

    def get_inference_action_dist_cls(self) -> type:
        return TorchCategorical

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        global_encoding = self.encoder(obs["global"])
        policy_in = torch.cat([global_encoding, obs["local"]], dim=-1)
        return {Columns.ACTION_DIST_INPUTS: self.policy_head(policy_in)}


@refuse(
    "ray.rllib.core.testing.torch.bc_module.BCTorchMultiAgentModuleWithSharedEncoder",
    CHECKPOINTABLE,
    "the old whole-module pickling of RLlib's testing module; module checkpoints here are "
    "save_to_path / restore_from_path (get_state / set_state for the weights)",
    "serialize",
    "deserialize",
)
class BCTorchMultiAgentModuleWithSharedEncoder(MultiRLModule):
    """Builds one encoder ("global" observation -> `fcnet_hiddens[0]` features, from the first
    spec) and every module of `rl_module_specs` (`BCTorchRLModuleWithSharedGlobalEncoder`s, Dict
    observations {"global", "local"}, Discrete actions) around it."""

    def setup(self) -> None:
        specs = self.rl_module_specs
        if not specs:
            raise ValueError(f"{type(self).__name__} needs at least one module spec")
        first = next(iter(specs.values()))
        global_dim = first.observation_space["global"].shape[0]
        hidden_dim = cast(dict, first.model_config)["fcnet_hiddens"][0]
        shared_encoder = nn.Sequential(
            nn.Linear(global_dim, hidden_dim),
            nn.ReLU(),
            nn.Linear(hidden_dim, hidden_dim),
        )
        self._rl_modules = {
            module_id: cast(type, spec.module_class)(
                observation_space=spec.observation_space,
                action_space=spec.action_space,
                inference_only=spec.inference_only,
                model_config=spec.model_config,
                encoder=shared_encoder,
                local_dim=spec.observation_space["local"].shape[0],
                hidden_dim=hidden_dim,
                action_dim=spec.action_space.n,
            )
            for module_id, spec in specs.items()
        }
