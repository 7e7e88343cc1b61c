"""`transform_action_space`: rescales an env's Box action space (RLlib's example helper), and
`TransformedActionPendulum`, Pendulum-v1 with actions in [-1, 1]."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym


class ActionTransform(gym.ActionWrapper):
    """Exposes the action space `[low, high]` and maps actions linearly onto the wrapped env's
    Box action space."""

    def __init__(self, env: gym.Env, low: float, high: float):
        super().__init__(env)
        self._low = low
        self._high = high
        inner = _box_of(env)
        self.action_space = type(inner)(self._low, self._high, inner.shape, inner.dtype)

    def action(self, action):
        inner = _box_of(self.env)
        return (action - self._low) / (self._high - self._low) * (inner.high - inner.low) + (
            inner.low
        )


def _box_of(env: gym.Env) -> gym.spaces.Box:
    if not isinstance(env.action_space, gym.spaces.Box):
        raise ValueError(
            f"ActionTransform rescales Box action spaces; this env's is {env.action_space}"
        )
    return env.action_space


def transform_action_space(
    env_name_or_creator: str | Callable[[Any], gym.Env],
) -> Callable[[dict], gym.Env]:
    """An env creator that builds the env (by registered name, or by calling the creator with the
    config) and wraps it in `ActionTransform`, its action range taken from the config's `low`
    and `high` keys (default -1.0 and 1.0; removed from the config, as in RLlib)."""

    def transformed_action_space_env(config: dict) -> gym.Env:
        if isinstance(env_name_or_creator, str):
            inner_env = gym.make(env_name_or_creator)
        else:
            inner_env = env_name_or_creator(config)
        low = config.pop("low", -1.0)
        high = config.pop("high", 1.0)
        return ActionTransform(inner_env, low, high)

    return transformed_action_space_env


TransformedActionPendulum = transform_action_space("Pendulum-v1")
