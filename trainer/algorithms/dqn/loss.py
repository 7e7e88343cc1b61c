"""DQN's loss, RLlib 2.60's (`DQNTorchLearner.compute_loss_for_module`), written once for numpy
and once for torch, side by side, with the same terms, statistics and keys.

Per replayed n-step transition (s, a, R, s', terminated), with R its discounted n-step return
(`rewards`), gamma^n its discount (`discounts`, gamma ** the steps it spans) and w its importance
weight (`weights`; 1 without prioritized replay). The bootstrap action a* is the online
network's greedy action at s' with `double_q` (van Hasselt et al. 2016, "Deep Reinforcement
Learning with Double Q-learning"), else the target network's (Mnih et al. 2015, "Human-level
control through deep reinforcement learning").

Expected values (`num_atoms` = 1; `numpy_loss`, `torch_loss`):

    a*     = argmax_a' Q(s', a')  (double_q),  else argmax_a' Q_target(s', a')
    y      = R + gamma^n (1 - terminated) Q_target(s', a*)       the TD target (no gradient)
    delta  = Q(s, a) - y                                          the TD error
    loss   = mean(w L(delta)),  L = huber (delta 1) or the square (`td_error_loss_fn`)

Distributional (`num_atoms` > 1, C51: Bellemare et al. 2017, "A Distributional Perspective on
Reinforcement Learning"; `numpy_distributional_loss`, `torch_distributional_loss`): the network
gives logits over the support z = linspace(v_min, v_max, num_atoms), p(s, a) = softmax over the
atoms, Q(s, a) = sum_j z_j p_j(s, a); a* as above on these Q-values.

    Tz_j   = clip(R + gamma^n (1 - terminated) z_j, v_min, v_max)    the shifted support
    b_j    = (Tz_j - v_min) / delta_z,  delta_z = (v_max - v_min) / (num_atoms - 1)
    m      = the projection of p_target(s', a*) onto z: p_j to atom floor(b_j) in proportion
             ceil(b_j) - b_j, to atom ceil(b_j) in proportion b_j - floor(b_j), all of it to
             b_j where b_j is an atom (`project_distribution`; no gradient)
    CE     = -sum_i m_i log p_i(s, a)             the cross-entropy, the TD error of the row
    loss   = mean(w CE)

(RLlib's cross-entropy: the KL divergence of the paper up to the entropy of m, which has no
gradient.)

The numpy losses also run the backward pass by hand: the loss's gradient with respect to the
module's outputs of the rows of s, Q(s, .) (B, num_actions), or the logits (B, num_actions,
num_atoms), which the module backpropagates into its parameters. Torch's autograd
differentiates the torch losses.

The statistics, RLlib's keys (`LOSS_STAT_KEYS`): qf_loss (the loss); qf_mean, qf_min, qf_max of
Q(s, a); td_error_mean, the mean |delta| (or the mean CE). The distributional losses add RLlib's
statistics of the online pass's distributions (`DISTRIBUTION_STAT_KEYS`, `distribution_stats`).
The per-row TD errors go to the prioritized replay buffer.

The module outputs (`fwd_out`) carry RLlib's keys: QF_PREDS Q(s, .), QF_NEXT_PREDS Q(s', .)
(double_q), QF_TARGET_NEXT_PREDS Q_target(s', .); distributional also ATOMS z, QF_LOGITS and
QF_PROBS of the whole online pass (with double_q its rows are s's, then s''s) and
QF_TARGET_NEXT_PROBS p_target(s', .).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from trainer.algorithms.dqn.q_module import log_softmax
from trainer.compat.rllib_utils import Columns

if TYPE_CHECKING:
    import torch

    from trainer.algorithms.dqn.config import DQNConfig

#: RLlib's keys of the module's outputs (`ray.rllib.algorithms.dqn.dqn_learner`).
QF_PREDS = "qf_preds"
QF_NEXT_PREDS = "qf_next_preds"
QF_TARGET_NEXT_PREDS = "qf_target_next_preds"
ATOMS = "atoms"
QF_LOGITS = "qf_logits"
QF_PROBS = "qf_probs"
QF_TARGET_NEXT_PROBS = "qf_target_next_probs"

#: RLlib's keys of the loss statistics (`ray.rllib.algorithms.dqn.dqn_learner`).
QF_LOSS_KEY = "qf_loss"
QF_MEAN_KEY = "qf_mean"
QF_MAX_KEY = "qf_max"
QF_MIN_KEY = "qf_min"
TD_ERROR_MEAN_KEY = "td_error_mean"
#: What every loss reports, in this order.
LOSS_STAT_KEYS = (QF_LOSS_KEY, QF_MEAN_KEY, QF_MIN_KEY, QF_MAX_KEY, TD_ERROR_MEAN_KEY)
#: What the distributional losses report besides (RLlib's keys), in this order.
DISTRIBUTION_STAT_KEYS = (
    ATOMS,
    "expectations_abs_diff",
    "dist_total_variation_dist",
    "dist_max_abs_distance",
    "action_dist_mean_entropy",
)

#: The replay buffer's train batch columns of the importance weights and the n-step discounts.
WEIGHTS = "weights"
DISCOUNTS = "discounts"

#: Sums through the ufunc itself: `array.sum()` and `np.mean` add Python wrapper calls (a
#: 32-row update is a dozen small reductions).
_sum = np.add.reduce


# ---------------------------------------------------------------------------------------------
# numpy
# ---------------------------------------------------------------------------------------------
class DQNNumpyLoss(NamedTuple):
    """A numpy loss's result: the loss, its statistics, the TD errors and the loss's gradient
    with respect to the module's outputs."""

    qf_loss: float
    #: RLlib's statistics (`LOSS_STAT_KEYS`, then `DISTRIBUTION_STAT_KEYS`), as floats.
    stats: dict[str, float]
    #: Per row: delta = Q(s, a) - y, signed; distributional: the cross-entropy CE.
    td_error: np.ndarray
    #: d loss / d Q(s, .) (B, num_actions); distributional: d loss / d logits of the rows of s
    #: (B, num_actions, num_atoms).
    d_outputs: np.ndarray


