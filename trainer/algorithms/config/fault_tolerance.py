"""The `fault_tolerance()` section: what happens when an EnvRunner fails."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of
from trainer.util.checks import int_at_least, is_bool, optional, seconds_above, seconds_at_least

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: The settings of `fault_tolerance()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
FAULT_TOLERANCE_SETTINGS: dict[str, Setting] = settings_of(
    "fault_tolerance",
    {
        "restart_failed_env_runners": (
            True,
            is_bool,
            "a failed EnvRunner is replaced by a new process "
            "with its index, the current weights and state",
        ),
        "ignore_env_runner_failures": (
            False,
            is_bool,
            "a runner that is not restarted is left out and "
            "training goes on (False: train() raises)",
        ),
        "max_num_env_runner_restarts": (1000, int_at_least(0), "restarts per runner"),
        "max_consecutive_failed_iterations": (
            None,
            optional(int_at_least(1)),
            "None (RLlib's behaviour): failed EnvRunners are restarted for ever, and a "
            "failure that comes back on every restart is logged once per streak as an "
            "ERROR; N: train() raises the runners' failure after N iterations in a row in "
            "which EnvRunners failed and nothing was sampled",
        ),
        "delay_between_env_runner_restarts_s": (
            0.1,
            seconds_at_least(0),
            "wait between a failure and its restart",
        ),
        "env_runner_health_probe_timeout_s": (
            30.0,
            seconds_above(0),
            "a restarted runner must start within this",
        ),
        "restart_failed_sub_environments": (
            False,
            is_bool,
            "an exception in one sub-env re-creates only "
            "that sub-env and drops its episode (with "
            '"vector_entry_point" vectorizing: the whole '
            "vector env and all its episodes)",
        ),
        "env_runner_restore_timeout_s": (
            1800.0,
            seconds_above(0),
            "a restarted runner must take its state and answer a ping within this after it started",
        ),
    },
)


class FaultToleranceSection(ConfigBase):
    """EnvRunner failures (`fault_tolerance()`)."""

    restart_failed_env_runners: bool
    ignore_env_runner_failures: bool
    max_num_env_runner_restarts: int
    max_consecutive_failed_iterations: int | None
    delay_between_env_runner_restarts_s: float
    env_runner_health_probe_timeout_s: float
    restart_failed_sub_environments: bool
    env_runner_restore_timeout_s: float

    def fault_tolerance(
        self,
        *,
        restart_failed_env_runners: bool = NotProvided,
        ignore_env_runner_failures: bool = NotProvided,
        max_num_env_runner_restarts: int = NotProvided,
        max_consecutive_failed_iterations: int | None = NotProvided,
        delay_between_env_runner_restarts_s: float = NotProvided,
        env_runner_health_probe_timeout_s: float = NotProvided,
        restart_failed_sub_environments: bool = NotProvided,
        env_runner_restore_timeout_s: float = NotProvided,
        **unknown: Any,
    ) -> Self:
        """What happens when an EnvRunner fails (an exception in env or callback code, its
        process exits or is killed, or it does not answer within `sample_timeout_s`): restarted
        (the new one must start within `env_runner_health_probe_timeout_s` and take its state
        within `env_runner_restore_timeout_s`), left out, or its error raised by `train()`. A
        failure that comes back on every restart is restarted for ever, as in RLlib, and logged
        once per streak; with `max_consecutive_failed_iterations=N` it is raised by `train()`
        after N iterations in a row with nothing sampled. The
        rules, step by step: `trainer.runners.restart_policy`. RLlib's older names
        (`recreate_failed_env_runners`, `ignore_worker_failures`, ...) are accepted."""
        values = {
            "restart_failed_env_runners": restart_failed_env_runners,
            "ignore_env_runner_failures": ignore_env_runner_failures,
            "max_num_env_runner_restarts": max_num_env_runner_restarts,
            "max_consecutive_failed_iterations": max_consecutive_failed_iterations,
            "delay_between_env_runner_restarts_s": delay_between_env_runner_restarts_s,
            "env_runner_health_probe_timeout_s": env_runner_health_probe_timeout_s,
            "restart_failed_sub_environments": restart_failed_sub_environments,
            "env_runner_restore_timeout_s": env_runner_restore_timeout_s,
        }
        self._reject_unknown("fault_tolerance", unknown, values, values)
        return self._set("fault_tolerance", values)
