"""RLlib's `MultiAgentEnv` (`ray.rllib.env.multi_agent_env`): an env hosting several agents.

Observations, rewards, terminateds, truncateds and infos are dicts keyed by agent id. Only the
agents with an observation in a `reset()` or `step()` result act in the next `step()` (agents
may act in turns); `terminateds["__all__"]` / `truncateds["__all__"]` end the episode for all.
An agent's spaces come from `observation_spaces` / `action_spaces` (dicts by agent id), or from
the older single `observation_space` / `action_space` (a `Dict` space keyed by agent id, or one
space every agent shares), through `get_observation_space(agent_id)` /
`get_action_space(agent_id)`, which subclasses may override.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.capabilities import OLD_API_STACK
from trainer.util.import_paths import resolve_import_path
from trainer.util.rllib_members import refuse

logger = logging.getLogger(__name__)

#: The key of `terminateds` / `truncateds` that ends the episode for every agent.
ALL_AGENTS = "__all__"
#: RLlib's key of the global state in a Dict observation space.
ENV_STATE = "state"

AgentID = Any
MultiAgentDict = dict[Any, Any]


#: The wrapper of `MultiAgentEnv.with_agent_groups()`: a subclass of `MultiAgentEnv`, so its
#: module imports this one, and this one names it by its import path.
AGENT_GROUPS_WRAPPER = "trainer.env.wrappers.group_agents_wrapper:GroupAgentsWrapper"


@refuse(
    "ray.rllib.env.multi_agent_env.MultiAgentEnv",
    OLD_API_STACK,
    "RLlib's old-stack BaseEnv; the new stack's EnvRunners step gymnasium and multi-agent "
    "envs themselves",
    "to_base_env",
)
class MultiAgentEnv(gym.Env):
    """An environment that hosts multiple independent agents (RLlib's base class).

    Subclasses set `agents` (the agents acting now; it may change during an episode) and
    `possible_agents` (every agent that may ever appear), and the spaces, and implement
    `reset(*, seed, options) -> (obs, infos)` and
    `step(action_dict) -> (obs, rewards, terminateds, truncateds, infos)`.
    """

    #: Each agent's spaces, by agent id (or override `get_observation_space` and
    #: `get_action_space`).
    observation_spaces: dict[AgentID, gym.Space] | None = None
    action_spaces: dict[AgentID, gym.Space] | None = None
    #: The agents acting now (may change during the env's lifetime, even within an episode).
    agents: list[AgentID] = []
    #: Every agent that may ever appear in the env (fixed for its lifetime).
    possible_agents: list[AgentID] = []
    #: RLlib's older form: one `Dict` space keyed by agent id, or one space for every agent.
    observation_space: gym.Space | None = None  # type: ignore[assignment]
    action_space: gym.Space | None = None  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        # RLlib's older API named the agents in `_agent_ids`.
        if not hasattr(self, "_agent_ids"):
            self._agent_ids: set = set()
        if not self.agents:
            self.agents = list(self._agent_ids)
        if not self.possible_agents:
            self.possible_agents = list(self.agents)

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        """Starts an episode: the observations and infos of the agents that act first.
        This base method only seeds `self.np_random` (as `gymnasium.Env.reset`)."""
        super().reset(seed=seed, options=options)
        return {}, {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        """Applies the actions of the agents that were asked to act; returns the next
        observations (of the agents to act next), rewards, terminateds and truncateds (with
        `"__all__"`) and infos, each a dict by agent id."""
        raise NotImplementedError(f"{type(self).__name__} must implement step(action_dict)")

    def render(self) -> Any:
        """Renders the env; does nothing unless a subclass overrides it."""
        return None

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """The observation space of `agent_id`."""
        if self.observation_spaces is not None:
            return self.observation_spaces[agent_id]
        space = self.observation_space
        if isinstance(space, gym.spaces.Dict) and agent_id in space.spaces:
            return space[agent_id]
        return space  # type: ignore[return-value]  # one space shared by every agent

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """The action space of `agent_id`."""
        if self.action_spaces is not None:
            return self.action_spaces[agent_id]
        space = self.action_space
        if isinstance(space, gym.spaces.Dict) and agent_id in space.spaces:
            return space[agent_id]
        return space  # type: ignore[return-value]  # one space shared by every agent

    @property
    def num_agents(self) -> int:
        """How many agents act now."""
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        """How many agents may ever appear."""
        return len(self.possible_agents)

    def with_agent_groups(
        self,
        groups: dict[str, list[AgentID]],
        obs_space: gym.Space | None = None,
        act_space: gym.Space | None = None,
    ) -> MultiAgentEnv:
        """This env with agents grouped: each group acts as one agent (its id the group's key)
        with `Tuple` observation and action spaces of its members' spaces, in the order listed
        (or `obs_space` / `act_space`, one space for every group). All members of a group must
        act at the same time. A group's reward is the sum of its members' rewards (each
        member's is in the group's info under `"_group_rewards"`); a group is terminated or
        truncated when all its members are. Agents in no group stay as they are."""
        wrapper = resolve_import_path(AGENT_GROUPS_WRAPPER)
        return wrapper(self, groups, obs_space, act_space)

    def get_agent_ids(self) -> set:
        """RLlib's older name of the agent ids (`possible_agents` now)."""
        if not isinstance(getattr(self, "_agent_ids", None), set):
            self._agent_ids = set(getattr(self, "_agent_ids", ()) or ())
        return self._agent_ids if self._agent_ids else set(self.agents)


EnvCreatorFn = Callable[[Any], gym.Env]


class SingleAgentEnvCopies(MultiAgentEnv):
    """The base of `make_multi_agent`'s classes: n independent copies of one single-agent env,
    agent i stepping copy i (the env in the subclass's `single_agent_env`)."""

    #: `(gymnasium id or creator,)`, set by `make_multi_agent` (a 1-tuple, so that a creator
    #: function is not bound as a method).
    single_agent_env: tuple[str | EnvCreatorFn, ...] = ()

    def __init__(self, config: dict | None = None):
        super().__init__()
        # A copy: `num_agents` is popped, and every sub-env of a vector needs the same
        # config again (an EnvContext stays one through deepcopy).
        config = {} if config is None else copy.deepcopy(config)
        num = config.pop("num_agents", 1)
        if len(self.single_agent_env) != 1:
            raise TypeError(
                f"{type(self).__name__}: build this class with make_multi_agent(env_id or "
                "creator), which names the single-agent env to copy"
            )
        (env_name_or_creator,) = self.single_agent_env
        if isinstance(env_name_or_creator, str):
            self.envs = [gym.make(env_name_or_creator) for _ in range(num)]
        else:
            self.envs = [env_name_or_creator(config) for _ in range(num)]
        self.terminateds: set[int] = set()
        self.truncateds: set[int] = set()
        # The agents terminated or truncated (`terminateds | truncateds`, kept as they end).
        self._ended: set[int] = set()
        self._env_of = dict(enumerate(self.envs))
        self.agent_observation_spaces: dict[int, gym.Space] = {
            i: env.observation_space for i, env in enumerate(self.envs)
        }
        self.observation_spaces = self.agent_observation_spaces
        self.action_spaces = {i: env.action_space for i, env in enumerate(self.envs)}
        self.agents = list(range(num))
        self.possible_agents = list(self.agents)

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.terminateds = set()
        self.truncateds = set()
        self._ended = set()
        obs: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        # As RLlib: every copy gets the same seed (so seeded copies start alike).
        for i, env in enumerate(self.envs):
            obs[i], infos[i] = env.reset(seed=seed, options=options)
            if not self.agent_observation_spaces[i].contains(obs[i]):
                logger.warning(
                    "make_multi_agent env: agent %s's reset observation %r is not in its "
                    "observation space %s",
                    i,
                    obs[i],
                    self.agent_observation_spaces[i],
                )
        return obs, infos

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        if len(action_dict) == 0:
            raise ValueError(
                "make_multi_agent env: step(action_dict={}) needs an action for at least "
                f"one agent (agents: {self.agents})"
            )
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        env_of = self._env_of
        for i, action in action_dict.items():
            env = env_of.get(i)  # (one lookup checks the id; numpy ints hash as ints)
            if env is None:
                raise KeyError(
                    f"make_multi_agent env: step() got an action for agent {i!r}; the "
                    f"agents are 0..{len(self.envs) - 1}"
                )
            obs[i], rewards[i], terminated, truncated, infos[i] = env.step(action)
            terminateds[i] = terminated
            truncateds[i] = truncated
            if terminated:
                self.terminateds.add(int(i))
            if truncated:
                self.truncateds.add(int(i))
            if terminated or truncated:
                self._ended.add(int(i))
        num = len(self.envs)
        terminateds[ALL_AGENTS] = len(self._ended) == num
        truncateds[ALL_AGENTS] = len(self.truncateds) == num
        return obs, rewards, terminateds, truncateds, infos

    def render(self) -> Any:
        """The copies' frames side by side (on top of each other for wide frames)."""
        frames: list[Any] = [env.render() for env in self.envs]
        axis = 0 if frames[0].shape[1] > frames[0].shape[0] else 1
        return np.concatenate(frames, axis=axis)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def make_multi_agent(env_name_or_creator: str | EnvCreatorFn) -> type[SingleAgentEnvCopies]:
    """A `MultiAgentEnv` class of n independent copies of a single-agent env (RLlib's).

    `env_name_or_creator` is a gymnasium id (each copy made with `gymnasium.make(id)`) or a
    callable `(env_config) -> gymnasium.Env`. The class is built as `cls(config)`: `config`'s
    `"num_agents"` (default 1) is the number of copies, and the rest of `config` goes to the
    creator (a gymnasium id gets no arguments). Agent ids are 0..n-1; agent i steps copy i.
    An agent that terminates or truncates stops acting; `"__all__"` of terminateds is True once
    every agent is terminated or truncated, of truncateds once every agent is truncated.
    """

    class MultiEnv(SingleAgentEnvCopies):
        single_agent_env = (env_name_or_creator,)

    return MultiEnv
