"""IQL's loss on tensors, RLlib 2.60's (`IQLTorchLearner.compute_loss_for_module`): the terms
of `loss.py` (which writes out the math and the statistics), in its order, on the outputs of
`DefaultIQLTorchRLModule.forward_train`. Autograd differentiates each optimizer's loss; the
learner hands each to its own optimizer (RLlib's `_temp_losses`).

`torch_loss` returns each optimizer's loss under RLlib's "<optimizer name>_loss" (the twin
critic's with twin_q only), the per-row TD errors and the statistics (`STAT_KEYS`, tensors)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from trainer.algorithms.iql.loss import (
    MAX_EXP_ADVANTAGE,
    QF_TARGET_PREDS,
    VF_LOSS,
    VF_PREDS_NEXT,
)
from trainer.algorithms.sac.loss import QF_LOSS_KEY, QF_PREDS, QF_TWIN_LOSS_KEY, QF_TWIN_PREDS
from trainer.algorithms.sac.torch_loss import TorchSACLoss
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import POLICY_LOSS_KEY

if TYPE_CHECKING:
    from trainer.algorithms.iql.config import IQLConfig


def torch_loss(
    batch: dict[str, Any],
    fwd_out: dict[str, Any],
    config: IQLConfig,
    *,
    action_dist_class: Any,
) -> TorchSACLoss:
    """IQL's loss (`loss.py`'s terms) on the module's outputs; `action_dist_class`: the
    module's train action distribution (RLlib's TorchDistribution, from the action
    distribution inputs)."""
    # u, and value_loss: the expectile regression of V(s) on min_i Q_target_i(s, a).
    advantage = fwd_out[QF_TARGET_PREDS] - fwd_out[Columns.VF_PREDS]
    weight = torch.where(advantage > 0, config.expectile, 1.0 - config.expectile)
    value_loss = torch.mean(weight * advantage**2)

    # policy_loss: AWR, the weights held.
    exp_advantages = torch.clamp(torch.exp(config.beta * advantage.detach()), max=MAX_EXP_ADVANTAGE)
    dist = action_dist_class.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
    actor_loss = -torch.mean(exp_advantages * dist.logp(batch[Columns.ACTIONS]))

    # y (no gradient), and qf_loss_i (halved with twin_q); td_error.
    target = (
        batch[Columns.REWARDS]
        + config.gamma
        * (1.0 - batch[Columns.TERMINATEDS].float())
        * fwd_out[VF_PREDS_NEXT].detach()
    )
    critic_loss = torch.mean((target - fwd_out[QF_PREDS]) ** 2)
    td_error = torch.abs(target - fwd_out[QF_PREDS])
    losses: dict[str, torch.Tensor | None] = {POLICY_LOSS_KEY: actor_loss, VF_LOSS: value_loss}
    critic_twin_loss = None
    if QF_TWIN_PREDS in fwd_out:
        critic_loss = 0.5 * critic_loss
        critic_twin_loss = 0.5 * torch.mean((target - fwd_out[QF_TWIN_PREDS]) ** 2)
        td_error = 0.5 * (td_error + torch.abs(target - fwd_out[QF_TWIN_PREDS]))
        losses[QF_TWIN_LOSS_KEY] = critic_twin_loss
    losses[QF_LOSS_KEY] = critic_loss

    stats: dict[str, Any] = {POLICY_LOSS_KEY: actor_loss, QF_LOSS_KEY: critic_loss}
    if critic_twin_loss is not None:
        stats[QF_TWIN_LOSS_KEY] = critic_twin_loss
    return TorchSACLoss(losses, td_error, stats)


__all__ = ["torch_loss"]
