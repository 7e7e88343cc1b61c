"""DQN: the `DQN` algorithm (RLlib's `ray.rllib.algorithms.dqn.dqn`, which also has
`DQNConfig`, from `config.py`, and `calculate_rr_weights`).

The training step is the off-policy loop (`trainer.algorithms.off_policy`, RLlib's new-stack
DQN loop): the EnvRunners sample `rollout_fragment_length` steps per sub-env ("auto" =
`n_step`) into the replay buffer, and the learner (`dqn_learner.py`, `torch_learner.py`: the
loss of `loss.py`) trains on n-step transitions replayed from it. `calculate_rr_weights`
(RLlib's name here) sets how many sampling and training rounds a step runs from
`training_intensity`.
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.dqn.config import DQNConfig
from trainer.algorithms.off_policy import OffPolicyAlgorithm
from trainer.algorithms.off_policy import (  # RLlib's dqn.dqn name, shared with SAC
    calculate_rr_weights as calculate_rr_weights,
)


class DQN(OffPolicyAlgorithm):
    config: DQNConfig
    #: The numpy DQNLearner, a DQNTorchLearner (torch), or a learner per module.
    learner: Any

    @classmethod
    def get_default_config(cls) -> DQNConfig:
        return DQNConfig()


__all__ = ["DQN", "DQNConfig", "calculate_rr_weights"]
