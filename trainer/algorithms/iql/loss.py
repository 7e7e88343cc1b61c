"""IQL's loss (Kostrikov et al. 2021, "Offline Reinforcement Learning with Implicit
Q-Learning"), RLlib 2.60's (`IQLTorchLearner.compute_loss_for_module`), in numpy with its
manual backward pass; `torch_loss.py` beside it has the same terms on tensors, in the same
order, with the same statistics. Per batch of B recorded transitions (s, a, r, s', terminated),
on the module's outputs (RLlib's forward-pass keys: `QF_TARGET_PREDS`, `vf_preds`,
`VF_PREDS_NEXT`, `qf_preds`, `qf_twin_preds`, `action_dist_inputs`):

    u            = min_i Q_target_i(s, a) - V(s)                       the advantage
    value_loss   = mean(L2_tau(u)),  L2_tau(u) = |tau - 1(u < 0)| u^2   expectile regression,
                   tau = `expectile` (the weight: tau where u > 0, else 1 - tau)  -> V's
    policy_loss  = -mean(min(exp(beta u), 100) log pi(a|s))             advantage-weighted
                   regression (AWR), the weights held                  -> the policy's
    y            = r + gamma (1 - terminated) V(s')                     (no gradient)
    qf_loss_i    = mean((y - Q_i(s, a))^2), halved for each of the two with twin_q  -> Q_i's

Each loss steps its own optimizer ("value", "policy", "qf", "qf_twin") over its own network's
parameters. td_error = |y - Q_1(s, a)| per row, averaged over the two critics with twin_q.

The statistics, RLlib's keys (`STAT_KEYS`): policy_loss, qf_loss and, with twin_q,
qf_twin_loss (RLlib logs no value_loss).

`numpy_loss` returns the losses, the statistics, the TD errors and, from its backward pass,
each loss's gradient with respect to the outputs its network gave: value_loss's to V(s),
qf_loss_i's to Q_i(s, a), policy_loss's to the action distribution inputs (the squashed
Gaussian's mean and log-std; none through the clamp of the log-std outside [-5, 2]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from trainer.algorithms.sac.loss import (
    POLICY,
    QF,
    QF_LOSS_KEY,
    QF_PREDS,
    QF_TWIN,
    QF_TWIN_LOSS_KEY,
    QF_TWIN_PREDS,
)
from trainer.algorithms.sac.sac_module import LOG_STD_MAX, LOG_STD_MIN, SquashedGaussian
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import POLICY_LOSS_KEY

if TYPE_CHECKING:
    from trainer.algorithms.iql.config import IQLConfig

#: RLlib's IQL forward-pass keys (`ray.rllib.algorithms.iql.iql_learner`): the target critics'
#: min_i Q_target_i(s, a) of the recorded actions, and V(s').
QF_TARGET_PREDS = "qf_target_preds"
VF_PREDS_NEXT = "vf_preds_next"
#: RLlib's name of the value network's optimizer, and of its loss.
VALUE = "value"
VF_LOSS = "value_loss"
#: RLlib's cap on the exponentiated advantages.
MAX_EXP_ADVANTAGE = 100.0
#: RLlib's statistics, in the order both frameworks report them; the last with twin_q only.
STAT_KEYS = (POLICY_LOSS_KEY, QF_LOSS_KEY, QF_TWIN_LOSS_KEY)
#: Each critic's optimizer name and forward-pass key.
CRITICS = ((QF, QF_PREDS), (QF_TWIN, QF_TWIN_PREDS))


class NumpyIQLLoss(NamedTuple):
    """`numpy_loss`'s result."""

    #: Each optimizer's loss, by optimizer name ("value", "qf", "qf_twin", "policy").
    losses: dict[str, float]
    #: RLlib's statistics (`STAT_KEYS`).
    stats: dict[str, float]
    #: Per row, |y - Q_i(s, a)| averaged over the critics.
    td_error: np.ndarray
    #: The backward pass: d value_loss / d V(s) under `Columns.VF_PREDS`, d qf_loss_i /
    #: d Q_i(s, a) under critic i's key, d policy_loss / d action distribution inputs under
    #: `Columns.ACTION_DIST_INPUTS`.
    gradients: dict[str, np.ndarray]


