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

from typing import Any

import gymnasium as gym

#: The key of `terminateds` / `truncateds` that ends the episode for every agent.
ALL_AGENTS = "__all__"
#: RLlib's key of the global state in a Dict observation space.
ENV_STATE = "state"

AgentID = Any
MultiAgentDict = dict[Any, Any]


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

    def get_agent_ids(self) -> set:
        """RLlib's older name of the agent ids (`possible_agents` now)."""
        if not isinstance(getattr(self, "_agent_ids", None), set):
            self._agent_ids = set(getattr(self, "_agent_ids", ()) or ())
        return self._agent_ids if self._agent_ids else set(self.agents)
