"""The errors a user may catch, in one module: everything the public API raises on purpose.
The modules that raise them import them from here (their older import paths, such as
`trainer.callbacks.CallbackError` or `checkpoints.CheckpointError`, name the same classes).

By what raises them:

- Building a config (`AlgorithmConfig` builder methods, `validate()`, `build()`):
  `ConfigError` (a value that is wrong: names the setting, the value and what is allowed),
  `UnknownSettingError` (a keyword that is no setting; also a `TypeError`), `ProcessBoundObject`
  (a config value that cannot travel to the worker processes, such as an open file; a
  `TypeError`).
- Sampling and training (`Algorithm.train()`, `EnvRunnerGroup.sample()`, `EnvRunner.sample()`):
  `RemoteError` (the base of the errors about work in other processes), `EnvRunnerFailure` and
  its kinds `EnvRunnerCrashed` (the process exited), `EnvRunnerTimeout` (it did not answer in
  time; it is killed) and `EnvRunnerError` (env or runner code raised; the process is alive),
  `NoHealthyEnvRunners` (none left to sample), `CallbackError` (a user callback raised: event,
  callback name, runner index), `SampleRequestError` (`sample()` asked for something it cannot
  do), `EnvDataError` (an env returned NaN or infinity), `NonFiniteUpdateError` (a learner
  update went NaN or infinite).
- Raised by env code, for the runner to handle: `StepFailedRecreateEnvError` (re-create this
  sub-env quietly), `EnvError` (RLlib's name for an env's own error), `InjectedFault` (what
  `trainer.testing.FaultInjectionEnv` raises on purpose).
- Checkpoints (`save_to_path`, `restore_from_path`, `from_checkpoint`, `set_state`,
  `python -m checkpoints`): `CheckpointError` (a checkpoint that cannot be read or written:
  path and cause), `PlacedError` (the base of the errors that name a place in a state or
  config) and its kinds `StateError` (a state that does not fit its component),
  `MalformedState` (stored data that is not what the writer writes) and `ConfigDataError` (a
  config that cannot be rebuilt from its stored data), `NotPlainData` (a state value that a
  checkpoint cannot hold), `RunnerStateRejected` (a runner refused its part of a restored state;
  the restore is rolled back).
- Named objects (`create_named_object`, `get_named_object` and their handles):
  `NamedObjectError` (a named object's method raised, or its server is gone).
- RLlib scripts run by `python -m trainer run` (importing an RLlib name):
  `RLlibNotAvailable` (an RLlib or Ray name with no counterpart here; an `ImportError`),
  `RemovedFromRLlib` (a name RLlib itself removed, such as `SingleAgentRLModuleSpec`: names
  its replacement; an `ImportError`).

Everything this project does not do is refused with one type, `NotSupported`, whose
`.capability` names what is missing (one of `trainer.capabilities`' words: "algorithms other
than PPO and DQN", "Ray Tune", "nested (Dict and Tuple) action spaces", ...). Each refusal is
also of the type the same call raised before, so older `except` clauses still catch it:

- `RLlibNotAvailable` (also an `ImportError`): an RLlib or Ray name or module with no
  counterpart, at its import or, for names a script may import without using, at its use;
- `UnsupportedValue` (also a `ValueError`): a value that needs a missing capability (an
  env's nested action space, `get_trainable_cls("APPO")`);
- `UnsupportedCall` (also a `NotImplementedError`): a call that needs one
  (`register_trainable` without Ray Tune, RLlib's DeepMind Control and RecSim example envs);
- `UnsupportedSetting` (also a `ConfigError`): a config setting that needs one
  (`training(learner_connector=...)`, `MeanStdFilter(multi_agent=True)`, `use_lstm` in a
  multi-agent config, ...). `ConfigError(message, capability=...)` makes one, as
  `OSError(errno.ENOENT, ...)` makes a `FileNotFoundError`.

An error raised in an EnvRunner process reaches the caller as an `EnvRunnerError` that is also
of the original error's type (a `NotSupported` there too), its `.capability` the original's.
"""

from __future__ import annotations

import inspect
import os
from typing import Any


def _rebuilt(cls: type[BaseException], args: tuple, state: dict) -> BaseException:
    """An exception of `cls` with `args` and attributes `state`, made without its `__init__`
    (whose parameters are not `args`): how `_KeepsAttributes` errors unpickle."""
    error = cls.__new__(cls)
    BaseException.__init__(error, *args)
    error.__dict__.update(state)
    return error


