"""RLlib's `ray.rllib.utils.actors.TaskPool`: bookkeeping of in-flight remote calls (which
worker each object ref came from), for scripts and old-stack code that poll many workers'
`.remote()` results.

Readiness is asked of the script's `ray.wait` (under the launcher, Ray's stand-in,
`trainer.launcher.ray_api`), looked up at each call: a script (or RLlib's unit test) that
patches `ray.wait` is obeyed, and nothing here imports Ray.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Collection, Iterator
from typing import Any

from trainer.launcher import ray_api

__all__ = ["TaskPool"]


def _ray_wait() -> Any:
    """The `ray.wait` the running script sees: the imported `ray` module's (the launcher's
    stand-in, real Ray, or a patched one), else the stand-in's own."""
    ray = sys.modules.get("ray")
    if ray is None:
        ray = ray_api
    return ray.wait


class TaskPool:
    """Tracks in-flight remote calls: `add(worker, obj_refs)` records a call,
    `completed()` / `completed_prefetch()` yield `(worker, obj_refs)` of the finished ones,
    `reset_workers(workers)` forgets the calls of workers no longer in `workers`. A call is
    keyed by its first object ref (`obj_refs` may be one ref or a list of refs)."""

    def __init__(self) -> None:
        self._tasks: dict[Any, Any] = {}  # first object ref -> worker
        self._objects: dict[Any, Any] = {}  # first object ref -> all its refs
        # Finished calls not yet handed out by `completed_prefetch` (kept as one deque: a
        # generator still in flight sees what `reset_workers` removes).
        self._fetching: deque[tuple[Any, Any]] = deque()

    def add(self, worker: Any, all_obj_refs: Any) -> None:
        """Records a remote call of `worker` returning `all_obj_refs` (a ref or a list)."""
        key = all_obj_refs[0] if isinstance(all_obj_refs, list) else all_obj_refs
        self._tasks[key] = worker
        self._objects[key] = all_obj_refs

    def completed(self, blocking_wait: bool = False) -> Iterator[tuple[Any, Any]]:
        """Yields `(worker, obj_refs)` of each call that has finished (asked once, without
        waiting); with `blocking_wait`, waits up to 10 s for one when none has."""
        pending = list(self._tasks)
        if not pending:
            return
        wait = _ray_wait()
        ready, _ = wait(pending, num_returns=len(pending), timeout=0)
        if not ready and blocking_wait:
            ready, _ = wait(pending, num_returns=1, timeout=10.0)
        for key in ready:
            yield self._tasks.pop(key), self._objects.pop(key)

    def completed_prefetch(
        self, blocking_wait: bool = False, max_yield: int = 999
    ) -> Iterator[tuple[Any, Any]]:
        """As `completed()`, at most `max_yield` calls at a time: the finished calls are
        queued first, so those not handed out (the limit, or a caller that stops iterating)
        come with the next call."""
        for done in self.completed(blocking_wait=blocking_wait):
            self._fetching.append(done)
        for _ in range(max_yield):
            if not self._fetching:
                break
            yield self._fetching.popleft()

    def reset_workers(self, workers: Collection[Any]) -> None:
        """Forgets the calls (pending or queued) of every worker not in `workers` (the
        workers that failed and were removed)."""
        for key, worker in list(self._tasks.items()):
            if worker not in workers:
                del self._tasks[key]
                del self._objects[key]
        for _ in range(len(self._fetching)):  # the same deque, re-filled in order
            worker, refs = self._fetching.popleft()
            if worker in workers:
                self._fetching.append((worker, refs))

    @property
    def count(self) -> int:
        """The number of calls still pending."""
        return len(self._tasks)
