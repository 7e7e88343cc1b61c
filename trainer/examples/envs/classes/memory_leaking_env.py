"""`MemoryLeakingEnv`: a `RandomEnv` that leaks a little memory each episode (RLlib's example
env, to prove memory-leak checks catch small leaks)."""

from __future__ import annotations

import uuid

from trainer.examples.envs.classes.random_env import RandomEnv


class MemoryLeakingEnv(RandomEnv):
    """`RandomEnv` that, on the second step of each episode, adds one entry (a fresh 32-character
    key) to a dict it never clears."""

    def __init__(self, config: dict | None = None):
        super().__init__(config)
        self._leak: dict[str, int] = {}
        self._steps_after_reset = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._steps_after_reset = 0
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self._steps_after_reset += 1
        if self._steps_after_reset == 2:
            self._leak[uuid.uuid4().hex.upper()] = 1
        return super().step(action)
