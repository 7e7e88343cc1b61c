"""`CountBasedCuriosity`: RLlib's example learner connector piece that adds a count-based
intrinsic reward to each episode's rewards.

Put it into PPO's learner pipeline with `config.training(learner_connector=lambda *spaces:
...)`: it rewrites the rewards of each train batch's episodes before the learner makes its
batch from them, as in RLlib.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import gymnasium as gym

from trainer.connectors.connector_v2 import ConnectorV2


class CountBasedCuriosity(ConnectorV2):
    """Adds `intrinsic_reward_coeff / C(obs)` to the reward of each timestep, where `C(obs)` is
    how often (over this piece's lifetime, this call included) that observation was seen, and
    writes the sum back into the episode's rewards. For small observation sets only (the counts
    are kept per exact observation)."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        intrinsic_reward_coeff: float = 1.0,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space)
        self._counts: Counter = Counter()
        self.intrinsic_reward_coeff = intrinsic_reward_coeff

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list,
        explore: bool | None = None,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        for episode in self.single_agent_episode_iterator(
            episodes=episodes, agents_that_stepped_only=False
        ):
            # Each reward belongs to the observation the action was taken from: all but the
            # last observation.
            observations = episode.get_observations(slice(None, -1))
            rewards = episode.get_rewards()
            for i, (observation, reward) in enumerate(zip(observations, rewards, strict=False)):
                key = tuple(observation)
                self._counts[key] += 1
                reward += self.intrinsic_reward_coeff * (1 / self._counts[key])
                episode.set_rewards(new_data=reward, at_indices=i)
        return batch
