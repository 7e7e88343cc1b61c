"""RLlib's single-agent contextual-bandit envs (`SimpleContextualBandit`, `LinearDiscreteEnv`,
`WheelBanditEnv`); every episode is one step, and infos report the regret."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete


class SimpleContextualBandit(gym.Env):
    """Two contexts, three arms. Observation `[c, -c]` with context c = -1 or 1; arm 0 pays +10
    for c = 1 and -10 for c = -1, arm 2 the opposite, arm 1 always 0. Info: `regret`."""

    def __init__(self, config: dict | None = None):
        self.action_space = Discrete(3)
        self.observation_space = Box(low=-1.0, high=1.0, shape=(2,))
        self.cur_context: float | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.cur_context = float(self.np_random.choice([-1.0, 1.0]))
        return np.array([self.cur_context, -self.cur_context], dtype=np.float32), {}

    def step(self, action):
        if self.cur_context is None:
            raise RuntimeError("SimpleContextualBandit: call reset() before step()")
        rewards_for_context = {-1.0: [-10, 0, 10], 1.0: [10, 0, -10]}
        reward = rewards_for_context[self.cur_context][action]
        observation = np.array([-self.cur_context, self.cur_context], dtype=np.float32)
        return observation, reward, True, False, {"regret": 10 - reward}


class LinearDiscreteEnv(gym.Env):
    """Arms with linear rewards: arm i pays `context . theta_i` plus Gaussian noise
    (`reward_noise_std`), the thetas unit vectors drawn at construction, the contexts Gaussian
    (std 1/3). `env_config`: `feature_dim` (8), `num_actions` (4), `reward_noise_std` (0.01).
    Infos: `regret`, `opt_action`."""

    DEFAULT_CONFIG_LINEAR: dict[str, Any] = {
        "feature_dim": 8,
        "num_actions": 4,
        "reward_noise_std": 0.01,
    }

    def __init__(self, config: dict | None = None):
        self.config = copy.copy(self.DEFAULT_CONFIG_LINEAR)
        if isinstance(config, dict):
            self.config.update(config)
        self.feature_dim = self.config["feature_dim"]
        self.num_actions = self.config["num_actions"]
        self.sigma = self.config["reward_noise_std"]
        self.action_space = Discrete(self.num_actions)
        self.observation_space = Box(low=-10, high=10, shape=(self.feature_dim,))
        self.thetas = self.np_random.uniform(-1, 1, (self.num_actions, self.feature_dim))
        self.thetas /= np.linalg.norm(self.thetas, axis=1, keepdims=True)
        self._current_context: np.ndarray | None = None

    def _sample_context(self) -> np.ndarray:
        return self.np_random.normal(scale=1 / 3, size=(self.feature_dim,)).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._current_context = self._sample_context()
        return self._current_context, {}

    def step(self, action):
        if self._current_context is None:
            raise RuntimeError("LinearDiscreteEnv: call reset() before step()")
        if not 0 <= action < self.num_actions:
            raise ValueError(
                f"LinearDiscreteEnv: action {action!r} is not in 0..{self.num_actions - 1}"
            )
        action = int(action)
        rewards = self.thetas.dot(self._current_context)
        opt_action = int(rewards.argmax())
        regret = rewards.max() - rewards[action]
        rewards = rewards + self.np_random.normal(scale=self.sigma, size=rewards.shape)
        self._current_context = self._sample_context()
        return (
            self._current_context,
            float(rewards[action]),
            True,
            False,
            {"regret": regret, "opt_action": opt_action},
        )


class WheelBanditEnv(gym.Env):
    """The wheel bandit (Riquelme et al. 2018, arXiv:1802.09127): 2D contexts in the unit disc,
    five arms. Arm 0 pays about `mu_1`, the others about `mu_2`, except that outside the radius
    `delta` the arm of the context's quadrant pays about `mu_3` (noise std `std`). Infos:
    `regret`, `opt_action`."""

    DEFAULT_CONFIG_WHEEL: dict[str, Any] = {
        "delta": 0.5,
        "mu_1": 1.2,
        "mu_2": 1,
        "mu_3": 50,
        "std": 0.01,
    }
    feature_dim = 2
    num_actions = 5

    def __init__(self, config: dict | None = None):
        self.config = copy.copy(self.DEFAULT_CONFIG_WHEEL)
        if isinstance(config, dict):
            self.config.update(config)
        self.delta = self.config["delta"]
        self.mu_1 = self.config["mu_1"]
        self.mu_2 = self.config["mu_2"]
        self.mu_3 = self.config["mu_3"]
        self.std = self.config["std"]
        self.action_space = Discrete(self.num_actions)
        self.observation_space = Box(low=-1, high=1, shape=(self.feature_dim,))
        self.means = [self.mu_1] + 4 * [self.mu_2]
        self._elapsed_steps = 0
        self._current_context: np.ndarray | None = None

    def _sample_context(self) -> np.ndarray:
        while True:  # rejection sampling of the unit disc (accepts ~79% of draws)
            state = self.np_random.uniform(-1, 1, self.feature_dim)
            if np.linalg.norm(state) <= 1:
                return state.astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._current_context = self._sample_context()
        return self._current_context, {}

    def step(self, action):
        if self._current_context is None:
            raise RuntimeError("WheelBanditEnv: call reset() before step()")
        action = int(action)
        self._elapsed_steps += 1
        rewards = [self.np_random.normal(self.means[j], self.std) for j in range(self.num_actions)]
        context = self._current_context
        r_big = self.np_random.normal(self.mu_3, self.std)
        opt_action = 0
        if np.linalg.norm(context) >= self.delta:
            if context[0] > 0:
                opt_action = 1 if context[1] > 0 else 4
            else:
                opt_action = 2 if context[1] > 0 else 3
            rewards[opt_action] = r_big
        reward = rewards[action]
        regret = rewards[opt_action] - reward
        self._current_context = self._sample_context()
        return (
            self._current_context,
            float(reward),
            True,
            False,
            {"regret": regret, "opt_action": opt_action},
        )
