"""`MaxStats` (`reduce="max"`), RLlib 2.60's `ray.rllib.utils.metrics.stats.max`."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.metrics.stats.series import SeriesStats, register_python_equivalent


class MaxStats(SeriesStats):
    """The maximum of a series of numbers (NaNs ignored)."""

    stats_cls_identifier = "max"

    def _np_reduce_fn(self, values: Any) -> Any:
        return np.nanmax(values)

    def __repr__(self) -> str:
        return f"MaxStats({self.peek()}; window={self._window}; len={len(self)})"


# Python numbers skip numpy (the common case).
register_python_equivalent(MaxStats._np_reduce_fn, max)
