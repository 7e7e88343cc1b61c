"""`EuclidianDistanceBasedCuriosity`: RLlib's example learner connector piece that adds a
novelty reward (the distance to the nearest remembered observation) to each episode's rewards.

Put it into PPO's learner pipeline with `config.training(learner_connector=lambda *spaces:
...)`: it rewrites the rewards of each train batch's episodes before the learner makes its
batch from them, as in RLlib.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.connector_v2 import ConnectorV2

#: RLlib's piece stops adding rewards after this many calls (its `_test` counter); kept, so
#: rewards match RLlib's.
MAX_CALLS = 11


class EuclidianDistanceBasedCuriosity(ConnectorV2):
    """Adds `intrinsic_reward_coeff * min(distance(obs, o) for o in buffer)` to each timestep's
    reward (0 while the buffer is empty) and writes it back into the episode. The buffer is a
    FIFO of `max_buffer_size` observations; each episode adds the one of its observations that
    was farthest from the buffer. As in RLlib, only the first 11 calls add rewards."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        intrinsic_reward_coeff: float = 1.0,
        max_buffer_size: int = 100,
        **kwargs: Any,
    ):
        super().__init__(input_observation_space, input_action_space)
        self.obs_buffer: deque = deque(maxlen=max_buffer_size)
        self.intrinsic_reward_coeff = intrinsic_reward_coeff
        self._test = 0

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
        if self._test >= MAX_CALLS:
            return batch
        self._test += 1
        for episode in self.single_agent_episode_iterator(
            episodes=episodes, agents_that_stepped_only=False
        ):
            observations = episode.get_observations(slice(None, -1))
            rewards = episode.get_rewards()
            farthest, farthest_distance = None, float("-inf")
            for i, (observation, reward) in enumerate(zip(observations, rewards, strict=False)):
                nearest = 0.0
                if self.obs_buffer:
                    nearest = min(
                        float(np.sqrt(np.sum((observation - stored) ** 2)))
                        for stored in self.obs_buffer
                    )
                if nearest > farthest_distance:
                    farthest, farthest_distance = observation, nearest
                reward += self.intrinsic_reward_coeff * nearest
                episode.set_rewards(new_data=reward, at_indices=i)
            if farthest is not None:
                self.obs_buffer.append(farthest)
        return batch
