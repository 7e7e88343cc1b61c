"""RLlib's bare-bones custom torch module (`ray.rllib.examples.rl_modules.classes.vpg_torch_rlm`):
a vanilla-policy-gradient style policy network for Discrete actions, `model_config["hidden_dim"]`
wide. Needs the `torch` extra."""

from __future__ import annotations

from typing import Any

import torch

from trainer.compat.rllib_utils import Columns
from trainer.torch_rl.rl_module import TorchRLModule


class VPGTorchRLModule(TorchRLModule):
    """One hidden ReLU layer from the (1-D) observation to the logits of a Discrete action (the
    default action distribution, `TorchCategorical`)."""

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
        return {Columns.ACTION_DIST_INPUTS: self._policy_net(batch[Columns.OBS])}
