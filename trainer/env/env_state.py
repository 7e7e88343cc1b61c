"""Sub-env state as plain data, so a checkpoint can continue an episode exactly where it was.

`capture_env_state(env)` walks the wrapper chain (the outermost wrapper first, the raw env last)
and takes from each layer's instance attributes what is data: numbers, strings, booleans, None,
numeric numpy arrays, numpy random Generators and RandomStates (as their states), and lists, tuples,
deques and str-keyed dicts of those. For classic control that is the physics `state`, the
`np_random` generator, `steps_beyond_terminated`, TimeLimit's `_elapsed_steps` and the order
and checker flags. Structure (spaces, the wrapped env, the spec, callables, modules, classes) is
rebuilt by the env's constructor and skipped, as is render machinery.

An attribute holding any other object (a physics engine's bodies, a file, a socket) means the
env's state cannot be captured: `capture_env_state` then returns None and a reason, and the
EnvRunner restarts that episode on restore, with a warning.
"""

from __future__ import annotations

import collections
import types
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from trainer.util.rng import generator_state, new_generator, set_generator_state

#: Render machinery: created on demand by render(), not part of the dynamics.
_RENDER_ATTRIBUTES = frozenset(
    {"screen", "clock", "viewer", "window", "surf", "renderer", "_viewers", "render_fps"}
)
_STRUCTURE_TYPES = (gym.Space, gym.Env, EnvSpec, types.ModuleType, type)
_TAG = "__env_value__"


# Internal: capture_env_state turns it into the reason a sub-env's state is not captured.
class _NotData(Exception):
    pass


def _is_structure(value: Any) -> bool:
    return isinstance(value, _STRUCTURE_TYPES) or (
        callable(value) and not isinstance(value, (np.ndarray, np.random.Generator))
    )


def _to_data(value: Any) -> Any:
    """`value` as plain data (tagged where the type must come back), or `_NotData`."""
    if isinstance(value, int) and not isinstance(value, bool) and not (-(2**63) <= value < 2**63):
        return {_TAG: "int", "digits": str(value)}  # wider than msgpack's 64 bits
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return {_TAG: "scalar", "dtype": value.dtype.str, "value": value.item()}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise _NotData(f"an array of dtype {value.dtype}")
        return value.copy()
    if isinstance(value, np.random.Generator):
        return {_TAG: "generator", "state": generator_state(value)}
    if isinstance(value, np.random.RandomState):
        name, key, pos, has_gauss, cached_gaussian = value.get_state()
        return {_TAG: "random_state", "state": [name, key, pos, has_gauss, cached_gaussian]}
    if isinstance(value, collections.deque):
        return {_TAG: "deque", "maxlen": value.maxlen, "items": [_to_data(v) for v in value]}
    if isinstance(value, tuple):
        return {_TAG: "tuple", "items": [_to_data(v) for v in value]}
    if isinstance(value, list):
        return [_to_data(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _to_data(v) for k, v in value.items()}
    raise _NotData(f"a {type(value).__module__}.{type(value).__qualname__}")


def _from_data(data: Any, current: Any = None) -> Any:
    if isinstance(data, dict):
        tag = data.get(_TAG)
        if tag == "int":
            return int(data["digits"])
        if tag == "scalar":
            return np.dtype(data["dtype"]).type(data["value"])
        if tag == "generator":
            if isinstance(current, np.random.Generator):
                set_generator_state(current, data["state"])
                return current
            return new_generator(data["state"])
        if tag == "random_state":
            rng = (
                current if isinstance(current, np.random.RandomState) else (np.random.RandomState())
            )
            rng.set_state(tuple(data["state"]))
            return rng
        if tag == "deque":
            return collections.deque((_from_data(v) for v in data["items"]), data["maxlen"])
        if tag == "tuple":
            return tuple(_from_data(v) for v in data["items"])
        return {k: _from_data(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_from_data(v) for v in data]
    if isinstance(data, np.ndarray):
        return data.copy()
    return data


def _layers(env: gym.Env) -> list:
    layers = [env]
    while isinstance(layers[-1], gym.Wrapper):
        layers.append(layers[-1].env)
    return layers


def capture_env_state(env: gym.Env) -> tuple[list[dict] | None, str | None]:
    """([{"class": name, "attributes": {...}} per layer], None), or (None, why not)."""
    captured = []
    for layer in _layers(env):
        attributes = {}
        for name, value in vars(layer).items():
            if name in _RENDER_ATTRIBUTES or name == "env" or _is_structure(value):
                continue
            try:
                attributes[name] = _to_data(value)
            except _NotData as error:
                return None, f"{type(layer).__name__}.{name} holds {error}"
        captured.append({"class": type(layer).__qualname__, "attributes": attributes})
    return captured, None


def restore_env_state(env: gym.Env, captured: list[dict]) -> str | None:
    """Sets the captured attributes back; returns why not when the wrapper chain differs."""
    layers = _layers(env)
    classes = [type(layer).__qualname__ for layer in layers]
    if classes != [entry["class"] for entry in captured]:
        return (
            f"its wrappers changed (now {classes}, captured "
            f"{[entry['class'] for entry in captured]})"
        )
    for layer, entry in zip(layers, captured, strict=True):
        own = vars(layer)
        for name, data in entry["attributes"].items():
            own[name] = _from_data(data, own.get(name))
    return None