class _KeepsAttributes:
    """Pickles an exception by its class, message args and attributes, not by calling its
    `__init__` with its message: an error raised in a worker process or a Ray actor reaches
    the caller with its type, message and attributes (RLlib users see it through Ray)."""

    def __reduce__(self) -> tuple[Any, ...]:
        error: Any = self
        return (_rebuilt, (type(self), error.args, dict(error.__dict__)))


class RemoteError(RuntimeError):
    """Base of the errors about work in other processes: EnvRunner failures, no healthy
    EnvRunner left, a named object's server. Ray's `ray.exceptions.RayError` is this class in
    the Ray spelling (`trainer.named_objects.exceptions.RayError`)."""


class EnvRunnerFailure(_KeepsAttributes, RemoteError):
    """Base of all EnvRunner failures; `worker_index` names the runner, `kind` the failure."""

    kind = "failure"

    def __init__(self, worker_index: int, message: str):
        self.worker_index = worker_index
        super().__init__(message)


class EnvRunnerCrashed(EnvRunnerFailure):
    kind = "crashed"

    def __init__(
        self, worker_index: int, method: str | None, exitcode: int | None, detail: str = ""
    ):
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
        super().__init__(
            worker_index,
            f"EnvRunner {worker_index} crashed {where}: "
            f"{how.rstrip('.')}.{(' ' + detail) if detail else ''}",
        )


class EnvRunnerTimeout(EnvRunnerFailure):
    kind = "timeout"

    def __init__(
        self, worker_index: int, method: str, timeout_s: float, stack: str = "", hint: str = ""
    ):
        self.method = method
        self.timeout_s = timeout_s
        #: Where the process was when it was given up (its threads' stacks, innermost first),
        #: or "" when it could not be read.
        self.stack = stack
        #: What may explain the silence (a Ray actor that waited for resources), or "".
        self.hint = hint
        where = f" It was in:\n{stack.rstrip()}" if stack else ""
        super().__init__(
            worker_index,
            f"EnvRunner {worker_index} did not answer {method}() within "
            f"{timeout_s:g} s; its process was killed."
            f"{' ' + hint if hint else ''}{where}",
        )

    def __reduce__(self) -> tuple[type[EnvRunnerTimeout], tuple[Any, ...]]:
        return (
            EnvRunnerTimeout,
            (self.worker_index, self.method, self.timeout_s, self.stack, self.hint),
        )


class EnvRunnerError(EnvRunnerFailure):
    kind = "exception"

    def __init__(
        self,
        worker_index: int,
        method: str,
        error_type: str,
        error_message: str,
        remote_traceback: str,
        env_steps: int | None = None,
    ):
        self.method = method
        self.error_type = error_type
        self.error_message = error_message
        self.remote_traceback = remote_traceback
        #: Env steps the runner's process had stepped when it raised (None: unknown).
        self.env_steps = env_steps
        super().__init__(
            worker_index,
            f"EnvRunner {worker_index} raised {error_type}: "
            f"{error_message} (in {method}()).\nOriginal traceback:\n"
            f"{remote_traceback.rstrip()}",
        )

    def __reduce__(self) -> tuple[type[EnvRunnerError], tuple[Any, ...]]:
        return (
            EnvRunnerError,
            (
                self.worker_index,
                self.method,
                self.error_type,
                self.error_message,
                self.remote_traceback,
                self.env_steps,
            ),
        )


class RunnerStateRejected(_KeepsAttributes, RemoteError):
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


class MultiAgentEnvError(Exception):
    """Multi-agent env data that cannot be recorded (RLlib's
    `ray.rllib.utils.error.MultiAgentEnvError`): e.g. an agent that acted gets no reward, or
    gets data after it was done."""


class StepFailedRecreateEnvError(Exception):
    """Raise this from an env's `step()` to say "re-create me": with
    `restart_failed_sub_environments=True` the EnvRunner re-creates the sub-env and starts a new
    episode in it, as for any other exception, but logs nothing (RLlib's class of the same name,
    for envs that fail routinely, such as a connection to an external simulator)."""


# -- Refusals ----------------------------------------------------------------------------------


