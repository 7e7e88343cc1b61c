"""`RepeatAfterMeEnv`: repeat the observation of `repeat_delay` steps ago (RLlib's example env for
memory models)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete


class RepeatAfterMeEnv(gym.Env):
    """Each step shows a random token; the reward is for the action matching the token shown
    `repeat_delay` steps before (zeros before the episode's start).

    `env_config`: `continuous` (tokens are Box(-1, 1, (2,)) vectors, reward minus the L1
    distance; default: Discrete(2) tokens, reward +1 for a match, -1 otherwise), `repeat_delay`
    (default 1), `episode_len` (default 100: the episode ends, terminated and truncated as in
    RLlib, once more than that many tokens were shown).
    """

    def __init__(self, config: dict | None = None):
        config = config or {}
        if config.get("continuous"):
            self.observation_space = Box(-1.0, 1.0, (2,))
        else:
            self.observation_space = Discrete(2)
        self.action_space = self.observation_space
        self.delay = config.get("repeat_delay", 1)
        self.episode_len = config.get("episode_len", 100)
        self.history: list = []

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.history = [0] * self.delay
        return self._next_obs(), {}

    def step(self, action):
        target = self.history[-(1 + self.delay)]
        if isinstance(self.action_space, Box):
            reward = -float(np.sum(np.abs(action - target)))
        else:
            reward = 1.0 if action == target else -1.0
        done = len(self.history) > self.episode_len
        return self._next_obs(), reward, done, done, {}

    def _next_obs(self):
        token: np.ndarray | int
        if isinstance(self.observation_space, Box):
            token = self.np_random.random(size=(2,)).astype(np.float32)
        else:
            token = int(self.np_random.choice([0, 1]))
        self.history.append(token)
        return token
