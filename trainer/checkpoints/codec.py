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

import math
from typing import Any

import numpy as np
import ormsgpack

from trainer.errors import MalformedState as MalformedState
from trainer.errors import NotPlainData as NotPlainData
from trainer.errors import PlacedError as PlacedError
from trainer.util.rng import (  # noqa: F401 (their older import path)
    generator_state,
    new_generator,
    set_generator_state,
)

ARRAY_TAG = "__ndarray__"
#: dtype kinds an array may have: bool, signed and unsigned ints, floats, complex.
_ARRAY_KINDS = "biufc"
#: Deepest nesting of maps and lists a stored state may have (the deepest real one, a runner's
#: unfinished episodes, is under 15); deeper data is refused before Python's recursion limit.
MAX_DEPTH = 64


def _encode(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS:
            raise TypeError(f"numpy arrays of dtype {value.dtype} cannot be stored")
        return {
            ARRAY_TAG: value.dtype.str,
            "shape": list(value.shape),
            "data": np.ascontiguousarray(value).tobytes(),
        }
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
        if -(2**63) <= value < 2**64:
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
                return NotPlainData(where, f"map key {key!r} is a {type(key).__name__}, not a str")
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
    return NotPlainData(
        where,
        f"a {type(value).__module__}.{type(value).__qualname__} is not "
        "plain data (numbers, strings, lists, str-keyed dicts, arrays)",
    )


def is_plain_data(value: Any) -> bool:
    return find_problem(value) is None


def decode(value: Any, where: str = "state", depth: int = 0) -> Any:
    """Unpacked msgpack data with the array maps turned back into arrays. Raises
    `MalformedState` for an array map that does not describe an array (unknown or object
    dtype, a shape that does not match its bytes, no data) and for nesting deeper than
    `MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise MalformedState(where, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        if ARRAY_TAG in value:
            return decode_array(value, where)
        return {key: decode(item, f"{where}[{key!r}]", depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
    return value


def decode_array(value: dict, where: str) -> np.ndarray:
    """The array an array map describes, checked: a plain numeric dtype, a shape of
    non-negative integers, and exactly as many bytes as the shape needs."""
    if set(value) != {ARRAY_TAG, "shape", "data"}:
        raise MalformedState(
            where,
            f"an array map needs exactly {ARRAY_TAG!r}, 'shape' and "
            f"'data'; it has {sorted(map(str, value))}",
        )
    dtype_name, shape, data = value[ARRAY_TAG], value["shape"], value["data"]
    try:
        dtype = np.dtype(dtype_name) if isinstance(dtype_name, str) else None
    except TypeError:
        dtype = None
    if (
        dtype is None
        or dtype.kind not in _ARRAY_KINDS
        or dtype.fields is not None
        or dtype.subdtype is not None
    ):
        raise MalformedState(
            where,
            f"array dtype {dtype_name!r} is not one a checkpoint holds "
            "(bool, integer, float or complex)",
        )
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**62 for n in shape
    ):
        raise MalformedState(where, f"array shape {shape!r} is not a list of non-negative integers")
    if not isinstance(data, bytes):
        raise MalformedState(where, f"array data is a {type(data).__name__}, not bytes")
    expected = dtype.itemsize * math.prod(shape)
    if len(data) != expected:
        raise MalformedState(
            where,
            f"array of shape {shape} and dtype {dtype.str} needs "
            f"{expected} bytes; the data has {len(data)}",
        )
    # A writable copy: restored arrays are updated in place (optimizer moments).
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def unpack(data: bytes) -> Any:
    """The state `pack` was given, arrays rebuilt (tuples come back as lists)."""
    return decode(ormsgpack.unpackb(data))
