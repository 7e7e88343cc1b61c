"""TQC's loss (Kuznetsov et al. 2020), RLlib 2.60's (`TQCTorchLearner.compute_loss_for_module`),
in numpy: the terms on the module's outputs with their gradients with respect to those outputs,
and the passes through the numpy module around them. `torch_loss.py` beside it has the same
terms on tensors, in the same order and with the same statistics.

Per replayed row (s, a, r, s', terminated), w its importance weight and gamma^n its discount;
C critics of N quantiles each, Z_i(s, a) in R^N; a~ = tanh(u) reparameterized at s, a' the same
at s'; alpha = exp(log_alpha) held (no gradient) in every loss but its own:

    Z'      = sort(concat_i Z_target_i(s', a'))[:k],  k = (N - top_quantiles_to_drop_per_net) C
              (the truncated mixture: the k smallest of the target critics' C N quantiles)
    y_m     = r + gamma^n (1 - terminated) (Z'_m - alpha log pi(a'|s')),   m < k
              (the target quantiles; no gradient)
    tau_j   = (j + 1/2) / N,  j < N  (each quantile's fraction)
    qf_loss = sum_i mean(w sum_{j, m} |tau_j - 1(y_m < Z_ij)| huber(Z_ij - y_m))
              (the quantile Huber loss, summed over both quantile axes, as RLlib's)
    policy_loss = mean(alpha log pi(a~|s) - mean_{i, j} Z_ij(s, a~)),  the critics held
    alpha_loss  = -mean(log_alpha (log pi(a~|s) + target_entropy))

td_error = |mean_{i, j} Z_ij(s, a) - mean_m y_m| per row, for the prioritized replay buffer.

The statistics are SAC's keys (`trainer.algorithms.sac.loss.statistics`): qf_mean, qf_max and
qf_min describe every Z_ij(s, a); logps is the mean log pi(a~|s). One optimizer, "qf", steps
all the critics (RLlib's).

- The terms, a pure function of the batch and the module's outputs (RLlib's forward-pass keys,
  `DefaultTQCTorchRLModule`'s): `loss_terms`, built from `target_quantiles` and
  `quantile_huber_losses`, with SAC's `policy_loss` and `alpha_loss`.
- The pass through the numpy module: `continuous_loss` runs the module's forward passes into
  those outputs, the terms, then the backward passes: the critics' gradient of qf_loss into the
  critics' slice, the policy's of policy_loss through a~ (the critics' parameters take none of
  it) and log pi(a~|s) into the policy's.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from trainer.algorithms.sac.loss import (
    ALPHA,
    DISCOUNTS,
    POLICY,
    QF,
    QF_PREDS,
    QF_TARGET_NEXT,
    WEIGHTS,
    SACLoss,
    alpha_loss,
    draw_actions,
    policy_gradient,
    policy_loss,
    statistics,
)
from trainer.algorithms.tqc.tqc_module import TQCModule
from trainer.compat.rllib_utils import Columns

#: RLlib's TQC forward-pass keys beyond SAC's (`DefaultTQCTorchRLModule._forward_train`):
#: Z_i(s, a~) of every critic (their parameters held), log pi(a~|s), log pi(a'|s').
QF_CURR = "qf_curr"
LOGP_CURR = "logp_curr"
LOGP_NEXT = "logp_next"

#: Sums through the ufunc itself (no Python wrapper call).
_sum = np.add.reduce


# -- the terms, on the module's outputs ----------------------------------------------------------
def target_quantiles(
    batch: dict[str, np.ndarray],
    quantiles_target_next: np.ndarray,
    logp_next: np.ndarray,
    alpha: float,
    kept: int,
) -> np.ndarray:
    """y (B, kept): the `kept` smallest of the target critics' quantiles at (s', a')
    (`quantiles_target_next`, (B, C, N)), less alpha log pi(a'|s'), discounted onto r."""
    size = len(quantiles_target_next)
    truncated = np.sort(quantiles_target_next.reshape(size, -1), axis=1)[:, :kept]
    soft = truncated - alpha * logp_next[:, None]
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].astype(np.float32)
    return batch[Columns.REWARDS][:, None] + (batch[DISCOUNTS] * not_terminated)[:, None] * soft


class QuantileLosses(NamedTuple):
    """`quantile_huber_losses`' result."""

    #: qf_loss, summed over the critics.
    loss: float
    #: d qf_loss / d Z(s, a), shape (B, C, N).
    gradient: np.ndarray
    #: Per row, |mean_{i, j} Z_ij(s, a) - mean_m y_m|.
    td_error: np.ndarray


