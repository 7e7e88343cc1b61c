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

    @classmethod
    def from_config(cls, config: Any) -> Settings:
        return cls(config.restart_failed_env_runners, config.max_num_env_runner_restarts)


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
