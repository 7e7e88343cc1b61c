"""The algorithms: `trainer.algorithms.ppo` (PPO, PPOConfig)."""