def numpy_loss(
    batch: dict[str, np.ndarray], fwd_out: dict[str, np.ndarray], config: DQNConfig
) -> DQNNumpyLoss:
    """The expected-value loss (`num_atoms` = 1) on a replay batch of arrays, and its backward
    pass. `fwd_out`: QF_PREDS, QF_TARGET_NEXT_PREDS and with `double_q` QF_NEXT_PREDS."""
    q_values = fwd_out[QF_PREDS]
    q_target_next = fwd_out[QF_TARGET_NEXT_PREDS]
    actions = batch[Columns.ACTIONS].astype(np.int64)
    batch_size = len(actions)
    rows = np.arange(batch_size)

    # a*, and the TD target y (no gradient flows through the target network).
    next_actions = (fwd_out[QF_NEXT_PREDS] if config.double_q else q_target_next).argmax(axis=1)
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].astype(np.float32)
    y = (
        batch[Columns.REWARDS]
        + batch[DISCOUNTS] * not_terminated * q_target_next[rows, next_actions]
    )

    # Q(s, a) and the TD error delta.
    q_selected = q_values[rows, actions]
    delta = q_selected - y

    # L(delta) and its derivative dL/d delta, weighted, averaged. (ufuncs and their reductions
    # directly: np.mean, np.clip and the array methods add a Python wrapper call each.)
    w = batch[WEIGHTS]
    abs_delta = np.abs(delta)
    if config.td_error_loss_fn == "huber":
        losses = np.where(abs_delta <= 1.0, 0.5 * (delta * delta), abs_delta - 0.5)
        d_losses = np.minimum(np.maximum(delta, -1.0), 1.0)
    else:  # "mse"
        losses = delta * delta
        d_losses = 2.0 * delta
    qf_loss = float(_sum(w * losses) / batch_size)

    # Backward: d loss / d Q(s, .) is w dL/d delta / B at the action taken, 0 elsewhere.
    d_q_values = np.zeros_like(q_values)
    d_q_values[rows, actions] = w * d_losses / batch_size

    stats = _loss_stats(qf_loss, q_selected, abs_delta)
    return DQNNumpyLoss(qf_loss, stats, delta, d_q_values)


def _loss_stats(qf_loss: float, q_selected: np.ndarray, td_error: np.ndarray) -> dict:
    """RLlib's `LOSS_STAT_KEYS` of a batch: the loss, Q(s, a)'s mean, min and max over the
    rows, and the mean TD error (each row's |delta|, or its cross-entropy)."""
    batch_size = len(q_selected)
    return {
        QF_LOSS_KEY: qf_loss,
        QF_MEAN_KEY: float(_sum(q_selected) / batch_size),
        QF_MIN_KEY: float(np.minimum.reduce(q_selected)),
        QF_MAX_KEY: float(np.maximum.reduce(q_selected)),
        TD_ERROR_MEAN_KEY: float(_sum(td_error) / batch_size),
    }