def quantile_huber_losses(
    weights: np.ndarray, quantiles: np.ndarray, y: np.ndarray
) -> QuantileLosses:
    """qf_loss = sum_i mean(w sum_{j, m} |tau_j - 1(y_m < Z_ij)| huber(Z_ij - y_m)) for the
    critics' quantiles Z (`quantiles`, (B, C, N)) and the target quantiles y (B, M), with its
    gradient w sum_m |tau_j - 1(y_m < Z_ij)| huber'(Z_ij - y_m) / B.

    Not pair by pair (B C N M terms, as the torch loss): for each Z_ij = z, the differences
    x_m = z - y_m fall in four runs of the sorted y, where the terms are linear or quadratic
    in x: y_m < z - 1 (x > 1: weight 1 - tau, huber x - 1/2, slope 1), z - 1 <= y_m < z
    (weight 1 - tau, x^2 / 2, slope x), z <= y_m <= z + 1 (weight tau, x^2 / 2, slope x) and
    y_m > z + 1 (weight tau, -x - 1/2, slope -1). A run's sums of x and x^2 come from the
    prefix sums of y and y^2 at its ends (found by binary search), so a row costs
    O(C N log M); in float64 (x^2's sums are differences of sums of y^2)."""
    size, _, n_quantiles = quantiles.shape
    n_targets = y.shape[1]
    y64 = np.sort(y.astype(np.float64), axis=1)
    z = quantiles.astype(np.float64)
    prefix = np.zeros((2, size, n_targets + 1))
    np.cumsum(y64, axis=1, out=prefix[0, :, 1:])
    np.cumsum(y64 * y64, axis=1, out=prefix[1, :, 1:])

    # The runs' ends, by binary search over all rows at once: each row's values shifted into
    # a band of its own (the terms are continuous at the runs' ends, so a comparison that the
    # shift's rounding flips there changes nothing).
    low, high = min(y64.min(), z.min()), max(y64.max(), z.max())
    band = (high - low) + 4.0
    shift = np.arange(size, dtype=np.float64) * band
    flat = (y64 + shift[:, None]).reshape(-1)
    shifted = z + shift[:, None, None]
    # (Sorted keys: numpy's search then starts each from the last one's place.)
    keys = shifted.reshape(-1)
    order = np.argsort(keys)
    sorted_keys = keys[order]
    first = (np.arange(size) * n_targets)[:, None, None]

    def number_below(offset: float, side: Any) -> np.ndarray:
        """Per Z_ij, the number of its row's y below z + offset (`side` "right": at most)."""
        found = np.empty(keys.shape, dtype=np.int64)
        found[order] = np.searchsorted(flat, sorted_keys + offset, side=side)
        return found.reshape(shifted.shape) - first

    below = number_below(-1.0, "left")  # y < z - 1
    under = number_below(0.0, "left")  # y < z
    within = number_below(1.0, "right")  # y <= z + 1
    # The prefix sums at the runs' ends: S(k) = sum_{m < k} y_m, S2(k) the same of y^2.
    row_start = (np.arange(size) * (n_targets + 1))[:, None, None]
    sums = prefix[0].reshape(-1)
    sums_sq = prefix[1].reshape(-1)
    s_below, s_under, s_within = (sums.take(row_start + k) for k in (below, under, within))
    s2_below, s2_under, s2_within = (sums_sq.take(row_start + k) for k in (below, under, within))
    s_total = prefix[0, :, -1][:, None, None]
    z2 = z * z

    # Each run's sums of x = z - y_m (and of x^2 in the two quadratic runs).
    above_x = below * z - s_below  # x > 1
    near_above = under - below  # 0 < x <= 1
    near_above_x = near_above * z - (s_under - s_below)
    near_above_x2 = near_above * z2 - 2.0 * z * (s_under - s_below) + (s2_under - s2_below)
    near_below = within - under  # -1 <= x <= 0
    near_below_x = near_below * z - (s_within - s_under)
    near_below_x2 = near_below * z2 - 2.0 * z * (s_within - s_under) + (s2_within - s2_under)
    far_below = n_targets - within  # x < -1
    far_below_x = far_below * z - (s_total - s_within)

    tau = (np.arange(n_quantiles) + 0.5) / n_quantiles
    gradient_sum = (1.0 - tau) * (below + near_above_x) + tau * (near_below_x - far_below)
    terms = (1.0 - tau) * (above_x - 0.5 * below + 0.5 * near_above_x2) + tau * (
        0.5 * near_below_x2 - far_below_x - 0.5 * far_below
    )
    row_weights = weights.astype(np.float64) / size
    loss = float(_sum(_sum(_sum(terms, axis=2), axis=1) * row_weights))
    gradient = (gradient_sum * row_weights[:, None, None]).astype(quantiles.dtype)
    td_error = np.abs(quantiles.reshape(size, -1).mean(axis=1) - y.mean(axis=1))
    return QuantileLosses(loss, gradient, td_error)


