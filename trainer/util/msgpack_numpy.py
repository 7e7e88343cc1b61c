"""msgpack-numpy's layout of numpy values, the one RLlib's msgpack carries them in (RLlib's
`try_import_msgpack` patches msgpack with msgpack-numpy): an array as the map `{b"nd": True,
b"type": dtype.str, b"kind": b"", b"shape": [...], b"data": raw bytes}`, a numpy scalar as
`{b"nd": False, b"type": dtype.str, b"data": raw bytes}`. Readers take the keys as bytes or
as text.

Object and structured arrays are refused both ways: msgpack-numpy pickles object arrays, and
unpickling runs whatever the bytes name (`PickledArray`)."""

from __future__ import annotations

from typing import Any

import numpy as np


class PickledArray(ValueError):
    """A map of an object or structured array (msgpack-numpy pickles those): never unpickled."""


def to_map(value: np.ndarray | np.generic) -> dict:
    """`value` in msgpack-numpy's layout; TypeError for an object or structured array."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OV":
            raise TypeError(f"an array of dtype {value.dtype} has no msgpack-numpy layout")
        return {
            b"nd": True,
            b"type": value.dtype.str,
            b"kind": b"",
            b"shape": list(value.shape),
            b"data": np.ascontiguousarray(value).tobytes(),
        }
    return {b"nd": False, b"type": value.dtype.str, b"data": value.tobytes()}


def _get(value: dict, key: str) -> Any:
    return value.get(key.encode(), value.get(key))


def is_numpy_map(value: dict) -> bool:
    """Whether `value` is a numpy value in msgpack-numpy's layout."""
    return _get(value, "nd") is not None


def from_map(value: dict) -> np.ndarray | np.generic:
    """The array or scalar of a `to_map` map (a copy: writable, not a view of the message);
    `PickledArray` for an object or structured one."""
    kind, type_ = _get(value, "kind"), _get(value, "type")
    if kind in (b"O", "O", b"V", "V") or not isinstance(type_, str):
        raise PickledArray("an object or structured array (pickled by msgpack-numpy)")
    dtype = np.dtype(type_)
    if dtype.kind in "OV":
        raise PickledArray(f"an array of dtype {dtype} (pickled by msgpack-numpy)")
    data: bytes = _get(value, "data") or b""
    if _get(value, "nd") is True:
        return np.frombuffer(data, dtype=dtype).reshape(_get(value, "shape")).copy()
    return np.frombuffer(data, dtype=dtype)[0]
