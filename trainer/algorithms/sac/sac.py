"""SAC: the `SAC` algorithm (RLlib 2.60's `ray.rllib.algorithms.sac.SAC`; `SACConfig`, from
`config.py`, is importable from here as from RLlib's module).

The training step is the off-policy loop (`trainer.algorithms.off_policy`; RLlib's SAC
inherits DQN's): the EnvRunners sample
`rollout_fragment_length` steps per sub-env ("auto" = `n_step`) with the stochastic policy, the
steps go into the replay buffer; once `num_steps_sampled_before_learning_starts` env steps were
sampled, the learner takes `train_batch_size` n-step transitions per update (priorities follow
the TD errors) and the new weights go to the EnvRunners. `training_intensity` sets how many
replayed steps are trained on per sampled step. The losses are in `loss.py` (numpy) and
`torch_loss.py` (torch).
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.off_policy import OffPolicyAlgorithm
from trainer.algorithms.sac.config import SACConfig


class SAC(OffPolicyAlgorithm):
    """Soft Actor-Critic (RLlib's `ray.rllib.algorithms.sac.SAC`): the off-policy training
    step with SAC's learner."""

    config: SACConfig
    #: The numpy SACLearner, a SACTorchLearner (torch), or a learner per module.
    learner: Any

    @classmethod
    def get_default_config(cls) -> SACConfig:
        return SACConfig()


__all__ = ["SAC", "SACConfig"]
