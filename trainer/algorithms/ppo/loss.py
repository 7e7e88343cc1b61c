"""PPO's loss (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"), RLlib 2.60's
(`PPOTorchLearner.compute_loss_for_module`), written once for numpy and once for torch, side by
side, with the same terms, statistics and keys. Per row t of a (mini)batch:

    r_t       = exp(log pi(a_t|s_t) - log pi_old(a_t|s_t))               probability ratio
    L_clip_t  = min(A_t r_t, A_t clip(r_t, 1 - clip_param, 1 + clip_param))  clipped surrogate
    L_vf_t    = min((V(s_t) - V_targ_t)^2, vf_clip_param)                  clipped value loss
    S_t       = entropy of pi(.|s_t)                                       entropy bonus
    KL_t      = KL(pi_old(.|s_t) || pi(.|s_t))                             KL penalty
    loss      = mean(-L_clip + vf_loss_coeff L_vf - entropy_coeff S) + kl_coeff mean(KL)

Without `use_critic` the value terms are zero; without `use_kl_loss` the KL term is left out.
`entropy_coeff` and `kl_coeff` are the learner's current values (its entropy schedule's and
its adaptive KL coefficient, `adapted_kl_coeff`).

- `numpy_loss`: the terms on arrays (the distribution's per-row log-likelihood, entropy and KL
  from `trainer.core.nn`'s `loss_grads`), then `numpy_loss_gradients`: the manual backward
  pass, the loss's gradient with respect to the distribution inputs and the values (the module
  backpropagates them into its parameters).
- `torch_loss`: the terms on tensors (autograd differentiates the returned loss).

Both report RLlib's statistics (its keys, `LOSS_STAT_KEYS`), as its torch learner defines them:
policy_loss = -mean(L_clip); vf_loss = mean(L_vf) and vf_loss_unclipped = mean of the unclipped
squares (0 without `use_critic`); vf_explained_var = max(-1, 1 - var(V_targ - V) / (var(V_targ)
+ 1e-6)) with unbiased variances (RLlib's `explained_variance`; V = 0 without `use_critic`);
entropy = mean(S); mean_kl_loss = mean(KL) (0 without `use_kl_loss`). The learners add
total_loss (the loss), and after an update curr_kl_coeff and curr_entropy_coeff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.core.learner import explained_variance
from trainer.core.nn import LossTerms

if TYPE_CHECKING:
    import torch

    from trainer.algorithms.ppo.config import PPOConfig

#: RLlib's keys of the loss statistics (`POLICY_LOSS_KEY`, `VF_LOSS_KEY`,
#: `LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY`, `LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY`,
#: `ENTROPY_KEY`, `LEARNER_RESULTS_KL_KEY`), and of the update's coefficients
#: (`LEARNER_RESULTS_CURR_KL_COEFF_KEY`, `LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY`).
POLICY_LOSS = "policy_loss"
VF_LOSS = "vf_loss"
VF_LOSS_UNCLIPPED = "vf_loss_unclipped"
VF_EXPLAINED_VAR = "vf_explained_var"
ENTROPY = "entropy"
MEAN_KL_LOSS = "mean_kl_loss"
TOTAL_LOSS = "total_loss"
CURR_KL_COEFF = "curr_kl_coeff"
CURR_ENTROPY_COEFF = "curr_entropy_coeff"
#: What both losses report, in this order.
LOSS_STAT_KEYS = (POLICY_LOSS, VF_LOSS, VF_LOSS_UNCLIPPED, VF_EXPLAINED_VAR, ENTROPY, MEAN_KL_LOSS)

#: Sums through the ufunc itself: `array.sum()` adds a Python wrapper call (the statistics of a
#: minibatch step are a dozen small sums).
_sum = np.add.reduce


def float32_coeff(value: float) -> float:
    """`value` rounded to float32, as a Python float: RLlib keeps its adaptive KL coefficient
    as a float32 tensor, so a coefficient set to 0.01 reports 0.009999999776 (RLlib's unit
    tests compare it with the value set). The losses compute in float32, where the rounded
    and the unrounded value are the same number."""
    return float(np.float32(value))


def adapted_kl_coeff(kl_coeff: float, mean_kl: float, cfg: PPOConfig) -> float:
    """RLlib's KL coefficient adaptation: x1.5 above twice `kl_target`, x0.5 below half, in
    float32 as RLlib's tensor (`float32_coeff`)."""
    if mean_kl > 2.0 * cfg.kl_target:
        return float32_coeff(kl_coeff * 1.5)
    if mean_kl < 0.5 * cfg.kl_target:
        return float32_coeff(kl_coeff * 0.5)
    return kl_coeff


