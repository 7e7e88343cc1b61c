"""The `debugging()` section: seeding, logging and the checks of env data."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of
from trainer.util.checks import int_at_least, is_bool, optional

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def _check_seed(v: Any) -> str | None:
    # RLlib takes any int; numpy's generators, which every seed here feeds, take no negative,
    # and torch's (torch.manual_seed) none of 64 bits or more.
    return (
        None
        if int_at_least(0)(v) is None
        else "an int >= 0 and <= 2**63 - 1 (numpy's random generators take no negative seed, "
        "torch's none of 64 bits)"
    )


def is_str(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "a non-empty string"


def _check_log_level(v: Any) -> str | None:
    levels = ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL")
    return None if isinstance(v, str) and v.upper() in levels else f"one of {list(levels)}"


#: The settings of `debugging()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
DEBUGGING_SETTINGS: dict[str, Setting] = settings_of(
    "debugging",
    {
        "seed": (
            None,
            optional(_check_seed),
            "repeatable runs: env seeds, action sampling and network init derive from "
            "it and each runner's index",
        ),
        "log_level": (
            "WARN",
            _check_log_level,
            "level of the trainer's log records, in every process",
        ),
        "check_nan": (
            True,
            is_bool,
            "EnvRunners refuse NaN or infinite observations and rewards, naming "
            "runner, sub-env, step and field (not an RLlib setting)",
        ),
        "_evaluation_parallel_to_training_wo_thread": (
            False,
            is_bool,
            "a parallel evaluation round without a thread: its requests "
            "go out before the training step, its replies are read after",
        ),
    },
)


class DebuggingSection(ConfigBase):
    """Seeding, logging and checks of env data (`debugging()`)."""

    seed: int | None
    log_level: str
    check_nan: bool
    _evaluation_parallel_to_training_wo_thread: bool

    def debugging(
        self,
        *,
        seed: int | None = NotProvided,
        log_level: str = NotProvided,
        check_nan: bool = NotProvided,
        _evaluation_parallel_to_training_wo_thread: bool = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Seeding, logging and checks of env data."""
        values = {
            "seed": seed,
            "log_level": log_level,
            "check_nan": check_nan,
            "_evaluation_parallel_to_training_wo_thread": _evaluation_parallel_to_training_wo_thread,
        }
        self._reject_unknown("debugging", unknown, values)
        return self._set("debugging", values)
