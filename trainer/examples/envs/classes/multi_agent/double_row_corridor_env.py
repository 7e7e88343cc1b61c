"""RLlib's `DoubleRowCorridorEnv`: two agents walk a two-row corridor to each other's start."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from trainer.env.multi_agent_env import AgentID, MultiAgentDict, MultiAgentEnv


class DoubleRowCorridorEnv(MultiAgentEnv):
    """A 2 x `length` grid (`config["length"]`, default 15). `"agent_0"` starts at row 0,
    column 0, and its goal is row 0, last column; `"agent_1"` starts at row 1, last column, and
    its goal is row 1, column 0. Actions (`Discrete(4)`): up, down, left, right. Every step
    costs -0.1 for each agent not yet at its goal; reaching it pays +10 and ends that agent. The
    first time both stand on the same field (both still active) each gets +5. Observations: the
    agent's own `[row, column]` (int32; both agents share one space, returned by
    `get_observation_space`). The episode ends when both reached their goals."""

    def __init__(self, config: dict | None = None):
        super().__init__()
        config = config or {}
        self.length = config.get("length", 15)
        self.collided = False
        self.agents = self.possible_agents = ["agent_0", "agent_1"]
        self.terminateds: dict[AgentID, bool] = {}
        # One observation and one action space for both agents.
        self._obs_spaces = gym.spaces.Box(0.0, self.length - 1, shape=(2,), dtype=np.int32)
        self._act_spaces = gym.spaces.Discrete(4)
        self.agent_pos: dict[AgentID, list[int]] = {}
        self.goals: dict[AgentID, list[int]] = {}

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.agent_pos = {"agent_0": [0, 0], "agent_1": [1, self.length - 1]}
        self.goals = {"agent_0": [0, self.length - 1], "agent_1": [1, 0]}
        self.terminateds = {agent_id: False for agent_id in self.agent_pos}
        self.collided = False
        return self._get_obs(), {}

    def step(  # type: ignore[override]
        self, action_dict: MultiAgentDict
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        rewards = {agent_id: -0.1 for agent_id in self.agent_pos if not self.terminateds[agent_id]}
        for agent_id, action in action_dict.items():
            row, col = self.agent_pos[agent_id]
            if action == 0 and row > 0:  # up
                row -= 1
            elif action == 1 and row < 1:  # down
                row += 1
            elif action == 2 and col > 0:  # left
                col -= 1
            elif action == 3 and col < self.length - 1:  # right
                col += 1
            self.agent_pos[agent_id] = [row, col]
        obs = self._get_obs()
        # A collision counts once, and only while both agents are active.
        if (
            not any(self.terminateds.values())
            and self.agent_pos["agent_0"] == self.agent_pos["agent_1"]
            and not self.collided
        ):
            rewards["agent_0"] += 5
            rewards["agent_1"] += 5
            self.collided = True
        for agent_id in self.agent_pos:
            if self.agent_pos[agent_id] == self.goals[agent_id] and not self.terminateds[agent_id]:
                rewards[agent_id] += 10
                self.terminateds[agent_id] = True
        terminateds: MultiAgentDict = dict(self.terminateds)
        terminateds["__all__"] = all(self.terminateds.values())
        return obs, rewards, terminateds, {}, {}

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        return self._obs_spaces

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        return self._act_spaces

    def _get_obs(self) -> MultiAgentDict:
        """The positions of the agents still active."""
        return {
            agent_id: np.array(pos, dtype=np.int32)
            for agent_id, pos in self.agent_pos.items()
            if not self.terminateds[agent_id]
        }
