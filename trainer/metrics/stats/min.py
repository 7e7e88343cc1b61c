"""`MinStats` (`reduce="min"`), RLlib 2.60's `ray.rllib.utils.metrics.stats.min`."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.metrics.stats.series import SeriesStats, register_python_equivalent


class MinStats(SeriesStats):
    """The minimum of a series of numbers (NaNs ignored)."""

    stats_cls_identifier = "min"

    def _np_reduce_fn(self, values: Any) -> Any:
        return np.nanmin(values)

    def __repr__(self) -> str:
        return f"MinStats({self.peek()}; window={self._window}; len={len(self)})"


# Python numbers skip numpy (the common case).
register_python_equivalent(MinStats._np_reduce_fn, min)
