"""The learner thread of the asynchronous algorithms (IMPALA, APPO) and the queues that feed it.

Data flow:

    driver (training_step)                         learner thread
    ----------------------                         --------------
    EnvRunner replies -> train batches --put-->  [queue] --get--> learner.update(batch)
                                                                       |
    results, update count  <--------------------- results queue <------+

A full `BatchQueue` (IMPALA's) holds the driver back: `put` waits for room, so the EnvRunners
stop getting new sample requests until the learner has taken a batch (RLlib 2.60's learner
queue blocks the same way); the `CircularBuffer` (APPO's) never waits and drops its oldest
batch instead, counting the env steps it dropped (`dropped_env_steps`). The thread learns
only between `resume()` and `pause()` (the algorithm's `train()` calls), so that between them
the learner's state stands still (checkpoints, evaluation). It holds `lock` during each
update; the driver takes it (`held()`) to read or write the learner (checkpoints, state),
so it never sees a half-applied step. The periodic weight broadcast does not wait for an
update in progress (`snapshot`): the thread reads the weights right after it, and the driver
broadcasts them at a later training step. An exception in an update ends the thread
and is kept (`error`); the algorithm raises it, with its type, at its next training step.
Every wait of the driver for an update in progress is bounded (`STOP_TIMEOUT_S`): `pause()`
and `held()` then raise `LearnerThreadTimeout`, `stop()` logs it and returns False.

`stop()` ends the thread: no update starts after it is called, and it returns once the update
in progress (if any) has ended, so no learner thread outlives its algorithm's `stop()`. Nor
does an update run while the process forks (`os.fork()`, `subprocess` with a `preexec_fn`, as
`ray.init()` starts Ray's processes): OpenBLAS's fork handler (`blas_thread_shutdown_`) waits
for the BLAS call in progress, which waits for the BLAS threads the handler holds, and the
process hangs. A fork therefore waits for each learner thread's update in progress to end and
holds its `lock` until the fork is done (`os.register_at_fork`).

Queues:
- `BatchQueue` (IMPALA): first in, first out, at most `learner_queue_size` batches;
- `CircularBuffer` (APPO, Espeholt et al.'s replay of recent batches): at most N batches, each
  handed out up to K times, drawn uniformly among the remaining uses.
"""

from __future__ import annotations

import abc
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)


@dataclass
class TrainBatch:
    """One batch for the learner: `episodes` (their env steps: `env_steps`). `arrays` is the
    learner's array form of the episodes, made at the batch's first use and kept for the
    circular buffer's next uses of it."""

    episodes: list[Any]
    env_steps: int
    arrays: Any = None


