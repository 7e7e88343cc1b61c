"""MARWIL's loss (Wang et al. 2018, "Exponentially Weighted Imitation Learning for Batched
Data"), RLlib 2.60's (`MARWILTorchLearner.compute_loss_for_module`), written once for numpy and
once for torch, side by side, with the same terms, statistics and keys. On a batch of recorded
transitions (s, a, r, s', d), d whether the episode terminated there:

    V_target = r + gamma (1 - d) V(s')                 RLlib's GAE over its one-step episodes,
                                                       lambda 1 (no gradient flows through it;
                                                       V with the weights of the first update:
                                                       the learners')
    A        = V_target - V(s)                         advantage
    c^2     <- c^2 + rate (mean(A^2) - c^2)            moving average of the squared advantages
                                                       (moving_average_sqd_adv_norm_update_rate)
    w        = exp(beta A / (1e-8 + sqrt(c^2)))        exponential advantage weight (no gradient
                                                       flows through it)
    L_pi     = -mean(w (log pi(a|s) + bc_logstd_coeff mean(log sigma(s))))
    L_V      = 0.5 mean(A^2)
    loss     = L_pi + vf_coeff L_V

The mean log-std term is there only for a diagonal Gaussian policy with `bc_logstd_coeff > 0`.
With beta = 0 (BC) every weight w is 1 and there is neither a value loss nor a moving-average
update: the loss is the negative log-likelihood of the recorded actions.

- `value_targets`: V_target, from the arrays or tensors of r, d (as floats) and V(s').
- `numpy_loss`: the terms on arrays (the distribution's per-row log-likelihood and its gradient
  from `trainer.core.nn`'s `loss_grads`), then `numpy_loss_gradients`: the manual backward
  pass, the loss's gradient with respect to the distribution inputs and the values (the module
  backpropagates them into its parameters).
- `torch_loss`: the terms on tensors (autograd differentiates the returned loss).

Both take the moving average c^2 before the batch and give back the one after it (the learner
keeps it). Both report RLlib's statistics under its keys (`LOSS_STAT_KEYS`; `BC_STAT_KEYS` with
beta = 0): policy_loss = L_pi, vf_loss = L_V, vf_explained_variance = max(-1, 1 -
var(V_target - V) / (var(V_target) + 1e-6)) (RLlib's `explained_variance`) and
moving_avg_sqd_adv_norm = c^2 after the batch. The numpy loss adds total_loss (the loss); the
torch learner adds it after its step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.core.learner import explained_variance
from trainer.core.nn import DiagGaussian, LossTerms

if TYPE_CHECKING:
    import torch

    from trainer.algorithms.marwil.config import MARWILConfig

#: RLlib's keys of the loss statistics (`POLICY_LOSS_KEY`, `VF_LOSS_KEY`,
#: `LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY`, `LEARNER_RESULTS_MOVING_AVG_SQD_ADV_NORM_KEY`).
POLICY_LOSS = "policy_loss"
VF_LOSS = "vf_loss"
VF_EXPLAINED_VAR = "vf_explained_variance"
MOVING_AVG_SQD_ADV_NORM = "moving_avg_sqd_adv_norm"
TOTAL_LOSS = "total_loss"
#: What both losses report with beta > 0, in this order; with beta = 0 (BC), RLlib's BC loss
#: reports the policy loss only.
LOSS_STAT_KEYS = (POLICY_LOSS, VF_LOSS, VF_EXPLAINED_VAR, MOVING_AVG_SQD_ADV_NORM)
BC_STAT_KEYS = (POLICY_LOSS,)

#: A numpy array or a torch tensor (`value_targets` takes either).
ArrayT = TypeVar("ArrayT", np.ndarray, "torch.Tensor")


def value_targets(
    rewards: ArrayT, terminateds: ArrayT, next_values: ArrayT, gamma: float
) -> ArrayT:
    """V_target = r + gamma (1 - d) V(s'): the one-step targets, r where the episode ended.
    `terminateds` as floats of the values' dtype, as `rewards`."""
    return rewards + gamma * (1.0 - terminateds) * next_values


def moving_average_update(
    c_squared: float, mean_squared_advantage: float, config: MARWILConfig
) -> float:
    """c^2 moved towards this batch's mean(A^2) by `moving_average_sqd_adv_norm_update_rate`."""
    rate = config.moving_average_sqd_adv_norm_update_rate
    return c_squared + rate * (mean_squared_advantage - c_squared)


# ---------------------------------------------------------------------------------------------
# numpy
# ---------------------------------------------------------------------------------------------
class MARWILNumpyLoss(NamedTuple):
    """`numpy_loss`'s result: the loss, its statistics and the moving average after the batch,
    and the per-row terms its backward pass (`numpy_loss_gradients`) reads."""

    total_loss: float
    #: total_loss, then RLlib's statistics (`LOSS_STAT_KEYS`, or `BC_STAT_KEYS`), as floats.
    stats: dict[str, float]
    #: c^2 after this batch (as before it with beta = 0).
    moving_average_sqd_adv_norm: float
    weights: np.ndarray  # w, in the distribution inputs' dtype
    advantages: np.ndarray | None  # A (None with beta = 0)


def numpy_loss(
    dist: LossTerms,
    dist_inputs: np.ndarray,
    action_dist: type,
    values: np.ndarray,
    targets: np.ndarray | None,
    config: MARWILConfig,
    *,
    moving_average_sqd_adv_norm: float,
) -> MARWILNumpyLoss:
    """MARWIL's loss on a batch of arrays: `dist` holds the policy's per-row log-likelihood of
    the recorded actions (with its gradient, `loss_grads` of `action_dist`, the module's
    distribution class, on `dist_inputs`), `values` V(s) of each row, `targets` V_target (None
    with beta = 0), `moving_average_sqd_adv_norm` c^2 before the batch."""
    rows = len(dist_inputs)
    c_squared = moving_average_sqd_adv_norm
    stats: dict[str, float] = {}

    # w: the exponential advantage weights (1 with beta = 0), and L_V.
    advantages: np.ndarray | None
    if config.beta == 0.0:
        advantages = None
        weights = np.ones(rows, dtype=dist_inputs.dtype)
        vf_loss = 0.0
    else:
        assert targets is not None, "MARWIL's loss with beta > 0 needs the value targets"
        advantages = targets - values
        mean_squared_advantage = float(np.mean(advantages * advantages))
        vf_loss = 0.5 * mean_squared_advantage
        c_squared = moving_average_update(c_squared, mean_squared_advantage, config)
        c = 1e-8 + float(np.sqrt(c_squared))
        weights = np.exp(config.beta * advantages / c).astype(dist_inputs.dtype)
        stats = {
            VF_LOSS: vf_loss,
            VF_EXPLAINED_VAR: explained_variance(targets, values),
            MOVING_AVG_SQD_ADV_NORM: c_squared,
        }

    # L_pi: the weighted negative log-likelihood (with the mean log-std term), and the loss.
    log_std_term: Any = 0.0
    if config.bc_logstd_coeff > 0 and action_dist is DiagGaussian:
        log_std_term = dist_inputs[:, dist_inputs.shape[1] // 2 :].mean(axis=1)
    policy_loss = -float(np.mean(weights * (dist.logp + config.bc_logstd_coeff * log_std_term)))
    total_loss = policy_loss + config.vf_coeff * vf_loss
    stats = {TOTAL_LOSS: total_loss, POLICY_LOSS: policy_loss, **stats}
    return MARWILNumpyLoss(total_loss, stats, c_squared, weights, advantages)


def numpy_loss_gradients(
    loss: MARWILNumpyLoss,
    dist: LossTerms,
    dist_inputs: np.ndarray,
    action_dist: type,
    config: MARWILConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """The backward pass of `numpy_loss` (the same `dist`, `dist_inputs`, `action_dist` and
    `config`): d loss / d distribution inputs and d loss / d values, per row, in the
    distribution inputs' dtype. The weights w and the targets are constants."""
    rows = len(loss.weights)

    # d L_pi / d distribution inputs = -w / rows d log pi, and the mean log-std term's
    # -bc_logstd_coeff w / (rows * action dims) on each log-std input.
    d_dist_inputs = (-loss.weights / rows)[:, None] * dist.d_logp
    if config.bc_logstd_coeff > 0 and action_dist is DiagGaussian:
        half = dist_inputs.shape[1] // 2
        d_dist_inputs[:, half:] += (-config.bc_logstd_coeff / (rows * half)) * loss.weights[:, None]

    # d (vf_coeff L_V) / d V = -vf_coeff A / rows (0 with beta = 0).
    if loss.advantages is None:
        d_values = np.zeros(rows, dtype=dist_inputs.dtype)
    else:
        d_values = (-config.vf_coeff / rows * loss.advantages).astype(dist_inputs.dtype)
    return d_dist_inputs.astype(dist_inputs.dtype, copy=False), d_values


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------
def torch_loss(
    batch: dict[str, Any],
    action_dist_inputs: torch.Tensor,
    action_dist_class: Any,
    compute_values: Callable[[], torch.Tensor],
    targets: torch.Tensor | None,
    config: MARWILConfig,
    *,
    moving_average_sqd_adv_norm: float,
) -> tuple[torch.Tensor, dict[str, Any], float]:
    """MARWIL's loss on a batch of tensors, its statistics (`LOSS_STAT_KEYS`, or
    `BC_STAT_KEYS`; tensors outside the graph, c^2 a float) and c^2 after the batch.
    `action_dist_inputs`: the module's, of the policy's distribution `action_dist_class`
    (RLlib's TorchDistribution class, `from_logits`; a diagonal Gaussian's inputs are
    [means, log-stds]); `compute_values()`: the module's values V(s) of the rows and `targets`
    V_target, computed without a graph (both with beta > 0 only); `moving_average_sqd_adv_norm`:
    c^2 before the batch."""
    import torch

    from trainer.torch_rl.distributions import TorchDiagGaussian
    from trainer.torch_rl.torch_utils import explained_variance as torch_explained_variance

    c_squared = moving_average_sqd_adv_norm
    stats: dict[str, Any] = {}
    curr_action_dist = action_dist_class.from_logits(action_dist_inputs)
    log_probs = curr_action_dist.logp(batch[Columns.ACTIONS])

    # w: the exponential advantage weights (1 with beta = 0), and L_V.
    weights: Any
    if config.beta == 0.0:
        weights = 1.0
        vf_loss = torch.tensor(0.0)
    else:
        assert targets is not None, "MARWIL's loss with beta > 0 needs the value targets"
        values = compute_values()
        advantages = targets - values
        mean_squared_advantage = torch.mean(advantages**2)
        vf_loss = 0.5 * mean_squared_advantage
        c_squared = moving_average_update(c_squared, float(mean_squared_advantage.detach()), config)
        c = 1e-8 + float(np.sqrt(c_squared))
        weights = torch.exp(config.beta * advantages / c).detach()
        with torch.no_grad():
            stats = {
                VF_LOSS: vf_loss.detach(),
                VF_EXPLAINED_VAR: torch_explained_variance(targets, values),
                MOVING_AVG_SQD_ADV_NORM: c_squared,
            }

    # L_pi: the weighted negative log-likelihood (with the mean log-std term), and the loss.
    log_std_term: Any = 0.0
    if config.bc_logstd_coeff > 0 and isinstance(curr_action_dist, TorchDiagGaussian):
        log_std = action_dist_inputs[:, action_dist_inputs.shape[1] // 2 :]
        log_std_term = torch.mean(log_std, dim=1)
    policy_loss = -torch.mean(weights * (log_probs + config.bc_logstd_coeff * log_std_term))
    total_loss = policy_loss + config.vf_coeff * vf_loss
    stats = {POLICY_LOSS: policy_loss.detach(), **stats}
    return total_loss, stats, c_squared


__all__ = [
    "BC_STAT_KEYS",
    "LOSS_STAT_KEYS",
    "MARWILNumpyLoss",
    "moving_average_update",
    "numpy_loss",
    "numpy_loss_gradients",
    "torch_loss",
    "value_targets",
]
