"""`ParametricActionsCartPole` and `ParametricActionsCartPoleNoEmbeddings`: CartPole whose two
real actions hide among `max_avail_actions` (RLlib's example envs for action masking and
parametric actions)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Box, Dict, Discrete


def _wrong_action(action, *details) -> ValueError:
    return ValueError(
        "Chosen action was not one of the non-zero action embeddings", action, *details
    )


class ParametricActionsCartPole(gym.Env):
    """CartPole with `Discrete(max_avail_actions)` actions, of which two (LEFT and RIGHT) are
    valid, at positions drawn anew each step. Observation:
    `{"action_mask": int8 mask of the two, "avail_actions": (max_avail_actions, 2) embeddings,
    zero except LEFT's and RIGHT's (fixed random vectors), "cart": CartPole's observation}`.
    An invalid action raises `ValueError`."""

    def __init__(self, max_avail_actions: int):
        self.left_action_embed = self.np_random.standard_normal(2)
        self.right_action_embed = self.np_random.standard_normal(2)
        self.action_space: Discrete = Discrete(max_avail_actions)
        self.wrapped = gym.make("CartPole-v1")
        self.observation_space = Dict(
            {
                "action_mask": Box(0, 1, shape=(max_avail_actions,), dtype=np.int8),
                "avail_actions": Box(-10, 10, shape=(max_avail_actions, 2)),
                "cart": self.wrapped.observation_space,
            }
        )

    def update_avail_actions(self) -> None:
        n = int(self.action_space.n)
        self.action_assignments = np.zeros((n, 2), dtype=np.float32)
        self.action_mask = np.zeros(n, dtype=np.int8)
        self.left_idx, self.right_idx = (
            int(i) for i in self.np_random.choice(n, size=2, replace=False)
        )
        self.action_assignments[self.left_idx] = self.left_action_embed
        self.action_assignments[self.right_idx] = self.right_action_embed
        self.action_mask[self.left_idx] = 1
        self.action_mask[self.right_idx] = 1

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.update_avail_actions()
        observation, info = self.wrapped.reset(seed=seed)
        return self._observation(observation), info

    def step(self, action):
        if action == self.left_idx:
            actual_action = 0
        elif action == self.right_idx:
            actual_action = 1
        else:
            raise _wrong_action(
                action, self.action_assignments, self.action_mask, self.left_idx, self.right_idx
            )
        observation, reward, terminated, truncated, info = self.wrapped.step(actual_action)
        self.update_avail_actions()
        return self._observation(observation), reward, terminated, truncated, info

    def _observation(self, cart: np.ndarray) -> dict:
        return {
            "action_mask": self.action_mask,
            "avail_actions": self.action_assignments,
            "cart": cart,
        }


class ParametricActionsCartPoleNoEmbeddings(gym.Env):
    """As `ParametricActionsCartPole`, but LEFT and RIGHT stay at the positions drawn at
    construction and no embeddings are published (the model learns them). Observation:
    `{"valid_avail_actions_mask": mask of the two, "cart": CartPole's observation}`."""

    def __init__(self, max_avail_actions: int):
        self.left_idx, self.right_idx = (
            int(i) for i in self.np_random.choice(max_avail_actions, size=2, replace=False)
        )
        self.valid_avail_actions_mask = np.zeros(max_avail_actions, dtype=np.int8)
        self.valid_avail_actions_mask[self.left_idx] = 1
        self.valid_avail_actions_mask[self.right_idx] = 1
        self.action_space = Discrete(max_avail_actions)
        self.wrapped = gym.make("CartPole-v1")
        self.observation_space = Dict(
            {
                "valid_avail_actions_mask": Box(0, 1, shape=(max_avail_actions,)),
                "cart": self.wrapped.observation_space,
            }
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        # The valid positions were drawn at construction; the seed reaches the generator (for
        # later draws) and the inner CartPole.
        super().reset(seed=seed)
        observation, info = self.wrapped.reset(seed=seed)
        return self._observation(observation), info

    def step(self, action):
        if action == self.left_idx:
            actual_action = 0
        elif action == self.right_idx:
            actual_action = 1
        else:
            raise _wrong_action(
                action, self.valid_avail_actions_mask, self.left_idx, self.right_idx
            )
        observation, reward, terminated, truncated, info = self.wrapped.step(actual_action)
        return self._observation(observation), reward, terminated, truncated, info

    def _observation(self, cart: np.ndarray) -> dict:
        # float32, the dtype of the mask's Box (RLlib publishes int8 into a float32 Box).
        return {
            "valid_avail_actions_mask": self.valid_avail_actions_mask.astype(np.float32),
            "cart": cart,
        }
