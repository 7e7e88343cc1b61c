"""`ItemStats` (`reduce="item"`): one item, not reduced, RLlib 2.60's
`ray.rllib.utils.metrics.stats.item`."""

from __future__ import annotations

from typing import Any

from trainer.metrics.stats.base import StatsBase
from trainer.metrics.stats.utils import single_value_to_cpu


class ItemStats(StatsBase):
    """The newest item pushed (or merged: from exactly one source); `reduce()` clears it."""

    stats_cls_identifier = "item"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._item: Any = None

    def get_state(self) -> dict[str, Any]:
        return {**super().get_state(), "item": self._item}

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        self._item = state["item"]

    def __len__(self) -> int:
        return 1

    def reduce(self, compile: bool = True) -> Any:
        item, self._item = self._item, None
        if compile:
            return item
        return_stats = self.clone()
        return_stats._item = item
        return return_stats

    def push(self, item: Any) -> None:
        self._item = single_value_to_cpu(item)

    def merge(self, incoming_stats: list[ItemStats]) -> None:
        """Replaces the item with the one incoming stat's (one item cannot merge several)."""
        if len(incoming_stats) != 1:
            # AssertionError as RLlib's (its tests expect that type).
            raise AssertionError(
                "ItemStats should only be merged with one other ItemStats object which replaces "
                f"the current item (got {len(incoming_stats)}); log items of parallel "
                "components with reduce='item_series'"
            )
        self._item = incoming_stats[0]._item

    def peek(self, compile: bool = True, latest_merged_only: bool = False) -> Any:
        # One item: the newest merge and the current item are the same thing.
        return self._item if compile else [self._item]

    def __repr__(self) -> str:
        return f"ItemStats({self.peek()})"
