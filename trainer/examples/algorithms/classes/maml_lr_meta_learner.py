"""The meta learner of RLlib's MAML example
(`ray.rllib.examples.algorithms.classes.maml_lr_meta_learner`): the mean squared error of the
prediction after the inner step, on data of the same task the inner step did not see (MAML's
meta loss needs none of the inner learners' losses)."""

from __future__ import annotations

from typing import Any

import torch

from trainer.torch_rl.meta_learning import TorchMetaLearner


class MAMLTorchMetaLearner(TorchMetaLearner):
    """Mean squared error of `fwd_out["y_pred"]` against `batch["y"]`."""

    def compute_loss_for_module(
        self,
        *,
        module_id: Any,
        config: Any,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
        others_loss_per_module: list | None = None,
    ) -> torch.Tensor:
        return torch.nn.functional.mse_loss(fwd_out["y_pred"], batch["y"])
