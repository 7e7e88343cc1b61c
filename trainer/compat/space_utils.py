"""RLlib's space helpers (`ray.rllib.utils.spaces.space_utils`) beyond those this project's
own code uses (`trainer.core.spaces`: `get_base_struct_from_space`, `get_dummy_batch_for_space`),
and RLlib's `FlexDict` space (`ray.rllib.utils.spaces.flexdict`).

A *struct* is a dict, tuple or list of leaves (a `Dict`/`Tuple` space's sample); dicts are
walked in sorted key order, as `dm_tree` walks them, so results match RLlib's.

- `batch` / `unbatch`: a list of structs <-> one struct of arrays with a leading batch axis
  (`batch(..., individual_items_already_have_batch_dim=True)` concatenates instead of stacking;
  `"auto"` decides by `BatchedNdArray` leaves);
- `unsquash_action` / `normalize_action` / `clip_action`: map Box actions between [-1, 1] and
  the space's bounds (integer Boxes are shifted by `low`);
- `convert_element_to_space_type`: an element's leaves cast to the dtypes of a sample of the
  space (float 0.0 -> int for a Discrete, float64 -> float32 for a Box, ...);
- `flatten_space`, `flatten_to_single_ndarray`, `get_original_space`, `is_composite_space`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.capabilities import OLD_API_STACK
from trainer.core.spaces import Repeated
from trainer.util.rllib_members import refuse

__all__ = [
    "BatchedNdArray",
    "FlexDict",
    "Repeated",
    "batch",
    "clip_action",
    "convert_element_to_space_type",
    "flatten_space",
    "flatten_to_single_ndarray",
    "get_original_space",
    "is_composite_space",
    "normalize_action",
    "unbatch",
    "unsquash_action",
]


@refuse(
    "ray.rllib.utils.spaces.flexdict.FlexDict",
    OLD_API_STACK,
    "gym's removed Space.assertSpace check; FlexDict here is a gymnasium Dict (check a "
    "member with isinstance(space, gymnasium.Space))",
    "assertSpace",
)
class FlexDict(gym.spaces.Dict):
    """RLlib's `FlexDict`: a `gym.spaces.Dict` whose sub-spaces can be added and replaced
    after it is made (`space["key"] = Box(...)`)."""

    def __init__(self, spaces: dict[str, gym.Space] | None = None, **spaces_kwargs: gym.Space):
        if spaces is not None and spaces_kwargs:
            raise ValueError(
                "FlexDict: give the sub-spaces either as FlexDict(spaces={...}) or as "
                "keywords FlexDict(foo=..., bar=...), not both"
            )
        spaces = dict(spaces_kwargs if spaces is None else spaces)
        for key, space in spaces.items():
            self._check_space(key, space)
        super().__init__(spaces=spaces)

    @staticmethod
    def _check_space(key: Any, space: Any) -> None:
        if not isinstance(space, gym.Space):
            raise TypeError(
                f"FlexDict[{key!r}]: the values must be gymnasium spaces, not "
                f"{type(space).__name__}"
            )

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        """A sample of each sub-space, by key."""
        return {key: space.sample() for key, space in self.spaces.items()}

    def __getitem__(self, key: str) -> gym.Space:
        return self.spaces[key]

    def __setitem__(self, key: str, space: gym.Space) -> None:
        self._check_space(key, space)
        self.spaces[key] = space

    def __repr__(self) -> str:
        return "FlexDict(" + ", ".join(f"{k}:{s}" for k, s in self.spaces.items()) + ")"


class BatchedNdArray(np.ndarray):
    """An array marked as already having a batch axis: `batch(...,
    individual_items_already_have_batch_dim="auto")` concatenates such items instead of
    stacking them."""

    def __new__(cls, input_array: Any) -> BatchedNdArray:
        return np.asarray(input_array).view(cls)


# -- structs ------------------------------------------------------------------------------------
def _is_struct(value: Any) -> bool:
    return isinstance(value, (dict, tuple, list))


def _flatten(struct: Any) -> list[Any]:
    """The leaves of `struct`, dicts in sorted key order (as `dm_tree.flatten`)."""
    if isinstance(struct, dict):
        return [leaf for key in sorted(struct) for leaf in _flatten(struct[key])]
    if isinstance(struct, (tuple, list)):
        return [leaf for item in struct for leaf in _flatten(item)]
    return [struct]


def _map(fn: Callable[..., Any], first: Any, *others: Any) -> Any:
    """`fn` leaf by leaf over structs shaped like `first` (the others' tuples and lists are
    interchangeable, as `dm_tree.map_structure(..., check_types=False)` allows)."""
    if isinstance(first, dict):
        return {key: _map(fn, first[key], *(o[key] for o in others)) for key in first}
    if isinstance(first, (tuple, list)):
        for other in others:
            if not isinstance(other, (tuple, list)) or len(other) != len(first):
                raise ValueError(
                    f"structures differ: {type(first).__name__} of {len(first)} vs {other!r}"
                )
        mapped = [_map(fn, *items) for items in zip(first, *others, strict=True)]
        return mapped if isinstance(first, list) else tuple(mapped)
    return fn(first, *others)


def batch(
    list_of_structs: list[Any], *, individual_items_already_have_batch_dim: bool | str = False
) -> Any:
    """A list of structs (one per batch item) as one struct whose leaves are arrays with the
    list's length as their first axis. With `individual_items_already_have_batch_dim=True`
    the items' leaves are concatenated along their own first axis instead ("auto": so when
    the first leaf is a `BatchedNdArray`). Raises ValueError for an empty list."""
    if not list_of_structs:
        raise ValueError("batch: `list_of_structs` holds no items")
    first = list_of_structs[0]
    nested = isinstance(first, (dict, tuple))
    concatenate = individual_items_already_have_batch_dim
    if concatenate == "auto":
        leaf = _flatten(first)[0] if nested else first
        concatenate = isinstance(leaf, BatchedNdArray)
    if concatenate:
        join: Callable[..., np.ndarray] = lambda *leaves: np.concatenate(leaves, axis=0)  # noqa: E731
    else:
        join = lambda *leaves: np.stack([np.asarray(leaf) for leaf in leaves])  # noqa: E731
    if nested:
        return _map(join, *list_of_structs)
    return join(*list_of_structs)


def unbatch(batches_struct: Any) -> list[Any]:
    """The inverse of `batch`: a struct whose leaves have a batch axis as a list of structs,
    one per batch item (a plain batch gives the list of its items)."""
    leaves = _flatten(batches_struct)
    size = len(leaves[0])
    return [_map(lambda leaf, i=i: leaf[i], batches_struct) for i in range(size)]


# -- actions ------------------------------------------------------------------------------------
def _is_float_box(space: Any) -> bool:
    return isinstance(space, gym.spaces.Box) and space.dtype in (np.float32, np.float64)


def clip_action(action: Any, action_space: Any) -> Any:
    """`action` with each Box component clipped to its space's bounds (`action_space` is the
    space's struct, `get_base_struct_from_space`)."""

    def clip(a: Any, s: Any) -> Any:
        return np.clip(a, s.low, s.high) if isinstance(s, gym.spaces.Box) else a

    return _map(clip, action, action_space)


