"""`StatelessPendulum`: Pendulum without the angular velocity (RLlib's example env for memory
models)."""

from __future__ import annotations

import numpy as np
from gymnasium.envs.classic_control import PendulumEnv
from gymnasium.spaces import Box


class StatelessPendulum(PendulumEnv):
    """Partially observable Pendulum: the observation is `[cos(theta), sin(theta)]` only.
    `env_config["g"]` sets gravity (default 10.0)."""

    def __init__(self, config: dict | None = None):
        config = config or {}
        super().__init__(g=config.get("g", 10.0))
        high = np.array([1.0, 1.0], dtype=np.float32)
        self.observation_space = Box(low=-high, high=high, dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset(seed=seed, options=options)
        return observation[:-1], info

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return observation[:-1], reward, terminated, truncated, info
