"""The mock MultiAgentEnvs of RLlib's `rllib/env/tests/test_multi_agent_env.py` (BasicMultiAgent,
RoundRobinMultiAgent, EarlyDoneMultiAgent, FlexAgentsMultiAgent, SometimesZeroAgentsMultiAgent),
with their dynamics, changed where a test must not flake or RLlib's new stack needs it:
- the random choices of FlexAgentsMultiAgent and SometimesZeroAgentsMultiAgent come from the
  env's own seeded generator (RLlib's use the global `random` / `np.random`);
- FlexAgentsMultiAgent's `"__all__"` is "every remaining agent is done" (RLlib's compares the
  count of done agents, killed ones included, with the count of remaining ones);
- SometimesZeroAgentsMultiAgent resets every agent's MockEnv at `reset()` and ends an agent by
  termination only (RLlib's MultiAgentEpisode refuses a truncation without a last
  observation, which this env never gives);
- every env records the action dicts it was sent (`sent`) and asserts that exactly the agents
  of its last observations that are not done were sent actions.
Importable by EnvRunner processes: the tests directory travels on their import path."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.examples.envs.classes.mock_env import MockEnv, MockEnv2


class _ChecksActors(MultiAgentEnv):
    """Records each step's action dict (`sent`) and asserts that exactly the agents of the
    last observation dict that are not done were sent actions."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict] = []
        self._expect: set = set()
        self._gone: set = set()

    def _observed(self, obs: dict, terminateds: dict, truncateds: dict) -> None:
        for agent_id in obs:
            if terminateds.get(agent_id) or truncateds.get(agent_id):
                self._gone.add(agent_id)
        self._expect = {agent_id for agent_id in obs if agent_id not in self._gone}

    def _check_actors(self, action_dict: dict) -> None:
        self.sent.append(dict(action_dict))
        assert set(action_dict) == self._expect, (
            f"actions for {sorted(action_dict)}, agents to act {sorted(self._expect)}"
        )

    def _reset_checks(self, obs: dict) -> None:
        self._gone = set()
        self._expect = set(obs)


