"""`SixRoomEnv`: a six-room grid world (RLlib's example env, also the base of its hierarchical
example); `HierarchicalSixRoomEnv`: its hierarchical multi-agent variant."""

from __future__ import annotations

import gymnasium as gym

from trainer.env.multi_agent_env import MultiAgentDict, MultiAgentEnv

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


_StepResult = tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]


class HierarchicalSixRoomEnv(MultiAgentEnv):
    """`SixRoomEnv` played by a high-level agent and `num_low_level_agents` (3) low-level agents.

    The high-level agent (`"high_level_agent"`, observing the position) picks a target field and
    one low-level agent (action `(target, i)`); it is paid `distance / diagonal - 1` (a target
    near the position costs most). Then `"low_level_agent_i"` moves (observing `(position,
    target)`, actions up/down/left/right; -0.01 a step) until it reaches the target (+1 for both
    agents), the goal (+10 for the high-level agent, +1 for the low-level agent if the goal was
    its target; the episode ends) or `max_steps_low_level` (15) moves (-0.01 for the high-level
    agent); then the high-level agent acts again. After `time_limit` (50) env steps the episode
    is terminated. `config`: `map` ("small", "medium", "large") or `custom_map`,
    `max_steps_low_level`, `time_limit`, `num_low_level_agents`.
    """

    def __init__(self, config: dict | None = None):
        super().__init__()
        config = config or {}
        self.map = config.get("custom_map", MAPS.get(config.get("map", "small"), MAPS["small"]))
        self.max_steps_low_level = config.get("max_steps_low_level", 15)
        self.time_limit = config.get("time_limit", 50)
        self.num_low_level_agents = config.get("num_low_level_agents", 3)
        low_level_agents = [f"low_level_agent_{i}" for i in range(self.num_low_level_agents)]
        self.agents = self.possible_agents = ["high_level_agent", *low_level_agents]
        position_space = gym.spaces.Discrete(len(self.map) * len(self.map[0]))
        # Low-level agents see where they are and where the high-level agent sent them.
        self.observation_spaces = {
            "high_level_agent": position_space,
            **{a: gym.spaces.Tuple((position_space, position_space)) for a in low_level_agents},
        }
        self.action_spaces = {
            # The target field, and the low-level agent to get there.
            "high_level_agent": gym.spaces.Tuple(
                (position_space, gym.spaces.Discrete(self.num_low_level_agents))
            ),
            **{a: gym.spaces.Discrete(4) for a in low_level_agents},
        }
        self.reset()

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self._agent_pos = (1, 1)
        self._low_level_steps = 0
        self._high_level_action: tuple | None = None
        self._num_targets_reached = 0
        self._ts = 0
        return {"high_level_agent": self._agent_discrete_pos}, {}

    def step(self, action_dict: MultiAgentDict) -> _StepResult:  # type: ignore[override]
        self._ts += 1
        terminateds = {"__all__": self._ts >= self.time_limit}
        truncateds = {"__all__": False}
        if "high_level_agent" in action_dict:
            # A new target and low-level agent; the position does not change this step.
            self._high_level_action = action_dict["high_level_agent"]
            target, index = self._high_level_action
            self._low_level_steps = 0
            diagonal = (len(self.map) ** 2 + len(self.map[0]) ** 2) ** 0.5
            penalty = self.eucl_dist(self._agent_discrete_pos, target, self.map) / diagonal - 1.0
            return (
                {f"low_level_agent_{index}": (self._agent_discrete_pos, target)},
                {"high_level_agent": penalty},
                terminateds,
                truncateds,
                {},
            )
        if len(action_dict) != 1 or self._high_level_action is None:
            raise ValueError(
                f"HierarchicalSixRoomEnv.step({action_dict!r}): after the high-level agent's "
                "action, exactly the low-level agent it picked acts"
            )
        self._low_level_steps += 1
        target, index = self._high_level_action
        low_level_agent = f"low_level_agent_{index}"
        next_pos = _get_next_pos(action_dict[low_level_agent], self._agent_pos)
        if self.map[next_pos[0]][next_pos[1]] != "W":  # a wall: the move is ignored
            self._agent_pos = next_pos
        high_level_obs = {"high_level_agent": self._agent_discrete_pos}
        if self.map[self._agent_pos[0]][self._agent_pos[1]] == "G":
            rewards = {
                "high_level_agent": 10.0,
                low_level_agent: float(self._agent_discrete_pos == target),
            }
            terminateds["__all__"] = True
            return high_level_obs, rewards, terminateds, truncateds, {}
        if self._agent_discrete_pos == target:  # back to the high-level agent
            self._num_targets_reached += 1
            rewards = {"high_level_agent": 1.0, low_level_agent: 1.0}
            return high_level_obs, rewards, terminateds, truncateds, {}
        rewards = {low_level_agent: -0.01}
        if self._low_level_steps >= self.max_steps_low_level:  # out of time: back up
            rewards["high_level_agent"] = -0.01
            return high_level_obs, rewards, terminateds, truncateds, {}
        return (
            {low_level_agent: (self._agent_discrete_pos, target)},
            rewards,
            terminateds,
            truncateds,
            {},
        )

    @property
    def _agent_discrete_pos(self) -> int:
        return self._agent_pos[0] * len(self.map[0]) + self._agent_pos[1]

    @staticmethod
    def eucl_dist(pos1: int, pos2: int, map: list[str]) -> float:
        """RLlib's distance of two field indices (it splits both by the map's sizes as given)."""
        x1, y1 = pos1 % len(map[0]), pos1 // len(map)
        x2, y2 = pos2 % len(map[0]), pos2 // len(map)
        return float(((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5)
