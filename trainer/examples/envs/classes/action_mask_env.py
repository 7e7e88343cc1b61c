"""`ActionMaskEnv`: a `RandomEnv` that publishes which actions are valid (RLlib's example env for
action masking)."""

from __future__ import annotations

import numpy as np
from gymnasium.spaces import Box, Dict, Discrete

from trainer.examples.envs.classes.random_env import RandomEnv


class ActionMaskEnv(RandomEnv):
    """`RandomEnv` (Discrete actions only) whose observation is
    `{"action_mask": Box(0, 1, (n,)), "observations": the RandomEnv observation}`. The mask is
    rounded to 0/1; `step()` raises `ValueError` for an action the last mask ruled out."""

    def __init__(self, config: dict | None = None):
        super().__init__(config)
        if not isinstance(self.action_space, Discrete):
            raise ValueError(
                f"ActionMaskEnv: action_space={self.action_space} must be "
                "Discrete (the mask has one entry per action)"
            )
        self.observation_space = Dict(
            {
                "action_mask": Box(0.0, 1.0, shape=(self.action_space.n,)),
                "observations": self.observation_space,
            }
        )
        self.valid_actions: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        observation, info = super().reset()
        self._fix_action_mask(observation)
        return observation, info

    def step(self, action):
        if self.valid_actions is None:
            raise RuntimeError("ActionMaskEnv: call reset() before step()")
        if not self.valid_actions[action]:
            raise ValueError(
                f"Invalid action ({action}) sent to env! valid_actions={self.valid_actions}"
            )
        observation, reward, terminated, truncated, info = super().step(action)
        self._fix_action_mask(observation)
        return observation, reward, terminated, truncated, info

    def _fix_action_mask(self, observation: dict) -> None:
        self.valid_actions = np.round(observation["action_mask"])
        observation["action_mask"] = self.valid_actions
