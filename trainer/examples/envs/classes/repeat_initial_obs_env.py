"""`RepeatInitialObsEnv`: repeat the episode's first observation every step (RLlib's example env
for memory models)."""

from __future__ import annotations

import gymnasium as gym
from gymnasium.spaces import Discrete


class RepeatInitialObsEnv(gym.Env):
    """`reset()` shows a token (0 or 1); every later observation is 0. Each step pays +1 when the
    action is the initial token, -1 otherwise, for `episode_len` steps (default 100; the last
    step is terminated and truncated, as in RLlib)."""

    def __init__(self, episode_len: int = 100):
        self.observation_space = Discrete(2)
        self.action_space = Discrete(2)
        self.token: int | None = None
        self.episode_len = episode_len
        self.num_steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.token = int(self.np_random.choice([0, 1]))
        self.num_steps = 0
        return self.token, {}

    def step(self, action):
        reward = 1 if action == self.token else -1
        self.num_steps += 1
        done = self.num_steps >= self.episode_len
        return 0, reward, done, done, {}
