"""DreamerV3's losses (Hafner et al. 2023, "Mastering Diverse Domains through World Models";
RLlib 2.60's `DreamerV3TorchLearner`), written top to bottom with the paper's names, on the
module's outputs (`torch_module.py`). Each returns its loss and its statistics under RLlib's
keys; `*_B_T` / `*_H_BxT` statistics are the per-item values
(`report_individual_batch_item_stats`).

World model (eq. 5), over the replayed B x T steps, with x the (symlog) observation, s = (h, z)
the posterior model state, r the reward, c = 1 - is_terminated the continue flag:

    L_pred = ||x^ - x||^2                                   (decoder, unit Gaussian, symlog)
           - ln p(symlog(r) | s)                            (reward, two-hot over 255 buckets)
           - ln p(c | s)                                    (continue, Bernoulli)
    L_dyn  = max(1, KL[sg(q(z | h, x)) || p(z | h)])        (dynamics, free bits 1)
    L_rep  = max(1, KL[q(z | h, x) || sg(p(z | h))])        (representation)
    L      = mean(1.0 * L_pred + 0.5 * L_dyn + 0.1 * L_rep)

Critic and actor, over H imagined steps from every replayed state (time-major, t = 0..H):

    R^lambda_t = r_{t+1} + gamma c_{t+1} ((1 - lambda) v_{t+1} + lambda R^lambda_{t+1}),
                 R^lambda_H = v_H                           (eq. 7, the value targets)
    L_critic   = -ln p_psi(symlog(R^lambda_t) | s_t)        (two-hot, eq. 10)
                 - ln p_psi(symlog(v_ema(s_t)) | s_t)       (regularizer toward the EMA critic)
    S          = EMA(Per(R^lambda, 95) - Per(R^lambda, 5))  (return scale, decay
                 `return_normalization_decay`; each percentile's own EMA, as RLlib's)
    A_t        = (R^lambda_t - v_t) / max(1e-8, S)          (eq. 12 with RLlib's floor)
    L_actor    = -ln pi(a_t | s_t) sg(A_t)                  (REINFORCE, Discrete actions)
                 or -A_t                                    (dynamics backprop, Box actions)
                 - eta H[pi(. | s_t)]                       (entropy_scale)

Both imagined losses are weighted by the discounted continuation cumprod(gamma c) / gamma and
averaged over t = 0..H-1 and the BxT starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from trainer.torch_rl.torch_utils import symlog, two_hot

#: The weights of the world model's loss terms (the paper's beta_pred, beta_dyn, beta_rep).
BETA_PRED = 1.0
BETA_DYN = 0.5
BETA_REP = 0.1
#: The free bits: the KL terms are clipped from below at 1 nat.
FREE_BITS = 1.0


class Loss(NamedTuple):
    """A loss tensor, its statistics (RLlib's keys: numbers or tensors), and its per-item
    values by RLlib's `_B_T` / `_H_BxT` keys."""

    loss: torch.Tensor
    stats: dict[str, Any]
    per_item: dict[str, torch.Tensor]


def two_hot_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """-ln p(target) of a two-hot target over the buckets of `logits` (targets in symlog
    space, shape (N,); logits (N, buckets))."""
    log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    return -torch.sum(log_probs * two_hot(targets, device=logits.device), dim=-1)


def categorical_kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL[p || q] of independent categoricals (N, categoricals, classes): summed over both."""
    return torch.sum(p * (torch.log(p) - torch.log(q)), dim=(-2, -1))


def world_model_loss(
    fwd_out: dict[str, torch.Tensor],
    rewards_B_T: torch.Tensor,
    is_terminated_B_T: torch.Tensor,
) -> Loss:
    """The world model's loss (module docstring), from the module's `forward_train` outputs
    and the replayed rewards and is_terminated flags (B, T)."""
    B, T = rewards_B_T.shape
    # Prediction losses: decoder (x), reward (r), continue (c).
    x = fwd_out["sampled_obs_symlog_BxT"].reshape(B * T, -1)
    x_hat = fwd_out["obs_distribution_means_BxT"]
    L_decoder_B_T = torch.sum(torch.square(x_hat - x), dim=-1).reshape(B, T)
    L_reward_B_T = two_hot_nll(
        fwd_out["reward_logits_BxT"], symlog(rewards_B_T.float()).reshape(-1)
    ).reshape(B, T)
    c = 1.0 - is_terminated_B_T.float().reshape(-1)
    continue_distribution = torch.distributions.Bernoulli(logits=fwd_out["continue_logits_BxT"])
    L_continue_B_T = -continue_distribution.log_prob(c).reshape(B, T)
    L_pred_B_T = L_decoder_B_T + L_reward_B_T + L_continue_B_T
    # Dynamics and representation losses: the KLs between posterior q and prior p, each with
    # the other side's gradient stopped, clipped from below (free bits).
    q = fwd_out["z_posterior_probs_BxT"]
    p = fwd_out["z_prior_probs_BxT"]
    L_dyn_B_T = torch.clamp(categorical_kl(q.detach(), p), min=FREE_BITS).reshape(B, T)
    L_rep_B_T = torch.clamp(categorical_kl(q, p.detach()), min=FREE_BITS).reshape(B, T)
    L_total_B_T = BETA_PRED * L_pred_B_T + BETA_DYN * L_dyn_B_T + BETA_REP * L_rep_B_T
    L_total = torch.mean(L_total_B_T)
    stats = {
        "WORLD_MODEL_L_decoder": torch.mean(L_decoder_B_T),
        "WORLD_MODEL_L_reward": torch.mean(L_reward_B_T),
        "WORLD_MODEL_L_continue": torch.mean(L_continue_B_T),
        "WORLD_MODEL_L_prediction": torch.mean(L_pred_B_T),
        "WORLD_MODEL_L_dynamics": torch.mean(L_dyn_B_T),
        "WORLD_MODEL_L_representation": torch.mean(L_rep_B_T),
        "WORLD_MODEL_L_total": L_total,
    }
    per_item = {
        "WORLD_MODEL_L_decoder_B_T": L_decoder_B_T,
        "WORLD_MODEL_L_reward_B_T": L_reward_B_T,
        "WORLD_MODEL_L_continue_B_T": L_continue_B_T,
        "WORLD_MODEL_L_prediction_B_T": L_pred_B_T,
        "WORLD_MODEL_L_dynamics_B_T": L_dyn_B_T,
        "WORLD_MODEL_L_representation_B_T": L_rep_B_T,
        "WORLD_MODEL_L_total_B_T": L_total_B_T,
    }
    return Loss(L_total, stats, per_item)


def lambda_returns(
    rewards_t0_to_H: torch.Tensor,
    continues_t0_to_H: torch.Tensor,
    values_t0_to_H: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> torch.Tensor:
    """R^lambda_t for t = 0..H-1 (H, BxT), from the dreamed rewards, continues and values
    (H + 1, BxT), in real (not symlog) space (eq. 7)."""
    rewards = rewards_t0_to_H[1:]
    discounts = gamma * continues_t0_to_H[1:]
    intermediates = rewards + discounts * (1.0 - gae_lambda) * values_t0_to_H[1:]
    returns = [values_t0_to_H[-1]]
    for t in reversed(range(discounts.shape[0])):
        returns.append(intermediates[t] + discounts[t] * gae_lambda * returns[-1])
    return torch.stack(list(reversed(returns))[:-1], dim=0)


def scaled_advantages(
    R_lambda: torch.Tensor,
    values: torch.Tensor,
    actor: Any,
    decay: float,
    mean: Callable[[float], float] | None = None,
) -> torch.Tensor:
    """(R^lambda - v) / max(1e-8, S) with S from the EMAs of the returns' 5th and 95th
    percentiles, which are updated here (in the actor's `ema_value_target_pct5` /
    `ema_value_target_pct95`; a NaN EMA starts at the batch's percentile). `mean`: each
    percentile's mean over data-parallel learners (None: this batch's own)."""
    for name, quantile in (("ema_value_target_pct5", 0.05), ("ema_value_target_pct95", 0.95)):
        ema = getattr(actor, name)
        per = torch.quantile(R_lambda.detach(), quantile)
        if mean is not None:
            per = torch.tensor(mean(float(per)), dtype=per.dtype, device=per.device)
        ema.data = torch.where(torch.isnan(ema), per, decay * ema + (1.0 - decay) * per)
    offset = actor.ema_value_target_pct5
    S = torch.clamp(actor.ema_value_target_pct95 - offset, min=1e-8)
    return (R_lambda - offset) / S - (values - offset) / S


def critic_loss(dream_data: dict[str, torch.Tensor], R_lambda: torch.Tensor) -> Loss:
    """The critic's two-hot loss on the lambda-returns plus the EMA critic's regularizer,
    weighted by the dream's loss weights (module docstring)."""
    H_plus_1, BxT = dream_data["rewards_dreamed_t0_to_H_BxT"].shape[:2]
    H = H_plus_1 - 1
    logits = dream_data["values_symlog_dreamed_logits_t0_to_HxBxT_wm_detached"]
    logits_t0_to_Hm1 = logits.reshape(H_plus_1, BxT, -1)[:-1].reshape(H * BxT, -1)
    targets_symlog = symlog(R_lambda.detach()).reshape(-1)
    L_neg_logp_of_value_targets = two_hot_nll(logits_t0_to_Hm1, targets_symlog).reshape(H, BxT)
    ema_symlog = dream_data["v_symlog_dreamed_ema_t0_to_H_BxT"].detach()[:-1].reshape(-1)
    L_slow_critic_regularization = two_hot_nll(logits_t0_to_Hm1, ema_symlog).reshape(H, BxT)
    weights = dream_data["dream_loss_weights_t0_to_H_BxT"].detach()[:-1]
    L_critic_H_B = (L_neg_logp_of_value_targets + L_slow_critic_regularization) * weights
    L_critic = torch.mean(L_critic_H_B)
    stats = {
        "CRITIC_L_total": L_critic,
        "CRITIC_L_neg_logp_of_value_targets": torch.mean(L_neg_logp_of_value_targets),
        "CRITIC_L_slow_critic_regularization": torch.mean(L_slow_critic_regularization),
    }
    per_item = {
        "VALUE_TARGETS_symlog_H_BxT": targets_symlog.reshape(H, BxT),
        "CRITIC_L_total_H_BxT": L_critic_H_B,
        "CRITIC_L_neg_logp_of_value_targets_H_BxT": L_neg_logp_of_value_targets,
        "CRITIC_L_slow_critic_regularization_H_BxT": L_slow_critic_regularization,
    }
    return Loss(L_critic, stats, per_item)


def actor_loss(
    dream_data: dict[str, torch.Tensor],
    A: torch.Tensor,
    actor: Any,
    entropy_scale: float,
) -> Loss:
    """The actor's loss: REINFORCE on the scaled advantages A (their gradient stopped) for
    Discrete actions, the advantages themselves (gradients through the dynamics) for Box
    actions, minus eta times the entropy, weighted by the dream's loss weights."""
    a = dream_data["actions_dreamed_t0_to_H_BxT"][:-1].detach()
    parameters = dream_data["actions_dreamed_dist_params_t0_to_H_BxT"][:-1]
    pi = actor.distribution(parameters)
    if actor.discrete:
        logp = torch.sum(a * parameters, dim=-1)  # the parameters are log-probabilities
        objective = logp * A.detach()
    else:
        logp = pi.log_prob(a)
        objective = A
    entropy = pi.entropy()
    L_reinforce_term = -objective
    L_entropy_term = -entropy_scale * entropy
    L_actor_H_B = (L_reinforce_term + L_entropy_term) * dream_data[
        "dream_loss_weights_t0_to_H_BxT"
    ][:-1].detach()
    L_actor = torch.mean(L_actor_H_B)
    stats = {
        "ACTOR_L_total": L_actor,
        "ACTOR_value_targets_pct95_ema": actor.ema_value_target_pct95.detach().clone(),
        "ACTOR_value_targets_pct5_ema": actor.ema_value_target_pct5.detach().clone(),
        "ACTOR_action_entropy": torch.mean(entropy),
        "ACTOR_L_neglogp_reinforce_term": torch.mean(L_reinforce_term),
        "ACTOR_L_neg_entropy_term": torch.mean(L_entropy_term),
    }
    per_item = {
        "ACTOR_L_total_H_BxT": L_actor_H_B,
        "ACTOR_logp_actions_dreamed_H_BxT": logp,
        "ACTOR_scaled_value_targets_H_BxT": A,
        "ACTOR_action_entropy_H_BxT": entropy,
        "ACTOR_L_neglogp_reinforce_term_H_BxT": L_reinforce_term,
        "ACTOR_L_neg_entropy_term_H_BxT": L_entropy_term,
    }
    return Loss(L_actor, stats, per_item)


__all__ = [
    "Loss",
    "actor_loss",
    "categorical_kl",
    "critic_loss",
    "lambda_returns",
    "scaled_advantages",
    "two_hot_nll",
    "world_model_loss",
]
