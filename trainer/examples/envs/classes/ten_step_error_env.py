"""`TenStepErrorEnv`: samples one good episode, then fails in the next (RLlib's example env, for
testing that an EnvRunner recreates a failed env)."""

from __future__ import annotations

import gymnasium as gym


class TenStepErrorEnv(gym.Env):
    """The first episode terminates after 10 steps; every later episode raises
    `Exception("Test error")` on its 10th step. Observations and actions: Box(0, 1, (1,)), zero
    rewards; infos carry `last_eps_errored`."""

    def __init__(self, config: dict | None = None):
        super().__init__()
        self.step_count = 0
        self.last_eps_errored = False
        self.observation_space = gym.spaces.Box(low=0, high=1, shape=(1,))
        self.action_space = gym.spaces.Box(low=0, high=1, shape=(1,))

    def reset(self, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(seed)
        self.step_count = 0
        return self.observation_space.sample(), {"last_eps_errored": self.last_eps_errored}

    def step(self, action):
        self.step_count += 1
        if self.step_count == 10:
            if self.last_eps_errored:
                raise Exception("Test error")
            self.last_eps_errored = True
            return self.observation_space.sample(), 0.0, True, False, {"last_eps_errored": False}
        return (
            self.observation_space.sample(),
            0.0,
            False,
            False,
            {"last_eps_errored": self.last_eps_errored},
        )
