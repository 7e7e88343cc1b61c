"""`SixRoomEnv`: a six-room grid world (RLlib's example env, also the base of its hierarchical
example); `HierarchicalSixRoomEnv`: its multi-agent (hierarchical) variant, importable but refused
when constructed."""

from __future__ import annotations

import gymnasium as gym

from trainer.examples.envs.classes._multi_agent_unsupported import multi_agent_placeholder

# "W": wall, "G": goal, " ": free. The agent starts at (1, 1).
MAPS = {
    "small": [
        "WWWWWWWWWWWWW",
        "W   W   W   W",
        "W       W   W",
        "W   W       W",
        "W WWWW WWWW W",
        "W   W   W   W",
        "W   W       W",
        "W       W  GW",
        "WWWWWWWWWWWWW",
    ],
    "medium": [
        "WWWWWWWWWWWWWWWWWWW",
        "W     W     W     W",
        "W           W     W",
        "W     W           W",
        "W WWWWWWW WWWWWWW W",
        "W     W     W     W",
        "W     W           W",
        "W           W    GW",
        "WWWWWWWWWWWWWWWWWWW",
    ],
    "large": [
        "WWWWWWWWWWWWWWWWWWWWWWWWW",
        "W       W       W       W",
        "W       W       W       W",
        "W               W       W",
        "W       W               W",
        "W       W       W       W",
        "WW WWWWWWWWW WWWWWWWWWW W",
        "W       W       W       W",
        "W       W               W",
        "W       W       W       W",
        "W               W       W",
        "W       W       W      GW",
        "WWWWWWWWWWWWWWWWWWWWWWWWW",
    ],
}


def _get_next_pos(action: int, pos: tuple[int, int]) -> tuple[int, int]:
    """Action 0: up (row - 1), 1: down, 2: left (column - 1), 3: right."""
    row, column = pos
    if action == 0:
        return row - 1, column
    if action == 1:
        return row + 1, column
    if action == 2:
        return row, column - 1
    return row, column + 1


class SixRoomEnv(gym.Env):
    """Six rooms (2x3) joined by doors; start in the upper-left room, reach the goal "G".
    Observation: the cell index (row * width + column); actions 0 up, 1 down, 2 left, 3 right
    (moves into walls are ignored). Reward -0.01 per step, +10 on reaching the goal (terminated);
    truncated after `time_limit` steps (default 50).

    `env_config`: `map` ("small", the default, "medium" or "large") or `custom_map` (a list of
    equal-length strings of "W", "G" and " "), `time_limit`.
    """

    def __init__(self, config: dict | None = None):
        super().__init__()
        config = config or {}
        self.map = config.get("custom_map", MAPS.get(config.get("map", "small"), MAPS["small"]))
        self.time_limit = config.get("time_limit", 50)
        self.observation_space = gym.spaces.Discrete(len(self.map) * len(self.map[0]))
        self.action_space = gym.spaces.Discrete(4)
        self.reset()

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._agent_pos = (1, 1)
        self._ts = 0
        return self._agent_discrete_pos, {}

    def step(self, action):
        next_pos = _get_next_pos(action, self._agent_pos)
        self._ts += 1
        if self.map[next_pos[0]][next_pos[1]] != "W":
            self._agent_pos = next_pos
        if self.map[self._agent_pos[0]][self._agent_pos[1]] == "G":
            return self._agent_discrete_pos, 10.0, True, False, {}
        return self._agent_discrete_pos, -0.01, False, self._ts >= self.time_limit, {}

    @property
    def _agent_discrete_pos(self) -> int:
        return self._agent_pos[0] * len(self.map[0]) + self._agent_pos[1]


HierarchicalSixRoomEnv = multi_agent_placeholder(
    "HierarchicalSixRoomEnv", "a high-level agent picking targets for low-level agents"
)
