"""`WindyMazeEnv`: a maze where the wind decides the direction of each move (RLlib's example env);
`HierarchicalWindyMazeEnv`: its hierarchical multi-agent variant, importable but refused when
constructed."""

from __future__ import annotations

import logging

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Discrete, Tuple

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

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


HierarchicalWindyMazeEnv = multi_agent_placeholder(
    "HierarchicalWindyMazeEnv", "a high-level agent setting goals for low-level agents"
)
