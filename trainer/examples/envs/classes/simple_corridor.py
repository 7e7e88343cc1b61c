"""`SimpleCorridor`: walk right down a corridor (RLlib's example env of the same name)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

MAX_CORRIDOR_LENGTH = 999


class SimpleCorridor(gym.Env):
    """A corridor of `env_config["corridor_length"]` cells (default 10). Actions: 0 left,
    1 right. Observation: the position, as a float32 array of shape (1,). Reward -0.01 per step,
    1.0 on reaching the end, which terminates the episode."""

    def __init__(self, config: dict | None = None):
        config = config or {}
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(
            0.0, float(MAX_CORRIDOR_LENGTH), shape=(1,), dtype=np.float32
        )
        self.set_corridor_length(config.get("corridor_length", 10))
        self._position = 0.0

    def set_corridor_length(self, length: float) -> None:
        if length > MAX_CORRIDOR_LENGTH:
            raise ValueError(f"corridor_length={length!r}: at most {MAX_CORRIDOR_LENGTH}")
        self.end_pos = length

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._position = 0.0
        return self._observation(), {}

    def step(self, action):
        if action not in (0, 1):
            raise ValueError(f"SimpleCorridor: action {action!r} is not 0 (left) or 1 (right)")
        if action == 0 and self._position > 0:
            self._position -= 1.0
        elif action == 1:
            self._position += 1.0
        terminated = self._position >= self.end_pos
        return self._observation(), 1.0 if terminated else -0.01, terminated, False, {}

    def _observation(self) -> np.ndarray:
        return np.array([self._position], dtype=np.float32)
