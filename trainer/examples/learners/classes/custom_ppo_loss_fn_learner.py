"""RLlib's `PPOTorchLearnerWithWeightRegularizerLoss`
(`ray.rllib.examples.learners.classes.custom_ppo_loss_fn_learner`): PPO's loss plus a weight
regularizer. Needs the `torch` extra."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from trainer.algorithms.ppo.torch_learner import PPOTorchLearner

if TYPE_CHECKING:
    from trainer.algorithms.ppo.ppo import PPOConfig


class PPOTorchLearnerWithWeightRegularizerLoss(PPOTorchLearner):
    """PPO's torch learner whose loss adds `learner_config_dict["regularizer_coeff"]` times the
    mean of all the module's weights (the mean of each parameter tensor's mean), which keeps the
    weights small enough for a large learning rate to still learn. The mean weight is logged as
    `mean_weight` in the learner results."""

    def compute_loss_for_module(  # type: ignore[override]  # a PPOConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: PPOConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        base_total_loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        # RLlib's `self.module[module_id]`: this learner's one module is `self.rl_module`.
        parameters = self.get_parameters(self.rl_module)
        mean_weight = torch.mean(torch.stack([w.mean() for w in parameters]))
        self.metrics.log_value(key=(module_id, "mean_weight"), value=mean_weight, window=1)
        return base_total_loss + config.learner_config_dict["regularizer_coeff"] * mean_weight
