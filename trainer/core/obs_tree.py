"""Batches of nested observations (a gymnasium Dict or Tuple space's), framework-free.

A batch of `B` Dict observations is a dict of batched leaves (`{"action_mask": (B, n),
"observations": (B, 5)}`), a Tuple's a tuple of them, nested as the space is: the layout
gymnasium's vector envs return, episodes store (`to_numpy()`) and RLlib hands a torch module as
`batch[Columns.OBS]`. A plain array is a tree of one leaf, so every helper here works for Box
observations too.

The PPO learner draws its minibatches from flat columns: `flatten_column` puts a nested column's
leaves under `"obs/action_mask"`-style keys and `nest_column` gathers them back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.core.spaces import batch

#: What separates a nested column's name from its leaves' keys in a flat batch.
SEPARATOR = "/"


def is_nested(tree: Any) -> bool:
    """Whether `tree` is a dict or tuple of leaves (not a plain array)."""
    return isinstance(tree, (dict, tuple))


def tree_map(func: Callable[[Any], Any], tree: Any) -> Any:
    """`func` applied to every leaf of a nested dict / tuple, the structure kept."""
    if isinstance(tree, dict):
        return {key: tree_map(func, value) for key, value in tree.items()}
    if isinstance(tree, tuple):
        return tuple(tree_map(func, value) for value in tree)
    return func(tree)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of a nested dict / tuple, depth first in insertion order."""
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in tree_leaves(value)]
    if isinstance(tree, tuple):
        return [leaf for value in tree for leaf in tree_leaves(value)]
    return [tree]


def tree_len(tree: Any) -> int:
    """The batch size of a batched tree (its first leaf's rows)."""
    leaves = tree_leaves(tree)
    if not leaves:
        raise ValueError("an observation batch without leaves (an empty Dict / Tuple space)")
    return len(leaves[0])


def tree_concat(trees: list[Any]) -> Any:
    """Batched trees of the same structure concatenated leaf by leaf on axis 0 (a list of
    nested rows, as an episode not yet numpy'ized holds them, is batched first)."""
    trees = [
        batch(tree) if isinstance(tree, list) and tree and is_nested(tree[0]) else tree
        for tree in trees
    ]
    first = trees[0]
    if isinstance(first, dict):
        return {key: tree_concat([tree[key] for tree in trees]) for key in first}
    if isinstance(first, tuple):
        return tuple(tree_concat([tree[i] for tree in trees]) for i in range(len(first)))
    return np.concatenate(trees)


def tree_rows(tree: Any, index: Any) -> Any:
    """Rows `index` (an int, slice or index array) of every leaf."""
    return tree_map(lambda leaf: leaf[index], tree)


def float32_leaves(tree: Any) -> Any:
    """Every leaf as a numpy array, float64 ones as float32 (torch modules compute in float32;
    RLlib's `convert_to_torch_tensor` does the same). Other dtypes (ints of Discrete
    sub-spaces, bools) stay as they are."""

    def leaf(value: Any) -> np.ndarray:
        array = np.asarray(value)
        return array.astype(np.float32) if array.dtype == np.float64 else array

    return tree_map(leaf, tree)


def flatten_column(name: str, tree: Any) -> dict[str, np.ndarray]:
    """A nested column's leaves under flat keys: `{"obs/action_mask": ..., "obs/0": ...}`
    (tuple entries by position)."""
    if isinstance(tree, dict):
        items: list[tuple[Any, Any]] = list(tree.items())
    elif isinstance(tree, tuple):
        items = list(enumerate(tree))
    else:
        return {name: tree}
    flat: dict[str, np.ndarray] = {}
    for key, value in items:
        flat.update(flatten_column(f"{name}{SEPARATOR}{key}", value))
    return flat


def _same(value: Any) -> Any:
    return value


def nest_column(
    name: str, structure: Any, batch: dict[str, Any], *, convert: Callable[[Any], Any] = _same
) -> Any:
    """The inverse of `flatten_column`: `structure`'s nesting (a tree of any leaves: the
    un-flattened column, or one of its rows) rebuilt from `batch`'s flat keys, each leaf
    through `convert` (e.g. to a tensor)."""
    if isinstance(structure, dict):
        return {
            key: nest_column(f"{name}{SEPARATOR}{key}", value, batch, convert=convert)
            for key, value in structure.items()
        }
    if isinstance(structure, tuple):
        return tuple(
            nest_column(f"{name}{SEPARATOR}{i}", value, batch, convert=convert)
            for i, value in enumerate(structure)
        )
    return convert(batch[name])


def set_row(tree: Any, index: int, row: Any) -> None:
    """Writes one observation (`row`, nested as `tree`) into row `index` of every leaf."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            set_row(value, index, row[key])
    elif isinstance(tree, tuple):
        for value, part in zip(tree, row, strict=True):
            set_row(value, index, part)
    else:
        tree[index] = row


def batch_from_state(data: Any, space: gym.Space | None) -> Any:
    """A batch of observations as a checkpoint stored it (plain data: lists may stand for
    tuples), rebuilt as arrays nested as `space` (a Dict / Tuple space; any other space or
    None: one array)."""
    if isinstance(space, gym.spaces.Dict):
        return {key: batch_from_state(data[key], sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(
            batch_from_state(part, sub) for part, sub in zip(data, space.spaces, strict=True)
        )
    return np.array(data)


def is_nested_space(space: Any) -> bool:
    """Whether a gymnasium space is a Dict or Tuple (observations then come as trees)."""
    return isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple))
