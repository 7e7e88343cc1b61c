"""`SimpleRPG`: a dummy env with a deeply structured, variable-length observation (RLlib's example
env for the `Repeated` space; `Repeated`, RLlib's variable-length list space, is
`trainer.core.spaces.Repeated`, re-exported here where RLlib's example imported it)."""

from __future__ import annotations

import gymnasium as gym
from gymnasium.spaces import Box, Dict, Discrete

from trainer.core.spaces import Repeated

__all__ = ["Repeated", "SimpleRPG"]

MAX_PLAYERS = 4
MAX_ITEMS = 7
MAX_EFFECTS = 2


class SimpleRPG(gym.Env):
    """Observation: up to 4 players, each `{"location": Box(2), "status": Box(10), "items": up to
    7 Discrete(5) items, "effects": up to 2 Box(4) effects}` (a `Repeated` of Dicts holding
    `Repeated`s). Random observations, reward 1, one step per episode: it shows how such
    observations are built, it does not train."""

    def __init__(self, config: dict | None = None):
        self.cur_pos = 0
        self.action_space = Discrete(4)
        self.item_space = Discrete(5)
        self.effect_space = Box(9000, 9999, shape=(4,))
        self.player_space = Dict(
            {
                "location": Box(-100, 100, shape=(2,)),
                "status": Box(-1, 1, shape=(10,)),
                "items": Repeated(self.item_space, max_len=MAX_ITEMS),
                "effects": Repeated(self.effect_space, max_len=MAX_EFFECTS),
            }
        )
        self.observation_space = Repeated(self.player_space, max_len=MAX_PLAYERS)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 1, True, False, {}
