"""`CorrelatedActionsEnv`: a one-step env solved only by correlated (autoregressive) actions
(RLlib's example env)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class CorrelatedActionsEnv(gym.Env):
    """Observation: one number `obs` in [-1, 1]. Action: `(a1, a2)`, a1 in {0, 1, 2} and a2 a
    Box(-2, 2, (1,)). Reward `-|1 - (obs + a1)| - |obs + a1 + a2|`: a1 should bring `obs + a1`
    near 1, and a2 should cancel `obs + a1`, so a2 depends on a1. Every episode is one step."""

    def __init__(self, config: dict | None = None):
        super().__init__()
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Tuple(
            [gym.spaces.Discrete(3), gym.spaces.Box(-2.0, 2.0, (1,), np.float32)]
        )
        self.obs: np.ndarray | None = None

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed, options=options)
        self.obs = self.np_random.uniform(-1, 1, size=(1,)).astype(np.float32)
        return self.obs, {}

    def step(self, action):
        if self.obs is None:
            raise RuntimeError("CorrelatedActionsEnv: call reset() before step()")
        a1, a2 = action
        a2 = a2[0]
        r1 = -abs(1.0 - (self.obs[0] + a1))
        r2 = -abs(self.obs[0] + a1 + a2)
        # A copy: gymnasium's API wants fresh observation data from every call.
        return self.obs.copy(), float(r1 + r2), True, False, {}
