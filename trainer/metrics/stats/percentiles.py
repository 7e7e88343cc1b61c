"""`PercentilesStats` (`reduce="percentiles"`): exact percentiles of the newest values, RLlib
2.60's `ray.rllib.utils.metrics.stats.percentiles`.

A leaf keeps its newest `window` values; an aggregating stat pools everything merged (up to
`window` times the number of sources), so choose the window with the sorting cost in mind.
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from typing import Any, NoReturn

from trainer.metrics.stats.base import StatsBase, settings_source
from trainer.metrics.stats.utils import batch_values_to_cpu, number_value, safe_isnan

DEFAULT_PERCENTILES = [0, 50, 75, 90, 95, 99, 100]


class PercentilesStats(StatsBase):
    """Percentiles (0-100) of a series of numbers; `peek()` gives {percentile: value}."""

    stats_cls_identifier = "percentiles"

    def __init__(
        self,
        percentiles: list | None = None,
        window: int | float | None = None,
        *args: Any,
        **kwargs: Any,
    ):
        """`percentiles`: which to report (None: 0, 50, 75, 90, 95, 99, 100; computing one
        costs as much as all). `window`: how many of the newest values a leaf keeps."""
        super().__init__(*args, **kwargs)
        if percentiles is None:
            percentiles = list(DEFAULT_PERCENTILES)
        elif not isinstance(percentiles, list):
            raise ValueError(
                f"PercentilesStats(percentiles={percentiles!r}): `percentiles` "
                "must be a list or None"
            )
        self._window = window
        self._percentiles = percentiles
        self.values: list | deque = []
        self._set_values([])

    def get_state(self) -> dict[str, Any]:
        return {
            **super().get_state(),
            "values": list(self.values),
            "window": self._window,
            "percentiles": list(self._percentiles),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._window = state["window"]
        self._percentiles = list(state["percentiles"])
        self._set_values(list(state["values"]))

    def _set_values(self, new_values: list | deque) -> None:
        if self._window and self.is_leaf:
            self.values = deque(new_values, maxlen=int(self._window))
        else:
            self.values = new_values

    def __len__(self) -> int:
        return len(self.values)

    # Percentiles are a dict, not one number: no arithmetic or comparison.
    def __float__(self) -> float:
        raise ValueError(
            "Cannot convert to float because percentiles are not reduced to a single value."
        )

    def _comp_error(self, operation: str) -> NoReturn:
        raise NotImplementedError(
            f"PercentilesStats does not support {operation} (percentiles "
            "are not reduced to a single value)"
        )

    def __eq__(self, other: Any) -> bool:
        self._comp_error("__eq__")

    __hash__ = None  # not hashable, as StatsBase

    def __le__(self, other: Any) -> bool:
        self._comp_error("__le__")

    def __ge__(self, other: Any) -> bool:
        self._comp_error("__ge__")

    def __lt__(self, other: Any) -> bool:
        self._comp_error("__lt__")

    def __gt__(self, other: Any) -> bool:
        self._comp_error("__gt__")

    def __add__(self, other: Any) -> float:
        self._comp_error("__add__")

    def __sub__(self, other: Any) -> float:
        self._comp_error("__sub__")

    def __mul__(self, other: Any) -> float:
        self._comp_error("__mul__")

    def __format__(self, fmt: str) -> str:
        raise ValueError(
            "Cannot format percentiles object because percentiles are not reduced "
            "to a single value."
        )

    def push(self, value: Any) -> None:
        value = number_value(value, "PercentilesStats")
        if safe_isnan(value):
            raise ValueError("NaN values are not allowed in PercentilesStats")
        self.values.append(value)

    def merge(self, incoming_stats: list[PercentilesStats]) -> None:
        self._require_aggregating()
        for stats in incoming_stats:
            if stats._percentiles != self._percentiles or stats._window != self._window:
                raise AssertionError(
                    "All incoming PercentilesStats objects must have the same percentiles and "
                    f"window size: {stats._percentiles}/{stats._window} vs "
                    f"{self._percentiles}/{self._window}"
                )
        new_values = list(chain.from_iterable(s.values for s in incoming_stats))
        self.values = list(self.values) + new_values
        self.latest_merged = new_values

    def peek(self, compile: bool = True, latest_merged_only: bool = False) -> Any:
        if latest_merged_only:
            self._require_latest_merged_allowed()
            if self.latest_merged is None:
                return {p: None for p in self._percentiles} if compile else []
            values = batch_values_to_cpu(self.latest_merged)
        else:
            values = batch_values_to_cpu(self.values)
        values.sort()
        return compute_percentiles(values, self._percentiles) if compile else values

    def reduce(self, compile: bool = True) -> Any:
        values = sorted(batch_values_to_cpu(self.values))
        self._set_values([])
        if compile:
            return compute_percentiles(values, self._percentiles)
        return_stats = self.clone()
        return_stats.values = values
        return return_stats

    def __repr__(self) -> str:
        return f"PercentilesStats({self.peek()}; window={self._window}; len={len(self)})"

    @staticmethod
    def _get_init_args(
        stats_object: StatsBase | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        args = StatsBase._get_init_args(stats_object=stats_object, state=state)
        if state is not None:
            args.update(percentiles=list(state["percentiles"]), window=state["window"])
        else:
            like = settings_source(stats_object, PercentilesStats)
            args.update(percentiles=list(like._percentiles), window=like._window)
        return args


def compute_percentiles(sorted_list: list, percentiles: list) -> dict:
    """{percentile: value} of an ascending list, interpolating linearly between neighbours
    (None for each when the list is empty). The list is not checked for order."""
    n = len(sorted_list)
    if n == 0:
        return {p: None for p in percentiles}
    results = {}
    for p in percentiles:
        index = (p / 100) * (n - 1)
        lower = int(index)
        weight = index - lower
        results[p] = (
            sorted_list[lower]
            if weight == 0
            else sorted_list[lower] * (1 - weight) + sorted_list[lower + 1] * weight
        )
    return results
