"""RLlib's `ray.rllib.utils.serialization`: gymnasium spaces as JSON-able dicts in RLlib's own
format (so a dict written by RLlib reads here and the other way round), numpy values as Python
primitives, and classes as their import paths.

RLlib's format: `{"space": kind, ...}` with kind one of "box", "discrete", "multi-binary",
"multi-discrete", "tuple", "dict", "simplex", "repeated", "flex_dict", "text"; a Box's bounds and
a MultiDiscrete's `nvec` are `.npy` bytes, zlib-compressed and base64-encoded. `space_to_dict`
also carries a space's `original_space` (a preprocessed space's). Arrays are read back without
pickles (`allow_pickle=False`): a space's arrays are plain numbers.

This project's checkpoints use their own plain-data format (`trainer.core.spaces.space_to_dict`).
"""

from __future__ import annotations

import base64
import importlib
import io
import zlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.compat.space_utils import FlexDict, Repeated
from trainer.core.spaces import Simplex

__all__ = [
    "NOT_SERIALIZABLE",
    "convert_numpy_to_python_primitives",
    "deserialize_type",
    "gym_space_from_dict",
    "gym_space_to_dict",
    "serialize_type",
    "space_from_dict",
    "space_to_dict",
]

#: RLlib's marker for a value that could not be serialized.
NOT_SERIALIZABLE = "__not_serializable__"


def convert_numpy_to_python_primitives(obj: Any) -> Any:
    """`obj` with numpy scalars and arrays (inside dicts, tuples and lists too) as Python
    ints, floats, bools, strs and lists; anything else unchanged."""
    if isinstance(obj, dict):
        return {key: convert_numpy_to_python_primitives(value) for key, value in obj.items()}
    if isinstance(obj, tuple):
        return tuple(convert_numpy_to_python_primitives(value) for value in obj)
    if isinstance(obj, list):
        return [convert_numpy_to_python_primitives(value) for value in obj]
    if isinstance(obj, np.ndarray):
        return convert_numpy_to_python_primitives(obj.tolist())
    if isinstance(obj, np.generic):  # np.integer, np.floating, np.bool_, np.str_
        return obj.item()
    return obj


def _serialize_ndarray(array: np.ndarray) -> str:
    """An array as RLlib writes it: `.npy` bytes, zlib-compressed, base64 (ASCII)."""
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return base64.b64encode(zlib.compress(buffer.getvalue())).decode("ascii")


def _deserialize_ndarray(b64_string: str) -> np.ndarray:
    """The array `_serialize_ndarray` wrote (no pickled objects are read)."""
    raw = zlib.decompress(base64.b64decode(b64_string))
    return np.load(io.BytesIO(raw), allow_pickle=False)


def _text_charset(space: gym.spaces.Text) -> str:
    charset = getattr(space, "character_set", None) or getattr(space, "charset", None)
    if charset is None:
        raise ValueError("gym_space_to_dict: a Text space must have a character_set")
    return "".join(sorted(charset)) if not isinstance(charset, str) else charset


def gym_space_to_dict(space: gym.Space | None) -> dict | None:
    """`space` as a JSON-able dict in RLlib's format (see the module docstring); None stays
    None. Raises ValueError for a space of another kind, naming it."""
    if space is None:
        return None
    if isinstance(space, gym.spaces.Box):
        return {
            "space": "box",
            "low": _serialize_ndarray(space.low),
            "high": _serialize_ndarray(space.high),
            "shape": space.shape,
            "dtype": space.dtype.str,
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"space": "discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"space": "multi-binary", "n": convert_numpy_to_python_primitives(space.n)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {
            "space": "multi-discrete",
            "nvec": _serialize_ndarray(space.nvec),
            "dtype": space.dtype.str,
        }
    if isinstance(space, gym.spaces.Tuple):
        return {"space": "tuple", "spaces": [gym_space_to_dict(sub) for sub in space.spaces]}
    if isinstance(space, FlexDict):  # RLlib's flex_dict layout: the sub-spaces beside "space"
        return {
            "space": "flex_dict",
            **{key: gym_space_to_dict(sub) for key, sub in space.spaces.items()},
        }
    if isinstance(space, gym.spaces.Dict):
        return {
            "space": "dict",
            "spaces": {key: gym_space_to_dict(sub) for key, sub in space.spaces.items()},
        }
    if isinstance(space, gym.spaces.Text):
        return {
            "space": "text",
            "min_length": space.min_length,
            "max_length": space.max_length,
            "charset": _text_charset(space),
        }
    if isinstance(space, Simplex):
        return {
            "space": "simplex",
            "shape": space.shape,
            "concentration": space.concentration.tolist(),
            "dtype": np.dtype(space.dtype).str,
        }
    if isinstance(space, Repeated):
        return {
            "space": "repeated",
            "child_space": gym_space_to_dict(space.child_space),
            "max_len": space.max_len,
        }
    raise ValueError(
        f"gym_space_to_dict: unknown space type {type(space).__name__} (allowed: Box, "
        "Discrete, MultiBinary, MultiDiscrete, Tuple, Dict, Text, Simplex, Repeated, FlexDict)"
    )


