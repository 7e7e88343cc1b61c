"""`EmaStats` (`reduce="ema"`, the logger's default): an exponential moving average, RLlib
2.60's `ray.rllib.utils.metrics.stats.ema`.

A leaf folds each value in (`new = c * value + (1 - c) * old`) and keeps its average across
`reduce()`s. An aggregating stat averages the incoming EMAs (equal weight: RLlib's documented
approximation) and starts over at each `reduce()`.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np

from trainer.metrics.stats.base import StatsBase, settings_source
from trainer.metrics.stats.utils import number_value, safe_isnan, single_value_to_cpu

logger = logging.getLogger("trainer")


class EmaStats(StatsBase):
    """The exponential moving average of a series of numbers (NaNs ignored)."""

    stats_cls_identifier = "ema"
    #: Whether the "pushed into an aggregating EMA" warning was given (once per process).
    _warned_push_and_merge = False

    def __init__(self, ema_coeff: float = 0.01, *args: Any, **kwargs: Any):
        """`ema_coeff`: the weight of each new value, in (0, 1]."""
        super().__init__(*args, **kwargs)
        if not (isinstance(ema_coeff, (int, float)) and 0.0 < ema_coeff <= 1.0):
            raise ValueError(f"EmaStats(ema_coeff={ema_coeff!r}): must be a number in (0, 1]")
        self._value: Any = np.nan
        self._values_to_merge: list = []
        self._ema_coeff = ema_coeff

    @staticmethod
    def _quiet_nanmean(values: list) -> Any:
        """`np.nanmean` without numpy's "Mean of empty slice" warning for all-NaN input."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
            return single_value_to_cpu(np.nanmean(values))

    def __len__(self) -> int:
        return 1

    def merge(self, incoming_stats: list[EmaStats]) -> None:
        self._require_aggregating()
        incoming = [stats._value for stats in incoming_stats]
        if not incoming:
            return
        self._values_to_merge.extend(incoming)
        self.latest_merged = incoming

    def push(self, value: Any) -> None:
        value = number_value(value, "EmaStats")
        if safe_isnan(value):
            return
        if safe_isnan(self._value):
            self._value = value
        else:
            self._value = self._ema_coeff * value + (1.0 - self._ema_coeff) * self._value

    def _reduce_values_to_merge(self) -> Any:
        if not safe_isnan(self._value) and not EmaStats._warned_push_and_merge:
            EmaStats._warned_push_and_merge = True
            logger.warning(
                "EmaStats: values were both pushed into and merged into one "
                "aggregating EMA (coefficient %s); the merged average wins and the "
                "metric is inaccurate",
                self._ema_coeff,
            )
        if not self._values_to_merge:
            return np.nan
        return self._quiet_nanmean(self._values_to_merge)

    def _current(self) -> Any:
        if not self.is_leaf and self._values_to_merge:
            return self._reduce_values_to_merge()
        # A leaf, or an aggregating stat that was pushed into or just reduced.
        return self._value

    def peek(self, compile: bool = True, latest_merged_only: bool = False) -> Any:
        if latest_merged_only:
            self._require_latest_merged_allowed()
            if self.latest_merged is None:
                return np.nan if compile else [np.nan]
            value = self._quiet_nanmean(self.latest_merged) if self.latest_merged else np.nan
        else:
            value = self._current()
        return value if compile else [value]

    def reduce(self, compile: bool = True) -> Any:
        value = self._current()
        self._values_to_merge = []
        if compile:
            return value
        return_stats = self.clone()
        return_stats._value = value
        return return_stats

    def __repr__(self) -> str:
        return (
            f"EmaStats({self.peek()}; number_of_values_to_merge="
            f"({len(self._values_to_merge)}); ema_coeff={self._ema_coeff}, "
            f"value={self._value})"
        )

    def get_state(self) -> dict[str, Any]:
        state = {**super().get_state(), "ema_coeff": self._ema_coeff, "value": self._value}
        if not self.is_leaf:
            state["values_to_merge"] = list(self._values_to_merge)
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._ema_coeff = state["ema_coeff"]
        self._value = state["value"]
        self._values_to_merge = list(state.get("values_to_merge", [])) if not self.is_leaf else []

    @staticmethod
    def _get_init_args(
        stats_object: StatsBase | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        args = StatsBase._get_init_args(stats_object=stats_object, state=state)
        args["ema_coeff"] = (
            state["ema_coeff"]
            if state is not None
            else settings_source(stats_object, EmaStats)._ema_coeff
        )
        return args
