"""The messages between the main process and a remote EnvRunner, and how errors travel back.

Each request is a small named record with a request id; the runner answers each with exactly
one `Reply` carrying the same id, in request order:

    request (main -> runner)            what the runner does             Reply.value
    Init(id, sys_path, payload)         imports from sys_path, builds    {"pid", "spaces",
        payload: cloudpickled spec      its EnvRunner from the spec      "env_spaces", "tasks"}
        (config, env creator, index,    (callbacks pickled one by one:
        spaces, named-object client)    `trainer.util.pickling`)
    Call(id, method, kwargs)            runner.method(**kwargs)          the return value
    Apply(id, func_bytes, kwargs)       cloudpickle.loads(func_bytes)    the return value
                                            (runner, **kwargs)
    Stop(id)                            runner.stop(), then exits        None

A `Reply` holds either `value` or `error`. An error keeps what it was: a `CallbackError` (a user
callback raised) or an `EnvRunnerError` (env or runner code raised), each with the original
traceback as text, and the original exception itself (`cause`, cloudpickled on its own so one
that cannot be unpickled here costs only itself). `raise_error` re-raises it in the main process
with its type kept where it pickles, as Ray's task errors do: an env's `ValueError` arrives as an
`EnvRunnerError` that is also a `ValueError` (its `__cause__` the original), so both
`except EnvRunnerError` and `except ValueError` catch it. `warnings` are the deprecation warnings
(RLlib's older API forms) first seen in the runner's process, for the main process to log once.

Request ids come from one counter per main process, so a request pickled once and sent to many
runners (weights) has the same id everywhere.
"""

from __future__ import annotations

import itertools
import pickle
from typing import Any, NamedTuple

from trainer.util.deprecation import warn_once

#: Ids of requests, unique in this process.
_request_ids = itertools.count(1)


def next_request_id() -> int:
    return next(_request_ids)


class Init(NamedTuple):
    request_id: int
    sys_path: list[str]
    payload: bytes

    @property
    def label(self) -> str:
        return "__init__"


class Call(NamedTuple):
    request_id: int
    method: str
    kwargs: dict

    @property
    def label(self) -> str:
        # Failures name the public method (`sample`, not the internal `sample_with_metrics`).
        return self.method.removesuffix("_with_metrics")


class Apply(NamedTuple):
    request_id: int
    func_bytes: bytes
    kwargs: dict

    @property
    def label(self) -> str:
        return "foreach_env_runner"


class Stop(NamedTuple):
    request_id: int

    @property
    def label(self) -> str:
        return "stop"


Request = Init | Call | Apply | Stop


def call(method: str, **kwargs: Any) -> Call:
    return Call(next_request_id(), method, kwargs)


def apply(func_bytes: bytes, **kwargs: Any) -> Apply:
    return Apply(next_request_id(), func_bytes, kwargs)


def stop() -> Stop:
    return Stop(next_request_id())


class Reply(NamedTuple):
    request_id: int
    value: Any = None
    #: A `CallbackError` or an `EnvRunnerError`, or None.
    error: BaseException | None = None
    #: The original exception, cloudpickled on its own (None: it did not pickle).
    cause: bytes | None = None
    #: Deprecation warnings first seen in the runner's process: (form, replacement) pairs.
    warnings: tuple = ()


# Internal: a broken request/reply pairing between the main process and a worker (a bug).
class ProtocolError(RuntimeError):
    """A reply that does not answer the request waiting for it (a bug, never expected)."""


def error_reply(request_id: int, error: BaseException, cause: BaseException | None) -> Reply:
    """The reply for a failed request: `error` as is, `cause` cloudpickled if it pickles."""
    import cloudpickle

    cause_bytes = None
    if cause is not None:
        try:
            cause_bytes = cloudpickle.dumps(cause)
        except Exception:  # noqa: BLE001 - an exception that does not pickle travels as text
            cause_bytes = None
    return Reply(request_id, error=error, cause=cause_bytes)


def reply_value(reply: Reply, request_id: int, label: str, worker_index: int) -> Any:
    """The value of `reply`, the answer to request `request_id`: its deprecation warnings are
    logged once, its error raised (`raise_error`); a reply to another request is a
    `ProtocolError`."""
    if reply.request_id != request_id:
        raise ProtocolError(
            f"EnvRunner {worker_index} answered request {reply.request_id} "
            f"while request {request_id} ({label}) waited for its reply"
        )
    for form, replacement in reply.warnings:
        warn_once(form, replacement)
    if reply.error is not None:
        raise_error(reply)
    return reply.value


def raise_error(reply: Reply) -> None:
    """Raises the reply's error in the main process, its original exception attached as
    `__cause__` and its type kept where possible (see the module docstring)."""
    error = reply.error
    if error is None:
        raise ProtocolError(f"reply {reply.request_id} carries no error to raise")
    cause = None
    if reply.cause is not None:
        try:
            cause = pickle.loads(reply.cause)
        except Exception:  # noqa: BLE001 - its class may not import here: text is all we have
            cause = None
    if isinstance(cause, BaseException):
        error = keep_type(error, cause)
        error.__cause__ = cause
    raise error


_typed_classes: dict[tuple[type, type], type | None] = {}


def keep_type(error: BaseException, cause: BaseException) -> BaseException:
    """`error` as an instance of a class that derives from both its class and the cause's (Ray's
    `RayTaskError.as_instanceof_cause`); `error` itself where the two classes cannot be combined
    (clashing layouts or metaclasses) or the cause is not an `Exception`."""
    error_cls, cause_cls = type(error), type(cause)
    if isinstance(error, cause_cls) or not isinstance(cause, Exception):
        return error
    key = (error_cls, cause_cls)
    if key not in _typed_classes:
        _typed_classes[key] = _combine(error_cls, cause_cls)
    typed_cls = _typed_classes[key]
    if typed_cls is None:
        return error
    try:
        # The cause class's __new__ makes the instance: OSError's lays it out its own way.
        typed: BaseException = cause_cls.__new__(typed_cls)
        typed.args = error.args
        typed.__dict__.update(error.__dict__)
    except Exception:  # noqa: BLE001 - a cause class whose instances cannot be made bare
        return error
    return typed


def _combine(error_cls: type[BaseException], cause_cls: type[BaseException]) -> type | None:
    def __reduce__(self: BaseException) -> Any:  # noqa: N807 - pickles as the plain error class
        return error_cls.__reduce__(self)

    def __str__(self: BaseException) -> str:  # noqa: N807 - the error's message, not the cause's formatting
        return str(self.args[0]) if self.args else ""

    try:
        return type(
            f"{error_cls.__name__}({cause_cls.__name__})",
            (error_cls, cause_cls),
            {"__reduce__": __reduce__, "__str__": __str__, "__module__": error_cls.__module__},
        )
    except TypeError:
        return None
