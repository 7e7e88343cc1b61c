"""Composite action spaces (Tuple, Dict, MultiDiscrete, and any nesting of them with Discrete
and Box leaves) for the numpy modules and learners.

RLlib 2.60 acts in such a space through a multi-distribution (its Catalog picks
`TorchMultiDistribution` for Tuple and Dict, `TorchMultiCategorical` for MultiDiscrete): the
module's output holds each leaf's distribution inputs one after another in the space's
flatten order (dict keys sorted, as gymnasium and dm_tree order them), and an action's
log-likelihood, entropy and KL are the sums of its leaves'.

Data flow here:

    module output (N, num_inputs) --MultiActionDistribution.act--> flat rows (N, width)
    flat rows --ActionLayout.unflatten--> nested actions (episodes, callbacks, the env)
    nested actions from episodes --ActionLayout.flatten--> flat rows (the numpy learners)

A flat row holds a Discrete leaf as one column (its index, from 0), a MultiDiscrete leaf as
one column per component, and a Box leaf as its values, flattened. float32 holds every index
below 2**24 exactly; larger Discrete spaces are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import gymnasium as gym
import numpy as np

from trainer import capabilities
from trainer.core.nn import Categorical, DiagGaussian, LossTerms
from trainer.errors import UnsupportedValue

#: The largest number of choices a Discrete leaf may have (float32 rows hold its indices).
MAX_CHOICES = 2**24


def is_composite_action_space(space: Any) -> bool:
    """Whether `space` is acted in through a multi-distribution (Tuple, Dict, MultiDiscrete)."""
    return isinstance(space, (gym.spaces.Tuple, gym.spaces.Dict, gym.spaces.MultiDiscrete))


@dataclass(frozen=True)
class Leaf:
    """One leaf of a composite action space: where it sits in the nested action (`path`),
    its columns in a flat row and its slice of the distribution inputs."""

    path: tuple
    space: gym.Space
    columns: slice
    inputs: slice


@dataclass(frozen=True)
class Part:
    """One distribution of the multi-distribution: a Categorical over one column, or a
    DiagGaussian over a Box leaf's columns."""

    dist: Any  # Categorical or DiagGaussian (classes of static methods)
    columns: slice
    inputs: slice


