"""`VPGTorchRLModule`: VPG's default module, a policy network and nothing else.

    observation s ─▶ Linear(obs_dim, hidden_dim) ─▶ ReLU ─▶ Linear(hidden_dim, n_actions) ─▶ logits

The logits are the inputs of the categorical policy pi_theta(a | s) (`Columns.ACTION_DIST_INPUTS`;
the action distribution is `TorchCategorical`, the default for a Discrete action space). There is
no value function: VPG without a baseline needs none. `model_config["hidden_dim"]` sizes the
hidden layer (64 by default, `VPGConfig.get_default_rl_module_spec`). Any other TorchRLModule that
returns `Columns.ACTION_DIST_INPUTS` works with VPG's learner as well.
"""

from __future__ import annotations

from typing import Any

import torch

from trainer.compat.rllib_utils import Columns
from trainer.torch_rl.rl_module import TorchRLModule


class VPGTorchRLModule(TorchRLModule):
    """The policy network pi_theta(a | s) of VPG (see the module docstring)."""

    def setup(self) -> None:
        input_dim = self.observation_space.shape[0]
        hidden_dim = self.model_config["hidden_dim"]
        output_dim = self.action_space.n
        self._policy_net = torch.nn.Sequential(
            torch.nn.Linear(input_dim, hidden_dim),
            torch.nn.ReLU(),
            torch.nn.Linear(hidden_dim, output_dim),
        )

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The logits of pi_theta(. | s) for every observation of the batch (the same in
        every phase: sampling adds no noise of its own, the categorical draw explores)."""
        action_logits = self._policy_net(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: action_logits}
