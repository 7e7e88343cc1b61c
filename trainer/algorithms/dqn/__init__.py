"""DQN (RLlib's `ray.rllib.algorithms.dqn`): `dqn.py` holds the config and the algorithm,
`dqn_learner.py` the update, `q_module.py` the Q network, `replay_buffer.py` the buffers'
config and train batches (the buffers are `trainer.replay_buffers`)."""

from trainer.algorithms.dqn.dqn import DQN, DQNConfig

__all__ = ["DQN", "DQNConfig"]
