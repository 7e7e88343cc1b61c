"""Segment trees for prioritized replay (RLlib's `ray.rllib.execution.segment_tree`):
`SumSegmentTree` (totals and prefix-sum search) and `MinSegmentTree` (the smallest priority).

RLlib's interface: `capacity` items (a power of two), `tree[i]` reads and `tree[i] = v` writes an
item, `reduce(start, end)` (`sum()` / `min()`) folds a range, `find_prefixsum_idx(s)` finds the
item where the running sum passes `s`. Here every operation also takes numpy arrays of indices
(or prefix sums), so a whole batch costs a few numpy calls: the items sit in a tree of fan-out
64 (a level of block sums per 64 items), three levels for a million items, instead of a binary
tree walked in Python per item.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

_FANOUT = 64
# Levels up to this size are refolded whole after a write, and scanned whole by the search.
_REFOLD_WHOLE = 4096
_SCAN_WHOLE = 4096


class SegmentTree:
    """`capacity` items folded by `operation` ("sum" or "min") over blocks of 64."""

    _UFUNCS = {"sum": np.add, "min": np.minimum}
    _NEUTRAL = {"sum": 0.0, "min": float("inf")}

    def __init__(self, capacity: int, operation: Any, neutral_element: float | None = None):
        # RLlib passes the fold as a function: operator.add or min.
        operation = {operator.add: "sum", min: "min"}.get(operation, operation)
        if not (isinstance(capacity, int) and capacity > 0 and capacity & (capacity - 1) == 0):
            raise ValueError(f"SegmentTree(capacity={capacity!r}): must be a power of 2")
        if operation not in self._UFUNCS:
            raise ValueError(
                f"SegmentTree(operation={operation!r}): must be 'sum' or 'min' "
                "(operator.add or min)"
            )
        self.capacity = capacity
        self.operation = operation
        self._ufunc = self._UFUNCS[operation]
        self.neutral_element = (
            self._NEUTRAL[operation] if neutral_element is None else float(neutral_element)
        )
        # levels[0] holds the items; levels[k + 1][j] folds levels[k][64 j : 64 (j + 1)]. Each
        # level is padded to a multiple of 64 with the neutral element.
        self._levels: list[np.ndarray] = []
        size = capacity
        while True:
            padded = -(-size // _FANOUT) * _FANOUT
            self._levels.append(np.full(padded, self.neutral_element))
            if size == 1:
                break
            size = -(-size // _FANOUT)
        self._scan_level = min(
            k for k, level in enumerate(self._levels) if level.size <= _SCAN_WHOLE
        )

    @property
    def value(self) -> np.ndarray:
        """The items (RLlib's attribute holds the tree's nodes; the items are what a state
        round trip must keep)."""
        return self._levels[0][: self.capacity].copy()

    # -- items -------------------------------------------------------------------------------
    def __getitem__(self, idx: Any) -> Any:
        self._check_indices(idx)
        value = self._levels[0][idx]
        return float(value) if np.ndim(value) == 0 else value

    def __setitem__(self, idx: Any, val: Any) -> None:
        """Sets item(s) `idx` (an int or an array of ints) to `val` and refolds their blocks."""
        self._check_indices(idx)
        indices = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        self._levels[0][indices] = val
        for below, above in zip(self._levels[:-1], self._levels[1:], strict=True):
            blocks = below.reshape(-1, _FANOUT)
            if below.size <= _REFOLD_WHOLE:
                # A small level: refolding all of it is one call, cheaper than picking blocks.
                above[: len(blocks)] = self._ufunc.reduce(blocks, axis=1)
            else:
                indices = indices // _FANOUT
                above[indices] = self._ufunc.reduce(blocks[indices], axis=1)

    def _check_indices(self, idx: Any) -> None:
        indices = np.asarray(idx)
        if indices.size and (indices.min() < 0 or indices.max() >= self.capacity):
            raise IndexError(f"segment tree index {idx!r} out of range [0, {self.capacity})")

    # -- folds -------------------------------------------------------------------------------
    def reduce(self, start: int = 0, end: int | None = None) -> float:
        """`operation` over items `start` (included) to `end` (excluded; negative: from the
        capacity's end, as RLlib)."""
        if end is None:
            end = self.capacity
        elif end < 0:
            end += self.capacity
        if start == 0 and end == self.capacity:
            return float(self._levels[-1][0])
        if end <= start:
            return self.neutral_element
        return float(self._ufunc.reduce(self._levels[0][start:end]))

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> np.ndarray:
        """The items (plain data: one float array)."""
        return self._levels[0][: self.capacity].copy()

    def set_state(self, state: Any) -> None:
        values = np.asarray(state, dtype=np.float64)
        if values.shape != (self.capacity,):
            raise ValueError(
                f"{type(self).__name__}.set_state(): {values.shape[0]} items for a "
                f"tree of capacity {self.capacity}"
            )
        self._levels[0][: self.capacity] = values
        for below, above in zip(self._levels[:-1], self._levels[1:], strict=True):
            above[: below.size // _FANOUT] = self._ufunc.reduce(below.reshape(-1, _FANOUT), axis=1)


class SumSegmentTree(SegmentTree):
    """Sums, and the search proportional sampling needs."""

    def __init__(self, capacity: int):
        super().__init__(capacity, "sum")

    def sum(self, start: int = 0, end: int | None = None) -> float:
        return self.reduce(start, end)

    def find_prefixsum_idx(self, prefixsum: Any) -> Any:
        """The highest index i with items[0] + ... + items[i - 1] <= prefixsum (for each of an
        array of prefix sums): the item whose share of [0, sum()) holds `prefixsum`, so items
        are drawn in proportion to their values. A prefix sum at or past the total picks the
        last item with a value (RLlib clamps it just below the total)."""
        prefix = np.array(prefixsum, dtype=np.float64, ndmin=1)
        total = self._levels[-1][0]
        if np.any(prefix < 0) or np.any(prefix > total + 1e-5):
            raise ValueError(f"find_prefixsum_idx({prefixsum!r}): outside [0, {total}]")
        prefix = np.where(prefix >= total, total - 1e-5, prefix)
        # The largest level small enough to scan whole: its running sum is searched at once,
        # then each level below is searched within the chosen node's block.
        scan = self._scan_level
        running = np.cumsum(self._levels[scan])
        node = np.minimum(
            np.searchsorted(running, prefix, side="right"), self._levels[scan].size - 1
        )
        prefix = prefix - np.where(node > 0, running[np.maximum(node - 1, 0)], 0.0)
        for level in reversed(self._levels[:scan]):
            children = level.reshape(-1, _FANOUT)[node]
            running = np.cumsum(children, axis=1)
            # Children whose running sum stays <= the prefix are passed over (zero-valued ones
            # included); the first whose running sum exceeds it holds the prefix.
            passed = np.minimum((running <= prefix[:, None]).sum(axis=1), _FANOUT - 1)
            before = np.where(
                passed > 0, running[np.arange(len(node)), np.maximum(passed - 1, 0)], 0.0
            )
            prefix = prefix - before
            node = node * _FANOUT + passed
        node = np.minimum(node, self.capacity - 1)
        return int(node[0]) if np.ndim(prefixsum) == 0 else node


class MinSegmentTree(SegmentTree):
    """Minimums (the largest importance weight comes from the smallest priority)."""

    def __init__(self, capacity: int):
        super().__init__(capacity, "min")

    def min(self, start: int = 0, end: int | None = None) -> float:
        return self.reduce(start, end)