# ---------------------------------------------------------------------------------------------
# numpy
# ---------------------------------------------------------------------------------------------
class PPONumpyLoss(NamedTuple):
    """`numpy_loss`'s result: the loss and its statistics, and the per-row terms its backward
    pass (`numpy_loss_gradients`) reads."""

    total_loss: float
    #: total_loss, then RLlib's statistics (`LOSS_STAT_KEYS`), as floats.
    stats: dict[str, float]
    surrogate_unclipped: np.ndarray  # A_t r_t
    surrogate_clipped: np.ndarray  # A_t clip(r_t, 1 - clip_param, 1 + clip_param)
    value_error: np.ndarray | None  # V(s_t) - V_targ_t (None without use_critic)
    vf_loss: np.ndarray  # (V(s_t) - V_targ_t)^2, unclipped


def numpy_loss(
    batch: dict[str, np.ndarray],
    dist: LossTerms,
    values: np.ndarray,
    config: PPOConfig,
    *,
    entropy_coeff: float,
    kl_coeff: float,
) -> PPONumpyLoss:
    """PPO's loss on a minibatch of arrays: `dist` holds the current policy's per-row
    log-likelihood of the taken actions, entropy and KL from the behaviour policy (with their
    gradients, `loss_grads` of the module's distribution), `values` the value of each row."""
    batch_size = len(batch[Columns.ADVANTAGES])
    advantages = batch[Columns.ADVANTAGES]

    # r_t, and the clipped surrogate L_clip.
    ratio = np.exp(dist.logp - batch[Columns.ACTION_LOGP])
    surrogate_unclipped = advantages * ratio
    surrogate_clipped = advantages * np.minimum(
        np.maximum(ratio, 1 - config.clip_param), 1 + config.clip_param
    )
    surrogate = np.minimum(surrogate_unclipped, surrogate_clipped)

    # L_vf: the squared error, clipped at vf_clip_param.
    value_error: np.ndarray | None
    if config.use_critic:
        value_error = values - batch[Columns.VALUE_TARGETS]
        vf_loss = value_error * value_error
        vf_loss_clipped = np.minimum(vf_loss, config.vf_clip_param)
    else:
        value_error = None
        vf_loss = vf_loss_clipped = values = np.zeros(batch_size, dtype=np.float32)

    # The means (sums divided here: np.mean's overhead is several times a small array's sum),
    # and the loss.
    policy_loss = -float(_sum(surrogate)) / batch_size
    mean_vf_loss = float(_sum(vf_loss_clipped)) / batch_size
    mean_entropy = float(_sum(dist.entropy)) / batch_size
    mean_kl = float(_sum(dist.kl)) / batch_size if config.use_kl_loss else 0.0
    total_loss = (
        policy_loss
        + config.vf_loss_coeff * mean_vf_loss
        - entropy_coeff * mean_entropy
        + (kl_coeff * mean_kl if config.use_kl_loss else 0.0)
    )
    stats = {
        TOTAL_LOSS: total_loss,
        POLICY_LOSS: policy_loss,
        VF_LOSS: mean_vf_loss,
        VF_LOSS_UNCLIPPED: float(_sum(vf_loss)) / batch_size,
        VF_EXPLAINED_VAR: explained_variance(batch[Columns.VALUE_TARGETS], values),
        ENTROPY: mean_entropy,
        MEAN_KL_LOSS: mean_kl,
    }
    return PPONumpyLoss(
        total_loss, stats, surrogate_unclipped, surrogate_clipped, value_error, vf_loss
    )


