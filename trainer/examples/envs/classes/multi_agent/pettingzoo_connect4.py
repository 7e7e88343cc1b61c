"""RLlib's `MultiAgentConnect4`: PettingZoo's connect four (`connect_four_v3`) as a
`MultiAgentEnv` (needs `pettingzoo` and `pygame`: `pip install localrl[pettingzoo,video]`)."""

from __future__ import annotations

from typing import Any

from trainer.capabilities import THIRD_PARTY_ENVS
from trainer.examples.envs.classes.multi_agent._pettingzoo_board_game import (
    PettingZooBoardGame,
    import_pettingzoo_game,
)
from trainer.util.rllib_members import refuse


@refuse(
    "ray.rllib.examples.envs.classes.multi_agent.pettingzoo_connect4.MultiAgentConnect4",
    THIRD_PARTY_ENVS,
    "PettingZoo's removed env.seed(); seed the game with reset(seed=...)",
    "seed",
)
class MultiAgentConnect4(PettingZooBoardGame):
    """Two players (`"player_0"`, `"player_1"`) drop pieces into 7 columns in turns; four in a
    row wins (+1, the loser -1). `env`: a PettingZoo AEC env to use instead of connect four."""

    def __init__(self, config: dict[Any, Any] | None = None, env: Any = None):
        if env is None:
            env = import_pettingzoo_game("pettingzoo.classic.connect_four_v3", "raw_env")()
        super().__init__(config, env)
