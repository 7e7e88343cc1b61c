"""`CliffWalkingWallEnv`: Gymnasium's CliffWalking with a wall where the cliff was (RLlib's
example env)."""

from __future__ import annotations

import gymnasium as gym
from gymnasium import spaces

ACTION_UP = 0
ACTION_RIGHT = 1
ACTION_DOWN = 2
ACTION_LEFT = 3

START = 36
GOAL = 47


class CliffWalkingWallEnv(gym.Env):
    """A 4x12 grid; observation the cell index (row * 12 + column). Start at 36 (bottom left),
    goal at 47 (bottom right); cells 37..46 are wall, and a move into a wall or off the grid
    leaves the agent where it is. Actions: 0 up, 1 right, 2 down, 3 left. Reward -1 per step,
    +10 on reaching the goal, which terminates the episode."""

    def __init__(self, seed: int = 42) -> None:
        self.observation_space = spaces.Discrete(48)
        self.action_space = spaces.Discrete(4)
        self.observation_space.seed(seed)
        self.action_space.seed(seed)
        self.position = START

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.position = START
        return self.position, {}

    def step(self, action):
        row, column = divmod(self.position, 12)
        if action == ACTION_UP:
            row = max(row - 1, 0)
        elif action == ACTION_RIGHT:
            if self.position != START:  # the wall is right of the start
                column = min(column + 1, 11)
        elif action == ACTION_DOWN:
            if self.position < 25 or self.position > 34:  # the wall is below 25..34
                row = min(row + 1, 3)
        elif action == ACTION_LEFT:
            if self.position != GOAL:  # the wall is left of the goal
                column = max(column - 1, 0)
        else:
            raise ValueError(f"action {action} not in {self.action_space}")
        self.position = row * 12 + column
        done = self.position == GOAL
        return self.position, -1 if not done else 10, done, False, {}