def numpy_loss_gradients(
    loss: PPONumpyLoss,
    dist: LossTerms,
    config: PPOConfig,
    *,
    entropy_coeff: float,
    kl_coeff: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The backward pass of `numpy_loss` (the same `dist`, `config` and coefficients):
    d loss / d distribution inputs and d loss / d values, per row. Scales `dist.d_entropy` and
    `dist.d_kl` in place."""
    batch_size = len(loss.surrogate_unclipped)

    # d(-mean L_clip)/d log pi = -A_t r_t / batch_size where the unclipped term A_t r_t is the
    # minimum (d r_t / d log pi = r_t), 0 where the clipped one is.
    unclipped_active = loss.surrogate_unclipped <= loss.surrogate_clipped
    d_loss_d_logp = loss.surrogate_unclipped * unclipped_active
    d_loss_d_logp *= -1.0 / batch_size

    # d(vf_loss_coeff mean L_vf)/d V = vf_loss_coeff 2 (V - V_targ) / batch_size where the
    # square is under the clip, 0 where it is clipped.
    if loss.value_error is not None:
        d_values = loss.value_error * (loss.vf_loss < config.vf_clip_param)
        d_values *= config.vf_loss_coeff * 2.0 / batch_size
    else:
        d_values = np.zeros(batch_size, dtype=np.float32)

    # d loss / d distribution inputs: the surrogate's through d log pi, the entropy bonus's
    # and the KL penalty's.
    d_dist_inputs = d_loss_d_logp[:, None] * dist.d_logp
    d_entropy = dist.d_entropy
    d_entropy *= entropy_coeff / batch_size
    d_dist_inputs -= d_entropy
    if config.use_kl_loss:
        d_kl = dist.d_kl
        d_kl *= kl_coeff / batch_size
        d_dist_inputs += d_kl
    return d_dist_inputs, d_values


# ---------------------------------------------------------------------------------------------
# torch
# ---------------------------------------------------------------------------------------------
def torch_loss(
    batch: dict[str, Any],
    curr_action_dist: Any,
    prev_action_dist: Any,
    compute_values: Callable[[], torch.Tensor],
    config: PPOConfig,
    *,
    entropy_coeff: float,
    kl_coeff: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's loss on a minibatch of tensors, and its statistics (`LOSS_STAT_KEYS`, tensors
    outside the graph). `curr_action_dist`: the current policy's distribution (RLlib's
    TorchDistribution: `logp`, `entropy`, `kl`) from the module's action distribution inputs,
    `prev_action_dist` the behaviour policy's from the batch's; `compute_values()`: the
    module's values of the rows (called with `use_critic` only). With `Columns.LOSS_MASK` in
    the batch (a row mask), the means are over the masked-in rows, as RLlib's; so is
    vf_explained_var here (RLlib's counts the padding in)."""
    import torch

    from trainer.torch_rl.torch_utils import explained_variance as torch_explained_variance

    mask: torch.Tensor | None
    if Columns.LOSS_MASK in batch:
        mask = batch[Columns.LOSS_MASK].bool()
        num_valid = torch.sum(mask)

        def mean(data: torch.Tensor) -> torch.Tensor:
            return torch.sum(data[mask]) / num_valid

    else:
        mask = None
        mean = torch.mean

    # r_t, KL_t (with use_kl_loss) and S_t. (The graph's operations are made in this order: the
    # order autograd sums the gradients of the distribution inputs' uses in.)
    logp_ratio = torch.exp(
        curr_action_dist.logp(batch[Columns.ACTIONS]) - batch[Columns.ACTION_LOGP]
    )
    if config.use_kl_loss:
        mean_kl_loss = mean(prev_action_dist.kl(curr_action_dist))
    else:
        mean_kl_loss = torch.tensor(0.0, device=logp_ratio.device)
    curr_entropy = curr_action_dist.entropy()

    # The clipped surrogate L_clip.
    advantages = batch[Columns.ADVANTAGES]
    surrogate_loss = torch.min(
        advantages * logp_ratio,
        advantages * torch.clamp(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
    )

    # L_vf: the squared error, clipped at vf_clip_param.
    if config.use_critic:
        values = compute_values()
        vf_loss = torch.pow(values - batch[Columns.VALUE_TARGETS], 2.0)
        vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
    else:
        values = vf_loss = vf_loss_clipped = torch.tensor(0.0, device=surrogate_loss.device)

    total_loss = mean(
        -surrogate_loss + config.vf_loss_coeff * vf_loss_clipped - entropy_coeff * curr_entropy
    )
    if config.use_kl_loss:
        total_loss = total_loss + kl_coeff * mean_kl_loss

    # The statistics, outside the graph: the same values, without autograd's records of
    # operations nothing differentiates.
    with torch.no_grad():
        targets = batch[Columns.VALUE_TARGETS]
        predictions = values if config.use_critic else values.expand_as(targets)
        if mask is not None:  # the real steps only, not the padding
            targets, predictions = targets[mask], predictions[mask]
        if config.use_critic:
            mean_vf_loss, mean_vf_unclipped_loss = mean(vf_loss_clipped), mean(vf_loss)
        else:
            mean_vf_loss = mean_vf_unclipped_loss = values
        stats = {
            POLICY_LOSS: -mean(surrogate_loss),
            VF_LOSS: mean_vf_loss,
            VF_LOSS_UNCLIPPED: mean_vf_unclipped_loss,
            VF_EXPLAINED_VAR: torch_explained_variance(targets, predictions),
            ENTROPY: mean(curr_entropy),
            MEAN_KL_LOSS: mean_kl_loss,
        }
    return total_loss, stats
