"""`LifetimeSumStats` (`reduce="lifetime_sum"`): a sum that never starts over, RLlib 2.60's
`ray.rllib.utils.metrics.stats.lifetime_sum`.

Only the root keeps the total: every other stat sends what was added since its last `reduce()`
and starts from 0 again, so a total reported up the tree is never counted twice.
"""

from __future__ import annotations

import time
from typing import Any

from trainer.metrics.stats.base import StatsBase, settings_source
from trainer.metrics.stats.utils import number_value, safe_isnan, single_value_to_cpu


class LifetimeSumStats(StatsBase):
    """The sum of everything pushed or merged; optionally its throughputs."""

    stats_cls_identifier = "lifetime_sum"

    def __init__(self, with_throughput: bool = False, *args: Any, **kwargs: Any):
        """`with_throughput`: also report the sum per second since the last `reduce()` (and,
        on the root, since the last restore)."""
        super().__init__(*args, **kwargs)
        # An int 0 (RLlib's is 0.0): counts of steps and episodes stay integers.
        self._lifetime_sum: Any = 0
        self.track_throughputs = with_throughput
        self._value_at_last_reduce: Any = 0
        self._value_at_last_restore: Any = 0
        # Measured from creation: the first throughput after a start or restore reads low.
        self._last_reduce_time = time.perf_counter()
        self._last_restore_time = self._last_reduce_time

    @property
    def has_throughputs(self) -> bool:
        return self.track_throughputs

    def initialize_throughput_reference_time(self, time: float) -> None:
        if self.is_leaf:
            raise ValueError(
                "initialize_throughput_reference_time can only be called on "
                "aggregating (root) stats"
            )
        self._last_reduce_time = time
        self._last_restore_time = time

    @staticmethod
    def _get_init_args(
        stats_object: StatsBase | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        args = StatsBase._get_init_args(stats_object=stats_object, state=state)
        args["with_throughput"] = (
            state["track_throughputs"]
            if state is not None
            else settings_source(stats_object, LifetimeSumStats).track_throughputs
        )
        return args

    @property
    def throughputs(self) -> dict[str, float]:
        """`throughput_since_last_reduce`, and on the root `throughput_since_last_restore`."""
        if not self.has_throughputs:
            raise ValueError(
                "Throughput tracking is not enabled on this Stats object (log it "
                "with with_throughput=True)"
            )
        result = {"throughput_since_last_reduce": self.throughput_since_last_reduce}
        if self.is_root:
            result["throughput_since_last_restore"] = self.throughput_since_last_restore
        return result

    @property
    def throughput_since_last_reduce(self) -> float:
        if not self.track_throughputs:
            raise ValueError(
                "Tracking of throughput since last reduce is not enabled on this Stats object"
            )
        return (self._lifetime_sum - self._value_at_last_reduce) / (
            time.perf_counter() - self._last_reduce_time
        )

    @property
    def throughput_since_last_restore(self) -> float:
        if not self.is_root:
            raise ValueError("throughput_since_last_restore is only available for root stats")
        if not self.track_throughputs:
            raise ValueError(
                "Tracking of throughput since last restore is not enabled on this Stats object"
            )
        return (self._lifetime_sum - self._value_at_last_restore) / (
            time.perf_counter() - self._last_restore_time
        )

    def __len__(self) -> int:
        return 1

    def peek(self, compile: bool = True, latest_merged_only: bool = False) -> Any:
        if latest_merged_only:
            self._require_latest_merged_allowed()
            value = 0 if self.latest_merged is None else self.latest_merged
        else:
            value = self._lifetime_sum
        return value if compile else [value]

    def push(self, value: Any) -> None:
        value = number_value(value, "LifetimeSumStats")
        if safe_isnan(value):
            return
        self._lifetime_sum += value

    def push_many(self, values: list) -> None:
        for value in values:
            self.push(value)

    def reduce(self, compile: bool = True) -> Any:
        value = self._lifetime_sum
        if self.is_root:
            self._value_at_last_reduce = value
        else:
            # Only the growth since the last reduce() travels up the tree.
            self._lifetime_sum = 0
            self._value_at_last_reduce = 0
        if self.track_throughputs:
            self._last_reduce_time = time.perf_counter()
        if compile:
            return value
        return_stats = self.clone()
        return_stats._lifetime_sum = value
        return return_stats

    def merge(self, incoming_stats: list[LifetimeSumStats]) -> None:
        self._require_aggregating()
        incoming_sum = sum(stats._lifetime_sum for stats in incoming_stats)
        self._lifetime_sum += incoming_sum
        self.latest_merged = incoming_sum

    def get_state(self) -> dict[str, Any]:
        return {
            **super().get_state(),
            "lifetime_sum": single_value_to_cpu(self._lifetime_sum),
            "track_throughputs": self.track_throughputs,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._lifetime_sum = state["lifetime_sum"]
        self.track_throughputs = state["track_throughputs"]
        # Throughputs start over after a restore.
        self._value_at_last_restore = self._lifetime_sum
        self._value_at_last_reduce = self._lifetime_sum

    def __repr__(self) -> str:
        return f"LifetimeSumStats({self.peek()}; track_throughputs={self.track_throughputs})"
