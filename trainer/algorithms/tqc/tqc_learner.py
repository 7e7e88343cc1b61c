"""`TQCLearner`: one gradient step of TQC on a replay batch, in numpy: SAC's numpy learner
(`trainer.algorithms.sac.sac_learner`: Adam with eps 1e-7, `grad_clip`, the target critics'
soft update, log-alpha, the state) running TQC's loss (`loss.py`), with RLlib's optimizers:
"qf" over every critic (critic_lr), "policy" (actor_lr), "alpha" (alpha_lr)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trainer.algorithms.sac.loss import QF, SACLoss
from trainer.algorithms.sac.sac_learner import SACLearner
from trainer.algorithms.tqc.config import quantiles_kept
from trainer.algorithms.tqc.loss import continuous_loss

if TYPE_CHECKING:
    from trainer.algorithms.tqc.config import TQCConfig
    from trainer.algorithms.tqc.tqc_module import TQCModule


class TQCLearner(SACLearner):
    """See the module docstring."""

    config: TQCConfig
    module: TQCModule
    target: TQCModule
    loss_name = "TQC"

    def _critic_optimizers(self, critic_sizes: list[int]) -> dict[str, int]:
        """One optimizer, "qf", over every critic (RLlib's TQC)."""
        return {QF: sum(critic_sizes)}

    def loss_and_gradients(self, batch: dict[str, np.ndarray]) -> SACLoss:
        config = self.config
        kept = quantiles_kept(
            self.module.n_quantiles, self.module.n_critics, config.top_quantiles_to_drop_per_net
        )
        return continuous_loss(
            batch, self.module, self.target, self.log_alpha, self.target_entropy, self.rng, kept
        )


__all__ = ["TQCLearner"]
