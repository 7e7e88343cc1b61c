"""RLlib's behaviour-cloning test learner (`ray.rllib.core.testing.torch.bc_learner`): the
negative log-likelihood of the batch's actions under each module's action distribution. Needs
the `torch` extra."""

from __future__ import annotations

from typing import Any

import torch

from trainer.compat.rllib_utils import Columns
from trainer.core.testing.base_learner import BaseTestingLearner
from trainer.torch_rl.learner import TorchLearner


class BCTorchLearner(TorchLearner, BaseTestingLearner):
    """`BaseTestingAlgorithmConfig`'s learner: the mean of -log pi(a|s) over the batch."""

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        module = self.module[module_id] if self.is_multi_module else self.rl_module
        dist = module.get_train_action_dist_cls().from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        return -torch.mean(dist.logp(batch[Columns.ACTIONS]))


__all__ = ["BCTorchLearner"]
