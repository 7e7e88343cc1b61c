"""SAC's loss on tensors, RLlib 2.60's (`SACTorchLearner._compute_loss_for_module_continuous`
and `_discrete`): the terms of `loss.py` (which writes out the math and the statistics'
definitions), in its order, on the outputs of the module's `forward_train`
(`DefaultSACTorchRLModule`: the critics' Q(s, a), the resampled actions' log pi and critics'
values, the target critics' values at s'). Autograd differentiates each optimizer's loss; the
learner hands each to its own optimizer (RLlib's `_temp_losses`).

`continuous_loss` and `discrete_loss` return each optimizer's loss under RLlib's
"<optimizer name>_loss" (the twin critic's None without twin_q), the per-row TD errors and
the statistics (`STAT_KEYS`, tensors)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional

from trainer.algorithms.sac.loss import (
    ACTION_LOG_PROBS,
    ACTION_LOG_PROBS_NEXT,
    ACTION_PROBS,
    ACTION_PROBS_NEXT,
    ALPHA_LOSS_KEY,
    ALPHA_VALUE_KEY,
    DISCOUNTS,
    LOG_ALPHA_VALUE_KEY,
    LOGP_NEXT_RESAMPLED,
    LOGP_RESAMPLED,
    LOGPS_KEY,
    N_STEP,
    Q_CURR,
    QF_LOSS_KEY,
    QF_MAX_KEY,
    QF_MEAN_KEY,
    QF_MIN_KEY,
    QF_PREDS,
    QF_TARGET_NEXT,
    QF_TWIN_LOSS_KEY,
    QF_TWIN_PREDS,
    TARGET_ENTROPY_KEY,
    TD_ERROR_MEAN_KEY,
    WEIGHTS,
)
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import POLICY_LOSS_KEY


@dataclass
class TorchSACLoss:
    """One evaluation of the loss (in the graph: autograd takes each loss's gradient)."""

    #: Each optimizer's loss by RLlib's `_temp_losses` key, "<optimizer name>_loss" (the twin
    #: critic's None without twin_q).
    losses: dict[str, torch.Tensor | None]
    #: Per row, for the prioritized buffer.
    td_error: torch.Tensor
    #: `STAT_KEYS` (and a critic term's own statistics).
    stats: dict[str, Any]


def discounts(batch: dict[str, Any], gamma: float) -> Any:
    """gamma ** n per row: the batch's `discounts`, else RLlib's gamma ** `n_step`."""
    if DISCOUNTS in batch:
        return batch[DISCOUNTS]
    return gamma ** batch[N_STEP]


# -- Box actions ---------------------------------------------------------------------------------
def continuous_loss(
    batch: dict[str, Any],
    fwd_out: dict[str, Any],
    *,
    log_alpha: torch.Tensor,
    target_entropy: torch.Tensor,
    gamma: float,
) -> TorchSACLoss:
    """SAC's loss for Box actions (`loss.continuous_loss_terms`' terms): `log_alpha` the trained
    log-temperature (shape (1,)), `gamma` the discount (where the batch has no `discounts`)."""
    alpha = torch.exp(log_alpha)

    # q-targets y (no gradient): the target critics' soft value of s' (with a fresh draw).
    q_target_next = fwd_out[QF_TARGET_NEXT] - alpha.detach() * fwd_out[LOGP_NEXT_RESAMPLED]
    q_next_masked = (1.0 - batch[Columns.TERMINATEDS].float()) * q_target_next
    q_selected_target = (batch[Columns.REWARDS] + discounts(batch, gamma) * q_next_masked).detach()

    # qf_loss_i and td_error.
    critic_loss, critic_twin_loss, td_error = huber_critic_losses(
        batch[WEIGHTS], fwd_out[QF_PREDS], fwd_out.get(QF_TWIN_PREDS), q_selected_target
    )

    # policy_loss, through the reparameterized actions: q_curr's critics are frozen in the
    # module's pass, so none of its gradient reaches them.
    logp_resampled = fwd_out[LOGP_RESAMPLED]
    q_curr = fwd_out[Q_CURR]
    actor_loss = torch.mean(alpha.detach() * logp_resampled - q_curr)

    # alpha_loss.
    alpha_loss = -torch.mean(log_alpha * (logp_resampled.detach() + target_entropy))

    losses = {
        POLICY_LOSS_KEY: actor_loss,
        QF_LOSS_KEY: critic_loss,
        ALPHA_LOSS_KEY: alpha_loss,
        QF_TWIN_LOSS_KEY: critic_twin_loss,
    }
    stats = statistics(losses, log_alpha, target_entropy, td_error, logp_resampled, q_curr)
    return TorchSACLoss(losses, td_error, stats)


# -- Discrete actions ----------------------------------------------------------------------------
def discrete_loss(
    batch: dict[str, Any],
    fwd_out: dict[str, Any],
    *,
    log_alpha: torch.Tensor,
    target_entropy: torch.Tensor,
    gamma: float,
) -> TorchSACLoss:
    """SAC's loss for Discrete actions (`loss.discrete_loss_terms`' terms; see
    `continuous_loss`). With twin_q=False it trains (RLlib's reads the twin's Q-values
    unconditionally)."""
    alpha = torch.exp(log_alpha)

    # q-targets y (no gradient): the soft value of s', the expectation over p(.|s').
    action_probs_next = fwd_out[ACTION_PROBS_NEXT]
    next_v = (
        action_probs_next
        * (fwd_out[QF_TARGET_NEXT] - alpha.detach() * fwd_out[ACTION_LOG_PROBS_NEXT])
    ).sum(-1)
    next_v_masked = (1.0 - batch[Columns.TERMINATEDS].float()) * next_v
    q_selected_target = (batch[Columns.REWARDS] + discounts(batch, gamma) * next_v_masked).detach()

    # qf_loss_i and td_error, on Q_i(s, a) of the taken actions.
    actions = batch[Columns.ACTIONS].to(dtype=torch.int64).reshape(-1, 1)
    qf_preds = fwd_out[QF_PREDS]
    qf_twin_preds = fwd_out.get(QF_TWIN_PREDS)
    q_twin_selected = (
        qf_twin_preds.gather(dim=-1, index=actions).squeeze(-1)
        if qf_twin_preds is not None
        else None
    )
    critic_loss, critic_twin_loss, td_error = huber_critic_losses(
        batch[WEIGHTS],
        qf_preds.gather(dim=-1, index=actions).squeeze(-1),
        q_twin_selected,
        q_selected_target,
    )

    # policy_loss, against the critics' values (held; the minimum of the two with twin_q).
    action_probs = fwd_out[ACTION_PROBS]
    action_log_probs = fwd_out[ACTION_LOG_PROBS]
    qf = (qf_preds if qf_twin_preds is None else torch.min(qf_preds, qf_twin_preds)).detach()
    policy_loss = (action_probs * (alpha.detach() * action_log_probs - qf)).sum(-1).mean()

    # alpha_loss.
    entropy = (action_log_probs * action_probs).sum(-1)
    alpha_loss = -torch.mean(log_alpha * (entropy.detach() + target_entropy))

    losses = {
        POLICY_LOSS_KEY: policy_loss,
        QF_LOSS_KEY: critic_loss,
        ALPHA_LOSS_KEY: alpha_loss,
        QF_TWIN_LOSS_KEY: critic_twin_loss,
    }
    stats = statistics(losses, log_alpha, target_entropy, td_error, action_log_probs, qf_preds)
    return TorchSACLoss(losses, td_error, stats)


# -- the terms both share ------------------------------------------------------------------------
def huber_critic_losses(
    weights: torch.Tensor,
    q_selected: torch.Tensor,
    q_twin_selected: torch.Tensor | None,
    q_selected_target: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """qf_loss and qf_twin_loss (None without a twin), mean(w huber(Q_i(s, a) - y)), and the
    per-row TD errors (averaged over the two critics with twin_q)."""
    td_error = torch.abs(q_selected - q_selected_target)
    critic_loss = torch.mean(
        weights * functional.huber_loss(q_selected, q_selected_target, reduction="none", delta=1.0)
    )
    critic_twin_loss = None
    if q_twin_selected is not None:
        td_error = 0.5 * (td_error + torch.abs(q_twin_selected - q_selected_target))
        critic_twin_loss = torch.mean(
            weights
            * functional.huber_loss(q_twin_selected, q_selected_target, reduction="none", delta=1.0)
        )
    return critic_loss, critic_twin_loss, td_error


def statistics(
    losses: dict[str, torch.Tensor | None],
    log_alpha: torch.Tensor,
    target_entropy: torch.Tensor,
    td_error: torch.Tensor,
    logps: torch.Tensor,
    q: torch.Tensor,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """RLlib's statistics (`loss.statistics`'s, as tensors; `extra`, a critic term's own,
    after target_entropy): `logps` the log-likelihoods logps averages, `q` the Q-values
    qf_mean, qf_max and qf_min describe."""
    stats = {
        POLICY_LOSS_KEY: losses[POLICY_LOSS_KEY],
        QF_LOSS_KEY: losses[QF_LOSS_KEY],
        ALPHA_LOSS_KEY: losses[ALPHA_LOSS_KEY],
        ALPHA_VALUE_KEY: torch.exp(log_alpha)[0],
        # (a copy: the step changes log_alpha in place before the stats are read)
        LOG_ALPHA_VALUE_KEY: log_alpha.detach()[0].clone(),
        TARGET_ENTROPY_KEY: target_entropy,
        **(extra or {}),
        LOGPS_KEY: torch.mean(logps),
        QF_MEAN_KEY: torch.mean(q),
        QF_MAX_KEY: torch.max(q),
        QF_MIN_KEY: torch.min(q),
        TD_ERROR_MEAN_KEY: torch.mean(td_error),
    }
    if losses.get(QF_TWIN_LOSS_KEY) is not None:
        stats[QF_TWIN_LOSS_KEY] = losses[QF_TWIN_LOSS_KEY]
    return stats