class BasicMultiAgent(_ChecksActors):
    """`num` independent agents, each a MockEnv(25): all act every step, all end together."""

    def __init__(self, num: int = 4) -> None:
        super().__init__()
        self.envs = [MockEnv(25) for _ in range(num)]
        self.agents = self.possible_agents = list(range(num))
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.Discrete(2)
        self.terminateds: set = set()

    def reset(self, *, seed=None, options=None):
        self.terminateds = set()
        results = [env.reset() for env in self.envs]
        obs = {i: result[0] for i, result in enumerate(results)}
        self._reset_checks(obs)
        return obs, {i: result[1] for i, result in enumerate(results)}

    def step(self, action_dict):
        self._check_actors(action_dict)
        obs, rew, terminated, truncated, info = {}, {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rew[i], terminated[i], truncated[i], info[i] = self.envs[i].step(action)
            if terminated[i]:
                self.terminateds.add(i)
        terminated["__all__"] = len(self.terminateds) == len(self.envs)
        truncated["__all__"] = False
        self._observed(obs, terminated, truncated)
        return obs, rew, terminated, truncated, info


class RoundRobinMultiAgent(_ChecksActors):
    """`num` agents, each a MockEnv(5) (MockEnv2(5) with `increment_obs`: observations count
    its steps); one agent acts per env step, in turns. The reward and done flag returned for
    the agent to act next are those of its own last step; the episode ends when all are
    terminated (the last env step has no agent to act)."""

    def __init__(self, num: int = 2, increment_obs: bool = False) -> None:
        super().__init__()
        self.envs = [MockEnv2(5) if increment_obs else MockEnv(5) for _ in range(num)]
        self.agents = self.possible_agents = list(range(num))
        self.observation_space = gym.spaces.Discrete(10)
        self.action_space = gym.spaces.Discrete(2)
        self.num = num
        self.i = 0

    def reset(self, *, seed=None, options=None):
        self.terminateds: set = set()
        self.last = {}
        for i, env in enumerate(self.envs):
            obs, info = env.reset()
            self.last[i] = [obs, 0, False, False, info]
        self.i = 1 % self.num
        self._reset_checks({0: None})
        return {0: self.last[0][0]}, {0: self.last[0][4]}

    def step(self, action_dict):
        self._check_actors(action_dict)
        assert len(self.terminateds) != len(self.envs)
        for i, action in action_dict.items():
            self.last[i] = list(self.envs[i].step(action))
        i = self.i
        last_obs, last_rew, last_term, last_trunc, last_info = self.last[i]
        obs, rew, info = {i: last_obs}, {i: 0 if last_term else last_rew}, {i: last_info}
        terminated, truncated = {i: last_term}, {i: last_trunc}
        if last_term:
            self.terminateds.add(i)
        self.i = (i + 1) % self.num
        terminated["__all__"] = len(self.terminateds) == len(self.envs)
        truncated["__all__"] = False
        self._observed(obs, terminated, truncated)
        return obs, rew, terminated, truncated, info


class EarlyDoneMultiAgent(RoundRobinMultiAgent):
    """Two agents in turns (MockEnv(3) and MockEnv(5)): the episode ends as soon as the first
    agent is terminated, while the other is still running."""

    def __init__(self) -> None:
        super().__init__(num=2)
        self.envs = [MockEnv(3), MockEnv(5)]

    def step(self, action_dict):
        obs, rew, terminated, truncated, info = super().step(action_dict)
        terminated["__all__"] = len(self.terminateds) == len(self.envs) - 1
        return obs, rew, terminated, truncated, info


class FlexAgentsMultiAgent(_ChecksActors):
    """Agents come and go: each step may spawn a new agent (it observes at once) and may kill
    one (terminated in that step). Each agent is a MockEnv(25). env_config["max_agents"]: the
    most agents an episode may have (10000; an episode's state holds their spaces)."""

    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        self.possible_agents = list(range((config or {}).get("max_agents", 10000)))
        self.agents: list = []
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.Discrete(2)
        self.rng = np.random.default_rng((config or {}).get("seed", 0))
        self.spawned: list = []
        self.killed: list = []

    def _spawn(self) -> int:
        agent_id = self.next_id
        assert agent_id < len(self.possible_agents), "more agents than max_agents"
        self.next_id += 1
        self.envs[agent_id] = MockEnv(25)
        self.agents.append(agent_id)
        self.spawned.append(agent_id)
        return agent_id

    def reset(self, *, seed=None, options=None):
        self.envs: dict = {}
        self.agents.clear()
        self.next_id = 0
        self.terminateds: set = set()
        agent_id = self._spawn()
        obs, info = self.envs[agent_id].reset()
        self._reset_checks({agent_id: obs})
        return {agent_id: obs}, {agent_id: info}

    def step(self, action_dict):
        self._check_actors(action_dict)
        obs, rew, terminated, truncated, info = {}, {}, {}, {}, {}
        for i, action in action_dict.items():
            obs[i], rew[i], terminated[i], truncated[i], info[i] = self.envs[i].step(action)
            if terminated[i]:
                self.terminateds.add(i)
        if self.rng.random() > 0.75 and action_dict:
            new = self._spawn()
            self.envs[new].reset()
            obs[new], rew[new], terminated[new], truncated[new], info[new] = self.envs[new].step(0)
        if len(self.envs) > 1 and self.rng.random() > 0.25:
            victim = int(self.rng.choice(list(self.envs)))
            del self.envs[victim]
            self.agents.remove(victim)
            self.killed.append(victim)
            terminated[victim] = True
            self.terminateds.add(victim)
        terminated["__all__"] = all(agent in self.terminateds for agent in self.envs)
        truncated["__all__"] = False
        self._gone |= {agent for agent, done in terminated.items() if done}
        self._observed(obs, terminated, truncated)
        return obs, rew, terminated, truncated, info


class SometimesZeroAgentsMultiAgent(_ChecksActors):
    """`num` agents (MockEnv(25) each); at reset and after every step a random subset of the
    running agents observes (and acts next), possibly none. Rewards come for random agents,
    observing or not; all agents end after 25 steps of their own (an agent is terminated in
    the step it acted for the 25th time, without an observation)."""

    def __init__(self, num: int = 3, seed: int = 0) -> None:
        super().__init__()
        self.agents = self.possible_agents = list(range(num))
        self.envs = [MockEnv(25) for _ in range(num)]
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.Discrete(2)
        self.rng = np.random.default_rng(seed)
        self.observing: list[int] = []

    def _random_agents(self) -> set:
        count = int(self.rng.integers(len(self.envs)))
        chosen = self.rng.permutation(len(self.envs))[:count]
        return {int(agent) for agent in chosen if agent not in self.terminateds}

    def reset(self, *, seed=None, options=None):
        self.terminateds: set = set()
        self.pending_obs: dict = {}
        self.pending_info: dict = {}
        obs, infos = {}, {}
        for env in self.envs:
            env.reset()
        for agent in self._random_agents():
            obs[agent], infos[agent] = 0, {}
        self.observing.append(len(obs))
        self._reset_checks(obs)
        return obs, infos

    def step(self, action_dict):
        self._check_actors(action_dict)
        rew, terminated, truncated = {}, {}, {}
        for agent, action in action_dict.items():
            (
                self.pending_obs[agent],
                rew[agent],
                terminated[agent],
                truncated[agent],
                self.pending_info[agent],
            ) = self.envs[agent].step(action)
            # MockEnv's last step is terminated and truncated; an agent that is truncated
            # needs a last observation (RLlib's MultiAgentEpisode raises without one), and
            # this env gives none, so the end is a termination only.
            truncated[agent] = False
            if terminated[agent]:
                self.terminateds.add(agent)
        terminated["__all__"] = len(self.terminateds) == len(self.envs)
        truncated["__all__"] = False
        obs, infos = {}, {}
        for agent in self._random_agents():
            if agent not in self.pending_obs:
                self.pending_obs[agent] = 0
                self.pending_info[agent] = {}
            obs[agent] = self.pending_obs.pop(agent)
            infos[agent] = self.pending_info.pop(agent)
        for agent in self._random_agents():
            rew[agent] = float(self.rng.random())
        self.observing.append(len(obs))
        self._observed(obs, terminated, truncated)
        return obs, rew, terminated, truncated, infos
