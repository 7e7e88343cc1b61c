"""`StatelessCartPole`: CartPole without the velocities (RLlib's example env for memory models)."""

from __future__ import annotations

import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv
from gymnasium.spaces import Box


class StatelessCartPole(CartPoleEnv):
    """Partially observable CartPole: the observation is `[x, theta]` only, so the policy needs
    memory (e.g. an LSTM, or frame stacking) to infer the velocities."""

    def __init__(self, config: dict | None = None):
        super().__init__()
        high = np.array([self.x_threshold * 2, self.theta_threshold_radians * 2], dtype=np.float32)
        self.observation_space = Box(low=-high, high=high, dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return self._positions(observation), info

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return self._positions(observation), reward, terminated, truncated, info

    @staticmethod
    def _positions(observation: np.ndarray) -> np.ndarray:
        return np.array([observation[0], observation[2]], dtype=np.float32)
