"""RLlib 2.60's `IQLTorchLearner`: implicit Q-learning (Kostrikov et al. 2021) on
`DefaultIQLTorchRLModule`, four Adams (eps 1e-7), each stepping on its own loss:

    value   ("value", value_lr):    mean(|expectile - 1(d < 0)| d^2),  d = min_i Q_target_i(s, a) - V(s)
    critics ("qf", "qf_twin", critic_lr):
                                    mean((r + gamma (1 - terminated) V(s') - Q_i(s, a))^2),
                                    halved for each of the two with twin_q
    policy  ("policy", actor_lr):   -mean(min(exp(beta d), 100) log pi(a|s)),  the weights held

with (s, a, r, s') recorded transitions; the target critics follow the critics by `tau`
(`target_network_update_freq` env steps apart; 0: after every update).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trainer.algorithms.iql.torch_module import QF_TARGET_PREDS, VF_PREDS_NEXT
from trainer.algorithms.sac.loss import POLICY, QF, QF_LOSS_KEY, QF_TWIN, QF_TWIN_LOSS_KEY
from trainer.algorithms.sac.sac_learner import recorded_train_batch
from trainer.algorithms.sac.torch_learner import SACTorchLearner
from trainer.algorithms.sac.torch_module import QF_PREDS, QF_TWIN_PREDS
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import POLICY_LOSS_KEY, UpdateResults

if TYPE_CHECKING:
    from trainer.algorithms.iql.iql import IQLConfig

#: RLlib's name of the value network's optimizer, and of its loss.
VALUE = "value"
VF_LOSS = "value_loss"
#: RLlib's cap on the exponentiated advantages.
MAX_EXP_ADVANTAGE = 100.0


class IQLTorchLearner(SACTorchLearner):
    """See the module docstring."""

    config: IQLConfig  # type: ignore[assignment]  # SAC's settings IQL shares
    algorithm_name = "IQL"
    learns_alpha = False

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        config = config or self.config
        module: Any = self.rl_module
        groups = [(QF, [module.qf_encoder, module.qf], config.critic_lr)]
        if self._twin_q(config):
            groups.append((QF_TWIN, [module.qf_twin_encoder, module.qf_twin], config.critic_lr))
        groups.append((POLICY, [module.pi_encoder, module.pi], config.actor_lr))
        groups.append((VALUE, [module.vf_encoder, module.vf], config.value_lr))
        for name, networks, rate in groups:
            params = [p for network in networks for p in self.get_parameters(network)]
            self._register_adam(module_id, name, params, rate)

    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> UpdateResults:
        """One step of every optimizer on a batch of recorded transitions (RLlib's column
        names), then the target critics' update when due."""
        return super().update(
            recorded_train_batch(batch, self.config.gamma),
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
        )

    def compute_loss_for_module(  # type: ignore[override]  # an IQLConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: IQLConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        advantage = fwd_out[QF_TARGET_PREDS] - fwd_out[Columns.VF_PREDS]
        weight = torch.where(advantage > 0, config.expectile, 1.0 - config.expectile)
        value_loss = torch.mean(weight * advantage**2)
        exp_advantages = torch.clamp(
            torch.exp(config.beta * advantage.detach()), max=MAX_EXP_ADVANTAGE
        )
        dist = self.rl_module.get_train_action_dist_cls().from_logits(
            fwd_out[Columns.ACTION_DIST_INPUTS]
        )
        actor_loss = -torch.mean(exp_advantages * dist.logp(batch[Columns.ACTIONS]))
        target = (
            batch[Columns.REWARDS]
            + config.gamma
            * (1.0 - batch[Columns.TERMINATEDS].float())
            * fwd_out[VF_PREDS_NEXT].detach()
        )
        critic_loss = torch.mean((target - fwd_out[QF_PREDS]) ** 2)
        td_error = torch.abs(target - fwd_out[QF_PREDS])
        losses = {POLICY_LOSS_KEY: actor_loss, VF_LOSS: value_loss}
        stats = {POLICY_LOSS_KEY: actor_loss}
        if QF_TWIN_PREDS in fwd_out:
            critic_loss = 0.5 * critic_loss
            losses[QF_TWIN_LOSS_KEY] = stats[QF_TWIN_LOSS_KEY] = 0.5 * torch.mean(
                (target - fwd_out[QF_TWIN_PREDS]) ** 2
            )
            td_error = 0.5 * (td_error + torch.abs(target - fwd_out[QF_TWIN_PREDS]))
        losses[QF_LOSS_KEY] = stats[QF_LOSS_KEY] = critic_loss
        self.log_loss_stats(stats)
        for key, loss in losses.items():
            self._temp_losses[(module_id, key)] = loss
        self.td_errors = td_error.detach()
        return sum(losses.values(), torch.zeros((), device=target.device))


__all__ = ["IQLTorchLearner"]
