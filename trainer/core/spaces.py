"""Helpers for (possibly nested) gymnasium spaces and the data they describe, under RLlib's names
(`ray.rllib.utils.spaces.space_utils`, `ray.rllib.utils.numpy.one_hot`).

A *struct* is a dict, tuple or list of leaves (a `gym.spaces.Dict` or `Tuple` sample); anything else is a
leaf. `batch` turns a list of structs into one struct of arrays with a leading batch axis;
`get_dummy_batch_for_space` makes filler data of a space's shape; `space_to_dict` /
`space_from_dict` carry a space as plain data (checkpoints hold no pickles). `Simplex` is RLlib's
space of probability vectors (`ray.rllib.utils.spaces.simplex`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = [
    "Simplex",
    "batch",
    "get_base_struct_from_space",
    "get_dummy_batch_for_space",
    "map_structure",
    "one_hot",
    "one_hot_multidiscrete",
    "space_from_dict",
    "space_to_dict",
]


def map_structure(fn: Callable, *structs: Any) -> Any:
    """`fn` applied leaf by leaf to structs of the same shape (dicts by key, tuples and lists by
    position, as `dm_tree` does)."""
    first = structs[0]
    if isinstance(first, dict):
        return {key: map_structure(fn, *(s[key] for s in structs)) for key in first}
    if isinstance(first, (tuple, list)):
        mapped = [map_structure(fn, *items) for items in zip(*structs, strict=True)]
        return mapped if isinstance(first, list) else tuple(mapped)
    return fn(*structs)


def first_leaf(struct: Any) -> Any:
    while isinstance(struct, (dict, tuple)):
        struct = next(iter(struct.values())) if isinstance(struct, dict) else struct[0]
    return struct


def batch(items: list) -> Any:
    """A list of items (leaves or structs of one shape) as one struct of arrays whose leaves
    have the list's length as their first axis."""
    if not items:
        return np.asarray(items)
    if isinstance(items[0], (dict, tuple, list)):
        return map_structure(lambda *leaves: _stack(list(leaves)), *items)
    return _stack(items)


def _stack(leaves: list) -> np.ndarray:
    # One `asarray` over the list (several times faster than `np.stack` for small rows); rows
    # of different shapes go through `np.stack` for its error message.
    try:
        return np.asarray(leaves)
    except ValueError:
        return np.stack(leaves)


