"""Whether a failed EnvRunner is restarted now, at the start of the next iteration, or never:
`fault_tolerance()`'s settings and RLlib's once-per-iteration rule, as pure functions of the
runner's record (no processes).

    decide(record, settings) -> Decision(action, reason)

- `record`: the runner's history (`RunnerRecord`: restarts so far, whether one of them was in
  this iteration);
- `settings`: `Settings.from_config(config)`.

The rules, in order: restarts off -> give up; budget used up -> give up; restarted once in this
iteration already -> wait (the runner is left out until the next iteration starts, when
`probe_unhealthy_env_runners()` restarts it); otherwise -> restart now. As in RLlib, a runner is
restarted at most once per iteration and up to `max_num_env_runner_restarts` times in all, so a
`train()` whose runners fail every time still returns: each runner fails at most twice in it
(see `iteration_bound_s` for how long that can take). Restarting at once, not only at the next
iteration, is this trainer's: a runner killed mid-iteration costs only its request in flight.

`repeats(previous, failure)` counts the iterations in a row in which a runner failed the same
way, for the warning that names a runner failing identically every time.

`failed_iterations_in_a_row(previous, failed=, env_steps_sampled=)` and `gives_up(in_a_row,
settings)` tell a deterministic failure from a flaky one: an iteration in which runners failed
and nothing was sampled continues the streak, any sample ends it. A failure that comes back on
every restart with no sample in between is no flake that another restart cures. By default
restarts go on for ever, as in RLlib, and `reports_streak` says when to log the streak once (one
ERROR line naming the failure and the setting); with `max_consecutive_failed_iterations` set,
after that many such iterations `train()` raises it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The actions `decide` chooses from.
RESTART = "restart"
WAIT = "wait"
GIVE_UP = "give up"


@dataclass(frozen=True)
class Settings:
    restart_failed_env_runners: bool = True
    max_num_env_runner_restarts: int = 1000
    #: None: restarts go on however often a failure repeats (RLlib's behaviour, the default).
    max_consecutive_failed_iterations: int | None = None

    @classmethod
    def from_config(cls, config: Any) -> Settings:
        return cls(
            config.restart_failed_env_runners,
            config.max_num_env_runner_restarts,
            config.max_consecutive_failed_iterations,
        )


@dataclass(frozen=True)
class RunnerRecord:
    restarts: int = 0
    restarted_this_iteration: bool = False


@dataclass(frozen=True)
class Decision:
    action: str  # RESTART, WAIT or GIVE_UP
    reason: str | None = None  # why not now, when not RESTART

    @property
    def restart(self) -> bool:
        return self.action == RESTART


def decide(record: RunnerRecord, settings: Settings) -> Decision:
    if not settings.restart_failed_env_runners:
        return Decision(GIVE_UP, "restart_failed_env_runners=False")
    if record.restarts >= settings.max_num_env_runner_restarts:
        return Decision(
            GIVE_UP,
            f"it was restarted {record.restarts} time{'s' if record.restarts != 1 else ''} "
            f"(max_num_env_runner_restarts={settings.max_num_env_runner_restarts})",
        )
    if record.restarted_this_iteration:
        return Decision(
            WAIT,
            "it was restarted once in this iteration already; it is restarted again when "
            "the next iteration starts (at most one restart per runner and iteration, as in "
            "RLlib)",
        )
    return Decision(RESTART)


_NUMBERS = re.compile(r"\d+(\.\d+)?")


def signature(kind: str, error: BaseException) -> str:
    """What makes two failures "the same way": their kind, exception type and first line of
    message, numbers masked (a step count or pid differs from one failure to the next)."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    error_type = getattr(error, "error_type", None) or type(error).__name__
    return f"{kind}:{error_type}:{_NUMBERS.sub('#', message)}"


@dataclass(frozen=True)
class Repeats:
    """A runner's last failure signature and the iterations in a row it failed that way."""

    signature: str = ""
    iterations: int = 0
    iteration: int = -1  # the iteration of the last failure counted


def repeats(previous: Repeats, failure_signature: str, iteration: int) -> Repeats:
    """`previous` updated with a failure in `iteration`: one more iteration in a row when the
    signature is the same and the iteration is the next one; counted once per iteration."""
    if iteration == previous.iteration and failure_signature == previous.signature:
        return previous
    if failure_signature == previous.signature and iteration == previous.iteration + 1:
        return Repeats(failure_signature, previous.iterations + 1, iteration)
    return Repeats(failure_signature, 1, iteration)


def failed_iterations_in_a_row(previous: int, *, failed: bool, env_steps_sampled: int) -> int:
    """The streak of failed iterations after one more: `previous + 1` when runners `failed` in
    it and it sampled no env step, else 0 (a sample in between makes a failure flaky)."""
    return previous + 1 if failed and env_steps_sampled == 0 else 0


#: With restarts for ever (`max_consecutive_failed_iterations=None`), a streak of this many failed
#: iterations is logged, once per streak.
STREAK_REPORTED_AFTER = 3


def reports_streak(in_a_row: int, settings: Settings) -> bool:
    """Whether the streak of `in_a_row` failed iterations is logged now: once per streak, when
    it reaches `STREAK_REPORTED_AFTER` and `train()` does not give up on it."""
    return settings.max_consecutive_failed_iterations is None and in_a_row == STREAK_REPORTED_AFTER


def gives_up(in_a_row: int, settings: Settings) -> bool:
    """Whether a streak of `in_a_row` failed iterations makes the failure deterministic."""
    limit = settings.max_consecutive_failed_iterations
    return limit is not None and in_a_row >= limit


def iteration_bound_s(config: Any) -> float:
    """The longest failures can add to one `train()`, from the settings: each remote runner
    fails at most twice per iteration (once, then once more after its restart), each failure
    waiting at most `sample_timeout_s` for the runner (the runners are waited on together), and
    and its one restart `delay_between_env_runner_restarts_s`, `env_runner_health_probe_timeout_s`
    and `env_runner_restore_timeout_s`."""
    restart = (
        config.delay_between_env_runner_restarts_s
        + config.env_runner_health_probe_timeout_s
        + config.env_runner_restore_timeout_s
    )
    runners = max(config.num_env_runners, 1)
    return runners * (2 * config.sample_timeout_s + restart)