def unsquash_action(action: Any, action_space_struct: Any) -> Any:
    """`action` mapped from the policy's [-1, 1] to the env's bounds (inverse of
    `normalize_action`): each bounded float Box component to `low + (a + 1) * (high - low) / 2`
    (clipped to the bounds), each bounded integer Box component shifted by `low`; other
    components unchanged."""

    def unsquash(a: Any, s: Any) -> Any:
        if not (
            isinstance(s, gym.spaces.Box) and np.all(s.bounded_below) and np.all(s.bounded_above)
        ):
            return a
        if _is_float_box(s):
            return np.clip(s.low + (a + 1.0) * (s.high - s.low) / 2.0, s.low, s.high)
        if np.issubdtype(s.dtype, np.integer):
            return s.low + a
        return a

    return _map(unsquash, action, action_space_struct)


def normalize_action(action: Any, action_space_struct: Any) -> Any:
    """`action` mapped from the env's bounds to [-1, 1] (inverse of `unsquash_action`), for
    each float Box component; other components unchanged."""

    def normalize(a: Any, s: Any) -> Any:
        return ((a - s.low) * 2.0) / (s.high - s.low) - 1.0 if _is_float_box(s) else a

    return _map(normalize, action, action_space_struct)


def convert_element_to_space_type(element: Any, sampled_element: Any) -> Any:
    """`element` with its leaves converted to the types of `sampled_element` (a sample of
    the space): arrays to the sample's dtype, a Python number to a 0-d array where the
    sample is one, a whole float to an int where the sample is an int. Raises ValueError
    for a number where the sample is a shaped array."""

    def convert(elem: Any, sample: Any) -> Any:
        if isinstance(sample, np.ndarray):
            if not isinstance(elem, np.ndarray):
                if not isinstance(elem, (float, int)):
                    raise ValueError(
                        f"convert_element_to_space_type: {elem!r} must be an np.ndarray, a "
                        "float or an int"
                    )
                if sample.shape != ():
                    raise ValueError(
                        f"convert_element_to_space_type: {elem!r} should be an np.ndarray of "
                        f"shape {sample.shape}, not a {type(elem).__name__}"
                    )
                return np.array(elem, dtype=sample.dtype)
            return elem.astype(sample.dtype) if elem.dtype != sample.dtype else elem
        if isinstance(sample, (int, np.integer)):
            if isinstance(elem, float) and elem.is_integer():
                return int(elem)
            if isinstance(elem, np.floating):
                return np.int64(elem)
        return elem

    return _map(convert, element, sampled_element)


# -- spaces -------------------------------------------------------------------------------------
def get_original_space(space: gym.Space) -> gym.Space:
    """The end of `space`'s chain of `original_space` attributes (the space itself if none)."""
    while hasattr(space, "original_space"):
        space = space.original_space
    return space


def is_composite_space(space: gym.Space) -> bool:
    """Whether `space` holds other spaces (exactly a Dict, Graph, Sequence or Tuple, as
    gymnasium's glossary and RLlib say)."""
    return type(space) in (
        gym.spaces.Dict,
        gym.spaces.Graph,
        gym.spaces.Sequence,
        gym.spaces.Tuple,
    )


def flatten_space(space: gym.Space) -> list[gym.Space]:
    """The primitive (non-Tuple, non-Dict) sub-spaces of `space`, in order (Dict keys
    sorted)."""
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for sub in space.spaces for leaf in flatten_space(sub)]
    if isinstance(space, gym.spaces.Dict):
        return [leaf for key in sorted(space.spaces) for leaf in flatten_space(space[key])]
    return [space]


def flatten_to_single_ndarray(input_: Any) -> Any:
    """A list/tuple/dict of arrays as one flat 1-D array (each leaf flattened, then
    concatenated); anything else is returned as it is."""
    if isinstance(input_, (list, tuple, dict)):
        return np.concatenate([np.reshape(leaf, [-1]) for leaf in _flatten(input_)], axis=0)
    return input_
