"""CQL's loss on tensors, RLlib 2.60's (`CQLTorchLearner.compute_loss_for_module`): the terms
of `loss.py` (which writes out the math and the statistics), in RLlib's order, on the outputs of
`DefaultCQLTorchRLModule.forward_train` (SAC's, plus the critics' values of the repeated
states' random and policy actions). Autograd differentiates each optimizer's loss; the learner
hands each to its own optimizer (RLlib's `_temp_losses`).

`torch_loss` returns each optimizer's loss under RLlib's "<optimizer name>_loss" (the twin
critic's None without twin_q), the per-row TD errors and the statistics (SAC's keys and
cql_loss, tensors)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from torch.nn import functional

from trainer.algorithms.cql.loss import (
    ACTIONS_CURR_REPEAT,
    CQL_LOSS_KEY,
    LOGPS_CURR_REPEAT,
    LOGPS_NEXT_REPEAT,
    repeat_key,
)
from trainer.algorithms.sac.loss import (
    ALPHA_LOSS_KEY,
    LOGP_NEXT_RESAMPLED,
    LOGP_RESAMPLED,
    Q_CURR,
    QF_LOSS_KEY,
    QF_PREDS,
    QF_TARGET_NEXT,
    QF_TWIN_LOSS_KEY,
    QF_TWIN_PREDS,
)
from trainer.algorithms.sac.torch_loss import TorchSACLoss, statistics
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import POLICY_LOSS_KEY

if TYPE_CHECKING:
    from trainer.algorithms.cql.config import CQLConfig


def conservative_critic_losses(
    fwd_out: dict[str, Any], q_selected_target: torch.Tensor, config: CQLConfig
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """qf_loss and qf_twin_loss (None without a twin): each critic's squared Bellman error on
    the q-targets y plus its conservative term; cql_loss, the first critic's term; the per-row
    TD errors (averaged over the two critics with twin_q). `fwd_out`: the module's outputs
    (`loss.conservative_critic_losses`' keys)."""
    # log(0.5^dim(A)): RLlib's density of the random actions.
    random_density = fwd_out[ACTIONS_CURR_REPEAT].shape[-1] * math.log(0.5)

    def critic_loss(q_selected: torch.Tensor, prefix: str) -> tuple[torch.Tensor, torch.Tensor]:
        # X_i(s): the random draws', the policy's at s' and at s (its log pi held).
        q_repeat = torch.cat(
            [
                fwd_out[repeat_key(prefix, "rand")] - random_density,
                fwd_out[repeat_key(prefix, "next")] - fwd_out[LOGPS_NEXT_REPEAT].detach(),
                fwd_out[repeat_key(prefix, "curr")] - fwd_out[LOGPS_CURR_REPEAT].detach(),
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
    return qf_loss, qf_twin_loss, cql_loss, td_error


def torch_loss(
    batch: dict[str, Any],
    fwd_out: dict[str, Any],
    config: CQLConfig,
    *,
    log_alpha: torch.Tensor,
    target_entropy: torch.Tensor,
    cloning: bool,
    action_dist_class: Any,
) -> TorchSACLoss:
    """CQL's loss (`loss.py`'s terms) on the module's outputs: `log_alpha` the trained
    log-temperature (shape (1,)); `cloning`: whether the policy still clones the recorded
    actions (the first `bc_iters` training iterations); `action_dist_class`: the module's
    train action distribution (RLlib's TorchDistribution, from the action distribution
    inputs)."""
    # alpha_loss (first, as RLlib's).
    logp_resampled = fwd_out[LOGP_RESAMPLED]
    alpha_loss = -torch.mean(log_alpha * (logp_resampled.detach() + target_entropy))
    alpha = torch.exp(log_alpha)

    # policy_loss: against the critics (their parameters frozen in the module's pass), or while
    # cloning, against the recorded actions' log-likelihood.
    if not cloning:
        actor_loss = torch.mean(alpha.detach() * logp_resampled - fwd_out[Q_CURR])
    else:
        dist = action_dist_class.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        actor_loss = torch.mean(alpha.detach() * logp_resampled - dist.logp(batch[Columns.ACTIONS]))

    # q-targets y (no gradient): the target critics' value of s' (the soft value without
    # deterministic_backup).
    q_next = fwd_out[QF_TARGET_NEXT]
    if not config.deterministic_backup:
        q_next = q_next - alpha.detach() * fwd_out[LOGP_NEXT_RESAMPLED]
    q_selected_target = (
        batch[Columns.REWARDS] + config.gamma * (1.0 - batch[Columns.TERMINATEDS].float()) * q_next
    ).detach()

    # qf_loss_i (with the conservative terms) and td_error.
    qf_loss, qf_twin_loss, cql_loss, td_error = conservative_critic_losses(
        fwd_out, q_selected_target, config
    )

    losses = {
        POLICY_LOSS_KEY: actor_loss,
        QF_LOSS_KEY: qf_loss,
        ALPHA_LOSS_KEY: alpha_loss,
        QF_TWIN_LOSS_KEY: qf_twin_loss,
    }
    stats = statistics(
        losses,
        log_alpha,
        target_entropy,
        td_error,
        logp_resampled,
        fwd_out[repeat_key("q", "curr")],
        {CQL_LOSS_KEY: cql_loss},
    )
    return TorchSACLoss(losses, td_error, stats)


__all__ = ["conservative_critic_losses", "torch_loss"]
