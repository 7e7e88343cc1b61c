"""DQN (RLlib's `ray.rllib.algorithms.dqn`): `dqn.py` holds the config and the algorithm,
`dqn_learner.py` the numpy update, `q_module.py` the numpy Q network, `replay_buffer.py` the
buffers' config and train batches (the buffers are `trainer.replay_buffers`).

`ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads."""

from trainer.algorithms.dqn.dqn import DQN, DQNConfig
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(name="DQN", algorithm_cls=DQN, config_cls=DQNConfig)

__all__ = ["ALGORITHM", "DQN", "DQNConfig"]
