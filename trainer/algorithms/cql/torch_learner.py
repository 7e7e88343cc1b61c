"""RLlib 2.60's `CQLTorchLearner`: CQL's losses (`cql_learner.py` has them written out) on
RLlib's `DefaultCQLTorchRLModule`, with SAC's four optimizers, each stepping on its own loss
(`SACTorchLearner.compute_gradients`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.nn import functional

from trainer.algorithms.cql.cql_learner import CloningPhase
from trainer.algorithms.sac.loss import ALPHA_LOSS_KEY, QF_LOSS_KEY, QF_TWIN_LOSS_KEY
from trainer.algorithms.sac.sac_learner import recorded_train_batch
from trainer.algorithms.sac.torch_learner import SACTorchLearner
from trainer.algorithms.sac.torch_loss import TorchSACLoss, statistics
from trainer.algorithms.sac.torch_module import (
    LOGP_NEXT_RESAMPLED,
    LOGP_RESAMPLED,
    Q_CURR,
    QF_PREDS,
    QF_TARGET_NEXT,
    QF_TWIN_PREDS,
)
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import POLICY_LOSS_KEY, UpdateResults

if TYPE_CHECKING:
    from trainer.algorithms.cql.cql import CQLConfig

#: RLlib's CQL statistic: the conservative term of the (first) critic's loss.
CQL_LOSS_KEY = "cql_loss"


class CQLTorchLearner(CloningPhase, SACTorchLearner):
    """See the module docstring; `CloningPhase` says when the policy clones the recorded
    actions (the first `bc_iters` training iterations)."""

    config: CQLConfig
    algorithm_name = "CQL"

    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> UpdateResults:
        """One step of every optimizer on a batch of recorded transitions (RLlib's column
        names), then the target critics' update."""
        return super().update(
            recorded_train_batch(batch, self.config.gamma),
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
        )

    def evaluation_loss(self, batch: dict[str, Any]) -> dict[str, float]:
        """The losses of `batch` with no step (offline evaluation), the module's draws on
        the learner's own generator, left as it was."""
        tensors = {**batch, Columns.NEXT_OBS: self.spaces.preprocess(batch[Columns.NEXT_OBS])}
        tensors[Columns.OBS] = self.spaces.preprocess(batch[Columns.OBS])
        tensors[Columns.ACTIONS] = np.asarray(batch[Columns.ACTIONS], dtype=np.float32)
        tensors[Columns.REWARDS] = np.asarray(batch[Columns.REWARDS], dtype=np.float32)
        rng_state = self._rng_state
        try:
            with self._own_rng():
                return super().evaluation_loss(tensors)
        finally:
            self._rng_state = rng_state
            self._temp_losses = {}
            self.td_errors = None

    def compute_loss_for_module(  # type: ignore[override]  # a CQLConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: CQLConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        log_alpha = self.curr_log_alpha[module_id]
        logp_resampled = fwd_out[LOGP_RESAMPLED]
        alpha_loss = -torch.mean(
            log_alpha * (logp_resampled.detach() + self.target_entropy[module_id])
        )
        alpha = torch.exp(log_alpha)
        if not self.cloning:
            actor_loss = torch.mean(alpha.detach() * logp_resampled - fwd_out[Q_CURR])
        else:  # behaviour cloning: the recorded actions' log-likelihood
            dist = self.rl_module.get_train_action_dist_cls().from_logits(
                fwd_out[Columns.ACTION_DIST_INPUTS]
            )
            actor_loss = torch.mean(
                alpha.detach() * logp_resampled - dist.logp(batch[Columns.ACTIONS])
            )
        q_next = fwd_out[QF_TARGET_NEXT]
        if not config.deterministic_backup:
            q_next = q_next - alpha.detach() * fwd_out[LOGP_NEXT_RESAMPLED]
        q_selected_target = (
            batch[Columns.REWARDS]
            + config.gamma * (1.0 - batch[Columns.TERMINATEDS].float()) * q_next
        ).detach()
        # log(0.5 ** dim(A)): RLlib's density of the random actions.
        random_density = fwd_out["actions_curr_repeat"].shape[-1] * math.log(0.5)

        def critic_loss(q_selected: torch.Tensor, prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
            q_repeat = torch.cat(
                [
                    fwd_out[f"{prefix}_rand_repeat"] - random_density,
                    fwd_out[f"{prefix}_next_repeat"] - fwd_out["logps_next_repeat"].detach(),
                    fwd_out[f"{prefix}_curr_repeat"] - fwd_out["logps_curr_repeat"].detach(),
                ],
                dim=1,
            )
            cql_loss = (
                torch.logsumexp(q_repeat / config.temperature, dim=1).mean()
                * config.min_q_weight
                * config.temperature
            ) - q_selected.mean() * config.min_q_weight
            return functional.mse_loss(q_selected, q_selected_target) + cql_loss, cql_loss

        q_selected = fwd_out[QF_PREDS]
        qf_loss, cql_loss = critic_loss(q_selected, "q")
        td_error = torch.abs(q_selected - q_selected_target)
        qf_twin_loss = None
        if QF_TWIN_PREDS in fwd_out:
            q_twin_selected = fwd_out[QF_TWIN_PREDS]
            qf_twin_loss, _ = critic_loss(q_twin_selected, "q_twin")
            td_error = 0.5 * (td_error + torch.abs(q_twin_selected - q_selected_target))
        losses = {
            POLICY_LOSS_KEY: actor_loss,
            QF_LOSS_KEY: qf_loss,
            ALPHA_LOSS_KEY: alpha_loss,
            QF_TWIN_LOSS_KEY: qf_twin_loss,
        }
        stats = statistics(
            losses,
            log_alpha,
            self.target_entropy[module_id],
            td_error,
            logp_resampled,
            fwd_out["q_curr_repeat"],
            {CQL_LOSS_KEY: cql_loss},
        )
        return self._finish_loss(module_id, TorchSACLoss(losses, td_error, stats))


__all__ = ["CQLTorchLearner"]
