"""`MeanStats` (`reduce="mean"`), RLlib 2.60's `ray.rllib.utils.metrics.stats.mean`.

Merging gives the mean of the incoming means, not the mean of all values behind them (RLlib's
documented limitation: parallel components reduce before they send).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from trainer.metrics.stats.series import SeriesStats, register_python_equivalent
from trainer.metrics.stats.utils import number_value


class MeanStats(SeriesStats):
    """The mean of a series of numbers (over the newest `window`, or all since the last
    `reduce()`)."""

    stats_cls_identifier = "mean"

    def _np_reduce_fn(self, values: Any) -> Any:
        return np.nanmean(values)

    def push(self, value: Any) -> None:
        # Every value is kept (no running value): a mean needs them all.
        self.values.append(number_value(value, "MeanStats"))

    def push_many(self, values: list) -> None:
        values = self.kept_by_window(values)
        self.values.extend(number_value(value, "MeanStats") for value in values)

    def reduce(self, compile: bool = True) -> Any:
        reduced = self.window_reduce()
        self._set_values([])
        if compile:
            return reduced[0]
        return_stats = self.clone()
        return_stats.values = reduced
        return return_stats

    def __repr__(self) -> str:
        return f"MeanStats({self.peek()}; window={self._window}; len={len(self)})"


def _python_mean(numbers: list) -> float:
    return math.fsum(numbers) / len(numbers)


# Python numbers skip numpy (the common case).
register_python_equivalent(MeanStats._np_reduce_fn, _python_mean)
