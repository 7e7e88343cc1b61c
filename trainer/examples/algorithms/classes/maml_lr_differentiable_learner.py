"""The inner learner of RLlib's MAML example
(`ray.rllib.examples.algorithms.classes.maml_lr_differentiable_learner`): a task's functional
SGD step on the mean squared error of the module's prediction."""

from __future__ import annotations

from typing import Any

import torch

from trainer.torch_rl.meta_learning import TorchDifferentiableLearner


class MAMLTorchDifferentiableLearner(TorchDifferentiableLearner):
    """Mean squared error of `fwd_out["y_pred"]` against `batch["y"]`."""

    def compute_loss_for_module(
        self, *, module_id: Any, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        return torch.nn.functional.mse_loss(fwd_out["y_pred"], batch["y"])
