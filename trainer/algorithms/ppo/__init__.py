"""PPO (RLlib's `ray.rllib.algorithms.ppo`): `ppo.py` holds the config and the algorithm,
`ppo_learner.py` the update (the loss terms are in `trainer.core.nn.Categorical.loss_grads` and
`DiagGaussian.loss_grads`, combined in `PPOLearner.update`)."""

from trainer.algorithms.ppo.ppo import PPO, PPOConfig

__all__ = ["PPO", "PPOConfig"]
