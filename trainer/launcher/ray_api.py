"""`import ray` under the RLlib launcher: Ray's driver API over this project's named objects
(`trainer.named_objects`), for RLlib scripts that call `ray.init()`, `ray.shutdown()` and use
named actors.

- `init(...)` starts nothing (EnvRunners start with `build()`, the named-object server with the
  first named object); `is_initialized()` says whether `init()` was called since the last
  `shutdown()`. `shutdown()` ends the named objects.
- `remote`: on a class, `Counter.options(name=...).remote()` makes a named object that env and
  callback code in every EnvRunner process reaches with `get_actor(name)`; on a function,
  `f.remote(...)` runs it in this process and returns a reference for `get()` (no parallelism).
- `get`, `wait`, `put` (the value itself: there is no object store), `get_actor`,
  `ObjectRef` (the class of the references `.remote()` calls and
  `foreach_env_runner(return_obj_refs=True)` give),
  `available_resources()`/`cluster_resources()` (this machine's CPUs), `exceptions`.
- `kill(actor)` ends an actor at once: a named object is dropped (its name is free), a
  remote EnvRunner's process killed.

EnvRunners on real Ray (`env_runners(backend="ray")`) need the installed Ray:
`python -m trainer run --ray SCRIPT` keeps it (and maps only `ray.rllib`, `ray.tune`,
`ray.air`).
"""

from __future__ import annotations

import functools
import os
from typing import Any

from trainer.launcher import ray_exceptions as exceptions
from trainer.named_objects import client as _named
from trainer.named_objects.object_ref import ObjectRef as _ObjectRef
from trainer.runners.handle import RunnerHandle

__all__ = [
    "ObjectRef",
    "available_resources",
    "cluster_resources",
    "exceptions",
    "get",
    "get_actor",
    "init",
    "is_initialized",
    "kill",
    "put",
    "remote",
    "shutdown",
    "wait",
]

_initialized = False


def init(*args: Any, ignore_reinit_error: bool = False, **kwargs: Any) -> None:
    """Ray's `ray.init()`: nothing to start here. Calling it twice without `shutdown()` raises,
    as Ray does, unless `ignore_reinit_error`."""
    global _initialized
    if _initialized and not ignore_reinit_error:
        raise RuntimeError(
            "Maybe you called ray.init twice by accident? This error can be "
            "suppressed by passing in 'ignore_reinit_error=True' or by calling "
            "'ray.shutdown()' prior to 'ray.init()'."
        )
    _initialized = True


def is_initialized() -> bool:
    """Whether `init()` was called since the last `shutdown()`."""
    return _initialized


def shutdown(*args: Any, **kwargs: Any) -> None:
    """Ray's `ray.shutdown()`: ends the named objects (`shutdown_named_objects()`)."""
    global _initialized
    _initialized = False
    _named.shutdown_named_objects()


#: Ray's `ray.ObjectRef`: the class of every reference `get()` reads here (a named object's
#: `.remote()` call, a remote function's, `foreach_env_runner(return_obj_refs=True)`'s).
ObjectRef = _ObjectRef


class LocalObjectRef(_ObjectRef):
    """The result of a remote function's `.remote()` call, already computed (or its error,
    raised as it was by `get()`)."""

    __slots__ = ("_error",)

    def __init__(self, value: Any = None, error: BaseException | None = None):
        super().__init__(None)
        self._set("ok", value)
        self._error = error

    def result(self) -> Any:
        self._read = True
        if self._error is not None:
            raise self._error
        return self._value


class RemoteFunction:
    """What `@ray.remote` makes of a function: `.remote(*args)` runs it here, now."""

    def __init__(self, function: Any):
        self._function = function
        functools.update_wrapper(self, function)

    def options(self, **ignored: Any) -> RemoteFunction:
        return self

    def remote(self, *args: Any, **kwargs: Any) -> LocalObjectRef:
        args = tuple(get(a) if isinstance(a, LocalObjectRef) else a for a in args)
        try:
            return LocalObjectRef(self._function(*args, **kwargs))
        except Exception as error:  # raised by get(), as Ray raises a task's error there
            return LocalObjectRef(error=error)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"Remote functions cannot be called directly; use {self._function.__name__}.remote()"
        )


def remote(*args: Any, **options: Any) -> Any:
    """`@ray.remote` and `@ray.remote(num_cpus=..., ...)` on a class (a named-object class) or
    a function (runs in this process at `.remote()`). Resource options are accepted and have
    no effect on one machine."""
    if len(args) == 1 and not options and callable(args[0]):
        target = args[0]
        return _named.remote(target) if isinstance(target, type) else RemoteFunction(target)
    if args:
        raise TypeError("ray.remote takes a class or function, or only keyword options")
    return lambda target: remote(target)


def get(refs: Any, *, timeout: float | None = None) -> Any:
    """Ray's `ray.get`: the result of a `.remote()` call; a list of refs gives a list."""
    if isinstance(refs, (list, tuple)):
        return [get(ref, timeout=timeout) for ref in refs]
    if isinstance(refs, LocalObjectRef):
        return refs.result()
    return _named.get(refs)


def wait(
    refs: list, *, num_returns: int = 1, timeout: float | None = None, fetch_local: bool = True
) -> tuple[list, list]:
    """Ray's `ray.wait`: (ready refs, the others)."""
    refs = list(refs)
    local = [r for r in refs if isinstance(r, LocalObjectRef)]
    if not local:
        return _named.wait(refs, num_returns=num_returns, timeout=timeout)
    if not 0 < num_returns <= len(refs):
        raise ValueError(f"wait(num_returns={num_returns}): must be in 1..{len(refs)}")
    others = [r for r in refs if not isinstance(r, LocalObjectRef)]
    ready = local[:num_returns]
    if len(ready) < num_returns:
        ready += _named.wait(others, num_returns=num_returns - len(ready), timeout=timeout)[0]
    return ready, [r for r in refs if not any(r is x for x in ready)]


def put(value: Any) -> Any:
    """Ray's `ray.put`: there is no object store here, so the reference is the value itself
    (`get(put(x))` is `x`)."""
    return value


def get_actor(name: str, namespace: str | None = None) -> Any:
    """Ray's `ray.get_actor(name)`: the named object's handle."""
    return _named.get_actor(name)


def kill(actor: Any, *, no_restart: bool = True) -> None:
    """Ray's `ray.kill(actor)`: ends the actor at once. An actor of `ray.remote(Class)` (a
    named object) is dropped where it lives: none of its methods runs (no `stop()`), later
    calls on its handle fail and its name is free; a remote EnvRunner's handle (from an
    EnvRunnerGroup) has its process killed (the group's health checks then see it gone and
    restart it as `restart_failed_env_runners` says). Actors here are never restarted by the
    runtime (`max_restarts` has no effect), so `no_restart` changes nothing, as in Ray for an
    actor without restarts. Killing an actor already gone does nothing. Anything else raises
    Ray's ValueError."""
    if isinstance(actor, _named.NamedObject):
        _named.kill_named_object(actor.name)
        return
    if isinstance(actor, RunnerHandle):
        actor.kill()
        return
    raise ValueError(
        f"ray.kill() only supported for actors. For tasks, try ray.cancel(). Got: {type(actor)}."
    )


def cluster_resources() -> dict[str, float]:
    """This machine: its CPUs (EnvRunners are processes here, not scheduled Ray actors)."""
    return {"CPU": float(os.cpu_count() or 1)}


def available_resources() -> dict[str, float]:
    """As `cluster_resources()`: nothing is reserved on one machine."""
    return cluster_resources()
