"""RLlib 2.60's `IQLTorchLearner`: implicit Q-learning (Kostrikov et al. 2021) on
`DefaultIQLTorchRLModule`, IQL's losses (`torch_loss.py`; `loss.py` writes them out) with four
Adams (eps 1e-7), each stepping on its own loss over its own network's parameters: "value"
(value_lr), "qf" and "qf_twin" (critic_lr), "policy" (actor_lr); the target critics follow the
critics by `tau` (`target_network_update_freq` env steps apart; 0: after every update).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trainer.algorithms.iql.loss import VALUE
from trainer.algorithms.iql.torch_loss import torch_loss
from trainer.algorithms.sac.loss import POLICY, QF, QF_TWIN
from trainer.algorithms.sac.sac_learner import recorded_train_batch
from trainer.algorithms.sac.torch_learner import SACTorchLearner
from trainer.core.learner import UpdateResults
from trainer.core.replay_update_call import as_given, rllib_replay_update

if TYPE_CHECKING:
    from trainer.algorithms.iql.config import IQLConfig


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
        self,
        batch: dict[str, np.ndarray] | None = None,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        timesteps: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> UpdateResults:
        """One step of every optimizer on a batch of recorded transitions (RLlib's column
        names), then the target critics' update when due. RLlib's call,
        `update(batch=MultiAgentBatch, timesteps=...)`, is taken too."""
        if num_env_steps_sampled_lifetime is None or batch is None:
            return rllib_replay_update(self, batch, timesteps, own_batch=as_given, **kwargs)
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
        """IQL's loss (`torch_loss.torch_loss`): the sum of the value network's, the
        critics' and the policy's losses, each also handed to its optimizer
        (`self._temp_losses`)."""
        loss = torch_loss(
            batch,
            fwd_out,
            config,
            action_dist_class=self.rl_module.get_train_action_dist_cls(),
        )
        return self._finish_loss(module_id, loss)


__all__ = ["IQLTorchLearner"]