def get_base_struct_from_space(space: gym.Space | None) -> Any:
    """A `Dict`/`Tuple` space as a dict/tuple of its leaf spaces (other spaces as they are)."""
    if isinstance(space, gym.spaces.Dict):
        return {key: get_base_struct_from_space(sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(get_base_struct_from_space(sub) for sub in space.spaces)
    return space


def get_dummy_batch_for_space(
    space: gym.Space | Any,
    batch_size: int = 32,
    *,
    fill_value: float = 0.0,
    one_hot_discrete: bool = False,
) -> Any:
    """Filler data of `space`'s structure: every leaf `fill_value` in its space's shape and dtype
    (with a leading `batch_size` axis unless it is 0). With `one_hot_discrete`, `Discrete(n)`
    leaves are float32 vectors of length n and `MultiDiscrete` ones of length `sum(nvec)`."""
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        space = get_base_struct_from_space(space)
    if isinstance(space, (dict, tuple)):
        return map_structure(
            lambda s: get_dummy_batch_for_space(
                s, batch_size, fill_value=fill_value, one_hot_discrete=one_hot_discrete
            ),
            space,
        )
    shape, dtype = space.shape, space.dtype
    if one_hot_discrete and isinstance(space, gym.spaces.Discrete):
        shape, dtype = (int(space.n),), np.float32
    elif one_hot_discrete and isinstance(space, gym.spaces.MultiDiscrete):
        shape, dtype = (int(np.sum(space.nvec)),), np.float32
    if shape is None:
        raise ValueError(f"get_dummy_batch_for_space: {space} has no fixed shape")
    leading = (batch_size,) if batch_size > 0 else ()
    return np.full(leading + tuple(shape), fill_value, dtype=dtype)


def space_takes(space: gym.Space, value: Any) -> bool:
    """Whether `space` takes `value` as RLlib's new stack does: `space.contains(value)`, or,
    for a Box (in a Dict or Tuple too), numbers of its shape within its bounds in another
    dtype (a float64 observation in a float32 Box: RLlib neither checks nor refuses it, and
    the module reads it as float32)."""
    if space.contains(value):
        return True
    if isinstance(space, gym.spaces.Box):
        array = np.asarray(value)
        if array.shape != space.shape or array.dtype.kind not in "fiub":
            return False
        with np.errstate(invalid="ignore", over="ignore"):
            cast = array.astype(space.dtype)
        return bool(np.all(cast >= space.low) and np.all(cast <= space.high))
    if isinstance(space, gym.spaces.Dict):
        return (
            isinstance(value, dict)
            and value.keys() == space.spaces.keys()
            and all(space_takes(sub, value[key]) for key, sub in space.spaces.items())
        )
    if isinstance(space, gym.spaces.Tuple):
        return (
            isinstance(value, (tuple, list))
            and len(value) == len(space.spaces)
            and all(space_takes(sub, item) for sub, item in zip(space.spaces, value, strict=True))
        )
    return False


def one_hot(
    x: Any, depth: int = 0, on_value: float = 1.0, off_value: float = 0.0, dtype: Any = np.float32
) -> np.ndarray:
    """Integers (any shape) as one-hot vectors along a new last axis of length `depth`
    (default: the largest value + 1)."""
    x = np.asarray(x)
    if depth == 0:
        depth = int(np.max(x)) + 1
    out = np.full(x.shape + (depth,), off_value, dtype=dtype)
    np.put_along_axis(out, x.astype(np.int64)[..., None], on_value, axis=-1)
    return out


def one_hot_multidiscrete(x: Any, depths: Any) -> np.ndarray:
    """A MultiDiscrete value (last axis: one integer per sub-space) as its one-hot vectors
    concatenated."""
    x = np.asarray(x)
    return np.concatenate(
        [one_hot(x[..., i], int(depth)) for i, depth in enumerate(depths)], axis=-1
    )


# -- RLlib's Simplex space ---------------------------------------------------------------------
class Simplex(gym.Space[np.ndarray]):
    """RLlib's `Simplex` (`ray.rllib.utils.spaces.simplex`): probability vectors along the last
    axis of `shape` (each in [0, 1], summing to 1), e.g. `Simplex((3, 4))` holds 3 independent
    4-way distributions. `sample()` draws each vector from a Dirichlet distribution with
    `concentration` (one value per entry of the last axis; default all ones: uniform on the
    simplex), from the space's own generator (`seed()`) where RLlib draws from numpy's global
    one. `contains` also checks that no entry is negative (RLlib checks only shape and sums)."""

    def __init__(self, shape: tuple | list, concentration: Any = None, dtype: Any = np.float32):
        if not isinstance(shape, (tuple, list)):
            raise TypeError(f"Simplex: shape must be a tuple or list, not {shape!r}")
        super().__init__(tuple(shape), dtype)
        self.dim = int(shape[-1])
        if concentration is None:
            self.concentration = np.ones(self.dim, dtype=np.int64)  # RLlib's default: ints
        else:
            self.concentration = np.asarray(concentration)
            if self.concentration.shape[0] != self.dim:
                raise ValueError(
                    f"Simplex: concentration has {self.concentration.shape[0]} entries, the "
                    f"last axis of shape={tuple(shape)} {self.dim}"
                )

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape  # type: ignore[return-value]

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        """Vectors drawn from Dirichlet(`concentration`), in the space's shape and dtype."""
        if mask is not None or probability is not None:
            raise ValueError("Simplex.sample: masks and probabilities are not supported")
        drawn = self.np_random.dirichlet(self.concentration, size=self.shape[:-1])
        return drawn.astype(self.dtype)

    def contains(self, x: Any) -> bool:
        """Whether `x` has the space's shape, no negative entry and sums to 1 (within
        `np.allclose`) along its last axis."""
        x = np.asarray(x)
        return bool(
            x.shape == self.shape
            and np.all(x >= 0)
            and np.allclose(np.sum(x, axis=-1), np.ones_like(x[..., 0]))
        )

    def to_jsonable(self, sample_n: Any) -> list:
        return np.array(sample_n).tolist()

    def from_jsonable(self, sample_n: Any) -> list[np.ndarray]:
        return [np.asarray(sample) for sample in sample_n]

    def __repr__(self) -> str:
        return f"Simplex({self.shape}; {self.concentration})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, Simplex)
            and self.shape == other.shape
            and np.allclose(self.concentration, other.concentration)
        )

    __hash__ = None  # type: ignore[assignment]


# -- spaces as plain data ----------------------------------------------------------------------
def space_to_dict(space: gym.Space | None) -> dict | None:
    """A space as JSON/msgpack data (`space_from_dict` rebuilds it). Supported: Box, Discrete,
    MultiDiscrete, MultiBinary, Text, Simplex, and Dict/Tuple of these."""
    if space is None:
        return None
    if isinstance(space, gym.spaces.Box):
        return {
            "space": "box",
            "low": space.low.tolist(),
            "high": space.high.tolist(),
            "shape": list(space.shape),
            "dtype": space.dtype.str,
        }
    if isinstance(space, gym.spaces.Discrete):
        return {"space": "discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {"space": "multi-discrete", "nvec": space.nvec.tolist(), "dtype": space.dtype.str}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"space": "multi-binary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, gym.spaces.Text):
        return {"space": "text", "min_length": space.min_length, "max_length": space.max_length}
    if isinstance(space, Simplex):
        return {
            "space": "simplex",
            "shape": list(space.shape),
            "concentration": space.concentration.tolist(),
            "dtype": np.dtype(space.dtype).str,
        }
    if isinstance(space, gym.spaces.Dict):
        return {
            "space": "dict",
            "spaces": {key: space_to_dict(sub) for key, sub in space.spaces.items()},
        }
    if isinstance(space, gym.spaces.Tuple):
        return {"space": "tuple", "spaces": [space_to_dict(sub) for sub in space.spaces]}
    raise TypeError(
        f"space_to_dict: {type(space).__name__} spaces are not supported "
        "(Box, Discrete, MultiDiscrete, MultiBinary, Text, Simplex, Dict, Tuple are)"
    )


def space_from_dict(data: dict | None) -> gym.Space | None:
    """The space `space_to_dict` described."""
    return None if data is None else _space_from(data)


def _space_from(data: dict) -> gym.Space:
    kind = data.get("space")
    if kind == "box":
        dtype = np.dtype(data["dtype"])  # bounds in it: no precision warning from gymnasium
        return gym.spaces.Box(
            np.asarray(data["low"], dtype=dtype),
            np.asarray(data["high"], dtype=dtype),
            tuple(data["shape"]),
            np.dtype(data["dtype"]),
        )
    if kind == "discrete":
        return gym.spaces.Discrete(data["n"], start=data.get("start", 0))
    if kind == "multi-discrete":
        return gym.spaces.MultiDiscrete(data["nvec"], dtype=np.dtype(data["dtype"]))
    if kind == "multi-binary":
        return gym.spaces.MultiBinary(data["n"])
    if kind == "text":
        return gym.spaces.Text(data["max_length"], min_length=data["min_length"])
    if kind == "simplex":
        return Simplex(
            tuple(data["shape"]), np.asarray(data["concentration"]), np.dtype(data["dtype"])
        )
    if kind == "dict":
        return gym.spaces.Dict({key: _space_from(sub) for key, sub in data["spaces"].items()})
    if kind == "tuple":
        return gym.spaces.Tuple([_space_from(sub) for sub in data["spaces"]])
    raise ValueError(f"space_from_dict: unknown space description {data!r}")


class Repeated(gym.Space):
    """A list of 1 to `max_len` samples of `child_space` (RLlib's
    `ray.rllib.utils.spaces.repeated.Repeated`)."""

    def __init__(self, child_space: gym.Space, max_len: int) -> None:
        super().__init__()
        self.child_space = child_space
        self.max_len = max_len

    def seed(self, seed: int | None = None) -> list:
        # Seeds the child space too, so that a seeded space samples the same lists.
        return [super().seed(seed), self.child_space.seed(seed)]

    def sample(self, mask: Any = None, probability: Any = None) -> list:
        return [
            self.child_space.sample() for _ in range(self.np_random.integers(1, self.max_len + 1))
        ]

    def contains(self, x: Any) -> bool:
        return (
            isinstance(x, (list, np.ndarray))
            and len(x) <= self.max_len
            and all(self.child_space.contains(c) for c in x)
        )

    def __repr__(self) -> str:
        return f"Repeated({self.child_space}, {self.max_len})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Repeated)
            and other.max_len == self.max_len
            and other.child_space == self.child_space
        )
