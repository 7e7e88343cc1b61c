"""The sine-regression module of RLlib's MAML example
(`ray.rllib.examples.algorithms.classes.maml_lr_differentiable_rlm`): an MLP of two hidden
layers of 40 ReLU units from one input to one output, `{"y_pred": ...}` from its observations.
Its whole forward pass is `_forward`, so the meta learner can run it on functional
parameters (`torch.func.functional_call`)."""

from __future__ import annotations

from typing import Any

from torch import nn

from trainer.compat.rllib_utils import Columns
from trainer.torch_rl.rl_module import TorchRLModule


class DifferentiableTorchRLModule(TorchRLModule):
    """x -> 40 -> 40 -> y, ReLU between (the spaces are required but not read)."""

    def setup(self) -> None:
        self.net = nn.Sequential(
            nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1)
        )

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {"y_pred": self.net(batch[Columns.OBS])}
