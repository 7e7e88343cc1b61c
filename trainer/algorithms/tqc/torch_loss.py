"""TQC's loss on tensors, RLlib 2.60's (`TQCTorchLearner.compute_loss_for_module`): the terms of
`loss.py` (which writes out the math), in its order, on the outputs of
`DefaultTQCTorchRLModule.forward_train`. Autograd differentiates each optimizer's loss; the
learner hands each to its own optimizer ("qf", "policy", "alpha")."""

from __future__ import annotations

from typing import Any

import torch

from trainer.algorithms.sac.loss import (
    ALPHA_LOSS_KEY,
    QF_LOSS_KEY,
    QF_PREDS,
    QF_TARGET_NEXT,
    WEIGHTS,
)
from trainer.algorithms.sac.torch_loss import TorchSACLoss, discounts, statistics
from trainer.algorithms.tqc.loss import LOGP_CURR, LOGP_NEXT, QF_CURR
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import POLICY_LOSS_KEY


def quantile_huber_loss_per_sample(
    quantiles: torch.Tensor, target_quantiles: torch.Tensor
) -> torch.Tensor:
    """sum_{j, m} |tau_j - 1(y_m < Z_j)| huber(Z_j - y_m) per row, for one critic's quantiles
    Z (B, N) and the target quantiles y (B, M)."""
    n_quantiles = quantiles.shape[1]
    tau = (torch.arange(n_quantiles, device=quantiles.device, dtype=quantiles.dtype) + 0.5) / (
        n_quantiles
    )
    diff = quantiles.unsqueeze(2) - target_quantiles.unsqueeze(1)  # Z_j - y_m, (B, N, M)
    huber = torch.nn.functional.huber_loss(
        quantiles.unsqueeze(2).expand_as(diff),
        target_quantiles.unsqueeze(1).expand_as(diff),
        reduction="none",
        delta=1.0,
    )
    weight = torch.abs(tau.view(1, n_quantiles, 1) - (diff > 0).to(quantiles.dtype))
    return (weight * huber).sum(dim=(1, 2))


def tqc_loss(
    batch: dict[str, Any],
    fwd_out: dict[str, Any],
    *,
    log_alpha: torch.Tensor,
    target_entropy: torch.Tensor,
    gamma: float,
    kept: int,
) -> TorchSACLoss:
    """TQC's loss (`loss.loss_terms`' terms): `log_alpha` the trained log-temperature (shape
    (1,)), `gamma` the discount (where the batch has no `discounts`), `kept` the target
    quantiles kept."""
    alpha = torch.exp(log_alpha)
    quantiles = fwd_out[QF_PREDS]  # (B, C, N)
    size = quantiles.shape[0]

    # The target quantiles y (no gradient): the truncated mixture's soft values at s'.
    truncated = torch.sort(fwd_out[QF_TARGET_NEXT].reshape(size, -1), dim=1)[0][:, :kept]
    soft = truncated - alpha.detach() * fwd_out[LOGP_NEXT].unsqueeze(1)
    not_terminated = 1.0 - batch[Columns.TERMINATEDS].float()
    y = (
        batch[Columns.REWARDS].unsqueeze(1)
        + (discounts(batch, gamma) * not_terminated).unsqueeze(1) * soft
    ).detach()

    # qf_loss: each critic's importance-weighted quantile Huber loss, summed.
    weights = batch[WEIGHTS]
    critic_loss = torch.zeros((), device=quantiles.device)
    for i in range(quantiles.shape[1]):
        critic_loss = critic_loss + torch.mean(
            weights * quantile_huber_loss_per_sample(quantiles[:, i, :], y)
        )
    td_error = torch.abs(quantiles.detach().mean(dim=(1, 2)) - y.mean(dim=1))

    # policy_loss, against the mean of every critic's quantiles at (s, a~) (critics frozen in
    # the module's pass).
    logp_curr = fwd_out[LOGP_CURR]
    q_curr = fwd_out[QF_CURR].mean(dim=(1, 2))
    actor_loss = torch.mean(alpha.detach() * logp_curr - q_curr)

    # alpha_loss.
    alpha_loss = -torch.mean(log_alpha * (logp_curr.detach() + target_entropy))

    losses = {POLICY_LOSS_KEY: actor_loss, QF_LOSS_KEY: critic_loss, ALPHA_LOSS_KEY: alpha_loss}
    stats = statistics(losses, log_alpha, target_entropy, td_error, logp_curr, quantiles.detach())
    return TorchSACLoss(dict(losses), td_error, stats)


__all__ = ["quantile_huber_loss_per_sample", "tqc_loss"]
