"""RLlib's `TicTacToe`: two players take turns on a 3x3 board (agents acting in turns)."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np

from trainer.env.multi_agent_env import MultiAgentDict, MultiAgentEnv

_StepResult = tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]


class TicTacToe(MultiAgentEnv):
    """Players `"player1"` and `"player2"`; a random one starts. Only the player to move gets
    an observation: the 9 fields from its own view (1 its piece, -1 the opponent's, 0 empty;
    `Box(-1, 1, (9,))`). Its action (`Discrete(9)`) is the field to take; taking an occupied
    field costs -0.5 and passes the turn. Three in a row pays +1 (the opponent -1), a full board
    0 each; both players observe the final board. After 30 moves the episode is truncated."""

    #: Rows, columns and diagonals.
    WIN_LINES = [
        [0, 1, 2],
        [3, 4, 5],
        [6, 7, 8],
        [0, 3, 6],
        [1, 4, 7],
        [2, 5, 8],
        [0, 4, 8],
        [2, 4, 6],
    ]

    def __init__(self, config: dict | None = None):
        super().__init__()
        self.agents = self.possible_agents = ["player1", "player2"]
        self.observation_spaces = {
            "player1": gym.spaces.Box(-1.0, 1.0, (9,), np.float32),
            "player2": gym.spaces.Box(-1.0, 1.0, (9,), np.float32),
        }
        self.action_spaces = {
            "player1": gym.spaces.Discrete(9),
            "player2": gym.spaces.Discrete(9),
        }
        self.max_timesteps = 30
        self.board: list[int] = [0] * 9
        self.current_player: str | None = None
        self.timestep = 0

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[MultiAgentDict, MultiAgentDict]:
        self.board = [0] * 9
        # As RLlib: the starting player comes from Python's global `random`.
        self.current_player = random.choice(self.agents)
        self.timestep = 0
        return {self.current_player: np.array(self.board, np.float32)}, {}

    def step(self, action_dict: MultiAgentDict) -> _StepResult:  # type: ignore[override]
        if self.current_player is None:
            raise RuntimeError("TicTacToe: call reset() before step()")
        player = self.current_player
        action = action_dict[player]
        opponent = "player2" if player == "player1" else "player1"
        self.timestep += 1

        if self.board[action] != 0:  # an occupied field: penalized, the board unchanged
            if self.timestep >= self.max_timesteps:
                return self._final(player, opponent, -0.5, 0.0, truncated=True)
            self._pass_turn(opponent)
            return (
                {opponent: np.array(self.board, np.float32)},
                {player: -0.5},
                {"__all__": False},
                {"__all__": False},
                {},
            )

        self.board[action] = 1
        if any(all(self.board[i] == 1 for i in line) for line in self.WIN_LINES):
            return self._final(player, opponent, 1.0, -1.0, terminated=True)
        if 0 not in self.board:  # a draw
            return self._final(player, opponent, 0.0, 0.0, terminated=True)
        if self.timestep >= self.max_timesteps:
            return self._final(player, opponent, 0.0, 0.0, truncated=True)
        self._pass_turn(opponent)
        return (
            {opponent: np.array(self.board, np.float32)},
            {player: 0.0},
            {"__all__": False},
            {"__all__": False},
            {},
        )

    def _pass_turn(self, opponent: str) -> None:
        """The board seen from the opponent's side, who moves next."""
        self.board = [-x for x in self.board]
        self.current_player = opponent

    def _final(
        self,
        player: str,
        opponent: str,
        player_reward: float,
        opponent_reward: float,
        terminated: bool = False,
        truncated: bool = False,
    ) -> _StepResult:
        """The last step: both players observe the board (each from its own side)."""
        board = np.array(self.board, np.float32)
        return (
            {player: board, opponent: board * -1},
            {player: player_reward, opponent: opponent_reward},
            {"__all__": terminated},
            {"__all__": truncated},
            {},
        )

    def render(self) -> str:
        """The board as text, from the side of the player to move: X its pieces, O the
        opponent's."""
        symbols = {0: " ", 1: "X", -1: "O"}
        rows = [
            " " + " | ".join(symbols[self.board[i * 3 + j]] for j in range(3)) + " "
            for i in range(3)
        ]
        return "\n" + "\n-----------\n".join(rows) + "\n"
