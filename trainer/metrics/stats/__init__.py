"""The statistic classes of the `MetricsLogger`, RLlib 2.60's `ray.rllib.utils.metrics.stats`
(one module per class, under RLlib's module names).

`Stats` and `merge_stats` are the earlier single statistic class (RLlib's
`ray.rllib.utils.metrics.legacy_stats`), still importable from here for code written against
it.
"""

from trainer.metrics.legacy_stats import Stats, merge_stats
from trainer.metrics.stats.base import StatsBase
from trainer.metrics.stats.ema import EmaStats
from trainer.metrics.stats.item import ItemStats
from trainer.metrics.stats.item_series import ItemSeriesStats
from trainer.metrics.stats.lifetime_sum import LifetimeSumStats
from trainer.metrics.stats.max import MaxStats
from trainer.metrics.stats.mean import MeanStats
from trainer.metrics.stats.min import MinStats
from trainer.metrics.stats.percentiles import PercentilesStats
from trainer.metrics.stats.series import SeriesStats
from trainer.metrics.stats.sum import SumStats

__all__ = [
    "StatsBase",
    "SumStats",
    "MeanStats",
    "LifetimeSumStats",
    "EmaStats",
    "MinStats",
    "MaxStats",
    "PercentilesStats",
    "ItemStats",
    "SeriesStats",
    "ItemSeriesStats",
    "Stats",
    "merge_stats",
]
