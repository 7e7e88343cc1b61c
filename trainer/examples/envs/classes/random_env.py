"""`RandomEnv`: observations and rewards sampled from spaces (RLlib's example env)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np

from trainer.examples.envs.classes.multi_agent import make_multi_agent, module_level_env_class


class RandomEnv(gym.Env):
    """An env that acts at random, configured through `env_config`:

    - `action_space`, `observation_space` (default `Discrete(2)` both), `reward_space` (default a
      scalar float32 Box in [-1, 1]): observations and rewards are samples of these;
    - `static_samples`: sample one observation and one reward at construction and repeat them;
    - `p_terminated` (or the older `p_done`, default 0.1): chance that a step terminates;
    - `max_episode_len`: truncate after this many steps (0 or None: no limit);
    - `check_action_bounds`: raise on actions outside the action space.
    """

    def __init__(self, config: dict | None = None):
        config = config or {}
        self.action_space = config.get("action_space", gym.spaces.Discrete(2))
        self.observation_space = config.get("observation_space", gym.spaces.Discrete(2))
        self.reward_space = config.get(
            "reward_space", gym.spaces.Box(low=-1.0, high=1.0, shape=(), dtype=np.float32)
        )
        self.static_samples = config.get("static_samples", False)
        if self.static_samples:
            self.observation_sample = self.observation_space.sample()
            self.reward_sample = self.reward_space.sample()
        p_terminated = config.get("p_terminated")
        self.p_terminated: float = (
            config.get("p_done", 0.1) if p_terminated is None else p_terminated
        )
        self.max_episode_len = config.get("max_episode_len")
        self.check_action_bounds = config.get("check_action_bounds", False)
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.steps = 0
        return self._observation(), {}

    def step(self, action):
        if self.check_action_bounds and not self.action_space.contains(action):
            raise ValueError(f"Illegal action for {self.action_space}: {action}")
        if isinstance(self.action_space, gym.spaces.Tuple) and (
            len(action) != len(self.action_space.spaces)
        ):
            raise ValueError(f"Illegal action for {self.action_space}: {action}")
        self.steps += 1
        terminated = truncated = False
        if self.max_episode_len and self.steps >= self.max_episode_len:
            truncated = True
        elif self.p_terminated > 0.0:
            # numpy's global generator, as in RLlib (the env has no seed of its own).
            terminated = bool(np.random.random() < self.p_terminated)
        reward = (
            copy.deepcopy(self.reward_sample) if self.static_samples else self.reward_space.sample()
        )
        return self._observation(), reward, terminated, truncated, {}

    def _observation(self):
        if self.static_samples:
            return copy.deepcopy(self.observation_sample)
        return self.observation_space.sample()


class RandomLargeObsSpaceEnv(RandomEnv):
    """`RandomEnv` with a Box(-1, 1, (5000,)) observation space."""

    def __init__(self, config: dict | None = None):
        config = dict(config or {})
        config["observation_space"] = gym.spaces.Box(-1.0, 1.0, (5000,))
        super().__init__(config)


class RandomLargeObsSpaceEnvContActions(RandomEnv):
    """`RandomEnv` with a Box(-1, 1, (5000,)) observation space and Box(-1, 1, (5,)) actions."""

    def __init__(self, config: dict | None = None):
        config = dict(config or {})
        config["observation_space"] = gym.spaces.Box(-1.0, 1.0, (5000,))
        config["action_space"] = gym.spaces.Box(-1.0, 1.0, (5,))
        super().__init__(config)


RandomMultiAgentEnv = module_level_env_class(
    make_multi_agent(lambda c: RandomEnv(c)), "RandomMultiAgentEnv", __name__
)
