"""`WindyMazeEnv`: a maze where the wind decides the direction of each move (RLlib's example env);
`HierarchicalWindyMazeEnv`: its hierarchical multi-agent variant."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete, Tuple

from trainer.env.multi_agent_env import MultiAgentDict, MultiAgentEnv

logger = logging.getLogger(__name__)

# Traverse the maze from S to F ("#": wall).
MAP_DATA = """
#########
#S      #
####### #
      # #
      # #
####### #
#F      #
#########"""

# Wind directions: 0 north, 1 east, 2 south, 3 west (as (row, column) offsets).
_WIND_OFFSETS = ((-1, 0), (0, 1), (1, 0), (0, -1))


class WindyMazeEnv(gym.Env):
    """Observation: `(position as float32 [row, column], wind direction 0..3)`. Actions: 0 stay,
    1 move one cell in the wind's direction (not into walls). The wind changes each step. Reward
    100 on reaching F (terminated), else 0; truncated (and, as in RLlib, also terminated) after
    200 steps.

    RLlib's version returns the observation as nested lists; this one returns the tuple its
    Tuple space holds.
    """

    def __init__(self, env_config: dict | None = None):
        self.map = [line for line in MAP_DATA.split("\n") if line]
        self.x_dim = len(self.map)
        self.y_dim = len(self.map[0])
        for x in range(self.x_dim):
            for y in range(self.y_dim):
                if self.map[x][y] == "S":
                    self.start_pos = (x, y)
                elif self.map[x][y] == "F":
                    self.end_pos = (x, y)
        logger.info(
            "Loaded map %d x %d, start %s, end %s",
            self.x_dim,
            self.y_dim,
            self.start_pos,
            self.end_pos,
        )
        self.observation_space = Tuple([Box(0, 100, shape=(2,)), Discrete(4)])
        self.action_space = Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.wind_direction = int(self.np_random.integers(4))
        self.pos = self.start_pos
        self.num_steps = 0
        return self._observation(), {}

    def step(self, action):
        if action == 1:
            self.pos = self._get_new_pos(self.pos, self.wind_direction)
        self.num_steps += 1
        self.wind_direction = int(self.np_random.integers(4))
        at_goal = self.pos == self.end_pos
        truncated = self.num_steps >= 200
        return self._observation(), 100 * int(at_goal), at_goal or truncated, truncated, {}

    def _observation(self) -> tuple:
        return np.array(self.pos, dtype=np.float32), self.wind_direction

    def _get_new_pos(self, pos: tuple[int, int], direction: int) -> tuple[int, int]:
        d_row, d_column = _WIND_OFFSETS[direction]
        new_pos = (pos[0] + d_row, pos[1] + d_column)
        if (
            0 <= new_pos[0] < self.x_dim
            and 0 <= new_pos[1] < self.y_dim
            and self.map[new_pos[0]][new_pos[1]] != "#"
        ):
            return new_pos
        return pos


_StepResult = tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]


class HierarchicalWindyMazeEnv(MultiAgentEnv):
    """`WindyMazeEnv` played by a high-level agent that sets goals (a wind direction 0..3) and a
    new low-level agent per goal (`"low_level_1"`, `"low_level_2"`, ...; agent ids are not
    reused), which moves for up to 25 steps observing `[observation, goal]`: +1 when it moves
    in the goal's direction, -1 when it moves elsewhere, 0 when it stays. Then (terminated) the
    high-level agent acts again; the flat env's end pays the high-level agent its reward.
    As in RLlib, the env declares no spaces and no agents (its agent ids are made as it goes).
    """

    def __init__(self, env_config: dict | None = None):
        super().__init__()
        self.flat_env = WindyMazeEnv(env_config)

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.cur_obs, infos = self.flat_env.reset(seed=seed)
        self.current_goal: int | None = None
        self.steps_remaining_at_level = 0
        self.num_high_level_steps = 0
        # A new low-level agent id per high-level step: agent ids are never reused.
        self.low_level_agent_id = f"low_level_{self.num_high_level_steps}"
        return {"high_level_agent": self.cur_obs}, {"high_level_agent": infos}

    def step(self, action_dict: MultiAgentDict) -> _StepResult:  # type: ignore[override]
        if len(action_dict) != 1:
            raise ValueError(
                f"HierarchicalWindyMazeEnv.step({action_dict!r}): one agent acts at a time"
            )
        if "high_level_agent" in action_dict:
            return self._high_level_step(action_dict["high_level_agent"])
        return self._low_level_step(next(iter(action_dict.values())))

    def _high_level_step(self, action: int) -> _StepResult:
        logger.debug("High level agent sets goal")
        self.current_goal = action
        self.steps_remaining_at_level = 25
        self.num_high_level_steps += 1
        self.low_level_agent_id = f"low_level_{self.num_high_level_steps}"
        obs = {self.low_level_agent_id: [self.cur_obs, self.current_goal]}
        rewards = {self.low_level_agent_id: 0}
        return obs, rewards, {"__all__": False}, {"__all__": False}, {}

    def _low_level_step(self, action: int) -> _StepResult:
        logger.debug("Low level agent step %s", action)
        assert self.current_goal is not None, "the high-level agent acts first"
        self.steps_remaining_at_level -= 1
        cur_pos = (int(self.cur_obs[0][0]), int(self.cur_obs[0][1]))
        goal_pos = self.flat_env._get_new_pos(cur_pos, self.current_goal)
        f_obs, f_rew, f_terminated, f_truncated, info = self.flat_env.step(action)
        new_pos = (int(f_obs[0][0]), int(f_obs[0][1]))
        self.cur_obs = f_obs
        agent = self.low_level_agent_id
        obs: MultiAgentDict = {agent: [f_obs, self.current_goal]}
        if new_pos == cur_pos:
            rewards: MultiAgentDict = {agent: 0}
        else:
            rewards = {agent: 1 if new_pos == goal_pos else -1}
        terminateds: MultiAgentDict = {"__all__": False}
        truncateds: MultiAgentDict = {"__all__": False}
        if f_terminated or f_truncated:
            terminateds["__all__"] = f_terminated
            truncateds["__all__"] = f_truncated
            logger.debug("high level final reward %s", f_rew)
            rewards["high_level_agent"] = f_rew
            obs["high_level_agent"] = f_obs
        elif self.steps_remaining_at_level == 0:
            terminateds[agent] = True
            truncateds[agent] = False
            rewards["high_level_agent"] = 0
            obs["high_level_agent"] = f_obs
        return obs, rewards, terminateds, truncateds, {agent: info}
