"""`SumStats` (`reduce="sum"`): the sum since the last `reduce()`, RLlib 2.60's
`ray.rllib.utils.metrics.stats.sum`. For a sum that never starts over, see `LifetimeSumStats`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from trainer.metrics.stats.base import StatsBase, settings_source
from trainer.metrics.stats.series import SeriesStats, register_python_equivalent


class SumStats(SeriesStats):
    """The sum of a series of numbers (over the newest `window`, or all since the last
    `reduce()`); optionally its throughput (sum per second since the last `reduce()`)."""

    stats_cls_identifier = "sum"

    def __init__(self, with_throughput: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        self.track_throughput = with_throughput
        # Measured from creation: the first throughput after a start or restore reads low,
        # as RLlib's does.
        self._last_throughput_measure_time = time.perf_counter()

    def _np_reduce_fn(self, values: Any) -> Any:
        return np.nansum(values)

    def initialize_throughput_reference_time(self, time: float) -> None:
        if not self.is_root:
            raise ValueError(
                "initialize_throughput_reference_time can only be called on root stats"
            )
        self._last_throughput_measure_time = time

    @property
    def has_throughputs(self) -> bool:
        return self.track_throughput

    @property
    def throughputs(self) -> float:
        """The current sum per second since the last `reduce()`."""
        if not self.track_throughput:
            raise ValueError(
                "Throughput tracking is not enabled on this Stats object (log it "
                "with with_throughput=True)"
            )
        return self.peek(compile=True) / (time.perf_counter() - self._last_throughput_measure_time)

    def reduce(self, compile: bool = True) -> Any:
        value = super().reduce(compile=True)
        if self.track_throughput:
            self._last_throughput_measure_time = time.perf_counter()
        if compile:
            return value
        return_stats = self.clone()
        return_stats.values = [value]
        return return_stats

    @staticmethod
    def _get_init_args(
        stats_object: StatsBase | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        args = SeriesStats._get_init_args(stats_object=stats_object, state=state)
        args["with_throughput"] = (
            state["track_throughput"]
            if state is not None
            else settings_source(stats_object, SumStats).track_throughput
        )
        return args

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "track_throughput": self.track_throughput}

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self.track_throughput = state["track_throughput"]

    def __repr__(self) -> str:
        return f"SumStats({self.peek()}; window={self._window}; len={len(self)})"


# Python numbers skip numpy (the common case).
register_python_equivalent(SumStats._np_reduce_fn, sum)
