"""`FastImageEnv`: an image-observation env that costs nothing to step (RLlib's example env for
throughput tests)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete


class FastImageEnv(gym.Env):
    """Observations: an all-zero (84, 84, 4) float32 image. Reward 1 per step; episodes end
    (terminated and truncated, as in RLlib) after 1001 steps."""

    def __init__(self, config: dict | None = None):
        self.zeros = np.zeros((84, 84, 4), dtype=np.float32)
        self.action_space = Discrete(2)
        self.observation_space = Box(0.0, 1.0, shape=(84, 84, 4), dtype=np.float32)
        self.i = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.i = 0
        return self.zeros.copy(), {}

    def step(self, action):
        self.i += 1
        done = self.i > 1000
        # Copies (RLlib returns one shared array): gymnasium's API wants fresh data each call.
        return self.zeros.copy(), 1, done, done, {}
