"""`ItemSeriesStats` (`reduce="item_series"`): a series of items, not reduced, RLlib 2.60's
`ray.rllib.utils.metrics.stats.item_series` (e.g. actions, to chart their distribution).

On an aggregating stat the series can grow to `window` times the number of sources.
"""

from __future__ import annotations

from collections import deque
from itertools import chain
from typing import Any

import numpy as np

from trainer.metrics.stats.base import StatsBase, settings_source
from trainer.metrics.stats.utils import batch_values_to_cpu


class ItemSeriesStats(StatsBase):
    """The items pushed since the last `reduce()` (a leaf keeps the newest `window`)."""

    stats_cls_identifier = "item_series"

    def __init__(self, window: int | None = None, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._window = window
        self.items: list | deque = []
        self._set_items([])

    def _set_items(self, new_items: list | deque) -> None:
        # Only a leaf's window bounds the items (a deque drops the oldest).
        if self._window and self.is_leaf:
            self.items = deque(new_items, maxlen=int(self._window))
        else:
            self.items = new_items

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "items": list(self.items), "window": self._window}

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._window = state["window"]
        self._set_items(list(state["items"]))

    def push(self, item: Any) -> None:
        self.items.append(item)
        if self._window and len(self.items) > self._window:
            del self.items[0]  # an aggregating stat's list, pushed into

    def push_many(self, items: list) -> None:
        for item in items:
            self.push(item)

    def reduce(self, compile: bool = True) -> Any:
        items = batch_values_to_cpu(self.items)
        self._set_items([])
        if compile:
            return items
        return_stats = self.clone()
        return_stats._set_items(items)
        return return_stats

    def __len__(self) -> int:
        return len(self.items)

    def peek(self, compile: bool = True, latest_merged_only: bool = False) -> Any:
        """The items (NaN for none with `compile=True`, as the other stats give)."""
        if latest_merged_only:
            self._require_latest_merged_allowed()
            if self.latest_merged is None:
                return np.nan if compile else []
            items = batch_values_to_cpu(self.latest_merged)
        else:
            items = batch_values_to_cpu(self.items)
        if compile and not items:
            return np.nan
        return items

    def merge(self, incoming_stats: list[ItemSeriesStats]) -> None:
        self._require_aggregating()
        new_items = list(chain.from_iterable(s.items for s in incoming_stats))
        self.items = list(self.items) + new_items
        self.latest_merged = new_items

    @staticmethod
    def _get_init_args(
        stats_object: StatsBase | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        args = StatsBase._get_init_args(stats_object=stats_object, state=state)
        args["window"] = (
            state["window"]
            if state is not None
            else settings_source(stats_object, ItemSeriesStats)._window
        )
        return args

    def __repr__(self) -> str:
        return f"ItemSeriesStats(window={self._window}; len={len(self)})"
