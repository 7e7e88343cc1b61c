"""The ways an EnvRunner process can fail, as exceptions the main process raises.

- `EnvRunnerCrashed`: the process exited (an exception escaped its loop, `os._exit`, a signal).
- `EnvRunnerTimeout`: it did not answer within the timeout; the process is killed and counted as
  failed.
- `EnvRunnerError`: an exception in env code or in the runner, reported with the original
  traceback; the process is still alive.
- `callbacks.CallbackError`: a user callback raised (event, callback name, runner index).

All but the last are `RemoteError`s (Ray's `RayError`).
"""

from __future__ import annotations

from typing import Any


class RemoteError(RuntimeError):
    """Base of the errors about work in other processes: EnvRunner failures, no healthy
    EnvRunner left, a named object's server. Ray's `ray.exceptions.RayError` is this class in
    the Ray spelling (`trainer.named_objects.exceptions.RayError`)."""


class EnvRunnerFailure(RemoteError):
    """Base of all EnvRunner failures; `worker_index` names the runner, `kind` the failure."""

    kind = "failure"

    def __init__(self, worker_index: int, message: str):
        self.worker_index = worker_index
        super().__init__(message)


class EnvRunnerCrashed(EnvRunnerFailure):
    kind = "crashed"

    def __init__(self, worker_index: int, method: str | None, exitcode: int | None,
                 detail: str = ""):
        self.method = method
        self.exitcode = exitcode
        if exitcode is None:
            how, detail = (detail, "") if detail else ("its connection closed", "")
        elif exitcode < 0:
            import signal

            try:
                how = f"it was killed by signal {signal.Signals(-exitcode).name}"
            except ValueError:
                how = f"it was killed by signal {-exitcode}"
        else:
            how = f"it exited with code {exitcode}"
        where = "while idle" if method is None else f"during {method}()"
        super().__init__(worker_index, f"EnvRunner {worker_index} crashed {where}: "
                                       f"{how.rstrip('.')}.{(' ' + detail) if detail else ''}")


class EnvRunnerTimeout(EnvRunnerFailure):
    kind = "timeout"

    def __init__(self, worker_index: int, method: str, timeout_s: float, stack: str = "",
                 hint: str = ""):
        self.method = method
        self.timeout_s = timeout_s
        #: Where the process was when it was given up (its threads' stacks, innermost first),
        #: or "" when it could not be read.
        self.stack = stack
        #: What may explain the silence (a Ray actor that waited for resources), or "".
        self.hint = hint
        where = f" It was in:\n{stack.rstrip()}" if stack else ""
        super().__init__(worker_index, f"EnvRunner {worker_index} did not answer {method}() within "
                                       f"{timeout_s:g} s; its process was killed."
                                       f"{' ' + hint if hint else ''}{where}")

    def __reduce__(self) -> tuple[type[EnvRunnerTimeout], tuple[Any, ...]]:
        return (EnvRunnerTimeout, (self.worker_index, self.method, self.timeout_s, self.stack,
                                   self.hint))


class EnvRunnerError(EnvRunnerFailure):
    kind = "exception"

    def __init__(self, worker_index: int, method: str, error_type: str, error_message: str,
                 remote_traceback: str, env_steps: int | None = None):
        self.method = method
        self.error_type = error_type
        self.error_message = error_message
        self.remote_traceback = remote_traceback
        #: Env steps the runner's process had stepped when it raised (None: unknown).
        self.env_steps = env_steps
        super().__init__(worker_index, f"EnvRunner {worker_index} raised {error_type}: "
                                       f"{error_message} (in {method}()).\nOriginal traceback:\n"
                                       f"{remote_traceback.rstrip()}")

    def __reduce__(self) -> tuple[type[EnvRunnerError], tuple[Any, ...]]:
        return (EnvRunnerError, (self.worker_index, self.method, self.error_type,
                                 self.error_message, self.remote_traceback, self.env_steps))


class RunnerStateRejected(RemoteError):
    """A runner failed to take its part of a restored state (`component` is its name in the
    checkpoint, such as `env_runner_1`); the restore that sent it is rolled back."""

    def __init__(self, component: str, failure: BaseException):
        self.component = component
        self.failure = failure
        super().__init__(f"{component}: {failure}")


class NoHealthyEnvRunners(RemoteError):
    """Every remote EnvRunner failed and none may be restarted: nothing is left to sample."""


class SampleRequestError(ValueError, AssertionError):
    """`EnvRunner.sample()` was asked for something it cannot do (both `num_timesteps` and
    `num_episodes`, or a negative count). Also an `AssertionError`, which is what RLlib raises
    for the same calls, so code written against RLlib catches it."""


class EnvDataError(ValueError):
    """An env returned NaN or infinite observations or rewards (`debugging(check_nan=True)`,
    the default): names the runner, the sub-env, the step and the field."""


class NonFiniteUpdateError(FloatingPointError):
    """A learner update produced a NaN or infinite loss or gradient; the update was stopped
    before the weights changed."""


class EnvError(Exception):
    """An error raised by env code (RLlib's `ray.rllib.utils.error.EnvError`; its example envs
    raise it to simulate crashes)."""


class StepFailedRecreateEnvError(Exception):
    """Raise this from an env's `step()` to say "re-create me": with
    `restart_failed_sub_environments=True` the EnvRunner re-creates the sub-env and starts a new
    episode in it, as for any other exception, but logs nothing (RLlib's class of the same name,
    for envs that fail routinely, such as a connection to an external simulator)."""