def numpy_distributional_loss(
    batch: dict[str, np.ndarray], fwd_out: dict[str, np.ndarray], config: DQNConfig
) -> DQNNumpyLoss:
    """The distributional loss (`num_atoms` > 1) on a replay batch of arrays, and its backward
    pass. `fwd_out`: as `numpy_loss`'s, and ATOMS, QF_LOGITS, QF_PROBS and
    QF_TARGET_NEXT_PROBS."""
    logits = fwd_out[QF_LOGITS]
    z = fwd_out[ATOMS]
    actions = batch[Columns.ACTIONS].astype(np.int64)
    batch_size = len(actions)
    rows = np.arange(batch_size)

    # a* on the expected values, and the projected target distribution m (no gradient).
    next_q_values = fwd_out[QF_NEXT_PREDS] if config.double_q else fwd_out[QF_TARGET_NEXT_PREDS]
    next_actions = next_q_values.argmax(axis=1)
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].astype(np.float32)
    m = project_distribution(
        fwd_out[QF_TARGET_NEXT_PROBS][rows, next_actions],
        batch[Columns.REWARDS],
        batch[DISCOUNTS] * not_terminated,
        z,
        float(config.v_min),
        float(config.v_max),
    )

    # The cross-entropy CE of p(s, a) against m, weighted, averaged.
    log_p = log_softmax(logits[rows, actions])
    cross_entropy = -_sum(m * log_p, axis=1)
    w = batch[WEIGHTS]
    qf_loss = float(_sum(w * cross_entropy) / batch_size)

    # Backward: d CE / d logits of the action taken is p(s, a) sum(m) - m; 0 elsewhere.
    d_logits = np.zeros((batch_size, *logits.shape[1:]), dtype=logits.dtype)
    d_logits[rows, actions] = (np.exp(log_p) * _sum(m, axis=1, keepdims=True) - m) * (
        w / batch_size
    )[:, None]

    q_selected = fwd_out[QF_PREDS][rows, actions]
    stats = {
        **_loss_stats(qf_loss, q_selected, cross_entropy),
        **distribution_stats(fwd_out[QF_PROBS], z),
    }
    return DQNNumpyLoss(qf_loss, stats, cross_entropy, d_logits)


def project_distribution(
    next_probs: np.ndarray,
    rewards: np.ndarray,
    discounts: np.ndarray,
    atoms: np.ndarray,
    v_min: float,
    v_max: float,
) -> np.ndarray:
    """RLlib's categorical projection: the distribution `next_probs` (B, num_atoms) over the
    support `atoms`, moved to `rewards + discounts * atoms` (clipped to [v_min, v_max]; the
    discounts are zero past a terminal step), split onto the two nearest atoms in
    proportion to the distance (all of it onto one where it lands on an atom). Returns the
    projected distribution (B, num_atoms)."""
    batch_size, num_atoms = next_probs.shape
    shifted = np.clip(rewards[:, None] + discounts[:, None] * atoms[None, :], v_min, v_max)
    # The atom index each shifted atom lands on (clipped against rounding at v_max).
    b = np.clip((shifted - v_min) / ((v_max - v_min) / float(num_atoms - 1)), 0, num_atoms - 1)
    lower, upper = np.floor(b), np.ceil(b)
    floor_equal_ceil = (upper - lower < 0.5).astype(b.dtype)
    to_lower = next_probs * (upper - b + floor_equal_ceil)
    to_upper = next_probs * (b - lower)
    offsets = (np.arange(batch_size) * num_atoms)[:, None]
    size = batch_size * num_atoms
    projected = np.bincount(
        (offsets + lower.astype(np.int64)).ravel(), weights=to_lower.ravel(), minlength=size
    ) + np.bincount(
        (offsets + upper.astype(np.int64)).ravel(), weights=to_upper.ravel(), minlength=size
    )
    return projected.reshape(batch_size, num_atoms).astype(next_probs.dtype, copy=False)


