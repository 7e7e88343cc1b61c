"""`NestedSpaceRepeatAfterMeEnv`: repeat a (nested Dict/Tuple) observation as the action (RLlib's
example env for nested action spaces)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Dict, Discrete, Tuple


def flatten_space(space: gym.Space) -> list[gym.Space]:
    """The leaf spaces of a nested Dict/Tuple space, in RLlib's order (Dict keys sorted)."""
    if isinstance(space, Tuple):
        return [leaf for child in space.spaces for leaf in flatten_space(child)]
    if isinstance(space, Dict):
        return [leaf for key in sorted(space.spaces) for leaf in flatten_space(space.spaces[key])]
    return [space]


def flatten_value(value) -> list:
    """The leaves of a nested dict/tuple/list value, in the order of `flatten_space`."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in flatten_value(value[key])]
    if isinstance(value, (tuple, list)):
        return [leaf for child in value for leaf in flatten_value(child)]
    return [value]


class NestedSpaceRepeatAfterMeEnv(gym.Env):
    """Each step shows a sample of `env_config["space"]` (default
    `Tuple([Discrete(2), Dict({"a": Box(-1, 1, (2,))})])`); the action space is the same space,
    and the reward is, over its leaves, +1 for each matching Discrete leaf minus the L1 distance
    of each Box leaf to the observation just shown. Episodes are truncated after
    `episode_len` steps (default 100)."""

    def __init__(self, config: dict | None = None):
        config = config or {}
        self.observation_space = config.get(
            "space", Tuple([Discrete(2), Dict({"a": Box(-1.0, 1.0, (2,))})])
        )
        self.action_space = self.observation_space
        self.flattened_action_space = flatten_space(self.action_space)
        self.episode_len = config.get("episode_len", 100)
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            # Observations are samples of the space: seed it, so a seeded reset repeats.
            self.observation_space.seed(seed)
        self.steps = 0
        return self._next_obs(), {}

    def step(self, action):
        self.steps += 1
        reward = 0.0
        for a, o, space in zip(
            flatten_value(action),
            self.current_obs_flattened,
            self.flattened_action_space,
            strict=False,
        ):
            if isinstance(space, Box):
                reward -= float(np.sum(np.abs(a - o)))
            elif isinstance(space, Discrete):
                reward += 1.0 if a == o else 0.0
        return self._next_obs(), reward, False, self.steps >= self.episode_len, {}

    def _next_obs(self):
        self.current_obs = self.observation_space.sample()
        self.current_obs_flattened = flatten_value(self.current_obs)
        return self.current_obs
