"""RLlib's asynchronous calls on an `EnvRunnerGroup`'s remote runners: `foreach_env_runner_async`
sends, `fetch_ready_async_reqs` collects what has come back, `num_in_flight_async_reqs` counts
what has not, `foreach_env_runner_async_fetch_ready` does both.

Each remote runner answers its requests in order, one at a time (as a Ray actor does). So that
no reply is lost, the group's synchronous calls (`foreach_env_runner`, `sample`, weight syncs,
states) first settle a runner's requests in flight (`_settle_async`): their replies are read,
within the call's timeout, and kept for the next fetch. A runner takes at most
`max_requests_in_flight_per_env_runner` async requests at a time (RLlib's limit, per runner);
more are not sent, and the count returned says how many were.

Failures follow the fault-tolerance settings, as for any call: a runner whose async call raised,
crashed, or gave no reply within the wait that had to read it, is restarted, left out
(`ignore_env_runner_failures`), or its error raised. A fetch whose `timeout_seconds` passes
before a reply leaves that request in flight (RLlib does not mark a runner unhealthy for a
timed-out fetch either); `timeout_seconds=None` waits at most the group's call timeout
(`sample_timeout_s`, at least 60 s), after which the silent runners are timeouts.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import cloudpickle

from trainer.runners import protocol
from trainer.runners.pool import FAILURES, Failure

if TYPE_CHECKING:
    from trainer.algorithms.algorithm_config import AlgorithmConfig
    from trainer.runners.handle import RunnerBackend
    from trainer.runners.pool import RunnerPool


def _call_method(name: str, runner: Any, **kwargs: Any) -> Any:
    return getattr(runner, name)(**kwargs)


class AsyncRequestsMixin:
    """The async half of `EnvRunnerGroup` (which provides `pool`, `config`, `_timeout`,
    `healthy_env_runner_ids` and `handle_failures`)."""

    if TYPE_CHECKING:  # what the mixin uses of `EnvRunnerGroup`
        pool: RunnerPool
        config: AlgorithmConfig
        _backend: RunnerBackend

        def _timeout(self, timeout_seconds: float | None) -> float: ...

        def healthy_env_runner_ids(self) -> list[int]: ...

        def handle_failures(self, failures: dict[int, Failure]) -> list[int]: ...

    def _init_async(self) -> None:
        #: Per remote runner: the tags of its async requests in flight, oldest first.
        self._async_in_flight: dict[int, deque] = {}
        #: Replies read but not fetched yet: (runner index, tag, value), in arrival order.
        self._async_ready: list[tuple[int, Any, Any]] = []

    # -- sending ----------------------------------------------------------------------------
    def foreach_env_runner_async(
        self,
        func: Callable | str | list,
        tag: str | None = None,
        *,
        kwargs: dict | None = None,
        healthy_only: bool = True,
        remote_worker_ids: list[int] | None = None,
    ) -> int:
        """Sends `func(env_runner, **kwargs)` (or the EnvRunner method named `func`; or a list
        of them, one per runner of `remote_worker_ids`) to the remote runners without waiting;
        `fetch_ready_async_reqs()` collects the results. Returns how many requests were sent:
        runners at their `max_requests_in_flight_per_env_runner` limit are skipped."""
        ids = list(self.pool_ids() if remote_worker_ids is None else remote_worker_ids)
        if healthy_only:
            healthy = set(self.healthy_env_runner_ids())
            ids = [i for i in ids if i in healthy]
        funcs = func if isinstance(func, list) else [func] * len(ids)
        if len(funcs) != len(ids):
            raise ValueError(
                f"foreach_env_runner_async(func=[...{len(funcs)} functions]): "
                f"give one function per runner of remote_worker_ids ({len(ids)})"
            )
        limit = max(1, int(getattr(self.config, "max_requests_in_flight_per_env_runner", 1) or 1))
        failures: dict[int, Failure] = {}
        sent = 0
        for index, one_func in zip(ids, funcs, strict=True):
            if index not in self.pool:
                continue
            in_flight = self._async_in_flight.setdefault(index, deque())
            if len(in_flight) >= limit:
                continue
            if not in_flight and self.pool[index].has_pending():
                # Replies of earlier broadcasts (weights) come first: read them now, so that
                # the runner's pending replies are exactly its async requests.
                _, failure = self.pool.read(index, self._timeout(None))
                if failure is not None:
                    failures[index] = failure
                    continue
            if isinstance(one_func, str):
                one_func = _Method(one_func)
            request = protocol.apply(cloudpickle.dumps(one_func), **(kwargs or {}))
            try:
                self.pool[index].send(request)
            except FAILURES as error:
                failures[index] = error
                continue
            in_flight.append(tag)
            sent += 1
        self._async_failures(failures)
        return sent

    # -- collecting -------------------------------------------------------------------------
    def fetch_ready_async_reqs(
        self,
        *,
        tags: str | Iterable[str] | None = None,
        timeout_seconds: float | None = 0.0,
        return_obj_refs: bool = False,
        mark_healthy: bool = False,
    ) -> list[tuple[int, Any]]:
        """(runner index, result) of the async requests that have answered, oldest first; only
        those tagged with `tags` when given. Waits up to `timeout_seconds` (0: only what is
        ready now) for the requests in flight. With `return_obj_refs=True` each result comes as
        a reference to read with `ray.get` (as in `foreach_env_runner`). `mark_healthy` has
        nothing to do here: a runner that failed is restarted or left out at once, per the
        fault-tolerance settings."""
        wanted = None if tags is None else ({tags} if isinstance(tags, str) else set(tags))
        bounded = timeout_seconds is None
        wait_s = (
            self._timeout(None) if timeout_seconds is None else max(float(timeout_seconds), 0.0)
        )
        self._read_async(wanted, deadline=time.monotonic() + wait_s, kill_late=bounded)
        results, kept = [], []
        for index, tag, value in self._async_ready:
            if wanted is None or tag in wanted:
                results.append((index, value))
            else:
                kept.append((index, tag, value))
        self._async_ready = kept
        if return_obj_refs:  # (index, reference), as RLlib's
            refs = self._backend.object_refs([value for _, value in results])
            results = [(index, ref) for (index, _), ref in zip(results, refs, strict=True)]
        return results

    def foreach_env_runner_async_fetch_ready(
        self,
        func: Callable | str | list,
        kwargs: dict | None = None,
        tag: str | None = None,
        timeout_seconds: float | None = 0.0,
        return_obj_refs: bool = False,
        mark_healthy: bool = False,
        healthy_only: bool = True,
        remote_worker_ids: list[int] | None = None,
        return_actor_ids: bool = False,
    ) -> list:
        """Fetches the ready results of earlier calls tagged `tag`, then sends `func` to the
        runners with room for another request (RLlib's order); returns the fetched results
        (with their runner indices if `return_actor_ids`)."""
        ready = self.fetch_ready_async_reqs(
            tags=tag,
            timeout_seconds=timeout_seconds,
            return_obj_refs=return_obj_refs,
            mark_healthy=mark_healthy,
        )
        self.foreach_env_runner_async(
            func, tag, kwargs=kwargs, healthy_only=healthy_only, remote_worker_ids=remote_worker_ids
        )
        return ready if return_actor_ids else [value for _, value in ready]

    def num_in_flight_async_reqs_of(self, index: int) -> int:
        """Async requests sent to runner `index` and not answered yet."""
        return len(self._async_in_flight.get(index, ()))

    def num_in_flight_async_reqs(self, tag: str | None = None) -> int:
        """Async requests sent and not answered yet (with `tag`, if given)."""
        return sum(
            1 for tags in self._async_in_flight.values() for t in tags if tag is None or t == tag
        )

    # -- internals --------------------------------------------------------------------------
    def pool_ids(self) -> list[int]:
        return sorted(index for index, _ in self.pool.items())

    def _read_async(self, wanted: set | None, *, deadline: float, kill_late: bool) -> None:
        """Reads the async replies that are ready (waiting until `deadline` for those in
        flight with a wanted tag); with `kill_late`, runners still silent then are timeouts."""
        failures: dict[int, Failure] = {}
        while True:
            waiting = [
                i
                for i, tags in self._async_in_flight.items()
                if tags and i in self.pool and (wanted is None or any(t in wanted for t in tags))
            ]
            for index in list(waiting):
                handle = self.pool[index]
                while self._async_in_flight[index] and handle.reply_ready():
                    tag = self._async_in_flight[index].popleft()
                    try:
                        self._async_ready.append((index, tag, handle.read_reply(1.0)))
                    except FAILURES as error:
                        failures[index] = error
                        self._async_in_flight[index].clear()
                        break
            waiting = [
                i
                for i in waiting
                if i not in failures
                and any(wanted is None or t in wanted for t in self._async_in_flight[i])
            ]
            remaining = deadline - time.monotonic()
            if not waiting or remaining <= 0:
                break
            self.pool.ready(waiting, remaining)
        if kill_late:
            for index in waiting:
                if index not in failures:
                    failures[index] = self.pool[index].timed_out(self._timeout(None))
                    self._async_in_flight[index].clear()
        self._async_failures(failures)

    def _settle_async(self, ids: Iterable[int] | None = None) -> None:
        """Before a synchronous call: reads the replies of the async requests in flight on
        `ids` (all runners if None), within the group's call timeout, into the results the
        next fetch returns."""
        targets = [
            i
            for i in (self._async_in_flight if ids is None else ids)
            if self._async_in_flight.get(i)
        ]
        if not targets:
            return
        failures: dict[int, Failure] = {}
        deadline = time.monotonic() + self._timeout(None)
        for index in targets:
            handle = self.pool[index]
            while self._async_in_flight[index]:
                tag = self._async_in_flight[index][0]
                try:
                    value = handle.read_reply(max(deadline - time.monotonic(), 0.01))
                except FAILURES as error:
                    failures[index] = error
                    self._async_in_flight[index].clear()
                    break
                self._async_in_flight[index].popleft()
                self._async_ready.append((index, tag, value))
        self._async_failures(failures)

    def _async_failures(self, failures: dict[int, Failure]) -> None:
        for index in failures:
            self._async_in_flight.pop(index, None)
        self.handle_failures(failures)

    def _forget_async(self, indices: Iterable[int]) -> None:
        """Runners restarted: their requests in flight died with the old processes."""
        for index in indices:
            self._async_in_flight.pop(index, None)


class _Method:
    """A picklable `runner.<name>(**kwargs)`, for a method named by string."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, runner: Any, **kwargs: Any) -> Any:
        return _call_method(self.name, runner, **kwargs)
