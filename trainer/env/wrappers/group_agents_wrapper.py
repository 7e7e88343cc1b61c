"""RLlib's `GroupAgentsWrapper` (`ray.rllib.env.wrappers.group_agents_wrapper`): a
`MultiAgentEnv` whose agents are grouped, each group acting as one agent with `Tuple` spaces.
Built by `MultiAgentEnv.with_agent_groups(groups, obs_space, act_space)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from trainer.env.multi_agent_env import AgentID, MultiAgentDict, MultiAgentEnv

#: The info key of a group's list of its members' rewards (in the group's order).
GROUP_REWARDS = "_group_rewards"
#: The info key of a group's list of its members' infos (in the group's order).
GROUP_INFO = "_group_info"


class GroupAgentsWrapper(MultiAgentEnv):
    """Wraps a `MultiAgentEnv` so that each group of its agents acts as one agent.

    A group's observation and action are tuples of its members' (in the order the group lists
    them); all members must be in the wrapped env's output together. Rewards of a group are
    summed (the members' rewards are kept in the group's info under `GROUP_REWARDS`, their infos
    under `GROUP_INFO`); a group is terminated / truncated when all its members are. Agents in
    no group pass through unchanged, as does `"__all__"`.
    """

    def __init__(
        self,
        env: MultiAgentEnv,
        groups: dict[str, list[AgentID]],
        obs_space: gym.Space | None = None,
        act_space: gym.Space | None = None,
    ):
        """`groups`: group id -> the ids of its members (an agent may be in one group only).
        `obs_space` / `act_space`: one space for every group (RLlib's older form), else each
        group's `Tuple` of its members' spaces."""
        super().__init__()
        self.env = env
        self.groups = groups
        self.agent_id_to_group: dict[AgentID, str] = {}
        for group_id, agent_ids in groups.items():
            if not agent_ids:
                raise ValueError(f"with_agent_groups: group {group_id!r} has no agents")
            for agent_id in agent_ids:
                if agent_id in self.agent_id_to_group:
                    raise ValueError(
                        f"with_agent_groups: agent {agent_id!r} is in groups "
                        f"{self.agent_id_to_group[agent_id]!r} and {group_id!r}; an agent may "
                        "be in one group only"
                    )
                self.agent_id_to_group[agent_id] = group_id
        inner_agents = list(
            env.possible_agents or env.agents or sorted(env.get_agent_ids(), key=str)
        )
        ungrouped = [a for a in inner_agents if a not in self.agent_id_to_group]
        self.possible_agents = list(groups) + ungrouped
        self.agents = list(self.possible_agents)
        self._agent_ids = set(self.possible_agents)
        if obs_space is not None:
            self.observation_space = obs_space
        else:
            self.observation_spaces = self._spaces(env.get_observation_space, ungrouped)
        if act_space is not None:
            self.action_space = act_space
        else:
            self.action_spaces = self._spaces(env.get_action_space, ungrouped)

    def _spaces(
        self, space_of: Callable[[AgentID], gym.Space], ungrouped: list[AgentID]
    ) -> dict[AgentID, gym.Space]:
        """Each group's Tuple of its members' spaces, and each ungrouped agent's own space."""
        spaces: dict[AgentID, gym.Space] = {
            group_id: gym.spaces.Tuple([space_of(a) for a in members])
            for group_id, members in self.groups.items()
        }
        spaces.update({a: space_of(a) for a in ungrouped})
        return spaces

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return (
            self._group_items(obs, "observations"),
            self._group_items(infos, "infos", lambda values: {GROUP_INFO: values}),
        )

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        obs, rewards, terminateds, truncateds, infos = self.env.step(
            self._ungroup_items(action_dict)
        )
        obs = self._group_items(obs, "observations")
        rewards = self._group_items(rewards, "rewards")
        terminateds = self._group_items(terminateds, "terminateds", all)
        truncateds = self._group_items(truncateds, "truncateds", all)
        infos = self._group_items(infos, "infos", lambda values: {GROUP_INFO: values})
        # A group's reward is the sum; its members' rewards stay readable in its info.
        for agent_id, reward in rewards.items():
            if agent_id in self.groups:
                rewards[agent_id] = sum(reward)
                infos.setdefault(agent_id, {})[GROUP_REWARDS] = reward
        return obs, rewards, terminateds, truncateds, infos

    def close(self) -> None:
        self.env.close()

    def render(self) -> Any:
        return self.env.render()

    def _ungroup_items(self, items: MultiAgentDict) -> MultiAgentDict:
        """A group's tuple value spread over its members (ungrouped agents unchanged)."""
        out: MultiAgentDict = {}
        for agent_id, value in items.items():
            members = self.groups.get(agent_id)
            if members is None:
                out[agent_id] = value
                continue
            if len(value) != len(members):
                raise ValueError(
                    f"GroupAgentsWrapper.step(): group {agent_id!r} has {len(members)} agents "
                    f"({members}) but its action {value!r} has {len(value)} parts"
                )
            out.update(zip(members, value, strict=True))
        return out

    def _group_items(
        self,
        items: MultiAgentDict,
        what: str,
        aggregate: Callable[[list], Any] = list,
    ) -> MultiAgentDict:
        """Members' values collected per group (in the group's order) and aggregated."""
        grouped: MultiAgentDict = {}
        for agent_id, item in items.items():
            group_id = self.agent_id_to_group.get(agent_id)
            if group_id is None:
                grouped[agent_id] = item
                continue
            if group_id in grouped:
                continue
            missing = [a for a in self.groups[group_id] if a not in items]
            if missing:
                raise ValueError(
                    f"GroupAgentsWrapper: the wrapped env's {what} have agent(s) "
                    f"{[a for a in self.groups[group_id] if a in items]} of group {group_id!r} "
                    f"but not {missing}: all agents of a group must be in its output together "
                    f"(got keys {list(items)})"
                )
            grouped[group_id] = aggregate([items[a] for a in self.groups[group_id]])
        return grouped