def distribution_stats(probs: np.ndarray, atoms: np.ndarray) -> dict[str, float]:
    """RLlib's statistics of distributional DQN (`DISTRIBUTION_STAT_KEYS`) from the
    probabilities `probs` (B, num_actions, num_atoms) of the loss's forward pass: the support's
    mean (`atoms`), and of the batch-mean distribution of each action the mean difference of
    consecutive actions' expectations (`expectations_abs_diff`), the total variation
    distance and the largest absolute difference of consecutive actions' distributions,
    and the mean over actions of sum p log p (`action_dist_mean_entropy`, RLlib's sign). The
    action comparisons are NaN for one action."""
    mean_probs = _sum(probs, axis=0) / len(probs)  # (num_actions, num_atoms)
    nan = float("nan")
    stats = {ATOMS: float(np.mean(atoms))}
    if len(mean_probs) > 1:
        differences = np.abs(np.diff(mean_probs, axis=0))
        stats.update(
            expectations_abs_diff=float(abs(np.mean(np.diff(mean_probs @ atoms)))),
            dist_total_variation_dist=float(_sum(differences, axis=None) * 0.5),
            dist_max_abs_distance=float(np.max(differences)),
        )
    else:
        stats.update(
            expectations_abs_diff=nan, dist_total_variation_dist=nan, dist_max_abs_distance=nan
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        stats["action_dist_mean_entropy"] = float(
            np.mean(_sum(mean_probs * np.log(mean_probs), axis=1))
        )
    return stats


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------
class DQNTorchLoss(NamedTuple):
    """A torch loss's result: the loss (autograd differentiates it), its statistics and the
    TD errors."""

    qf_loss: torch.Tensor
    #: RLlib's statistics (`LOSS_STAT_KEYS`, then `DISTRIBUTION_STAT_KEYS`), tensors.
    stats: dict[str, torch.Tensor]
    #: Per row, outside the graph: |delta|; distributional: the cross-entropy CE.
    td_error: torch.Tensor


def torch_loss(batch: dict[str, Any], fwd_out: dict[str, Any], config: DQNConfig) -> DQNTorchLoss:
    """The expected-value loss (`num_atoms` = 1) on a replay batch of tensors. `fwd_out`:
    QF_PREDS, QF_TARGET_NEXT_PREDS and with `double_q` QF_NEXT_PREDS."""
    import torch
    from torch.nn import functional

    q_values = fwd_out[QF_PREDS]
    q_target_next = fwd_out[QF_TARGET_NEXT_PREDS]

    # Q(s, a) (RLlib's: -inf, a masked action's value, counts as 0).
    actions = batch[Columns.ACTIONS].long().unsqueeze(-1)
    q_selected = torch.nan_to_num(q_values.gather(-1, actions), neginf=0.0).squeeze(-1)

    # a*, and the TD target y (no gradient flows through the target network).
    next_q_values = fwd_out[QF_NEXT_PREDS] if config.double_q else q_target_next
    next_actions = next_q_values.argmax(dim=-1, keepdim=True)
    q_target_next_best = torch.nan_to_num(
        q_target_next.gather(-1, next_actions), neginf=0.0
    ).squeeze(-1)
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].float()
    y = (batch[Columns.REWARDS] + batch[DISCOUNTS] * not_terminated * q_target_next_best).detach()

    # |delta| and the weighted mean of L(delta). (nn.HuberLoss / nn.MSELoss's functions:
    # building the module at every update took longer than its loss on a replay batch.)
    loss_fn = functional.huber_loss if config.td_error_loss_fn == "huber" else functional.mse_loss
    td_error = torch.abs(q_selected - y)
    qf_loss = torch.mean(batch[WEIGHTS] * loss_fn(q_selected, y, reduction="none"))

    with torch.no_grad():
        stats = {
            QF_LOSS_KEY: qf_loss,
            QF_MEAN_KEY: q_selected.mean(),
            QF_MIN_KEY: q_selected.min(),
            QF_MAX_KEY: q_selected.max(),
            TD_ERROR_MEAN_KEY: td_error.mean(),
        }
    return DQNTorchLoss(qf_loss, stats, td_error.detach())