class ActionLayout:
    """A composite action space's leaves, flat-row width and distribution inputs (see the
    module docstring). Raises ValueError, naming the leaf, for a leaf that is neither
    Discrete, MultiDiscrete nor Box (RLlib's multi-distribution takes those)."""

    def __init__(self, space: gym.Space):
        if not is_composite_action_space(space):
            raise ValueError(f"ActionLayout is for Tuple, Dict and MultiDiscrete spaces: {space}")
        self.space = space
        self.leaves: list[Leaf] = []
        self.parts: list[Part] = []
        self._columns = 0
        self._inputs = 0
        self._add(space, ())

    def _add(self, space: gym.Space, path: tuple) -> None:
        if isinstance(space, gym.spaces.Tuple):
            for index, sub in enumerate(space.spaces):
                self._add(sub, (*path, index))
            return
        if isinstance(space, gym.spaces.Dict):
            for key in _sorted_keys(space):  # dm-tree's order, as RLlib's distributions
                self._add(space.spaces[key], (*path, key))
            return
        where = "action space" + "".join(f"[{step!r}]" for step in path)
        first_column, first_input = self._columns, self._inputs
        if isinstance(space, gym.spaces.Discrete):
            choices = [int(space.n)]
        elif isinstance(space, gym.spaces.MultiDiscrete):
            choices = [int(n) for n in np.asarray(space.nvec).ravel()]
        elif isinstance(space, gym.spaces.Box):
            size = int(np.prod(space.shape, dtype=np.int64))
            self.parts.append(
                Part(
                    DiagGaussian,
                    slice(first_column, first_column + size),
                    slice(first_input, first_input + 2 * size),
                )
            )
            self._columns += size
            self._inputs += 2 * size
            self.leaves.append(
                Leaf(
                    path,
                    space,
                    slice(first_column, self._columns),
                    slice(first_input, self._inputs),
                )
            )
            return
        else:
            raise UnsupportedValue(
                f"{where}: {space} is not supported in a composite action space: its leaves "
                "may be Discrete, MultiDiscrete and Box (RLlib's multi-distribution takes those)",
                capabilities.ACTION_SPACES,
            )
        for n in choices:
            if not 1 <= n <= MAX_CHOICES:
                raise ValueError(
                    f"{where}: {space} has {n} choices; 1 to {MAX_CHOICES} are supported"
                )
            self.parts.append(
                Part(
                    Categorical,
                    slice(self._columns, self._columns + 1),
                    slice(self._inputs, self._inputs + n),
                )
            )
            self._columns += 1
            self._inputs += n
        self.leaves.append(
            Leaf(path, space, slice(first_column, self._columns), slice(first_input, self._inputs))
        )

    @property
    def width(self) -> int:
        """Columns of a flat row."""
        return self._columns

    @property
    def num_inputs(self) -> int:
        """Distribution inputs per row (the policy head's width)."""
        return self._inputs

    # -- nested <-> flat ---------------------------------------------------------------------
    def flatten(self, actions: Any) -> np.ndarray:
        """Nested actions with a leading batch axis on every leaf (or a list of nested
        actions) as flat rows, (N, width) float32."""
        if isinstance(actions, list):
            return np.stack([self.flatten_one(action) for action in actions]).reshape(
                len(actions), self.width
            )
        columns = []
        for leaf in self.leaves:
            value = np.asarray(_at(actions, leaf.path))
            rows = value.shape[0]
            value = value.reshape(rows, -1).astype(np.float32)
            if not isinstance(leaf.space, gym.spaces.Box):
                start = cast(Any, leaf.space).start  # Discrete / MultiDiscrete
                value = value - np.asarray(start, dtype=np.float32).reshape(1, -1)
            columns.append(value)
        return np.concatenate(columns, axis=1) if columns else np.zeros((0, 0), np.float32)

    def flatten_one(self, action: Any) -> np.ndarray:
        """One nested action as one flat row, (width,) float32."""
        row = np.empty(self.width, dtype=np.float32)
        for leaf in self.leaves:
            value = np.asarray(_at(action, leaf.path), dtype=np.float32).ravel()
            if not isinstance(leaf.space, gym.spaces.Box):
                start = cast(Any, leaf.space).start  # Discrete / MultiDiscrete
                value = value - np.asarray(start, dtype=np.float32).ravel()
            row[leaf.columns] = value
        return row

    def unflatten(self, rows: np.ndarray, *, normalize: bool = False, clip: bool = False) -> Any:
        """Flat rows as nested actions, each leaf batched: Discrete leaves as int64 indices
        (plus the space's start), Box leaves in their shape and dtype; with `normalize` a
        bounded Box leaf maps [-1, 1] onto its bounds, with `clip` it is clipped to them
        (RLlib's `normalize_actions` / `clip_actions`, leaf by leaf)."""
        rows = np.asarray(rows)
        n = rows.shape[0]
        values = [
            self._leaf_values(leaf, rows[:, leaf.columns], n, normalize, clip)
            for leaf in self.leaves
        ]
        return self._build(
            self.space, (), dict(zip((leaf.path for leaf in self.leaves), values, strict=True))
        )

    def unflatten_one(self, row: np.ndarray, *, normalize: bool = False, clip: bool = False) -> Any:
        """One flat row as one nested action (Discrete leaves as Python ints)."""
        batched = self.unflatten(
            np.asarray(row).reshape(1, self.width), normalize=normalize, clip=clip
        )
        return _first_row(batched)

    @staticmethod
    def _leaf_values(
        leaf: Leaf, columns: np.ndarray, n: int, normalize: bool, clip: bool
    ) -> np.ndarray:
        space = leaf.space
        if isinstance(space, gym.spaces.Discrete):
            return np.rint(columns[:, 0]).astype(np.int64) + int(space.start)
        if isinstance(space, gym.spaces.MultiDiscrete):
            start = np.asarray(space.start, dtype=np.int64).reshape(1, -1)
            values = np.rint(columns).astype(np.int64) + start
            return values.reshape((n, *space.shape))
        box = space
        assert isinstance(box, gym.spaces.Box)
        low = box.low.reshape(1, -1).astype(np.float32)
        high = box.high.reshape(1, -1).astype(np.float32)
        bounded = bool(np.all(np.isfinite(low)) and np.all(np.isfinite(high)))
        values = columns
        if normalize and bounded:
            values = low + (np.clip(values, -1.0, 1.0) + 1.0) * 0.5 * (high - low)
        elif clip:
            values = np.clip(values, low, high)
        return values.reshape((n, *box.shape)).astype(box.dtype, copy=False)

    def _build(self, space: gym.Space, path: tuple, values: dict) -> Any:
        if isinstance(space, gym.spaces.Tuple):
            return tuple(self._build(sub, (*path, i), values) for i, sub in enumerate(space.spaces))
        if isinstance(space, gym.spaces.Dict):
            return {
                key: self._build(sub, (*path, key), values) for key, sub in space.spaces.items()
            }
        return values[path]


