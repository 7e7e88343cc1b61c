"""`DebugCounterEnv`: observations count the timesteps (RLlib's example env for debugging);
`MultiAgentDebugCounterEnv`: its multi-agent variant."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from trainer.env.multi_agent_env import MultiAgentDict, MultiAgentEnv


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


class MultiAgentDebugCounterEnv(MultiAgentEnv):
    """`config["num_agents"]` agents (0..n-1). Agent i observes `[i, a0, a1, t]`: its id, its
    last action (a Box of 2 floats; 0, 0 after reset) and its own step count t. Its reward is
    `t % 3`; it is truncated once t exceeds `base_episode_len + i` (`base_episode_len`
    default 103), and the episode when all agents are."""

    def __init__(self, config: dict):
        super().__init__()
        # RLlib assigns `self.num_agents`, which its base class makes a read-only property (so
        # its class fails here): the agents are set instead, and `num_agents` counts them.
        num_agents = config["num_agents"]
        self.agents = list(range(num_agents))
        self.possible_agents = list(self.agents)
        self.base_episode_len = config.get("base_episode_len", 103)
        # Observations: agent id, episode id and env id (the last action), agent timestep.
        self.observation_space = gym.spaces.Dict(
            {aid: gym.spaces.Box(float("-inf"), float("inf"), (4,)) for aid in self.agents}
        )
        # Actions: (episode id, env id) as floats.
        self.action_space = gym.spaces.Dict(
            {aid: gym.spaces.Box(-float("inf"), float("inf"), shape=(2,)) for aid in self.agents}
        )
        self.timesteps = [0] * num_agents
        self.terminateds: set[int] = set()
        self.truncateds: set[int] = set()

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.timesteps = [0] * self.num_agents
        self.terminateds = set()
        self.truncateds = set()
        return {i: np.array([i, 0.0, 0.0, 0.0], dtype=np.float32) for i in self.agents}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        for i, action in action_dict.items():
            self.timesteps[i] += 1
            # float32 (RLlib's are float64, outside its own float32 space).
            obs[i] = np.array([i, action[0], action[1], self.timesteps[i]], dtype=np.float32)
            rewards[i] = self.timesteps[i] % 3
            terminateds[i] = False
            truncateds[i] = self.timesteps[i] > self.base_episode_len + i
            if truncateds[i]:
                self.truncateds.add(i)
        terminateds["__all__"] = len(self.terminateds) == self.num_agents
        truncateds["__all__"] = len(self.truncateds) == self.num_agents
        return obs, rewards, terminateds, truncateds, {}
