"""`SimpleRPG`: a dummy env with a deeply structured, variable-length observation (RLlib's example
env for the `Repeated` space), and `Repeated`, RLlib's variable-length list space."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Dict, Discrete

MAX_PLAYERS = 4
MAX_ITEMS = 7
MAX_EFFECTS = 2


class Repeated(gym.Space):
    """A list of 1 to `max_len` samples of `child_space` (RLlib's
    `ray.rllib.utils.spaces.repeated.Repeated`)."""

    def __init__(self, child_space: gym.Space, max_len: int):
        super().__init__()
        self.child_space = child_space
        self.max_len = max_len

    def seed(self, seed: int | None = None) -> list:
        # Seeds the child space too, so that a seeded space samples the same lists.
        return [super().seed(seed), self.child_space.seed(seed)]

    def sample(self, mask=None, probability=None) -> list:
        return [
            self.child_space.sample() for _ in range(self.np_random.integers(1, self.max_len + 1))
        ]

    def contains(self, x) -> bool:
        return (
            isinstance(x, (list, np.ndarray))
            and len(x) <= self.max_len
            and all(self.child_space.contains(c) for c in x)
        )

    def __repr__(self) -> str:
        return f"Repeated({self.child_space}, {self.max_len})"

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Repeated)
            and other.max_len == self.max_len
            and other.child_space == self.child_space
        )


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
