"""APPO's loss, RLlib 2.60's (`APPOTorchLearner.compute_loss_for_module`): IMPALA's V-trace
(Espeholt et al. 2018) with PPO's clipped surrogate (Schulman et al. 2017) taken against a
target network, written once for numpy and once for torch, side by side, with the same terms,
statistics and keys. Over the n steps t of a batch, with pi the learned policy, pi_old its
target network (a copy that follows it every `target_network_update_freq` rounds of the
circular buffer), mu the behaviour policy that sampled, V the value function:

    vs_t, pg_adv_t = V-trace(log pi_old(a_t|x_t), log mu(a_t|x_t), r_t, gamma_t, V)
                     (IMPALA's vtrace.py: value targets and advantages, pi_old the target
                     policy, held constant: no gradient flows through them)
    IS_t       = clip(mu(a_t|x_t) / pi_old(a_t|x_t), 0, 2)            importance ratio
    r_t        = IS_t pi(a_t|x_t) / mu(a_t|x_t)                       probability ratio
    L_clip_t   = min(pg_adv_t r_t, pg_adv_t clip(r_t, 1 - clip_param, 1 + clip_param))
    L_V        = 0.5 mean_t (V(x_t) - vs_t)^2                         value (baseline) loss
    S_t        = entropy of pi(.|x_t)                                 entropy bonus
    KL_t       = KL(pi_old(.|x_t) || pi(.|x_t))                       KL term
    loss       = -mean_t(L_clip_t) + vf_loss_coeff L_V - entropy_coeff mean_t(S_t)
                 + kl_coeff mean_t(KL_t)                              (the last: use_kl_loss)

`entropy_coeff` and `kl_coeff` are the learner's current values (its entropy schedule's and
its adaptive KL coefficient). The clip of IS_t at 2 is RLlib's constant (`IS_RATIO_CLIP`),
taken here as exp(min(log mu - log pi_old, log 2)): no overflow where pi_old is far below mu.

- `numpy_loss`: the terms on arrays (the distribution's per-row log-likelihood, entropy and KL
  from the target network, from `trainer.core.nn`'s `loss_grads`), then
  `numpy_loss_gradients`: the manual backward pass, the loss's gradient with respect to the
  distribution inputs and the values.
- `torch_loss`: the terms on tensors (autograd differentiates the returned loss).

Both report RLlib's statistics (its keys, `LOSS_STAT_KEYS`): policy_loss = -mean_t(L_clip_t),
vf_loss = L_V, entropy = mean_t(S_t), mean_kl_loss = mean_t(KL_t) (0 without `use_kl_loss`),
mean_IS and var_IS the mean and (population) variance of IS_t. The learners add total_loss (the
loss), and after an update curr_kl_coeff, curr_entropy_coeff and the target network's counters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from trainer.core.nn import LossTerms

if TYPE_CHECKING:
    import torch

    from trainer.algorithms.appo.config import APPOConfig

#: RLlib's clip of the target network's importance ratio (a constant in its loss), and its log.
IS_RATIO_CLIP = 2.0
LOG_IS_RATIO_CLIP = float(np.log(IS_RATIO_CLIP))

#: RLlib's keys of the loss statistics (`POLICY_LOSS_KEY`, `VF_LOSS_KEY`, `ENTROPY_KEY`,
#: `LEARNER_RESULTS_KL_KEY`, `LEARNER_RESULTS_MEAN_IS_KEY`, `LEARNER_RESULTS_VAR_IS_KEY`), and
#: of the loss (`TOTAL_LOSS_KEY`).
POLICY_LOSS = "policy_loss"
VF_LOSS = "vf_loss"
ENTROPY = "entropy"
MEAN_KL_LOSS = "mean_kl_loss"
MEAN_IS = "mean_IS"
VAR_IS = "var_IS"
TOTAL_LOSS = "total_loss"
#: What both losses report, in this order.
LOSS_STAT_KEYS = (POLICY_LOSS, VF_LOSS, ENTROPY, MEAN_KL_LOSS, MEAN_IS, VAR_IS)

#: Sums through the ufunc itself (`array.sum()` adds a Python wrapper call).
_sum = np.add.reduce


class VTraceTargets(Protocol):
    """V-trace's targets, as the learner's V-trace gives them (IMPALA's `VTraceReturns`)."""

    @property
    def vs(self) -> np.ndarray:
        """The value targets vs_t."""

    @property
    def pg_advantages(self) -> np.ndarray:
        """The policy gradient's advantages pg_adv_t."""


# ---------------------------------------------------------------------------------------------
# numpy
# ---------------------------------------------------------------------------------------------
class APPONumpyLoss(NamedTuple):
    """`numpy_loss`'s result: the loss and its statistics, and the per-step terms its backward
    pass (`numpy_loss_gradients`) reads."""

    total_loss: float
    #: total_loss, then RLlib's statistics (`LOSS_STAT_KEYS`), as floats.
    stats: dict[str, float]
    surrogate_unclipped: np.ndarray  # pg_adv_t r_t
    surrogate_clipped: np.ndarray  # pg_adv_t clip(r_t, 1 - clip_param, 1 + clip_param)
    value_error: np.ndarray  # V(x_t) - vs_t


def numpy_loss(
    *,
    dist: LossTerms,
    old_logp: np.ndarray,
    behaviour_logp: np.ndarray,
    values: np.ndarray,
    vtrace_targets: Callable[[np.ndarray], VTraceTargets],
    config: APPOConfig,
    entropy_coeff: float,
    kl_coeff: float,
) -> APPONumpyLoss:
    """APPO's loss on a batch of arrays: `dist` holds the learned policy's per-step
    log-likelihood of the taken actions, entropy and KL from the target network (with their
    gradients, `loss_grads` of the module's distribution), `old_logp` the target network's
    log-likelihood of the actions, `behaviour_logp` the behaviour policy's, `values` V(x_t);
    `vtrace_targets(target_logp)` gives V-trace's targets for a target policy."""
    n = len(values)

    # V-trace's targets vs_t and advantages pg_adv_t, pi_old being the target policy.
    targets = vtrace_targets(old_logp)
    pg_advantages = targets.pg_advantages

    # IS_t, r_t and the clipped surrogate L_clip.
    is_ratio = np.exp(np.minimum(behaviour_logp - old_logp, LOG_IS_RATIO_CLIP))
    ratio = is_ratio * np.exp(dist.logp - behaviour_logp)
    surrogate_unclipped = pg_advantages * ratio
    surrogate_clipped = pg_advantages * np.clip(
        ratio, 1.0 - config.clip_param, 1.0 + config.clip_param
    )
    surrogate = np.minimum(surrogate_unclipped, surrogate_clipped)

    # The means, the KL term (use_kl_loss) and the loss.
    mean_kl = float(_sum(dist.kl)) / n if config.use_kl_loss else 0.0
    value_error = values - targets.vs
    policy_loss = -float(_sum(surrogate)) / n
    vf_loss = 0.5 * float(_sum(value_error * value_error)) / n
    mean_entropy = float(_sum(dist.entropy)) / n
    total_loss = policy_loss + config.vf_loss_coeff * vf_loss - entropy_coeff * mean_entropy
    if config.use_kl_loss:
        total_loss += kl_coeff * mean_kl

    mean_is = float(_sum(is_ratio)) / n
    stats = {
        TOTAL_LOSS: total_loss,
        POLICY_LOSS: policy_loss,
        VF_LOSS: vf_loss,
        ENTROPY: mean_entropy,
        MEAN_KL_LOSS: mean_kl,
        MEAN_IS: mean_is,
        VAR_IS: float(_sum((is_ratio - mean_is) ** 2)) / n,
    }
    return APPONumpyLoss(total_loss, stats, surrogate_unclipped, surrogate_clipped, value_error)


def numpy_loss_gradients(
    loss: APPONumpyLoss,
    dist: LossTerms,
    config: APPOConfig,
    *,
    entropy_coeff: float,
    kl_coeff: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The backward pass of `numpy_loss` (the same `dist`, `config` and coefficients):
    d loss / d distribution inputs and d loss / d values, per step."""
    n = len(loss.value_error)
    unclipped = loss.surrogate_unclipped

    # d(-mean L_clip)/d log pi = -pg_adv_t r_t / n where the unclipped term is the minimum
    # (d r_t / d log pi = r_t), 0 where the clipped one is; then the entropy bonus's and the
    # KL term's.
    d_logp = -(unclipped * (unclipped <= loss.surrogate_clipped)) / n
    d_dist_inputs = d_logp[:, None] * dist.d_logp
    d_dist_inputs -= (entropy_coeff / n) * dist.d_entropy
    if config.use_kl_loss:
        d_dist_inputs += (kl_coeff / n) * dist.d_kl

    # d(vf_loss_coeff L_V)/d V = vf_loss_coeff (V(x_t) - vs_t) / n (the targets held).
    d_values = (config.vf_loss_coeff / n) * loss.value_error
    return d_dist_inputs, d_values


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------
def torch_loss(
    *,
    actions: torch.Tensor,
    curr_action_dist: Any,
    old_action_dist: Any,
    behaviour_logp: torch.Tensor,
    values: torch.Tensor,
    vtrace_targets: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    config: APPOConfig,
    entropy_coeff: float,
    kl_coeff: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """APPO's loss on a batch of tensors, and its statistics (`LOSS_STAT_KEYS`, tensors outside
    the graph). `curr_action_dist`: the learned policy's distribution of each step (RLlib's
    TorchDistribution: `logp`, `entropy`, `kl`) from the module's action distribution inputs,
    `old_action_dist` the target network's (without a graph); `actions` the steps' actions,
    `behaviour_logp` the behaviour policy's log-likelihoods of them, `values` V(x_t);
    `vtrace_targets(target_logp)` gives V-trace's (vs, pg_advantages) without a graph for a
    target policy."""
    import torch

    # V-trace's targets vs_t and advantages pg_adv_t, pi_old being the target policy.
    with torch.no_grad():
        old_logp = old_action_dist.logp(actions)
    vs, pg_advantages = vtrace_targets(old_logp)

    # IS_t, r_t and the clipped surrogate L_clip. (The graph's operations are made in this
    # order: the order autograd sums the gradients of the distribution inputs' uses in.)
    logp = curr_action_dist.logp(actions)
    is_ratio = torch.exp(torch.clamp(behaviour_logp - old_logp, max=LOG_IS_RATIO_CLIP))
    ratio = is_ratio * torch.exp(logp - behaviour_logp)
    surrogate = torch.minimum(
        pg_advantages * ratio,
        pg_advantages * torch.clamp(ratio, 1.0 - config.clip_param, 1.0 + config.clip_param),
    )

    # The means, the loss and the KL term (use_kl_loss).
    policy_loss = -torch.mean(surrogate)
    vf_loss = 0.5 * torch.mean((values - vs) ** 2)
    mean_entropy = torch.mean(curr_action_dist.entropy())
    total_loss = policy_loss + config.vf_loss_coeff * vf_loss - entropy_coeff * mean_entropy
    mean_kl = torch.zeros((), dtype=values.dtype)
    if config.use_kl_loss:
        mean_kl = torch.mean(old_action_dist.kl(curr_action_dist))
        total_loss = total_loss + kl_coeff * mean_kl

    # The statistics, outside the graph.
    with torch.no_grad():
        stats = {
            POLICY_LOSS: policy_loss.detach(),
            VF_LOSS: vf_loss.detach(),
            ENTROPY: mean_entropy.detach(),
            MEAN_KL_LOSS: mean_kl.detach(),
            MEAN_IS: torch.mean(is_ratio),
            VAR_IS: torch.var(is_ratio, unbiased=False),
        }
    return total_loss, stats


__all__ = [
    "ENTROPY",
    "IS_RATIO_CLIP",
    "LOG_IS_RATIO_CLIP",
    "LOSS_STAT_KEYS",
    "MEAN_IS",
    "MEAN_KL_LOSS",
    "APPONumpyLoss",
    "POLICY_LOSS",
    "TOTAL_LOSS",
    "VAR_IS",
    "VF_LOSS",
    "VTraceTargets",
    "numpy_loss",
    "numpy_loss_gradients",
    "torch_loss",
]
