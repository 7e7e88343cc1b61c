"""IMPALA's loss (Espeholt et al. 2018, "IMPALA: Scalable Distributed Deep-RL with Importance
Weighted Actor-Learner Architectures", section 4.2), RLlib 2.60's
(`IMPALATorchLearner.compute_loss_for_module`), written once for numpy and once for torch, side
by side, with the same terms, statistics and keys. Over the n steps t of a batch, with pi the
learned (target) policy, mu the behaviour policy that sampled, V the value function:

    vs_t, pg_adv_t = V-trace(log pi(a_t|x_t), log mu(a_t|x_t), r_t, gamma_t, V)
                     (vtrace.py: the value targets and the policy gradient's advantages,
                     held constant: no gradient flows through them)
    L_pi       = -sum_t log pi(a_t|x_t) pg_adv_t                      policy gradient loss
    L_V        = 0.5 sum_t (V(x_t) - vs_t)^2                          value (baseline) loss
    S_t        = entropy of pi(.|x_t)                                 entropy bonus
    loss       = L_pi / n + vf_loss_coeff L_V / n - entropy_coeff mean_t(S_t)

`entropy_coeff` is the learner's current value (its schedule's). The V-trace targets come from
the learner (`vtrace_targets`, a function of the target policy's log-likelihoods of the taken
actions: the learner knows the batch's rewards, discounts, values and chunks), computed without
gradients as RLlib's `vtrace_torch` computes them.

- `numpy_loss`: the terms on arrays (the distribution's per-row log-likelihood and entropy from
  `trainer.core.nn`'s `loss_grads`), then `numpy_loss_gradients`: the manual backward pass,
  the loss's gradient with respect to the distribution inputs and the values (the module
  backpropagates them into its parameters).
- `torch_loss`: the terms on tensors (autograd differentiates the returned loss).

Both report RLlib's statistics (its keys, `LOSS_STAT_KEYS`): pi_loss = L_pi and mean_pi_loss =
L_pi / n, vf_loss = L_V and mean_vf_loss = L_V / n, entropy = mean_t(S_t). The learners add
total_loss (the loss), and after an update curr_entropy_coeff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from trainer.algorithms.impala.vtrace import VTraceReturns
from trainer.core.nn import LossTerms

if TYPE_CHECKING:
    import torch

    from trainer.algorithms.impala.config import IMPALAConfig

#: RLlib's keys of the loss statistics (`IMPALATorchLearner`'s own "pi_loss", "mean_pi_loss",
#: "vf_loss", "mean_vf_loss", and `ENTROPY_KEY`), and of the loss (`TOTAL_LOSS_KEY`).
PI_LOSS = "pi_loss"
MEAN_PI_LOSS = "mean_pi_loss"
VF_LOSS = "vf_loss"
MEAN_VF_LOSS = "mean_vf_loss"
ENTROPY = "entropy"
TOTAL_LOSS = "total_loss"
#: What both losses report, in this order.
LOSS_STAT_KEYS = (PI_LOSS, MEAN_PI_LOSS, VF_LOSS, MEAN_VF_LOSS, ENTROPY)

#: Sums through the ufunc itself (`array.sum()` adds a Python wrapper call).
_sum = np.add.reduce


# ---------------------------------------------------------------------------------------------
# numpy
# ---------------------------------------------------------------------------------------------
class IMPALANumpyLoss(NamedTuple):
    """`numpy_loss`'s result: the loss and its statistics, and the per-step terms its backward
    pass (`numpy_loss_gradients`) reads."""

    total_loss: float
    #: total_loss, then RLlib's statistics (`LOSS_STAT_KEYS`), as floats.
    stats: dict[str, float]
    pg_advantages: np.ndarray  # pg_adv_t
    value_error: np.ndarray  # V(x_t) - vs_t


def numpy_loss(
    *,
    dist: LossTerms,
    values: np.ndarray,
    vtrace_targets: Callable[[np.ndarray], VTraceReturns],
    config: IMPALAConfig,
    entropy_coeff: float,
) -> IMPALANumpyLoss:
    """IMPALA's loss on a batch of arrays: `dist` holds the learned policy's per-step
    log-likelihood of the taken actions and entropy (with their gradients, `loss_grads` of the
    module's distribution), `values` V(x_t); `vtrace_targets(target_logp)` gives V-trace's
    targets with pi as the target policy."""
    n = len(values)

    # V-trace's targets vs_t and advantages pg_adv_t, pi being the target policy.
    targets = vtrace_targets(dist.logp)
    pg_advantages = targets.pg_advantages

    # L_pi, L_V and the mean entropy.
    pi_loss = -float(_sum(dist.logp * pg_advantages))
    value_error = values - targets.vs
    vf_loss = 0.5 * float(_sum(value_error * value_error))
    mean_entropy = float(_sum(dist.entropy)) / n

    total_loss = pi_loss / n + config.vf_loss_coeff * vf_loss / n - entropy_coeff * mean_entropy
    stats = {
        TOTAL_LOSS: total_loss,
        PI_LOSS: pi_loss,
        MEAN_PI_LOSS: pi_loss / n,
        VF_LOSS: vf_loss,
        MEAN_VF_LOSS: vf_loss / n,
        ENTROPY: mean_entropy,
    }
    return IMPALANumpyLoss(total_loss, stats, pg_advantages, value_error)


def numpy_loss_gradients(
    loss: IMPALANumpyLoss, dist: LossTerms, config: IMPALAConfig, *, entropy_coeff: float
) -> tuple[np.ndarray, np.ndarray]:
    """The backward pass of `numpy_loss` (the same `dist`, `config` and coefficient):
    d loss / d distribution inputs and d loss / d values, per step."""
    n = len(loss.value_error)

    # d(L_pi / n)/d log pi = -pg_adv_t / n (the advantages held), through d log pi / d inputs;
    # then the entropy bonus's.
    d_dist_inputs = (-loss.pg_advantages / n)[:, None] * dist.d_logp
    d_dist_inputs -= (entropy_coeff / n) * dist.d_entropy

    # d(vf_loss_coeff L_V / n)/d V = vf_loss_coeff (V(x_t) - vs_t) / n (the targets held).
    d_values = (config.vf_loss_coeff / n) * loss.value_error
    return d_dist_inputs, d_values


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------
def torch_loss(
    *,
    actions: torch.Tensor,
    curr_action_dist: Any,
    values: torch.Tensor,
    vtrace_targets: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    config: IMPALAConfig,
    entropy_coeff: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """IMPALA's loss on a batch of tensors, and its statistics (`LOSS_STAT_KEYS`, tensors
    outside the graph). `curr_action_dist`: the learned policy's distribution of each step
    (RLlib's TorchDistribution: `logp`, `entropy`) from the module's action distribution
    inputs, `actions` the steps' actions, `values` V(x_t); `vtrace_targets(target_logp)` gives
    V-trace's (vs, pg_advantages) without a graph, pi being the target policy."""
    import torch

    n = len(values)

    # V-trace's targets vs_t and advantages pg_adv_t, pi being the target policy. (The graph's
    # operations are made in this order: the order autograd sums the gradients of the
    # distribution inputs' uses in.)
    target_logp = curr_action_dist.logp(actions)
    vs, pg_advantages = vtrace_targets(target_logp)

    # L_pi, L_V and the mean entropy.
    pi_loss = -torch.sum(target_logp * pg_advantages)
    vf_loss = 0.5 * torch.sum((values - vs) ** 2)
    mean_entropy = torch.mean(curr_action_dist.entropy())

    total_loss = pi_loss / n + config.vf_loss_coeff * vf_loss / n - entropy_coeff * mean_entropy

    # The statistics, outside the graph.
    with torch.no_grad():
        stats = {
            PI_LOSS: pi_loss.detach(),
            MEAN_PI_LOSS: pi_loss.detach() / n,
            VF_LOSS: vf_loss.detach(),
            MEAN_VF_LOSS: vf_loss.detach() / n,
            ENTROPY: mean_entropy.detach(),
        }
    return total_loss, stats


__all__ = [
    "ENTROPY",
    "LOSS_STAT_KEYS",
    "MEAN_PI_LOSS",
    "MEAN_VF_LOSS",
    "IMPALANumpyLoss",
    "PI_LOSS",
    "TOTAL_LOSS",
    "VF_LOSS",
    "numpy_loss",
    "numpy_loss_gradients",
    "torch_loss",
]
