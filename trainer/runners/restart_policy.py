"""Whether a failed EnvRunner is restarted: `fault_tolerance()`'s settings and this trainer's
give-up rule, as a pure function of the failure and the runner's record (no processes).

    decide(failure, record, settings) -> Decision(restart, reason, record)

- `failure`: what happened (`Failure`: kind "crashed" / "timeout" / "exception" / "callback",
  the env steps the failed process made, the method and timeout, whether a stack was read);
- `record`: the runner's history (`RunnerRecord`: restarts so far, failures in a row without an
  env step in between);
- `settings`: `Settings.from_config(config)`.

The rules, in order: restarts off -> give up; budget used up -> give up; a crash (a kill from
outside) -> restart, the record unchanged; a failure whose process stepped its env -> restart,
the streak reset (flaky, not broken); an exception or callback error while the user set the
budget explicitly -> restart (their budget to spend); otherwise the failure adds to the streak,
and `NO_PROGRESS_LIMIT` failures in a row give up. A streak of callback errors gives up naming
the callback (its event and exception type): the user's callback failed, not the env.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

#: Failures in a row without one env step in between after which a runner is given up.
NO_PROGRESS_LIMIT = 3


@dataclass(frozen=True)
class Settings:
    restart_failed_env_runners: bool = True
    max_num_env_runner_restarts: int = 1000
    budget_given: bool = False  # the user set max_num_env_runner_restarts
    env_name: str = "?"

    @classmethod
    def from_config(cls, config: Any) -> Settings:
        env = (
            config.env
            if isinstance(config.env, str)
            else getattr(config.env, "__qualname__", repr(config.env))
        )
        return cls(
            config.restart_failed_env_runners,
            config.max_num_env_runner_restarts,
            config.is_given("max_num_env_runner_restarts"),
            env,
        )


@dataclass(frozen=True)
class Failure:
    kind: str  # "crashed", "timeout", "exception" or "callback"
    env_steps: int | None = None  # steps the failed process made (None: unknown)
    method: str = "a request"
    timeout_s: float = 0.0
    has_stack: bool = False
    #: For kind "callback": which callback raised what, where (e.g. "callback
    #: 'MyCallbacks.on_episode_end' raised ValueError in on_episode_end").
    callback: str = ""

    @classmethod
    def of(cls, kind: str, error: BaseException) -> Failure:
        callback = ""
        if kind == "callback":
            callback = (
                f"callback {getattr(error, 'callback_name', '?')!r} raised "
                f"{getattr(error, 'error_type', type(error).__name__)} in "
                f"{getattr(error, 'event', '?')}"
            )
        return cls(
            kind,
            getattr(error, "env_steps", None),
            getattr(error, "method", None) or "a request",
            getattr(error, "timeout_s", 0.0) or 0.0,
            bool(getattr(error, "stack", "")),
            callback,
        )


@dataclass(frozen=True)
class RunnerRecord:
    restarts: int = 0
    failures_without_progress: int = 0


@dataclass(frozen=True)
class Decision:
    restart: bool
    reason: str | None  # why not, when not
    record: RunnerRecord  # the record after this failure (restarts are counted when done)


def decide(failure: Failure, record: RunnerRecord, settings: Settings) -> Decision:
    if not settings.restart_failed_env_runners:
        return Decision(False, "restart_failed_env_runners=False", record)
    if record.restarts >= settings.max_num_env_runner_restarts:
        return Decision(
            False,
            f"it was restarted {record.restarts} times "
            f"(max_num_env_runner_restarts="
            f"{settings.max_num_env_runner_restarts})",
            record,
        )
    if failure.kind == "crashed":
        return Decision(True, None, record)  # a kill from outside says nothing about the env
    if failure.env_steps:
        return Decision(True, None, replace(record, failures_without_progress=0))
    if failure.kind != "timeout" and settings.budget_given:
        return Decision(True, None, record)
    streak = record.failures_without_progress + 1
    record = replace(record, failures_without_progress=streak)
    if streak < NO_PROGRESS_LIMIT:
        return Decision(True, None, record)
    if failure.kind == "callback":
        # The user's callback raised, every time: a bug in the callback, not a broken env.
        return Decision(
            False,
            f"its {failure.callback or 'callback'} {streak} times in a row "
            "without the runner stepping its env once in between: a callback "
            "error, not an env failure (fix the callback)",
            record,
        )
    how = (
        f"did not answer {failure.method}() within {failure.timeout_s:g} s"
        if failure.kind == "timeout"
        else "failed"
    )
    return Decision(
        False,
        f"it {how} {streak} times in a row without stepping its env (env "
        f"{settings.env_name!r}) once in between: the env is broken, not "
        f"flaky" + ("; where it hung last is above" if failure.has_stack else ""),
        record,
    )
