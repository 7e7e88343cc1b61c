"""`RunnerHandle`: how the `EnvRunnerGroup` and the `RunnerPool` talk to one remote EnvRunner,
whatever runs it: a worker process (`ProcessRunner`, the "processes" backend) or, in the Ray
backend, an actor. A backend implements this interface and `RunnerBackend`, and nothing else
in the trainer changes.

A handle sends requests (`trainer.runners.protocol`) and reads their replies in request order,
each read bounded by a timeout. Failures are raised as the kinds of `trainer.errors`:
`EnvRunnerCrashed` (the runner is gone), `EnvRunnerTimeout` (no reply in time: the runner is
killed), `EnvRunnerError` / `CallbackError` (code in the runner raised; the runner lives on).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from trainer.errors import EnvRunnerTimeout
from trainer.named_objects.object_ref import ObjectRef
from trainer.runners.protocol import Request


class RunnerHandle(ABC):
    #: The runner's index in its group (1..N; 0 is the local runner, which has no handle).
    worker_index: int
    #: False once the runner failed or was stopped: it takes no more requests.
    healthy: bool
    #: The runner's process id (on its node), or None where not known.
    pid: int | None

    @abstractmethod
    def send(self, request: Request, *, pickled: bytes | None = None) -> None:
        """Sends `request` (or `pickled`, the same request pickled once for many runners); its
        reply is expected after those of the requests sent before. Raises `EnvRunnerCrashed`
        when the runner cannot take it."""

    @abstractmethod
    def has_pending(self) -> bool:
        """Whether a request sent is still unanswered (its reply unread)."""

    @abstractmethod
    def reply_ready(self) -> bool:
        """Whether the next reply can be read without waiting (or the runner is gone)."""

    @abstractmethod
    def read_reply(self, timeout: float) -> Any:
        """The value of the next reply, waiting at most `timeout` seconds; raises the failure
        (see the module docstring) instead."""

    @abstractmethod
    def timed_out(self, timeout: float) -> EnvRunnerTimeout:
        """Gives up on the pending replies: kills the runner and returns the failure (with
        where the runner was stuck, where that can be read)."""

    @abstractmethod
    def is_alive(self) -> bool:
        """Whether the runner still runs (a crashed or killed runner does not)."""

    @abstractmethod
    def exitcode(self) -> int | None:
        """How the runner ended (negative: the signal that ended it), or None."""

    def death_detail(self) -> str:
        """What is known of why a runner that is no longer alive ended, for its
        `EnvRunnerCrashed` (beyond `exitcode()`), or ""."""
        return ""

    def set_background(self, background: bool) -> None:
        """Runs the runner in the background (on cycles other processes leave idle) or at
        normal priority again; a backend without priorities ignores it."""
        del background

    @abstractmethod
    def kill(self) -> None:
        """Ends the runner at once; it is no longer healthy."""

    @abstractmethod
    def stop(self, timeout: float = 2.0) -> None:
        """Asks the runner to close its envs and end (answering what is in flight first);
        kills it if it has not within `timeout`."""

    @staticmethod
    @abstractmethod
    def wait(handles: Sequence[RunnerHandle], timeout: float) -> list[RunnerHandle]:
        """The handles of `handles` whose next reply is ready (or that are gone), waiting up to
        `timeout` seconds for at least one; [] if none is by then."""


class RunnerBackend(ABC):
    """Starts remote runners of one kind (`trainer.runners.process_runner.ProcessBackend`)."""

    @abstractmethod
    def start(self, worker_index: int) -> RunnerHandle:
        """Starts runner `worker_index` (its EnvRunner is built by the `Init` request sent
        next), at normal priority (`RunnerHandle.set_background` moves it)."""

    def start_many(
        self,
        worker_indices: Sequence[int],
        *,
        first_request: Callable[[int], Request] | None = None,
    ) -> Sequence[RunnerHandle]:
        """Starts a runner per index, as `start` does; a backend that can start several
        at once for less than each alone overrides it. A backend may send
        `first_request(index)` (the `Init`) as it starts each: the runners it was sent to
        have it pending (`has_pending`); the caller sends it to the others."""
        return [self.start(index) for index in worker_indices]

    def object_refs(self, values: Sequence[Any]) -> list[Any]:
        """References to `values`, results of calls on this backend's runners, for RLlib's
        `return_obj_refs=True`: ready `ObjectRef`s, which `trainer.named_objects.get` (and
        `ray.get` under the RLlib launcher) reads. The results are here already: there is no
        object store to leave them in."""
        return [ObjectRef.of_value(value) for value in values]
