"""`SeriesStats`: the base of the stats that reduce a series of numbers to one (mean, min, max,
sum), RLlib 2.60's `ray.rllib.utils.metrics.stats.series`.

With a `window`, a leaf keeps the newest `window` values and reduces them; without one it keeps
one running value (the reduction of the previous one and the new one). Every `reduce()` starts
the series over; an aggregating stat appends what it merges and reduces all of it.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from collections import deque
from itertools import chain
from typing import Any

import numpy as np

from trainer.metrics.stats.base import StatsBase
from trainer.metrics.stats.utils import (
    batch_values_to_cpu,
    number_value,
    single_value_to_cpu,
)

#: `_np_reduce_fn` -> the same reduction of a non-empty list of Python numbers without NaN
#: (registered by the built-in classes next to their numpy reductions).
_PYTHON_EQUIVALENTS: dict = {}


def register_python_equivalent(np_reduce_fn: Any, python_fn: Any) -> None:
    """Lets `window_reduce` use `python_fn` instead of `np_reduce_fn` for plain numbers."""
    _PYTHON_EQUIVALENTS[np_reduce_fn] = python_fn


class SeriesStats(StatsBase, metaclass=ABCMeta):
    """A series of single numbers (not vectors), reduced by `_np_reduce_fn`."""

    def __init__(self, window: int | float | None = None, *args: Any, **kwargs: Any):
        """`window`: reduce over the newest `window` values (None: a running value)."""
        super().__init__(*args, **kwargs)
        self._window = window
        self.values: list | deque = []
        self._set_values([])

    @abstractmethod
    def _np_reduce_fn(self, values: Any) -> Any:
        """The NaN-ignoring reduction of a sequence of numbers (numpy's `nan*`)."""

    # -- state ---------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        return {
            **super().get_state(),
            "values": batch_values_to_cpu(self.values),
            "window": self._window,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._window = state["window"]
        self._set_values(list(state["values"]))

    @staticmethod
    def _get_init_args(
        stats_object: StatsBase | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        args = StatsBase._get_init_args(stats_object=stats_object, state=state)
        if state is not None:
            args["window"] = state["window"]
        elif isinstance(stats_object, SeriesStats):  # (abstract: settings_source takes no such)
            args["window"] = stats_object._window
        else:
            raise TypeError(
                f"SeriesStats: the stat to copy settings from is "
                f"{type(stats_object).__name__}, not a SeriesStats"
            )
        return args

    # -- values --------------------------------------------------------------------------------
    def _set_values(self, new_values: list | deque) -> None:
        # Only a leaf's window bounds the values (a deque drops the oldest); an aggregating
        # stat holds everything merged until its next reduce().
        if self._window and self.is_leaf:
            self.values = deque(new_values, maxlen=int(self._window))
        else:
            self.values = new_values

    def __len__(self) -> int:
        return len(self.values)

    def push(self, value: Any) -> None:
        value = number_value(value, type(self).__name__)
        if self._window is None:
            if not self.values:
                self._set_values([value])
            else:
                self._set_values(self.running_reduce(self.values[0], value))
        else:
            self.values.append(value)

    def push_many(self, values: list) -> None:
        name = type(self).__name__
        if self._window is not None:
            values = self.kept_by_window(values)
            self.values.extend(number_value(value, name) for value in values)
        elif values:
            self._set_values(
                self.window_reduce(
                    list(self.values) + [number_value(value, name) for value in values]
                )
            )

    def kept_by_window(self, values: list) -> list:
        """The newest of `values` that a leaf's window keeps after they are pushed: the
        older ones would be dropped at once (and are not checked)."""
        maxlen = getattr(self.values, "maxlen", None)
        return values[-maxlen:] if maxlen is not None and len(values) > maxlen else values

    def merge(self, incoming_stats: list[SeriesStats]) -> None:
        """Appends the incoming stats' values (each incoming value weighs the same)."""
        self._require_aggregating()
        if not incoming_stats:
            return
        merged = list(chain.from_iterable(s.values for s in incoming_stats))
        # A list (not the deque): merged values are not evicted before the next reduce().
        self.values = list(self.values) + merged
        self.latest_merged = merged

    # -- reading -------------------------------------------------------------------------------
    def peek(self, compile: bool = True, latest_merged_only: bool = False) -> Any:
        if latest_merged_only:
            self._require_latest_merged_allowed()
            if self.latest_merged is None:
                return np.nan if compile else []
            reduced = self.window_reduce(self.latest_merged) if self.latest_merged else [np.nan]
        elif len(self.values) == 1:
            # Not decided by the window: a merged series can hold several values.
            reduced = [single_value_to_cpu(self.values[0])]
        else:
            reduced = self.window_reduce()
        if compile:
            return reduced[0] if reduced else np.nan
        return reduced

    def reduce(self, compile: bool = True) -> Any:
        if self._window is None and (len(self.values) <= 1 or not compile):
            reduced = batch_values_to_cpu(self.values)
        else:
            reduced = self.window_reduce()
        self._set_values([])
        if compile:
            return reduced[0] if reduced else np.nan
        return_stats = self.clone()
        return_stats.values = reduced
        return return_stats

    def running_reduce(self, value_1: Any, value_2: Any) -> list:
        """The reduction of two values, as a one-item list."""
        return self.window_reduce([value_1, value_2])

    def window_reduce(self, values: Any = None) -> list:
        """The reduction of `values` (default: this stat's values) as a one-item list; NaN
        for no values or only NaNs."""
        values = self.values if values is None else values
        if len(values) == 0:
            return [np.nan]
        # The common case (Python numbers, no NaN) without numpy, for the classes' own
        # reductions only (a subclass with another `_np_reduce_fn` takes numpy's way).
        python_fn = _PYTHON_EQUIVALENTS.get(type(self)._np_reduce_fn)
        if python_fn is not None and all(
            type(v) is int or (type(v) is float and v == v) for v in values
        ):
            return [python_fn(list(values))]
        if np.all(np.isnan(np.asarray(values, dtype=float))):
            return [np.nan]
        return [single_value_to_cpu(self._np_reduce_fn(values))]