def _sorted_keys(space: gym.spaces.Dict) -> list:
    try:
        return sorted(space.spaces)
    except TypeError:  # keys of mixed types: the space's own order
        return list(space.spaces)


def _at(struct: Any, path: tuple) -> Any:
    for step in path:
        struct = struct[step]
    return struct


def _first_row(batched: Any) -> Any:
    if isinstance(batched, tuple):
        return tuple(_first_row(item) for item in batched)
    if isinstance(batched, dict):
        return {key: _first_row(item) for key, item in batched.items()}
    value = batched[0]
    return value.item() if value.ndim == 0 and value.dtype.kind in "iu" else value


def _part_actions(part: Part, rows: np.ndarray) -> np.ndarray:
    """A part's actions in flat rows: a Categorical's one column as a vector, a Gaussian's
    columns as they are."""
    actions = rows[:, part.columns]
    return actions[:, 0] if part.dist is Categorical else actions


class MultiActionDistribution:
    """The numpy multi-distribution of a composite action space: the interface of
    `trainer.core.nn.Categorical` / `DiagGaussian` (`num_inputs`, `act`, `logp`, `entropy`,
    `kl`, `loss_grads`) over flat rows, each term the sum over the parts (RLlib's
    `TorchMultiDistribution` semantics)."""

    def __init__(self, layout: ActionLayout):
        self.layout = layout
        self.parts = layout.parts

    def num_inputs(self, n: int | None = None) -> int:
        return self.layout.num_inputs

    def act(
        self, inputs: np.ndarray, rng: np.random.Generator, explore: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Flat rows drawn part by part (or each part's most likely value) and their
        log-likelihoods, summed."""
        n = inputs.shape[0]
        rows = np.empty((n, self.layout.width), dtype=np.float32)
        logp = np.zeros(n, dtype=np.float32)
        for part in self.parts:
            actions, part_logp = part.dist.act(inputs[:, part.inputs], rng, explore)
            rows[:, part.columns] = np.asarray(actions, dtype=np.float32).reshape(n, -1)
            logp += part_logp
        return rows, logp

    def logp(self, inputs: np.ndarray, rows: np.ndarray) -> np.ndarray:
        total = np.zeros(inputs.shape[0], dtype=inputs.dtype)
        for part in self.parts:
            total = total + part.dist.logp(inputs[:, part.inputs], _part_actions(part, rows))
        return total

    def entropy(self, inputs: np.ndarray) -> np.ndarray:
        return sum(part.dist.entropy(inputs[:, part.inputs]) for part in self.parts)

    def kl(self, old_inputs: np.ndarray, new_inputs: np.ndarray) -> np.ndarray:
        return sum(
            part.dist.kl(old_inputs[:, part.inputs], new_inputs[:, part.inputs])
            for part in self.parts
        )

    def loss_grads(self, inputs: np.ndarray, rows: np.ndarray, old_inputs: np.ndarray) -> LossTerms:
        """Each part's terms, summed, with the gradients laid out as the inputs are."""
        n = inputs.shape[0]
        logp = np.zeros(n, dtype=inputs.dtype)
        entropy = np.zeros(n, dtype=inputs.dtype)
        kl = np.zeros(n, dtype=inputs.dtype)
        d_logp = np.empty_like(inputs)
        d_entropy = np.empty_like(inputs)
        d_kl = np.empty_like(inputs)
        for part in self.parts:
            terms = part.dist.loss_grads(
                inputs[:, part.inputs], _part_actions(part, rows), old_inputs[:, part.inputs]
            )
            logp += terms.logp
            entropy += terms.entropy
            kl += terms.kl
            d_logp[:, part.inputs] = terms.d_logp
            d_entropy[:, part.inputs] = terms.d_entropy
            d_kl[:, part.inputs] = terms.d_kl
        return LossTerms(logp, d_logp, entropy, d_entropy, kl, d_kl)
