"""Small MultiAgentEnvs for the tests (importable by the EnvRunner processes: the tests
directory travels on their import path)."""

import gymnasium as gym
import numpy as np

from trainer.env.multi_agent_env import MultiAgentEnv


class CartPoles(MultiAgentEnv):
    """`env_config["num_agents"]` CartPoles side by side, agents 0..n-1; an agent whose pole
    fell is done (no more observations), the episode ends when all are."""

    def __init__(self, config=None):
        super().__init__()
        num = (config or {}).get("num_agents", 2)
        self.envs = [gym.make("CartPole-v1") for _ in range(num)]
        self.agents = self.possible_agents = list(range(num))
        self.observation_spaces = {i: env.observation_space for i, env in enumerate(self.envs)}
        self.action_spaces = {i: env.action_space for i, env in enumerate(self.envs)}
        self._done = set()

    def reset(self, *, seed=None, options=None):
        self._done = set()
        obs, infos = {}, {}
        for i, env in enumerate(self.envs):
            obs[i], infos[i] = env.reset(seed=None if seed is None else seed + i)
        return obs, infos

    def step(self, action_dict):
        obs, rewards, terminateds, truncateds, infos = {}, {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rewards[i], terminateds[i], truncateds[i], infos[i] = self.envs[i].step(action)
            if terminateds[i] or truncateds[i]:
                self._done.add(i)
        terminateds["__all__"] = len(self._done) == len(self.envs)
        truncateds["__all__"] = False
        return obs, rewards, terminateds, truncateds, infos


class TakeTurns(MultiAgentEnv):
    """Agents "a" and "b" act in turns ("a" first) for `env_config["length"]` env steps (6 by
    default). Every step rewards the actor with 1 + its action and, once it has had its first
    observation, the other agent with 0.5: the waiting agent's reward is carried to its next
    step. Observations are the step count
    (a Box of one float)."""

    def __init__(self, config=None):
        super().__init__()
        self.length = (config or {}).get("length", 6)
        self.agents = self.possible_agents = ["a", "b"]
        space = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
        self.observation_spaces = {"a": space, "b": space}
        self.action_spaces = {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)}
        self.t = 0

    def _obs(self):
        return np.array([self.t], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return {"a": self._obs()}, {"a": {}}

    def step(self, action_dict):
        actor = "a" if self.t % 2 == 0 else "b"
        assert set(action_dict) == {actor}, f"step {self.t}: expected only {actor!r} to act"
        other = "b" if actor == "a" else "a"
        self.t += 1
        rewards = {actor: 1.0 + float(action_dict[actor])}
        if self.t > 1:  # "b" has had its first observation (after step 1)
            rewards[other] = 0.5
        done = self.t >= self.length
        if done:  # both agents see the end
            obs = {"a": self._obs(), "b": self._obs()}
        else:
            obs = {other: self._obs()}
        terminateds = {"__all__": done}
        return obs, rewards, terminateds, {"__all__": False}, {agent: {} for agent in obs}
