"""RLlib's `MultiAgentChess`: PettingZoo's chess as a `MultiAgentEnv` (needs `pettingzoo` and
the `chess` package: `pip install pettingzoo chess`)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from trainer.capabilities import THIRD_PARTY_ENVS
from trainer.examples.envs.classes.multi_agent._pettingzoo_board_game import (
    PettingZooBoardGame,
    import_pettingzoo_game,
)
from trainer.util.rllib_members import refuse


@refuse(
    "ray.rllib.examples.envs.classes.multi_agent.pettingzoo_chess.MultiAgentChess",
    THIRD_PARTY_ENVS,
    "PettingZoo's removed env.seed(); seed the game with reset(seed=...)",
    "seed",
)
class MultiAgentChess(PettingZooBoardGame):
    """Two players play chess in turns. `config["random_start"]` (default 4): that many random
    legal moves (drawn with `np.random`) are played after each reset. `env`: a PettingZoo AEC
    env to use instead of chess."""

    def __init__(self, config: dict[Any, Any] | None = None, env: Any = None):
        if env is None:
            env = import_pettingzoo_game("pettingzoo.classic.chess.chess", "raw_env")()
        config = {} if config is None else config
        config.setdefault("random_start", 4)
        super().__init__(config, env)

    def random_start(self, random_moves: int) -> Any:
        """Plays `random_moves` random legal moves from the initial position; returns the
        board."""
        # The `chess` package (PettingZoo's chess needs it too), imported only when used.
        chess = importlib.import_module("chess")
        self.env.board = chess.Board()
        for _ in range(random_moves):
            self.env.board.push(np.random.choice(list(self.env.board.legal_moves)))
        return self.env.board

    def _after_reset(self) -> None:
        assert self.config is not None, "__init__ sets the config"
        if self.config["random_start"] > 0:
            self.random_start(self.config["random_start"])
