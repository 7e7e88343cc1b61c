"""Data-parallel learners: `learners(num_learners=N)`, N >= 2, as RLlib 2.60 means it. N
learners hold a replica each of the modules and train on a shard each of every train batch;
each gradient step applies the mean of their gradients, so the replicas never drift apart.

    Algorithm.training_step
      -> algo.update_learners(episodes, **kwargs)
      -> DataParallelLearners.update
           shards = shard_episodes(episodes, N)             (RLlib's ShardEpisodesIterator:
                                                            equal env steps, episodes sliced)
           num_total_minibatches = int(num_epochs * steps / (N * minibatch_size))
           seed  <- learner 0's own generator               (so a checkpoint resumes exactly)
           state <- learner 0's, to the others, when it changed since their last update (a
                    restore, set_weights, set_state)
           learner r >= 1 (a worker process): _Update(shard r, kwargs, seed) -> its update
           learner 0 (the algorithm's learner, in this process): its update on shard 0
             every gradient step: gradient <- the mean over the N learners
                                  (`trainer.core.allreduce.SharedMemoryAllReduce`)
           results <- reduced over the learners (counts summed, the rest averaged)

Learner 0 is the algorithm's own learner (`algo.learner`), in the main process; RLlib puts all
N in Ray actors and none in the driver. The difference is where, not what: N learners compute
on N shards either way, and everything the algorithm reads of its learner (the weights for the
EnvRunners, `get_state`, checkpoints, `learner_group`) is learner 0's, which equals every
replica after each update. A checkpoint holds that one learner state and restores with any N.

Failure states, each named:
- a worker that does not start (`LearnerWorkerError`, at build, every started worker ended);
- a worker whose update raises or that dies mid-update (the all-reduce breaks for the others
  within `ALLREDUCE_TIMEOUT_S`): learner 0 takes back its state from before the update, every
  worker is replaced by a fresh one holding that state, and the update raises
  `LearnerWorkerError` naming the learner and its error (its type and message kept): nothing is
  half-trained;
- `stop()` ends every worker (asked first, then terminated, then killed, each wait bounded).
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import pickle
import sys
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import cloudpickle
import numpy as np

from trainer.algorithms.learner_group import call_build_hooks
from trainer.core.allreduce import AllReduceError, SharedMemoryAllReduce
from trainer.errors import RemoteError

#: How long a learner waits at a gradient all-reduce for the others (a step of RLlib's
#: largest default networks takes seconds on a slow CPU; a dead learner is found by then).
ALLREDUCE_TIMEOUT_S = 120.0
#: How long a worker may take to start (spawn, imports, its learner built).
START_TIMEOUT_S = 180.0
#: How long a worker's update may take beyond learner 0's before it counts as hung.
RESULT_TIMEOUT_S = 600.0
#: How often learner 0 looks for a dead worker while it updates.
WATCH_INTERVAL_S = 0.2
#: How long `stop()` waits for each worker to end at each step (asked, terminated).
STOP_TIMEOUT_S = 5.0


class LearnerWorkerError(RemoteError):
    """A data-parallel learner's worker failed: it did not start, its update raised, or it
    died. `rank`: the learner's index; `cause`: its error (type and message kept)."""

    def __init__(self, message: str, *, rank: int, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.rank = rank
        self.cause = cause


# -- the messages between learner 0 and a worker --------------------------------------------
@dataclass(frozen=True)
class _Init:
    """A worker's start: it builds its learner as the algorithm built learner 0."""

    algo_class: Any
    config: Any
    spaces: Any
    rank: int
    allreduce: Any  # AllReduceHandle


@dataclass(frozen=True)
class _SetState:
    state_blob: bytes  # learner 0's `get_state()`, pickled


@dataclass(frozen=True)
class _Update:
    episodes: list
    kwargs: dict


@dataclass(frozen=True)
class _GetState:
    pass


@dataclass(frozen=True)
class _Stop:
    pass


@dataclass(frozen=True)
class _Done:
    value: Any = None


@dataclass(frozen=True)
class _Failed:
    error: bytes  # the exception, cloudpickled (its type kept where it pickles)
    text: str  # its traceback


# -- sharding ---------------------------------------------------------------------------------
def shard_episodes(episodes: list, num_shards: int) -> list[list]:
    """RLlib's `ShardEpisodesIterator`: `num_shards` lists of episodes with equal env steps
    (the first ones a step more where they do not divide), filled longest episode first into
    the shortest list; an episode that does not fit is sliced, its rest going on to the next."""
    pending = sorted(episodes, key=len, reverse=True)
    total = sum(len(episode) for episode in pending)
    targets = []
    remaining = total
    for index in range(num_shards):
        targets.append(remaining // (num_shards - index))
        remaining -= targets[-1]
    shards: list[list] = [[] for _ in range(num_shards)]
    lengths = [0] * num_shards
    position = 0
    while position < len(pending):
        episode = pending[position]
        shortest = lengths.index(min(lengths))
        room = targets[shortest] - lengths[shortest]
        if len(episode) <= room or room <= 0:
            shards[shortest].append(episode)
            lengths[shortest] += len(episode)
            position += 1
        else:
            shards[shortest].append(episode[:room])
            lengths[shortest] += room
            pending[position] = episode[room:]
    return shards


def num_total_minibatches(steps: int, num_shards: int, minibatch_size: int, num_epochs: int) -> int:
    """RLlib's: the minibatch steps every learner takes on its shard."""
    return int((num_epochs * steps) / (num_shards * minibatch_size))


def reduce_results(results: list[Any]) -> Any:
    """The learners' results as one: per key, counts (`num_...`) summed, other numbers
    averaged, dicts reduced key by key, anything else learner 0's."""
    first = results[0]
    if isinstance(first, dict):
        return {
            key: reduce_results([result.get(key, value) for result in results])
            if isinstance(value, dict)
            else _reduce_value(key, [result.get(key, value) for result in results])
            for key, value in first.items()
        }
    return first


def _reduce_value(key: str, values: list[Any]) -> Any:
    if not all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
        return values[0]
    if key.startswith("num_"):
        return sum(values)
    mean = sum(float(v) for v in values) / len(values)
    return type(values[0])(mean) if isinstance(values[0], int) else mean


# -- a worker ---------------------------------------------------------------------------------
def _worker_main(conn: Any, payload: bytes) -> None:
    """A worker process: builds its learner (`_Init`), then answers messages until `_Stop` or
    until learner 0's process is gone."""
    try:
        init: _Init = cloudpickle.loads(payload)
        learner = init.algo_class.learner_for(init.config, init.spaces)
        call_build_hooks(learner)
        learner.gradient_allreduce = SharedMemoryAllReduce.attach(init.allreduce, init.rank)
    except BaseException as error:  # noqa: BLE001 - reported to learner 0, then this ends
        conn.send(_failed(error))
        return
    conn.send(_Done(os.getpid()))
    parent = os.getppid()
    while True:
        if not conn.poll(1.0):
            if os.getppid() != parent:  # learner 0's process is gone: nothing to serve
                return
            continue
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if isinstance(message, _Stop):
            conn.send(_Done())
            return
        try:
            if isinstance(message, _SetState):
                learner.set_state(pickle.loads(message.state_blob))
                reply: Any = _Done()
            elif isinstance(message, _Update):
                reply = _Done(learner.update(message.episodes, **message.kwargs))
            elif isinstance(message, _GetState):
                reply = _Done(pickle.dumps(learner.get_state()))
            else:
                raise TypeError(f"learner worker: unknown message {type(message).__name__}")
        except BaseException as error:  # noqa: BLE001 - reported to learner 0
            if isinstance(message, _Update):  # the others stop waiting for this one's steps
                learner.gradient_allreduce.abort()
            reply = _failed(error)
        conn.send(reply)


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Starts a spawned worker without running the user's script again: multiprocessing's
    spawn imports the parent's `__main__` (by its path or module name) in the child, which
    runs a script that has no `if __name__ == "__main__":` guard (most RLlib scripts). The
    worker needs nothing of it: what it builds travels in its `_Init`, by value."""
    main = sys.modules.get("__main__")
    saved: dict[str, Any] = {
        name: main.__dict__[name]
        for name in ("__file__", "__spec__")
        if main and name in main.__dict__
    }
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__dict__["__spec__"] = None
        yield
    finally:
        if main is not None:
            main.__dict__.update(saved)
            if "__spec__" not in saved:
                main.__dict__.pop("__spec__", None)


def _failed(error: BaseException) -> _Failed:
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        blob = cloudpickle.dumps(error)
        pickle.loads(blob)
    except Exception:
        blob = cloudpickle.dumps(RuntimeError(f"{type(error).__name__}: {error}"))
    return _Failed(blob, text)


@dataclass
class _Worker:
    rank: int
    process: Any
    conn: Any
    pid: int = 0
    #: The digest of the learner state it holds (learner 0's, as last sent or updated).
    digest: bytes = field(default=b"")


# -- the group --------------------------------------------------------------------------------
class DataParallelLearners:
    """N data-parallel learners: the algorithm's learner (learner 0) and N - 1 worker processes
    (see the module docstring)."""

    def __init__(self, algo_class: Any, config: Any, spaces: Any, learner: Any) -> None:
        self.algo_class = algo_class
        self.config = config
        self.spaces = spaces
        #: Learner 0: the algorithm's learner, in this process.
        self.learner = learner
        self.num_learners = int(config.num_learners)
        self._context = multiprocessing.get_context("spawn")
        self.workers: list[_Worker] = []
        self._allreduce: SharedMemoryAllReduce | None = None
        self._stopped = False
        self._start_workers(self._state_blob())

    # -- starting and ending workers ----------------------------------------------------------
    def _start_workers(self, state_blob: bytes) -> None:
        """A fresh all-reduce block and N - 1 fresh workers, each holding `state_blob`."""
        allreduce = SharedMemoryAllReduce.create(
            self.num_learners, self.learner.gradient_size(), ALLREDUCE_TIMEOUT_S
        )
        self._allreduce = allreduce
        self.learner.gradient_allreduce = allreduce
        workers: list[_Worker] = []
        self.workers = workers
        try:
            for rank in range(1, self.num_learners):
                payload = cloudpickle.dumps(
                    _Init(self.algo_class, self.config, self.spaces, rank, allreduce.handle)
                )
                parent_conn, child_conn = self._context.Pipe()
                process = self._context.Process(
                    target=_worker_main,
                    args=(child_conn, payload),
                    name=f"localrl-learner-{rank}",
                    daemon=True,
                )
                with _main_module_hidden():
                    process.start()
                child_conn.close()
                workers.append(_Worker(rank, process, parent_conn))
            for worker in workers:
                worker.pid = self._receive(worker, START_TIMEOUT_S, "start")
            digest = _digest(state_blob)
            for worker in workers:
                self._send(worker, _SetState(state_blob), "take learner 0's state")
            for worker in workers:
                self._receive(worker, START_TIMEOUT_S, "take learner 0's state")
                worker.digest = digest
        except BaseException:
            self._end_workers()
            raise

    def _end_workers(self) -> None:
        """Ends every worker (asked, then terminated, then killed; each wait bounded) and frees
        the all-reduce block."""
        for worker in self.workers:
            try:
                if worker.process.is_alive():
                    worker.conn.send(_Stop())
            except (OSError, ValueError):
                pass
        for worker in self.workers:
            worker.process.join(STOP_TIMEOUT_S)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(STOP_TIMEOUT_S)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(STOP_TIMEOUT_S)
            worker.conn.close()
        self.workers = []
        self.learner.gradient_allreduce = None
        if self._allreduce is not None:
            self._allreduce.close()
            self._allreduce = None

    def stop(self) -> None:
        """Ends every worker; learner 0 goes on as a single learner. Safe to call twice."""
        if not self._stopped:
            self._stopped = True
            self._end_workers()

    # -- talking to a worker ------------------------------------------------------------------
    def _send(self, worker: _Worker, message: Any, doing: str) -> None:
        """Sends `message`; LearnerWorkerError where the worker is gone."""
        try:
            worker.conn.send(message)
        except (OSError, ValueError) as error:
            worker.process.join(STOP_TIMEOUT_S)
            raise LearnerWorkerError(
                f"learner {worker.rank} (pid {worker.pid or worker.process.pid}) died before it "
                f"could {doing} (exit code {worker.process.exitcode})",
                rank=worker.rank,
                cause=error,
            ) from error

    def _receive(self, worker: _Worker, timeout_s: float, doing: str) -> Any:
        """The worker's answer: its value, or LearnerWorkerError (its error, its death, or no
        answer within `timeout_s`)."""
        try:
            ready = worker.conn.poll(timeout_s)
        except (EOFError, OSError):
            ready = True
        if not ready:
            raise LearnerWorkerError(
                f"learner {worker.rank} (pid {worker.pid or worker.process.pid}) did not "
                f"{doing} within {timeout_s:g} s",
                rank=worker.rank,
            )
        try:
            reply = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(STOP_TIMEOUT_S)
            raise LearnerWorkerError(
                f"learner {worker.rank} (pid {worker.pid or worker.process.pid}) died while it "
                f"was to {doing} (exit code {worker.process.exitcode})",
                rank=worker.rank,
            ) from None
        if isinstance(reply, _Failed):
            cause = cloudpickle.loads(reply.error)
            raise LearnerWorkerError(
                f"learner {worker.rank} failed to {doing}: {type(cause).__name__}: {cause}\n"
                f"{reply.text}",
                rank=worker.rank,
                cause=cause,
            ) from cause
        return reply.value

    # -- the update ---------------------------------------------------------------------------
    def _state_blob(self) -> bytes:
        return pickle.dumps(self.learner.get_state(), protocol=pickle.HIGHEST_PROTOCOL)

    def update(self, episodes: list, **kwargs: Any) -> Any:
        """One data-parallel update on `episodes` (see the module docstring); returns the
        learners' results reduced."""
        if self._stopped:
            raise LearnerWorkerError("the data-parallel learners were stopped", rank=0)
        config = self.config
        shards = shard_episodes(episodes, self.num_learners)
        steps = sum(len(episode) for episode in episodes)
        minibatch_size = config.minibatch_size or max(steps // self.num_learners, 1)
        kwargs["num_total_minibatches"] = max(
            1, num_total_minibatches(steps, self.num_learners, minibatch_size, config.num_epochs)
        )
        before = self._state_blob()  # learner 0 as it is: to send, and to take back on failure
        digest = _digest(before)
        seed = int(self.learner.rng.integers(2**63))
        try:
            for worker in self.workers:
                if worker.digest != digest:
                    self._send(worker, _SetState(before), "take learner 0's state")
            for worker in self.workers:
                if worker.digest != digest:
                    self._receive(worker, RESULT_TIMEOUT_S, "take learner 0's state")
                    worker.digest = digest
                update = _Update(
                    shards[worker.rank], {**kwargs, "minibatch_rng": _rank_rng(seed, worker.rank)}
                )
                self._send(worker, update, "update")
            try:
                with self._watching_workers():
                    own = self.learner.update(shards[0], **kwargs, minibatch_rng=_rank_rng(seed, 0))
            except AllReduceError:
                own = None  # a worker failed: its own error says why (below)
            results = [own]
            for worker in self.workers:
                results.append(self._receive(worker, RESULT_TIMEOUT_S, "update"))
            if own is None:
                raise LearnerWorkerError(
                    "learner 0's gradient all-reduce broke, though every worker answered",
                    rank=0,
                )
        except BaseException:
            self._recover(before)
            raise
        after = _digest(self._state_blob())
        for worker in self.workers:
            worker.digest = after
        return reduce_results(results)

    @contextlib.contextmanager
    def _watching_workers(self) -> Iterator[None]:
        """While learner 0 updates: a thread that breaks the all-reduce as soon as a worker
        process has ended, so that learner 0 does not wait out the timeout for a dead one."""
        done = threading.Event()
        allreduce = self._allreduce

        def watch() -> None:
            while not done.wait(WATCH_INTERVAL_S):
                if any(worker.process.exitcode is not None for worker in self.workers):
                    if allreduce is not None:
                        allreduce.abort()
                    return

        watcher = threading.Thread(target=watch, name="localrl-learner-watch", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()

    def _recover(self, before: bytes) -> None:
        """After a failed update: learner 0 takes back its state from before it, and every
        worker is replaced by a fresh one holding that state."""
        if self._allreduce is not None:  # workers still in a step stop waiting for learner 0
            self._allreduce.abort()
        self.learner.set_state(pickle.loads(before))
        self._end_workers()
        if not self._stopped:
            self._start_workers(before)

    def replica_states(self) -> list[dict]:
        """Every learner's state, learner 0's first (the replicas must be equal)."""
        states = [pickle.loads(self._state_blob())]
        for worker in self.workers:
            self._send(worker, _GetState(), "get its state")
        for worker in self.workers:
            states.append(pickle.loads(self._receive(worker, RESULT_TIMEOUT_S, "get its state")))
        return states


def _digest(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=16).digest()


def _rank_rng(seed: int, rank: int) -> np.random.Generator:
    """Learner `rank`'s minibatch generator for one update (from learner 0's draw)."""
    return np.random.default_rng([seed, rank])


__all__ = [
    "DataParallelLearners",
    "LearnerWorkerError",
    "num_total_minibatches",
    "reduce_results",
    "shard_episodes",
]