def loss_terms(
    batch: dict[str, np.ndarray],
    fwd_out: dict[str, np.ndarray],
    log_alpha: np.ndarray,
    target_entropy: float,
    kept: int,
) -> SACLoss:
    """TQC's loss on the module's outputs (`fwd_out`: `QF_PREDS` Z(s, a) (B, C, N),
    `QF_CURR` Z(s, a~), `LOGP_CURR`, `QF_TARGET_NEXT` the target critics' Z(s', a'),
    `LOGP_NEXT`) and the batch's `rewards`, `terminateds`, `discounts` and `weights`; `kept`:
    the target quantiles kept. Its gradients: to `QF_PREDS`, `QF_CURR` and `LOGP_CURR`."""
    alpha = math.exp(float(log_alpha[0]))
    quantiles, logp = fwd_out[QF_PREDS], fwd_out[LOGP_CURR]
    size = len(quantiles)

    # The target quantiles y (no gradient): the truncated mixture's soft values at s'.
    y = target_quantiles(batch, fwd_out[QF_TARGET_NEXT], fwd_out[LOGP_NEXT], alpha, kept)

    # qf_loss and td_error.
    critic = quantile_huber_losses(batch[WEIGHTS], quantiles, y)

    # policy_loss, against the mean of every critic's quantiles at (s, a~) (critics held).
    quantiles_curr = fwd_out[QF_CURR]
    q_curr = quantiles_curr.reshape(size, -1).mean(axis=1)
    policy = policy_loss(alpha, logp, q_curr)

    # alpha_loss.
    alpha_loss_value, d_log_alpha = alpha_loss(log_alpha, target_entropy, logp)

    losses = {QF: critic.loss, POLICY: policy.loss, ALPHA: alpha_loss_value}
    stats = statistics(
        losses, alpha, log_alpha, target_entropy, logp, quantiles, critic.td_error, {}
    )
    per_quantile = quantiles_curr[0].size
    gradients = {
        QF_PREDS: critic.gradient,
        QF_CURR: np.broadcast_to(
            (policy.d_objective / per_quantile)[:, None, None], quantiles_curr.shape
        ),
        LOGP_CURR: policy.d_logp,
    }
    return SACLoss(losses, critic.td_error, stats, d_log_alpha, gradients)


# -- the pass through the numpy module -----------------------------------------------------------
def continuous_loss(
    batch: dict[str, np.ndarray],
    module: TQCModule,
    target: TQCModule,
    log_alpha: np.ndarray,
    target_entropy: float,
    rng: np.random.Generator,
    kept: int,
) -> SACLoss:
    """TQC's loss on the replay buffer's train batch: the module's forward passes,
    `loss_terms`, the backward passes (see the module docstring). `target`: the target critics
    (a copy of the module); `rng`: the reparameterized draws'; `kept`: the target quantiles
    kept."""
    preprocess = module.spaces.preprocess
    obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
    size = len(obs)
    actions = np.asarray(batch["actions"], dtype=np.float32).reshape(size, -1)

    # The forward passes: a~ ~ pi(.|s) and a' ~ pi(.|s') from one pass of the policy over s
    # then s'; the critics at (s, a) and at (s, a~); the target critics at (s', a').
    pi = draw_actions(module, rng, obs, next_obs)
    resampled = pi.actions[:size]
    critic_passes = [critic.forward_train(obs, actions) for critic in module.critics]
    curr_passes = [critic.forward_train(obs, resampled) for critic in module.critics]
    fwd_out: dict[str, Any] = {
        QF_PREDS: np.stack([z for z, _ in critic_passes], axis=1),
        QF_CURR: np.stack([z for z, _ in curr_passes], axis=1),
        LOGP_CURR: pi.logp[:size],
        QF_TARGET_NEXT: target.quantiles(next_obs, pi.actions[size:]),
        LOGP_NEXT: pi.logp[size:],
    }

    loss = loss_terms(batch, fwd_out, log_alpha, target_entropy, kept)

    # The backward passes: qf_loss into the critics' parameters; policy_loss into the
    # policy's, through a~ (the critics' parameters take none of it) and log pi(a~|s).
    gradients = loss.gradients
    d_actions = np.zeros_like(resampled)
    for index, critic in enumerate(module.critics):
        d_z = np.ascontiguousarray(gradients[QF_PREDS][:, index, :])
        critic.backward(critic_passes[index][1], d_z, module.critic_grads(index), False)
        d_z_curr = np.ascontiguousarray(gradients[QF_CURR][:, index, :])
        d_action = critic.backward(curr_passes[index][1], d_z_curr, None, True)
        assert d_action is not None
        d_actions += d_action
    module.policy_backward(pi.cache, policy_gradient(pi, gradients[LOGP_CURR], d_actions))
    return loss


__all__ = [
    "LOGP_CURR",
    "LOGP_NEXT",
    "QF_CURR",
    "continuous_loss",
    "loss_terms",
    "quantile_huber_losses",
    "target_quantiles",
]
