"""numpy random generators as plain data (checkpoints, runner states): integers wider than 64
bits (PCG64's state and increment) are carried as decimal strings, so msgpack and JSON hold
them."""

from __future__ import annotations

from typing import Any

import numpy as np


def generator_state(rng: np.random.Generator) -> dict:
    """A numpy Generator's bit-generator state as plain data: integers wider than 64 bits
    (PCG64's state and increment) are carried as decimal strings."""
    return _ints_to_strings(rng.bit_generator.state)


def set_generator_state(rng: np.random.Generator, state: dict) -> None:
    rng.bit_generator.state = _strings_to_ints(state)


def new_generator(state: dict) -> np.random.Generator:
    """A Generator of the bit generator `state` names, set to that state."""
    rng = np.random.Generator(getattr(np.random, state["bit_generator"])())
    set_generator_state(rng, state)
    return rng


def _ints_to_strings(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _ints_to_strings(item) for key, item in value.items()}
    if isinstance(value, int) and not isinstance(value, bool) and not (-(2**63) <= value < 2**63):
        return str(value)
    return value


def _strings_to_ints(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strings_to_ints(item) for key, item in value.items()}
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value