class _LearnerQueue(abc.ABC):
    """What both queues share: `_ready`, the condition their `put` and `get` notify, and
    `len()`, the batches (or batch uses) still to hand out."""

    _ready: threading.Condition

    @abc.abstractmethod
    def __len__(self) -> int: ...

    def wait_empty(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds until the learner has taken everything queued (every
        use of every batch); returns whether it has."""
        with self._ready:
            return self._ready.wait_for(lambda: not len(self), timeout)


class BatchQueue(_LearnerQueue):
    """At most `capacity` batches, first in, first out; `put` waits for room."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        #: Env steps dropped so far (none: a full queue waits instead).
        self.dropped_env_steps = 0
        self._items: deque[TrainBatch] = deque()
        self._ready = threading.Condition()

    def put(self, batch: TrainBatch, timeout: float) -> bool:
        """Adds `batch` once there is room, waiting up to `timeout` seconds for it; returns
        whether it was added."""
        with self._ready:
            if len(self._items) >= self.capacity:
                self._ready.wait(timeout)
                if len(self._items) >= self.capacity:
                    return False
            self._items.append(batch)
            self._ready.notify_all()
            return True

    def get(self, timeout: float) -> TrainBatch | None:
        """The oldest batch, waiting up to `timeout` seconds; None if none came."""
        with self._ready:
            if not self._items:
                self._ready.wait(timeout)
            if not self._items:
                return None
            batch = self._items.popleft()
            self._ready.notify_all()  # room for a waiting put
            return batch

    def __len__(self) -> int:
        return len(self._items)


class CircularBuffer(_LearnerQueue):
    """APPO's circular buffer: at most `num_batches` batches, each handed out at most
    `iterations_per_batch` times, uniformly at random among the uses left (RLlib's N x K
    slots); a full buffer drops its oldest batch with all its uses."""

    def __init__(self, num_batches: int, iterations_per_batch: int, seed: list[int] | None = None):
        self.num_batches = num_batches
        self.iterations_per_batch = iterations_per_batch
        #: Env steps of the batches dropped, with uses left, to make room.
        self.dropped_env_steps = 0
        #: [batch, uses left], oldest first.
        self._entries: deque[list[Any]] = deque()
        self._ready = threading.Condition()
        self._rng = np.random.default_rng(seed)

    def put(self, batch: TrainBatch, timeout: float = 0.0) -> bool:
        """Adds `batch` at once (a full buffer drops its oldest); always True."""
        with self._ready:
            if len(self._entries) >= self.num_batches:
                self.dropped_env_steps += self._entries.popleft()[0].env_steps
            self._entries.append([batch, self.iterations_per_batch])
            self._ready.notify()
            return True

    def get(self, timeout: float) -> TrainBatch | None:
        with self._ready:
            if not self._entries:
                self._ready.wait(timeout)
            if not self._entries:
                return None
            uses = np.array([entry[1] for entry in self._entries], dtype=np.float64)
            index = int(self._rng.choice(len(uses), p=uses / uses.sum()))
            entry = self._entries[index]
            entry[1] -= 1
            if entry[1] == 0:
                del self._entries[index]
                self._ready.notify_all()  # (a driver waiting in `wait_empty`)
            return entry[0]

    def __len__(self) -> int:
        return len(self._entries)


#: How long `LearnerThread.stop()`, `pause()` and `held()` wait for the update in progress
#: (seconds): a long update of a large model on a loaded machine, not a hang.
STOP_TIMEOUT_S = 300.0


class LearnerThreadTimeout(TimeoutError):
    """The learner thread's update in progress did not end within the bound of a wait for
    it (`LearnerThread.pause()`, `held()`): an update that hangs, named, not a driver that
    waits for ever."""


#: The learner threads started and not yet ended: a fork waits for their updates.
_LIVE: weakref.WeakSet[LearnerThread] = weakref.WeakSet()
#: The learner threads' locks held by the thread that forks, from before the fork to after it.
_HELD_FOR_FORK: list[threading.RLock] = []


def _hold_learner_threads() -> None:
    """Before a fork: waits for each live learner thread's update in progress and holds its
    lock, so that no update (no BLAS call) runs while the process forks (see the module
    docstring). A learner thread that forks itself holds its own lock already."""
    current = threading.current_thread()
    for thread in list(_LIVE):
        # (bounded: past it, the fork goes ahead, as it did before this hook)
        if (
            thread is not current
            and thread.is_alive()
            and thread.lock.acquire(timeout=STOP_TIMEOUT_S)
        ):
            _HELD_FOR_FORK.append(thread.lock)


def _release_learner_threads() -> None:
    """After a fork, in the parent and in the child: the locks `_hold_learner_threads` took."""
    while _HELD_FOR_FORK:
        _HELD_FOR_FORK.pop().release()


os.register_at_fork(
    before=_hold_learner_threads,
    after_in_parent=_release_learner_threads,
    after_in_child=_release_learner_threads,
)


class LearnerThread(threading.Thread):
    """Runs `update(batch)` on each batch `queue` hands out, until `stop()`; see the module
    docstring. `results` holds each update's statistics until the driver takes them
    (`take_results`)."""

    def __init__(self, update: Callable[[TrainBatch], dict], queue: BatchQueue | CircularBuffer):
        super().__init__(name="localrl-learner", daemon=True)
        self.update = update
        self.queue = queue
        #: Held during each update; the driver holds it to read or write the learner.
        self.lock = threading.RLock()
        #: Updates finished so far, and the seconds spent in them.
        self.num_updates = 0
        self.busy_s = 0.0
        #: The exception that ended the thread, if one did.
        self.error: BaseException | None = None
        self._results: list[dict] = []
        self._results_lock = threading.Lock()
        self._stopping = threading.Event()
        self._active = threading.Event()
        #: `snapshot`'s read left for the thread to run after its update in progress, and
        #: the (result, updates) it made; both under `_snapshot_lock`.
        self._snapshot_read: Callable[[], Any] | None = None
        self._snapshot: tuple[Any, int] | None = None
        self._snapshot_lock = threading.Lock()

    def start(self) -> None:
        _LIVE.add(self)  # (before it runs: a fork from now on waits for its updates)
        super().start()

    def run(self) -> None:
        held: TrainBatch | None = None  # taken while pausing: trained on after resume()
        while not self._stopping.is_set():
            if not self._active.wait(0.05):
                continue
            batch = held if held is not None else self.queue.get(timeout=0.05)
            held = None
            if batch is None:
                continue
            try:
                with self.lock:
                    if self._stopping.is_set():  # stop() came while waiting for the batch
                        return
                    if not self._active.is_set():  # pause() came while waiting for the batch
                        held = batch
                        continue
                    began = time.perf_counter()
                    results = self.update(batch)
                    self.busy_s += time.perf_counter() - began
                    self.num_updates += 1
                    with self._snapshot_lock:
                        read, self._snapshot_read = self._snapshot_read, None
                    if read is not None:  # (the driver's `snapshot`, asked during the update)
                        snapshot = (read(), self.num_updates)
                        with self._snapshot_lock:
                            self._snapshot = snapshot
                    # Still under `lock`: once pause() returns, the results of the update it
                    # waited for are there for the driver to take.
                    with self._results_lock:
                        self._results.append(results)
            except BaseException as error:  # kept for the driver, which raises it
                self.error = error
                return

    def snapshot(self, read: Callable[[], Any]) -> tuple[Any, int] | None:
        """`read()` of the learner between two updates, with the number of updates before
        it, without waiting for an update in progress (as `held()` does): made now when none
        is in progress; else the thread makes it right after that update, and a later call
        returns it (None until then). The driver's periodic weight broadcast: while it waited
        for an update (tens of ms), no EnvRunner reply was read and no request sent."""
        if self.lock.acquire(blocking=False):
            try:
                self._drop_snapshots()  # (what is asked or made already is older)
                return read(), self.num_updates
            finally:
                self.lock.release()
        with self._snapshot_lock:
            made, self._snapshot = self._snapshot, None
            if made is None:
                self._snapshot_read = read
            return made

    def _drop_snapshots(self) -> None:
        """Forgets the snapshot asked of the thread and the one it made (older than what the
        caller, holding `lock`, reads or writes now)."""
        with self._snapshot_lock:
            self._snapshot_read = self._snapshot = None

    def take_results(self) -> list[dict]:
        """The statistics of the updates finished since the last call, oldest first."""
        with self._results_lock:
            results, self._results = self._results, []
        return results

    def resume(self) -> None:
        """Lets the thread take batches and learn."""
        self._active.set()

    def pause(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Stops the thread taking batches; returns after its update in progress, whose
        results `take_results` then has. Raises `LearnerThreadTimeout` if that update has not
        ended within `timeout` seconds (the thread stays paused)."""
        self._active.clear()
        with self.held(timeout):
            pass

    @contextmanager
    def held(self, timeout: float = STOP_TIMEOUT_S) -> Iterator[None]:
        """Holds `lock` (the learner between two updates) for the `with` block; raises
        `LearnerThreadTimeout` if the update in progress has not ended within `timeout`
        seconds."""
        if not self.lock.acquire(timeout=timeout):
            raise LearnerThreadTimeout(
                f"the learner thread's update did not end within {timeout:.0f} s (an update "
                f"that hangs: {self.num_updates} update(s) finished before it)"
            )
        self._drop_snapshots()  # (the driver may change the learner)
        try:
            yield
        finally:
            self.lock.release()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> bool:
        """Ends the thread: no update starts after this call, which returns once the update
        in progress (if any) has ended, True; False, with a warning logged, if it has not
        within `timeout` seconds (the thread still ends after that update)."""
        self._stopping.set()
        if threading.current_thread() is self or not self.is_alive():
            return True
        self.join(timeout)
        if self.is_alive():
            logger.warning(
                "the learner thread's update did not end within %.0f s of stop(); the thread "
                "ends when it does",
                timeout,
            )
            return False
        return True