def torch_distributional_loss(
    batch: dict[str, Any], fwd_out: dict[str, Any], config: DQNConfig
) -> DQNTorchLoss:
    """The distributional loss (`num_atoms` > 1) on a replay batch of tensors. `fwd_out`: as
    `torch_loss`'s, and ATOMS, QF_LOGITS, QF_PROBS and QF_TARGET_NEXT_PROBS."""
    import torch
    from torch.nn import functional

    num_atoms = int(config.num_atoms)
    z = fwd_out[ATOMS]
    actions = batch[Columns.ACTIONS].long()
    batch_size = len(actions)

    # Q(s, a), for the statistics.
    q_selected = torch.nan_to_num(
        fwd_out[QF_PREDS].gather(-1, actions.unsqueeze(-1)), neginf=0.0
    ).squeeze(-1)

    # a* on the expected values.
    next_q_values = fwd_out[QF_NEXT_PREDS] if config.double_q else fwd_out[QF_TARGET_NEXT_PREDS]
    next_actions = next_q_values.argmax(dim=-1, keepdim=True)

    # The logits of the action taken (the first rows: with double_q the pass also holds the
    # next observations'), (B, num_atoms), and p_target(s', a*).
    logits_selected = (
        fwd_out[QF_LOGITS][:batch_size]
        .gather(1, actions.view(-1, 1, 1).expand(-1, 1, num_atoms))
        .squeeze(1)
    )
    next_probs = (
        fwd_out[QF_TARGET_NEXT_PROBS]
        .gather(1, next_actions.view(-1, 1, 1).expand(-1, 1, num_atoms))
        .squeeze(1)
    )

    # The projected target distribution m (no gradient).
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].float()
    m = torch_project_distribution(
        next_probs,
        batch[Columns.REWARDS],
        batch[DISCOUNTS] * not_terminated,
        z,
        float(config.v_min),
        float(config.v_max),
    ).detach()

    # The cross-entropy CE of p(s, a) against m, weighted, averaged.
    cross_entropy = functional.cross_entropy(logits_selected, m, reduction="none")
    qf_loss = torch.mean(batch[WEIGHTS] * cross_entropy)

    with torch.no_grad():
        stats = {
            QF_LOSS_KEY: qf_loss,
            QF_MEAN_KEY: q_selected.mean(),
            QF_MIN_KEY: q_selected.min(),
            QF_MAX_KEY: q_selected.max(),
            TD_ERROR_MEAN_KEY: cross_entropy.mean(),
            **torch_distribution_stats(fwd_out[QF_PROBS], z),
        }
    return DQNTorchLoss(qf_loss, stats, cross_entropy.detach())


def torch_project_distribution(
    next_probs: torch.Tensor,
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    atoms: torch.Tensor,
    v_min: float,
    v_max: float,
) -> torch.Tensor:
    """`project_distribution` in torch: the distributions `next_probs` (B, num_atoms) over the
    support `atoms`, moved to `rewards + discounts * atoms` (clipped to [v_min, v_max]), each
    atom's probability split onto the two nearest atoms in proportion to the distance (all of
    it onto one where it lands on an atom)."""
    import torch

    num_atoms = next_probs.shape[-1]
    shifted = torch.clamp(rewards.unsqueeze(-1) + discounts.unsqueeze(-1) * atoms, v_min, v_max)
    # The atom index each shifted atom lands on (clipped against rounding at v_max).
    b = torch.clamp((shifted - v_min) / ((v_max - v_min) / float(num_atoms - 1)), 0, num_atoms - 1)
    lower, upper = torch.floor(b), torch.ceil(b)
    floor_equal_ceil = ((upper - lower) < 0.5).float()
    to_lower = next_probs * (upper - b + floor_equal_ceil)
    to_upper = next_probs * (b - lower)
    # RLlib sums one-hot projections; scatter_add adds the same terms.
    return (
        torch.zeros_like(next_probs)
        .scatter_add(1, lower.long(), to_lower)
        .scatter_add(1, upper.long(), to_upper)
    )


def torch_distribution_stats(probs: torch.Tensor, atoms: torch.Tensor) -> dict[str, torch.Tensor]:
    """`distribution_stats` in torch (RLlib's definitions): of the probabilities `probs`
    (B, num_actions, num_atoms) of the loss's forward pass."""
    import torch

    mean_probs = probs.mean(dim=0)  # (num_actions, num_atoms)
    nan = torch.tensor(float("nan"))
    stats = {ATOMS: torch.mean(atoms)}
    if len(mean_probs) > 1:
        differences = torch.diff(mean_probs, dim=0).abs()
        stats.update(
            expectations_abs_diff=torch.mean(
                torch.abs(torch.diff(torch.sum(mean_probs * atoms, dim=1)).mean(dim=0))
            ),
            dist_total_variation_dist=differences.sum() * 0.5,
            dist_max_abs_distance=torch.max(differences),
        )
    else:
        stats.update(
            expectations_abs_diff=nan, dist_total_variation_dist=nan, dist_max_abs_distance=nan
        )
    stats["action_dist_mean_entropy"] = torch.mean(
        (mean_probs * torch.log(mean_probs)).sum(dim=1), dim=0
    )
    return stats
