"""`RunnerPool`: the remote runners of one group, and every send to them and gather from them,
for training and evaluation alike. Each wait has a deadline; the pool reports failures and
applies no policy (the `EnvRunnerGroup` decides what a failure means: `restart_policy`).

    send(ids, request)          -> runners that took it (one request, or one per runner),
                                   failures
    broadcast(ids, request)     -> failures (the request pickled once for all)
    gather(ids, timeout)        -> each runner's last reply, failures (errors, deaths, silence)
    call(ids, request, timeout) =  send, then gather
    ready(ids, timeout)         -> runners whose next reply can be read now (streaming rounds)
    read(index, timeout)        -> one runner's replies so far: (last value, None) or
                                   (None, failure)
"""

from __future__ import annotations

import time
from collections.abc import Callable, ItemsView
from multiprocessing.reduction import ForkingPickler
from typing import Any

from trainer.callbacks import CallbackError
from trainer.errors import EnvRunnerCrashed, EnvRunnerFailure
from trainer.runners.handle import RunnerHandle
from trainer.runners.protocol import Request

Failure = EnvRunnerFailure | CallbackError
#: The failures the pool reports (anything else is a bug and raised).
FAILURES = (EnvRunnerFailure, CallbackError)


class RunnerPool:
    def __init__(self) -> None:
        self._handles: dict[int, RunnerHandle] = {}

    # -- who is there ------------------------------------------------------------------------
    def __getitem__(self, index: int) -> RunnerHandle:
        return self._handles[index]

    def __contains__(self, index: int) -> bool:
        return index in self._handles

    def __len__(self) -> int:
        return len(self._handles)

    def items(self) -> ItemsView[int, RunnerHandle]:
        return self._handles.items()

    def put(self, handle: RunnerHandle) -> None:
        """Adds `handle` (replacing a failed runner of the same index)."""
        self._handles[handle.worker_index] = handle

    def healthy_ids(self) -> list[int]:
        return [i for i, h in self._handles.items() if h.healthy and h.is_alive()]

    def collect_exited(self) -> list[EnvRunnerCrashed]:
        """Runners whose process ended while idle (killed, crashed) since the last look: killed
        for good and returned as failures, so they are reported, not silently skipped."""
        failures = []
        for index, handle in self._handles.items():
            if handle.healthy and not handle.is_alive():
                failures.append(
                    EnvRunnerCrashed(index, None, handle.exitcode(), handle.death_detail())
                )
                handle.kill()
        return failures

    # -- sending -----------------------------------------------------------------------------
    def send(
        self, ids: list[int], request: Request | Callable[[int], Request]
    ) -> tuple[list[int], dict[int, Failure]]:
        """Sends `request` (or `request(index)`, one per runner) to each runner; returns those
        that took it, and the failures."""
        sent, failures = [], {}
        for i in ids:
            try:
                self._handles[i].send(request(i) if callable(request) else request)
                sent.append(i)
            except FAILURES as error:
                failures[i] = error
        return sent, failures

    def broadcast(self, ids: list[int], request: Request) -> dict[int, Failure]:
        """Sends the same request to each runner, pickled once; its reply is read with the
        next gather's. Returns the failures."""
        pickled = bytes(ForkingPickler.dumps(request))
        failures = {}
        for i in ids:
            try:
                self._handles[i].send(request, pickled=pickled)
            except FAILURES as error:
                failures[i] = error
        return failures

    # -- gathering ---------------------------------------------------------------------------
    def gather(self, ids: list[int], timeout: float) -> tuple[dict[int, Any], dict[int, Failure]]:
        """The last reply of each runner in `ids` (whichever answers first is read first), and
        the failures: errors, deaths, and runners still silent after `timeout` (killed)."""
        results: dict[int, Any] = {}
        failures: dict[int, Failure] = {}
        deadline = time.monotonic() + timeout
        waiting = [i for i in ids if self._handles[i].has_pending()]
        while waiting:
            ready = self.ready(waiting, deadline - time.monotonic())
            if not ready:
                for i in waiting:
                    failures[i] = self._handles[i].timed_out(timeout)
                break
            for i in ready:
                handle = self._handles[i]
                try:
                    value = handle.read_reply(1.0)
                except FAILURES as error:
                    failures[i] = error
                    waiting.remove(i)
                    continue
                if not handle.has_pending():
                    results[i] = value
                    waiting.remove(i)
        return results, failures

    def call(
        self, ids: list[int], request: Request | Callable[[int], Request], timeout: float
    ) -> tuple[dict[int, Any], dict[int, Failure]]:
        """`send`, then `gather`: the replies and every failure (errors, deaths, no answer
        within `timeout`)."""
        sent, failures = self.send(ids, request)
        replies, gather_failures = self.gather(sent, timeout)
        failures.update(gather_failures)
        return replies, failures

    def ready(self, ids: list[int], timeout: float) -> list[int]:
        """The runners of `ids` whose next reply can be read now (or that are gone), waiting
        up to `timeout` for one; in `ids` order."""
        if not ids:
            return []
        handles = [self._handles[i] for i in ids]
        ready = {h.worker_index for h in type(handles[0]).wait(handles, timeout)}
        return [i for i in ids if i in ready]

    def has_answered(self, index: int) -> bool:
        """Whether runner `index` has a reply waiting (it finished its request)."""
        return self._handles[index].reply_ready()

    def read(self, index: int, timeout: float) -> tuple[Any, Failure | None]:
        """Reads every pending reply of runner `index`, each within `timeout`: (the last value,
        None), or (None, the failure) with the runner killed."""
        handle = self._handles[index]
        value = None
        try:
            while handle.has_pending():
                value = handle.read_reply(timeout)
        except FAILURES as failure:
            handle.kill()
            return None, failure
        return value, None

    # -- lifetime ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Stops every runner (politely, then by force)."""
        for handle in self._handles.values():
            handle.stop()
