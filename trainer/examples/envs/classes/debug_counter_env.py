"""`DebugCounterEnv`: observations count the timesteps (RLlib's example env for debugging);
`MultiAgentDebugCounterEnv`: its multi-agent variant, importable but refused when constructed."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder


class DebugCounterEnv(gym.Env):
    """Observation: the timestep, counted from `env_config["start_at_t"]` (default 0), as a
    float32 array of shape (1,). Actions have no effect; the reward is `t % 3`; every episode is
    truncated after 15 steps."""

    def __init__(self, config: dict | None = None):
        config = config or {}
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(0, 100, (1,), dtype=np.float32)
        self.start_at_t = int(config.get("start_at_t", 0))
        self.i = self.start_at_t

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.i = self.start_at_t
        return self._get_obs(), {}

    def step(self, action):
        self.i += 1
        truncated = self.i >= 15 + self.start_at_t
        return self._get_obs(), float(self.i % 3), False, truncated, {}

    def _get_obs(self) -> np.ndarray:
        return np.array([self.i], dtype=np.float32)


MultiAgentDebugCounterEnv = multi_agent_placeholder(
    "MultiAgentDebugCounterEnv", "agents whose observations count timesteps"
)