def _box(d: dict) -> gym.Space:
    return gym.spaces.Box(
        low=_deserialize_ndarray(d["low"]),
        high=_deserialize_ndarray(d["high"]),
        shape=tuple(d["shape"]),
        dtype=np.dtype(d["dtype"]),
    )


def _discrete(d: dict) -> gym.Space:
    return gym.spaces.Discrete(d["n"], start=d.get("start", 0))


def _multi_binary(d: dict) -> gym.Space:
    return gym.spaces.MultiBinary(d["n"])


def _multi_discrete(d: dict) -> gym.Space:
    return gym.spaces.MultiDiscrete(_deserialize_ndarray(d["nvec"]), dtype=np.dtype(d["dtype"]))


def _tuple(d: dict) -> gym.Space:
    return gym.spaces.Tuple([_required(gym_space_from_dict(sub)) for sub in d["spaces"]])


def _dict(d: dict) -> gym.Space:
    # An OrderedDict keeps the written order (gymnasium would sort a plain dict's keys).
    return gym.spaces.Dict(
        OrderedDict((key, _required(gym_space_from_dict(sub))) for key, sub in d["spaces"].items())
    )


def _simplex(d: dict) -> gym.Space:
    return Simplex(tuple(d["shape"]), np.asarray(d["concentration"]), np.dtype(d["dtype"]))


def _repeated(d: dict) -> gym.Space:
    return Repeated(_required(gym_space_from_dict(d["child_space"])), max_len=d["max_len"])


def _flex_dict(d: dict) -> gym.Space:
    return FlexDict(
        {key: _required(gym_space_from_dict(sub)) for key, sub in d.items() if key != "space"}
    )


def _text(d: dict) -> gym.Space:
    kwargs = {"min_length": d["min_length"]}
    if "charset" in d:
        kwargs["charset"] = d["charset"]
    return gym.spaces.Text(d["max_length"], **kwargs)


_READERS: dict[str, Callable[[dict], gym.Space]] = {
    "box": _box,
    "discrete": _discrete,
    "multi-binary": _multi_binary,
    "multi-discrete": _multi_discrete,
    "tuple": _tuple,
    "dict": _dict,
    "simplex": _simplex,
    "repeated": _repeated,
    "flex_dict": _flex_dict,
    "text": _text,
}


def _required(space: gym.Space | None) -> gym.Space:
    if space is None:
        raise ValueError("gym_space_from_dict: a sub-space is None")
    return space


def gym_space_from_dict(d: dict | None) -> gym.Space | None:
    """The space `gym_space_to_dict` (RLlib's or this one) described; None stays None.
    Raises ValueError for an unknown "space" kind, naming the allowed ones."""
    if d is None:
        return None
    kind = d.get("space") if isinstance(d, dict) else None
    reader = _READERS.get(kind) if isinstance(kind, str) else None
    if reader is None:
        raise ValueError(
            f"gym_space_from_dict: unknown space type {kind!r} (allowed: {sorted(_READERS)})"
        )
    return reader(d)


def space_to_dict(space: gym.Space) -> dict:
    """`{"space": gym_space_to_dict(space)}`, plus `"original_space"` (the same, nested)
    when the space has an `original_space` attribute."""
    d: dict[str, Any] = {"space": gym_space_to_dict(space)}
    if "original_space" in vars(space):
        d["original_space"] = space_to_dict(space.original_space)  # type: ignore[attr-defined]
    return d


def space_from_dict(d: dict) -> gym.Space | None:
    """The space `space_to_dict` described, its `original_space` set again (one written by
    `gym_space_to_dict`, RLlib's older layout, is read too)."""
    space = gym_space_from_dict(d["space"])
    original = d.get("original_space")
    if original is not None and space is not None:
        if isinstance(original.get("space"), str):  # RLlib's older layout
            space.original_space = gym_space_from_dict(original)  # type: ignore[attr-defined]
        else:
            space.original_space = space_from_dict(original)  # type: ignore[attr-defined]
    return space


def serialize_type(type_: type | str) -> str:
    """A class as its import path ("module.QualName"); a string is returned as it is."""
    if isinstance(type_, str):
        return type_
    return f"{type_.__module__}.{type_.__qualname__}"


def deserialize_type(module: type | str, error: bool = False) -> Any:
    """The class an import path ("package.module.Name") names; a class is returned as it is.
    A path that does not import is returned unchanged, or, with `error`, raises ValueError
    naming it (as RLlib's)."""
    if isinstance(module, type):
        return module
    if not isinstance(module, str):
        raise ValueError(f"deserialize_type: `module` ({module!r}) must be a type or a string")
    try:
        module_path, class_name = module.rsplit(".", 1)
        return getattr(importlib.import_module(module_path), class_name)
    except (ImportError, AttributeError, ValueError) as failure:
        if error:
            raise ValueError(
                f"Could not deserialize the given classpath `module={module}` into a valid "
                "python class: make sure its package is installed and its module is on "
                "PYTHONPATH"
            ) from failure
    return module
