"""PPO (RLlib's `ray.rllib.algorithms.ppo`): `ppo.py` holds the config and the algorithm,
`ppo_learner.py` the numpy update (the loss terms are in `trainer.core.nn.Categorical.loss_grads`
and `DiagGaussian.loss_grads`, combined in `PPOLearner.update`).

`ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads."""

from trainer.algorithms.ppo.ppo import PPO, PPOConfig
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(name="PPO", algorithm_cls=PPO, config_cls=PPOConfig)

__all__ = ["ALGORITHM", "PPO", "PPOConfig"]
