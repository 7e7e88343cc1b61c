"""`CartPoleSparseRewards`: CartPole that pays its whole return at the end (RLlib's example env,
used with action masking and MCTS-style state get/set)."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np

_ALL_ACTIONS_VALID = (1, 1)


class CartPoleSparseRewards(gym.Env):
    """CartPole-v1 whose reward is 0 each step and the episode's summed reward on the step that
    terminates it (nothing when it is truncated). Observations:
    `{"obs": CartPole's observation, "action_mask": int8 [1, 1]}`.

    `get_state()` / `set_state(state)` snapshot and restore the env (the inner env, deep-copied,
    and the running reward); `set_state` returns the restored observation.
    """

    def __init__(self, config: dict | None = None):
        self.env = gym.make("CartPole-v1")
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Dict(
            {
                "obs": self.env.observation_space,
                "action_mask": gym.spaces.Box(
                    low=0, high=1, shape=(self.action_space.n,), dtype=np.int8
                ),
            }
        )
        self.running_reward = 0.0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.running_reward = 0.0
        observation, info = self.env.reset(seed=seed, options=options)
        return self._with_mask(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.running_reward += float(reward)
        score = self.running_reward if terminated else 0
        return self._with_mask(observation), score, terminated, truncated, info

    def set_state(self, state: tuple) -> dict:
        self.running_reward = state[1]
        self.env = deepcopy(state[0])
        cartpole: Any = self.env.unwrapped  # CartPoleEnv keeps its state in `state`
        return self._with_mask(np.array(list(cartpole.state)))

    def get_state(self) -> tuple:
        return deepcopy(self.env), self.running_reward

    @staticmethod
    def _with_mask(observation) -> dict:
        return {"obs": observation, "action_mask": np.array(_ALL_ACTIONS_VALID, dtype=np.int8)}
