"""The algorithms: `trainer.algorithms.ppo` (PPO, PPOConfig) and `trainer.algorithms.dqn`
(DQN, DQNConfig)."""