class NotSupported(Exception):
    """Something this project does not do (the one type of every such refusal; see the module
    docstring). `capability` names what is missing, in `trainer.capabilities`' words (None
    only for an RLlib name that is simply not mapped yet: a gap)."""

    _capability: str | None = None

    @property
    def capability(self) -> str | None:
        """What is missing; for an error that wraps a refusal raised elsewhere (an
        `EnvRunnerError` of an EnvRunner's refusal), the refusal's."""
        if self._capability is not None:
            return self._capability
        cause = self.__cause__
        return cause.capability if isinstance(cause, NotSupported) else None

    @capability.setter
    def capability(self, value: str | None) -> None:
        self._capability = value


class _CapabilityRefusal(NotSupported):
    """A refusal made of a message and the capability, and pickled by both (an EnvRunner's
    refusal reaches the main process with its type and capability)."""

    def __init__(self, message: str, capability: str):
        super().__init__(message)
        self.capability = capability

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return (type(self), (str(self), self.capability))


class UnsupportedValue(_CapabilityRefusal, ValueError):
    """A value that needs a capability this project does not have (a `ValueError`, as the same
    call raises for a wrong value)."""


class UnsupportedCall(_CapabilityRefusal, NotImplementedError):
    """A call that needs a capability this project does not have (a `NotImplementedError`, as
    the same call raised before)."""


# -- Config ------------------------------------------------------------------------------------


class ConfigError(ValueError):
    """A config value is wrong: the message names the setting, the value and what is allowed.
    `capability`: set when the value needs something this project does not have (a
    `trainer.capabilities` word, as `RLlibNotAvailable` carries), else None; with one,
    `ConfigError(...)` makes an `UnsupportedSetting` (a `NotSupported` too)."""

    capability: str | None

    def __new__(cls, message: str = "", capability: str | None = None) -> ConfigError:
        if cls is ConfigError and capability is not None:
            cls = UnsupportedSetting  # the refusal type (Python then calls its __init__)
        made: ConfigError = super().__new__(cls, message)
        return made

    def __init__(self, message: str, capability: str | None = None):
        super().__init__(message)
        self.capability = capability

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return (type(self), (str(self), self.capability))


class FrozenConfigError(ConfigError, AttributeError):
    """A setting written on a frozen config (a built Algorithm's): a `ConfigError`, and an
    `AttributeError` as RLlib raises it."""


class UnsupportedSetting(ConfigError, NotSupported):
    """A config setting (or a connector's option) that needs a capability this project does
    not have: a `ConfigError` and a `NotSupported`."""


class UnknownSettingError(ConfigError, TypeError):
    """A builder method got a keyword that is no setting of RLlib's either (a `TypeError` too,
    as Python and RLlib raise for an unexpected keyword argument)."""


class UnknownOverrideError(UnknownSettingError, KeyError):
    """`AlgorithmConfig.overrides()` got a name that is no setting: a `KeyError` too, as
    RLlib raises it ("Invalid property name ... for config class ...")."""

    def __str__(self) -> str:  # the message, not KeyError's quoted repr of it
        return str(self.args[0]) if self.args else ""


class ConfigKeyAssignmentError(ConfigError, AttributeError):
    """`config[key] = value` with a key that cannot be set so (RLlib's "multiagent": its
    settings are `multi_agent()`'s): an `AttributeError` too, as RLlib raises it."""


class ProcessBoundObject(TypeError):
    """An object that cannot travel to another process (an open file)."""


# -- Callbacks ---------------------------------------------------------------------------------


class CallbackError(RuntimeError):
    """A user callback raised. Names the event, the callback, and where it ran.

    `env_runner_index` is None for callbacks that ran in the main process (Algorithm events, or
    the local EnvRunner when `num_env_runners=0`, which has index 0). `remote_traceback` is the
    original traceback as text, so it survives the trip from a worker process.
    """

    def __init__(
        self,
        event: str,
        callback_name: str,
        error_type: str,
        error_message: str,
        remote_traceback: str,
        env_runner_index: int | None = None,
    ):
        self.event = event
        self.callback_name = callback_name
        self.error_type = error_type
        self.error_message = error_message
        self.remote_traceback = remote_traceback
        self.env_runner_index = env_runner_index
        where = (
            "in the main process"
            if env_runner_index is None
            else f"in EnvRunner {env_runner_index}"
        )
        super().__init__(
            f"Callback {callback_name!r} raised {error_type}: {error_message} "
            f"(event {event!r}, {where}).\nOriginal traceback:\n{remote_traceback.rstrip()}"
        )

    def __reduce__(self) -> tuple[type[CallbackError], tuple[Any, ...]]:
        return (
            CallbackError,
            (
                self.event,
                self.callback_name,
                self.error_type,
                self.error_message,
                self.remote_traceback,
                self.env_runner_index,
            ),
        )