def numpy_loss(
    batch: dict[str, np.ndarray], fwd_out: dict[str, np.ndarray], config: IQLConfig
) -> NumpyIQLLoss:
    """IQL's loss on the module's outputs (`fwd_out`, the module docstring's keys; the twin
    critic's with twin_q only) for a batch of recorded `actions` (in [-1, 1], shaped as the
    distribution's mean), `rewards` and `terminateds`, and its backward pass."""
    values = fwd_out[Columns.VF_PREDS]
    size = len(values)

    # u, and value_loss: the expectile regression of V(s) on min_i Q_target_i(s, a).
    advantages = fwd_out[QF_TARGET_PREDS] - values
    weights = np.where(advantages > 0, config.expectile, 1.0 - config.expectile)
    value_loss = float(np.mean(weights * advantages * advantages))
    # backward: d value_loss / d V(s) = -2 w u / B (the weights are constant where u != 0).
    d_values = (-2.0 / size) * weights * advantages

    # policy_loss: AWR, log pi(a|s) of the recorded actions weighted by min(exp(beta u), 100).
    dist_inputs = fwd_out[Columns.ACTION_DIST_INPUTS]
    n = dist_inputs.shape[1] // 2
    mean, raw_log_std = dist_inputs[:, :n], dist_inputs[:, n:]
    log_std = np.minimum(np.maximum(raw_log_std, LOG_STD_MIN), LOG_STD_MAX)
    logp, d_mean, d_log_std = SquashedGaussian.logp_and_grads(mean, log_std, batch[Columns.ACTIONS])
    exp_advantages = np.minimum(np.exp(config.beta * advantages), MAX_EXP_ADVANTAGE)
    policy_loss = -float(np.mean(exp_advantages * logp))
    # backward: d policy_loss / d (mean, log_std) = -exp_advantages / B d log pi / d (mean,
    # log_std), none through the log-std's clamp outside its range.
    scale = (-exp_advantages / size)[:, None]
    d_log_std = scale * d_log_std * ((raw_log_std > LOG_STD_MIN) & (raw_log_std < LOG_STD_MAX))
    d_dist_inputs = np.concatenate([scale * d_mean, d_log_std], axis=1)

    # y, and qf_loss_i (halved with twin_q); td_error.
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].astype(values.dtype)
    targets = batch[Columns.REWARDS] + config.gamma * not_terminated * fwd_out[VF_PREDS_NEXT]
    critics = [(name, key) for name, key in CRITICS if key in fwd_out]
    half = 0.5 if len(critics) == 2 else 1.0
    critic_losses: dict[str, float] = {}
    gradients = {Columns.VF_PREDS: d_values, Columns.ACTION_DIST_INPUTS: d_dist_inputs}
    td_error = np.zeros(size, dtype=values.dtype)
    for name, key in critics:
        td = fwd_out[key] - targets
        critic_losses[name] = half * float(np.mean(td * td))
        # backward: d qf_loss_i / d Q_i(s, a) = 2 half (Q_i(s, a) - y) / B.
        gradients[key] = (2.0 * half / size) * td
        td_error += np.abs(td) / len(critics)

    losses = {VALUE: value_loss, **critic_losses, POLICY: policy_loss}
    stats = {POLICY_LOSS_KEY: policy_loss, QF_LOSS_KEY: critic_losses[QF]}
    if QF_TWIN in critic_losses:
        stats[QF_TWIN_LOSS_KEY] = critic_losses[QF_TWIN]
    return NumpyIQLLoss(losses, stats, td_error, gradients)


__all__ = [
    "MAX_EXP_ADVANTAGE",
    "QF_TARGET_PREDS",
    "STAT_KEYS",
    "VALUE",
    "VF_LOSS",
    "VF_PREDS_NEXT",
    "NumpyIQLLoss",
    "numpy_loss",
]
