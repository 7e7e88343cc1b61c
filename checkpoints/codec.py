"""State as msgpack bytes: plain data plus numpy arrays, readable with `ormsgpack.unpackb` alone.

A numpy array is stored as a map `{"__ndarray__": dtype, "shape": [...], "data": raw bytes}`:
the raw bytes keep a checkpoint as small as the arrays themselves (msgpack's own float lists take
5 bytes per float32) and pack and unpack at memory speed. `unpack` turns such maps back into
arrays; anyone else can rebuild one with `numpy.frombuffer(m["data"], m["__ndarray__"])
.reshape(m["shape"])`. numpy scalars become Python numbers, tuples become lists, and map keys
must be strings. Anything else (objects, 128-bit integers, object arrays) is refused with the
place in the state where it sits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import ormsgpack

ARRAY_TAG = "__ndarray__"
#: dtype kinds an array may have: bool, signed and unsigned ints, floats, complex.
_ARRAY_KINDS = "biufc"


class NotPlainData(TypeError):
    """A value that msgpack state cannot hold; `where` is its place in the state."""

    def __init__(self, where: str, problem: str):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"numpy arrays of dtype {value.dtype} cannot be stored")
        return {ARRAY_TAG: value.dtype.str, "shape": list(value.shape),
                "data": np.ascontiguousarray(value).tobytes()}
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"a {type(value).__name__} cannot be stored")


def pack(state: Any) -> bytes:
    """msgpack bytes of `state`; raises `NotPlainData` naming the first value it cannot hold."""
    try:
        return ormsgpack.packb(state, default=_encode)
    except TypeError:
        problem = find_problem(state)
        if problem is None:
            raise
        raise problem from None


def find_problem(value: Any, where: str = "state") -> NotPlainData | None:
    """The first value under `value` that `pack` refuses, or None."""
    if value is None or isinstance(value, (bool, str, bytes, float)):
        return None
    if isinstance(value, int):
        if -(2 ** 63) <= value < 2 ** 64:
            return None
        return NotPlainData(where, f"the integer {value} does not fit in 64 bits")
    if isinstance(value, np.generic):
        return None
    if isinstance(value, np.ndarray):
        if value.dtype.kind in _ARRAY_KINDS:
            return None
        return NotPlainData(where, f"numpy arrays of dtype {value.dtype} cannot be stored")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return NotPlainData(where, f"map key {key!r} is a {type(key).__name__}, "
                                           "not a str")
            problem = find_problem(item, f"{where}[{key!r}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            problem = find_problem(item, f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    return NotPlainData(where, f"a {type(value).__module__}.{type(value).__qualname__} is not "
                               "plain data (numbers, strings, lists, str-keyed dicts, arrays)")


def is_plain_data(value: Any) -> bool:
    return find_problem(value) is None


def decode(value: Any) -> Any:
    """Unpacked msgpack data with the array maps turned back into arrays."""
    if isinstance(value, dict):
        if ARRAY_TAG in value:
            array = np.frombuffer(value["data"], dtype=np.dtype(value[ARRAY_TAG]))
            # A writable copy: restored arrays are updated in place (optimizer moments).
            return array.reshape(value["shape"]).copy()
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    return value


def unpack(data: bytes) -> Any:
    """The state `pack` was given, arrays rebuilt (tuples come back as lists)."""
    return decode(ormsgpack.unpackb(data))


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
    if isinstance(value, int) and not isinstance(value, bool) and not (
            -(2 ** 63) <= value < 2 ** 63):
        return str(value)
    return value


def _strings_to_ints(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _strings_to_ints(item) for key, item in value.items()}
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value