# -- Env code ----------------------------------------------------------------------------------


class InjectedFault(RuntimeError):
    """The exception a `FaultInjectionEnv` raises on purpose."""


# -- Checkpoints -------------------------------------------------------------------------------


class CheckpointError(_KeepsAttributes, Exception):
    """A checkpoint cannot be read or written: names the path and what is wrong."""

    def __init__(self, path: str | os.PathLike, cause: str):
        self.path = str(path)
        self.cause = cause
        super().__init__(f"checkpoint {self.path}: {cause}")


class PlacedError(_KeepsAttributes, ValueError):
    """A value that is wrong where it sits: `where` is its place (`learner['optimizer']['m']`),
    `problem` what is wrong; the message is "where: problem"."""

    def __init__(self, where: str, problem: str):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class StateError(PlacedError):
    """A state that does not fit its component; `where` is its place in the state."""


class MalformedState(PlacedError):
    """Stored data that is not what `pack` writes."""


class ConfigDataError(PlacedError):
    """A config that cannot be rebuilt from plain data; `where` names the setting."""


class NotPlainData(_KeepsAttributes, TypeError):
    """A value that msgpack state cannot hold; `where` is its place in the state."""

    def __init__(self, where: str, problem: str):
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


# -- Named objects -----------------------------------------------------------------------------


class NamedObjectError(RemoteError):
    """A named object's method raised (the message carries the original traceback), or the
    server is gone."""


# -- RLlib scripts -----------------------------------------------------------------------------


class RLlibNotAvailable(NotSupported, ImportError):
    """An RLlib (or Ray) module or name with no counterpart in this project.

    `rllib_name` is the dotted RLlib name, `capability` what it needs that this project does not
    have (one of `trainer.launcher.table`'s capability words; None when the name is simply not
    mapped yet: a gap), `instead` what to use (may be empty)."""

    #: The table of RLlib names and their counterparts (`trainer.launcher.table`), by path.
    table_file = "trainer/launcher/table.py"

    def __init__(
        self, rllib_name: str, capability: str | None, instead: str = "", detail: str = ""
    ):
        self.rllib_name = rllib_name
        self.capability = capability
        self.instead = instead
        self.detail = detail
        if capability is not None:
            message = f"{rllib_name} is not available in localrl: it needs {capability}"
        else:
            message = f"{rllib_name} has no counterpart in localrl yet"
            if not detail:
                detail = f"no row for it in {self.table_file}"
        if detail:
            message += f"; {detail}"
        if instead:
            message += f". Use instead: {instead}"
        super().__init__(message, name=rllib_name.rpartition(".")[0] or rllib_name)

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        # By its fields (ImportError's own reduce would call it with the message alone): an
        # EnvRunner's refusal reaches the main process with its type and capability.
        return (type(self), (self.rllib_name, self.capability, self.instead, self.detail))


class RemovedFromRLlib(ImportError):
    """An RLlib name or module that RLlib itself no longer has (RLlib 2.60 fails on it too):
    `rllib_name` is the dotted name, `replacement` what RLlib has instead. Not a
    `NotSupported`: the script needs the change under RLlib as well."""

    def __init__(self, rllib_name: str, replacement: str, removed_in: str = ""):
        self.rllib_name = rllib_name
        self.replacement = replacement
        self.removed_in = removed_in
        when = f"RLlib removed it in {removed_in}" if removed_in else "RLlib 2.60 no longer has it"
        super().__init__(
            f"{rllib_name}: {when}; use {replacement}",
            name=rllib_name.rpartition(".")[0] or rllib_name,
        )

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return (type(self), (self.rllib_name, self.replacement, self.removed_in))


def refuse_placeholder(value: Any, used: str) -> None:
    """Raises the refusal of a stand-in for an RLlib name this project does not serve (the RLlib
    launcher's placeholders, and classes derived from one), given where `used` says (a setting):
    the RLlib name and what it needs, rather than an error about the value's type. Looks into
    a list, tuple or dict of values too. Does nothing for any other value."""
    values = value if isinstance(value, (list, tuple)) else [value]
    if isinstance(value, dict):
        values = list(value.values())
    for item in values:
        refuse = inspect.getattr_static(item, "__localrl_refuse__", None)
        if refuse is not None:
            getattr(refuse, "__func__", refuse)(used)
