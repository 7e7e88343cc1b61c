"""APPO's torch learner: RLlib 2.60's `APPOTorchLearner` loss (loss.py's `torch_loss`) on
IMPALA's torch learner, with the target network a copy of the module that follows it as the
numpy learner's does (`APPOTargetState`)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch

from trainer.algorithms.appo.appo_learner import (
    APPOTargetState,
    rllib_update_inputs,
)
from trainer.algorithms.appo.loss import torch_loss
from trainer.algorithms.impala.impala_learner import TrajectoryBatch
from trainer.algorithms.impala.torch_learner import BEHAVIOUR_LOGP, IS_STEP, IMPALATorchLearner
from trainer.compat.rllib_utils import Columns


class APPOTorchLearner(APPOTargetState, IMPALATorchLearner):
    """See the module docstring."""

    algorithm_name = "APPO"

    def __init__(self, config: Any, module: Any, **kwargs: Any):
        super().__init__(config, module, **kwargs)
        #: The target network: a copy of the module, without gradients.
        self.target = copy.deepcopy(self.rl_module)
        for param in self.target.parameters():
            param.requires_grad_(False)
        self.start_target_state()

    def target_weights(self) -> dict[str, np.ndarray]:
        return {name: np.array(value) for name, value in self.target.get_state().items()}

    def set_target_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.target.set_state(weights)

    def module_weights(self) -> dict[str, np.ndarray]:
        return {name: np.array(value) for name, value in self.rl_module.get_state().items()}

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        """RLlib 2.60's APPO loss (loss.py); logs policy_loss, vf_loss, entropy, mean_kl_loss,
        mean_IS and var_IS."""
        dist, values, next_values = self.step_terms(batch, fwd_out)
        with torch.no_grad():
            old_out = self.target.forward_train(batch)
            old_inputs, _ = self.row_outputs(self.target, batch, old_out, values=False)
            old_dist = self.rl_module.get_train_action_dist_cls().from_logits(
                old_inputs[batch[IS_STEP]]
            )
        total_loss, stats = torch_loss(
            actions=batch[Columns.ACTIONS],
            curr_action_dist=dist,
            old_action_dist=old_dist,
            behaviour_logp=batch[BEHAVIOUR_LOGP],
            values=values,
            vtrace_targets=lambda target_logp: self.vtrace_targets(
                batch, target_logp, values, next_values
            ),
            config=config,
            entropy_coeff=self.entropy_coeff.value,
            kl_coeff=self.kl_coeff,
        )
        self.log_loss_stats(stats)
        return total_loss

    def update(
        self,
        episodes: list[Any] | TrajectoryBatch | None = None,
        *,
        batch: Any = None,
        timesteps: dict[str, Any] | None = None,
        num_env_steps_sampled_lifetime: int | None = None,
        minibatch_size: int | None = None,
        num_minibatches: int | None = None,
        num_env_steps_new: int | None = None,
    ) -> dict[str, Any]:
        """IMPALA's update with APPO's loss (a step per minibatch, if any), then the KL
        coefficient and the target network (`num_env_steps_new`: the env steps this update adds
        to the target's clock). `batch=` takes RLlib's column batch instead of episodes (a
        `MultiAgentBatch` of this learner's module, or its columns), with RLlib's `timesteps`,
        as the numpy learner's `update`."""
        episodes, num_env_steps_sampled_lifetime, trained_lifetime = rllib_update_inputs(
            self, episodes, batch, timesteps, num_env_steps_sampled_lifetime
        )
        stats = super().update(
            episodes,
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
            minibatch_size=minibatch_size,
            num_minibatches=num_minibatches,
        )
        self.after_update(stats, num_env_steps_new, trained_lifetime)
        return stats


__all__ = ["APPOTorchLearner"]
