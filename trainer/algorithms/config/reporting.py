"""The `reporting()` section: how episode metrics are smoothed and the least one `train()` does."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of
from trainer.metrics.metrics_logger import DEFAULT_STATS_CLS_LOOKUP, check_stats_cls_lookup
from trainer.util.checks import int_at_least, optional, seconds_at_least

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def _check_stats_cls_lookup(v: Any) -> str | None:
    if v is None:  # the loggers' default lookup
        return None
    try:
        check_stats_cls_lookup(v, "custom_stats_cls_lookup")
    except ValueError as error:
        return f"a dict of reduce kind -> StatsBase subclass ({error})"
    return None


#: The settings of `reporting()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
REPORTING_SETTINGS: dict[str, Setting] = settings_of(
    "reporting",
    {
        "metrics_num_episodes_for_smoothing": (
            100,
            int_at_least(1),
            "episodes the episode metrics average over",
        ),
        "min_time_s_per_iteration": (
            None,
            optional(seconds_at_least(0)),
            "train() repeats its training step until this many seconds passed",
        ),
        "min_sample_timesteps_per_iteration": (
            0,
            int_at_least(0),
            "... and this many env steps were sampled",
        ),
        "min_train_timesteps_per_iteration": (
            0,
            int_at_least(0),
            "... and this many env steps were trained on",
        ),
        # RLlib's attribute name; its builder keyword is custom_stats_cls_lookup.
        "stats_cls_lookup": (
            DEFAULT_STATS_CLS_LOOKUP,
            _check_stats_cls_lookup,
            "the MetricsLogger's stats class of each reduce= kind "
            "(reporting(custom_stats_cls_lookup=...)); every logger of "
            "the Algorithm and its EnvRunners uses it",
        ),
    },
)


class ReportingSection(ConfigBase):
    """Metrics smoothing and iteration minimums (`reporting()`)."""

    metrics_num_episodes_for_smoothing: int
    min_time_s_per_iteration: float | None
    min_sample_timesteps_per_iteration: int
    min_train_timesteps_per_iteration: int
    stats_cls_lookup: dict[str, type]

    def reporting(
        self,
        *,
        metrics_num_episodes_for_smoothing: int = NotProvided,
        min_time_s_per_iteration: float | None = NotProvided,
        min_sample_timesteps_per_iteration: int = NotProvided,
        min_train_timesteps_per_iteration: int = NotProvided,
        custom_stats_cls_lookup: dict | None = NotProvided,
        **unknown: Any,
    ) -> Self:
        """How episode metrics are smoothed, and the least one `train()` call does: it repeats
        its training step until all three minimums are reached. `custom_stats_cls_lookup`
        replaces the metrics loggers' stats classes (`config.stats_cls_lookup`; start from
        `DEFAULT_STATS_CLS_LOOKUP` to override or add `reduce=` kinds)."""
        values = {
            "metrics_num_episodes_for_smoothing": metrics_num_episodes_for_smoothing,
            "min_time_s_per_iteration": min_time_s_per_iteration,
            "min_sample_timesteps_per_iteration": min_sample_timesteps_per_iteration,
            "min_train_timesteps_per_iteration": min_train_timesteps_per_iteration,
            "stats_cls_lookup": custom_stats_cls_lookup,
        }
        self._reject_unknown("reporting", unknown, values, values)
        return self._set(
            "reporting", values, spelled={"stats_cls_lookup": "custom_stats_cls_lookup"}
        )
