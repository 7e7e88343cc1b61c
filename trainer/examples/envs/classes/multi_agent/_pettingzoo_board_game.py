"""The base of RLlib's PettingZoo board-game examples (`MultiAgentConnect4`,
`MultiAgentChess`): a two-player PettingZoo AEC game as a `MultiAgentEnv` (players in turns)."""

from __future__ import annotations

import copy
from typing import Any

from trainer.env.multi_agent_env import MultiAgentDict, MultiAgentEnv

_StepResult = tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]


def import_pettingzoo_game(module: str, name: str) -> Any:
    """`module.name` from PettingZoo, or an ImportError naming the package to install."""
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"{module}.{name} needs the `{error.name}` package, which is not installed: "
            f"pip install {error.name}",
            name=error.name,
        ) from error


class PettingZooBoardGame(MultiAgentEnv):
    """A PettingZoo AEC game whose agents share one observation and one action space (set as
    `observation_space` / `action_space`). Only the player to move observes (a Dict of the board
    `"observation"` and the legal moves' `"action_mask"`); when the game ends, every player's
    last data is returned and `"__all__"` of both terminateds and truncateds is True (as
    RLlib's)."""

    def __init__(self, config: dict | None, env: Any):
        super().__init__()
        self.env = env
        self.env.reset()
        self.config = config
        self.agents = list(self.env.agents)
        self.possible_agents = list(self.env.possible_agents)
        self._agent_ids = set(self.possible_agents)
        # One space for every player (PettingZoo's board games give them all the same).
        self.observation_space = self.env.observation_space(self.env.agents[0])
        self.action_space = self.env.action_space(self.env.agents[0])
        for agent in self.env.agents:
            if self.env.observation_space(agent) != self.observation_space:
                raise ValueError(
                    f"{type(self).__name__}: agent {agent!r}'s observation space "
                    f"{self.env.observation_space(agent)} differs from {self.observation_space}; "
                    "all agents must share one (SuperSuit's pad_observations can pad them)"
                )
            if self.env.action_space(agent) != self.action_space:
                raise ValueError(
                    f"{type(self).__name__}: agent {agent!r}'s action space "
                    f"{self.env.action_space(agent)} differs from {self.action_space}; all "
                    "agents must share one (SuperSuit's pad_action_space can pad them)"
                )

    def observe(self) -> MultiAgentDict:
        """The acting player's observation and, under `"state"`, a copy of the game."""
        acting = self.env.agent_selection
        return {acting: self.env.observe(acting), "state": self.get_state()}

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.env.reset(seed=seed, options=options)
        self._after_reset()
        acting = self.env.agent_selection
        return {acting: self.env.observe(acting)}, {acting: {}}

    def _after_reset(self) -> None:
        """Hook for a game's own start position."""

    def step(self, action: Any) -> _StepResult:  # type: ignore[override]
        # As RLlib's: a dict by player, or the acting player's bare action.
        if isinstance(action, dict):
            self.env.step(action[self.env.agent_selection])
        else:
            self.env.step(action)
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        while self.env.agents:
            agent_obs, reward, terminated, truncated, info = self.env.last()
            agent_id = self.env.agent_selection
            obs[agent_id] = agent_obs
            rewards[agent_id] = reward
            terminateds[agent_id] = terminated
            truncateds[agent_id] = truncated
            infos[agent_id] = info
            game_over = bool(self.env.terminations[agent_id])
            terminateds["__all__"] = truncateds["__all__"] = game_over
            if not game_over:
                break
            self.env.step(None)
        return obs, rewards, terminateds, truncateds, infos

    def close(self) -> None:
        self.env.close()

    def render(self) -> Any:
        return self.env.render()

    @property
    def agent_selection(self) -> Any:
        """The player to move."""
        return self.env.agent_selection

    @property
    def get_sub_environments(self) -> Any:
        """The unwrapped PettingZoo env (a property, as in RLlib)."""
        return self.env.unwrapped

    def get_state(self) -> Any:
        """A deep copy of the PettingZoo game."""
        return copy.deepcopy(self.env)

    def set_state(self, state: Any) -> Any:
        """Continues from a copy of `state` (from `get_state`); returns the acting player's
        observation."""
        self.env = copy.deepcopy(state)
        return self.env.observe(self.env.agent_selection)
