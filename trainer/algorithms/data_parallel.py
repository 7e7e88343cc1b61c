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
from typing import Any, cast

import cloudpickle
import numpy as np

from trainer.algorithms.learner_group import call_build_hooks
from trainer.algorithms.multi_agent_learner import episodes_by_module
from trainer.core.allreduce import AllReduceError, SharedMemoryAllReduce
from trainer.core.blas import BLAS_THREAD_VARS, user_sized_pools
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
    """A call of the learner's `method(*args, **kwargs)`: one update on this learner's shard."""

    method: str
    args: tuple
    kwargs: dict


@dataclass(frozen=True)
class _GetState:
    pass


@dataclass(frozen=True)
class _Apply:
    """`func(learner, **kwargs)` (`foreach_learner`); its value comes back."""

    func: bytes  # cloudpickled
    kwargs: dict


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
    averaged, per-row arrays joined in the shards' order, dicts reduced key by key, anything
    else learner 0's."""
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
    if all(isinstance(v, np.ndarray) and v.ndim >= 1 for v in values):
        return np.concatenate(values)  # per-row values (TD errors), in the shards' order
    if not all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
        return values[0]
    if key.startswith("num_"):
        return sum(values)
    mean = sum(float(v) for v in values) / len(values)
    return type(values[0])(mean) if isinstance(values[0], int) else mean


def shard_rows(batch: Any, num_shards: int) -> list[Any]:
    """A train batch of columns (arrays, or dicts of them) split into `num_shards` batches of
    consecutive rows, the first ones a row longer where they do not divide (RLlib's
    `ShardBatchIterator`)."""
    rows = _num_rows(batch)
    bounds = [rows * index // num_shards for index in range(num_shards + 1)]
    return [_rows(batch, bounds[i], bounds[i + 1]) for i in range(num_shards)]


def _num_rows(batch: Any) -> int:
    if isinstance(batch, dict):
        return _num_rows(next(iter(batch.values())))
    return len(batch)


def _rows(batch: Any, start: int, stop: int) -> Any:
    if isinstance(batch, dict):
        return {key: _rows(value, start, stop) for key, value in batch.items()}
    return batch[start:stop]


def module_learners(learner: Any) -> list[Any]:
    """The learners that step: a multi-agent learner's per module, else the learner itself."""
    nested = getattr(learner, "learners", None)
    return list(nested.values()) if isinstance(nested, dict) else [learner]


def attach_allreduce(learner: Any, allreduce: SharedMemoryAllReduce | None) -> None:
    """Gives every stepping learner of `learner` the all-reduce (None: steps alone again)."""
    for each in module_learners(learner):
        each.gradient_allreduce = allreduce


def _gradient_capacity(learner: Any) -> int:
    return max(
        each.gradient_size() for each in module_learners(learner) if hasattr(each, "gradient_size")
    )


# -- a worker ---------------------------------------------------------------------------------
def _worker_main(conn: Any, payload: bytes) -> None:
    """A worker process: builds its learner (`_Init`), then answers messages until `_Stop` or
    until learner 0's process is gone."""
    try:
        init: _Init = cloudpickle.loads(payload)
        learner = init.algo_class.learner_for(init.config, init.spaces)
        call_build_hooks(learner)
        allreduce = SharedMemoryAllReduce.attach(init.allreduce, init.rank)
        attach_allreduce(learner, allreduce)
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
                reply = _Done(getattr(learner, message.method)(*message.args, **message.kwargs))
            elif isinstance(message, _GetState):
                reply = _Done(pickle.dumps(learner.get_state()))
            elif isinstance(message, _Apply):
                reply = _Done(cloudpickle.loads(message.func)(learner, **message.kwargs))
            else:
                raise TypeError(f"learner worker: unknown message {type(message).__name__}")
        except BaseException as error:  # noqa: BLE001 - reported to learner 0
            if isinstance(message, _Update):  # the others stop waiting for this one's steps
                allreduce.abort()
            reply = _failed(error)
        conn.send(reply)


@contextlib.contextmanager
def _worker_threads(num_learners: int) -> Iterator[None]:
    """Starts a worker with BLAS and torch thread pools of the machine's cores over the
    learners (at least one), unless the user sized them (`BLAS_THREAD_VARS`): a worker's
    update would otherwise run numpy's pool of one thread per core beside the other learners,
    each slowing the others."""
    if user_sized_pools():
        yield
        return
    threads = str(max(1, (os.cpu_count() or 1) // num_learners))
    saved = {var: os.environ.get(var) for var in BLAS_THREAD_VARS}
    os.environ.update(dict.fromkeys(BLAS_THREAD_VARS, threads))
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


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
        #: Whether the workers took learner 0's state in this iteration (`new_round`).
        self._round_synced = False
        #: One exchange with the workers at a time (IMPALA's learner thread updates while the
        #: main thread may ask for states or `foreach_learner`).
        self._exchange = threading.RLock()
        self._start_workers(self._state_blob())

    # -- starting and ending workers ----------------------------------------------------------
    def _start_workers(self, state_blob: bytes) -> None:
        """A fresh all-reduce block and N - 1 fresh workers, each holding `state_blob`."""
        allreduce = SharedMemoryAllReduce.create(
            self.num_learners, _gradient_capacity(self.learner), ALLREDUCE_TIMEOUT_S
        )
        self._allreduce = allreduce
        attach_allreduce(self.learner, allreduce)
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
                with _main_module_hidden(), _worker_threads(self.num_learners):
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
        attach_allreduce(self.learner, None)
        if self._allreduce is not None:
            self._allreduce.close()
            self._allreduce = None

    def stop(self) -> None:
        """Ends every worker; learner 0 goes on as a single learner. Safe to call twice."""
        if not self._stopped:
            self._stopped = True
            with self._exchange:
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
        """One data-parallel update of an on-policy learner (PPO's) on `episodes`, each
        learner on its shard with the same number of minibatch steps (see the module
        docstring); a multi-agent learner's modules each on their own shards
        (`_module_calls`). Returns the learners' results reduced."""
        seed = int(self._seed_source().integers(2**63))
        if hasattr(self.learner, "learners"):
            calls = self._module_calls(episodes, seed, kwargs)
        else:
            shards = shard_episodes(episodes, self.num_learners)
            steps = sum(len(episode) for episode in episodes)
            total = self._minibatch_steps(self.config, steps, self.num_learners)
            calls = [
                (
                    "update",
                    (shards[rank],),
                    {
                        **kwargs,
                        "num_total_minibatches": total,
                        "minibatch_rng": _rank_rng(seed, rank),
                    },
                )
                for rank in range(self.num_learners)
            ]
        return self.run_calls(calls)

    def update_batch(self, batch: Any, *, module_id: Any = None, **kwargs: Any) -> Any:
        """One data-parallel update of an off-policy learner on a replayed `batch` of
        columns, each learner on its consecutive rows (`shard_rows`); the per-row TD errors
        come back joined in the batch's order.

        An off-policy iteration runs many short updates (one optimizer step each), so learner
        0's state is compared with the workers' once per iteration (`new_round`), not before
        each update, and not kept to take back: a failed one-step update leaves learner 0
        either before its step (the all-reduce failed) or after it (its mean applied),
        never between, and the fresh workers take that state.

        `module_id`: the update of that module's learner of a multi-agent learner."""
        shards = shard_rows(batch, self.num_learners)
        calls: list[tuple[str, tuple, dict]]
        if module_id is None:
            calls = [("update", (shard,), dict(kwargs)) for shard in shards]
        else:
            calls = [("update_module", (module_id, shard), dict(kwargs)) for shard in shards]
        results = self.run_calls(calls, check_state=not self._round_synced, take_back=False)
        self._round_synced = True
        return results

    def new_round(self) -> None:
        """A training iteration begins: its first off-policy update brings the workers to
        learner 0's state if it changed since (a restore, `set_weights`, a callback)."""
        self._round_synced = False

    def _module_calls(self, episodes: list, seed: int, kwargs: dict) -> list[tuple]:
        """Each rank's call of a multi-agent learner's `update_modules`: every trained module
        with steps in `episodes` gets its chunks sharded over the learners (a module with
        fewer steps than learners gives every learner all of them: the mean of equal
        gradients is the gradient), so that every learner steps every module as often."""
        by_module = episodes_by_module(episodes)
        shards: dict[Any, list[list]] = {}
        totals: dict[Any, int] = {}
        for module_id in self.learner.trained:
            chunks = by_module.get(module_id)
            if not chunks:
                continue
            steps = sum(len(chunk) for chunk in chunks)
            config = self.learner.learners[module_id].config
            if steps >= self.num_learners:
                shards[module_id] = shard_episodes(chunks, self.num_learners)
                totals[module_id] = self._minibatch_steps(config, steps, self.num_learners)
            else:
                shards[module_id] = [chunks] * self.num_learners
                totals[module_id] = self._minibatch_steps(config, steps, 1)
        return [
            (
                "update_modules",
                ({module_id: shards[module_id][rank] for module_id in shards},),
                {
                    **kwargs,
                    "num_total_minibatches": totals,
                    "minibatch_rng": {
                        module_id: _rank_rng(seed, rank, index)
                        for index, module_id in enumerate(shards)
                    },
                },
            )
            for rank in range(self.num_learners)
        ]

    @staticmethod
    def _minibatch_steps(config: Any, steps: int, num_shards: int) -> int:
        """RLlib's `num_total_minibatches` for `steps` over `num_shards` learners (one pass
        of whole-shard steps without a `minibatch_size`)."""
        minibatch_size = config.minibatch_size or max(steps // num_shards, 1)
        return max(1, num_total_minibatches(steps, num_shards, minibatch_size, config.num_epochs))

    def _seed_source(self) -> np.random.Generator:
        """Learner 0's generator that each update's minibatch draws are seeded from (a
        checkpointed one: the first module's, multi-agent)."""
        return cast(Any, module_learners(self.learner)[0]).rng

    def run_calls(
        self,
        calls: list[tuple[str, tuple, dict]],
        *,
        check_state: bool = True,
        take_back: bool = True,
    ) -> Any:
        """Learner r's `calls[r]` (a method's name, its arguments and keywords): learner 0's
        here, the others' in their workers; their results reduced (`reduce_results`).
        `check_state`: the workers take learner 0's state first where it changed;
        `take_back`: a failure restores learner 0's state from before the call. On any
        failure the workers are replaced (`_recover`)."""
        with self._exchange:
            return self._run_calls(calls, check_state=check_state, take_back=take_back)

    def _sync_workers(self, blob: bytes) -> None:
        """Workers whose state is not learner 0's (`blob`) take it."""
        digest = _digest(blob)
        stale = [worker for worker in self.workers if worker.digest != digest]
        for worker in stale:
            self._send(worker, _SetState(blob), "take learner 0's state")
        for worker in stale:
            self._receive(worker, RESULT_TIMEOUT_S, "take learner 0's state")
            worker.digest = digest

    def _run_calls(
        self, calls: list[tuple[str, tuple, dict]], *, check_state: bool, take_back: bool
    ) -> Any:
        if self._stopped:
            raise LearnerWorkerError("the data-parallel learners were stopped", rank=0)
        before = self._state_blob() if check_state or take_back else None
        try:
            if before is not None and check_state:
                self._sync_workers(before)
            for worker in self.workers:
                self._send(worker, _Update(*calls[worker.rank]), "update")
            method, args, kwargs = calls[0]
            try:
                with self._watching_workers():
                    own = getattr(self.learner, method)(*args, **kwargs)
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
            self._recover(before if take_back else None)
            raise
        if check_state:
            after = _digest(self._state_blob())
            for worker in self.workers:
                worker.digest = after
        return reduce_results(results)

    def restart(self, config: Any, spaces: Any) -> None:
        """New workers for a changed algorithm (a module added or removed): built from
        `config`, holding learner 0's state."""
        with self._exchange:
            self._restart(config, spaces)

    def _restart(self, config: Any, spaces: Any) -> None:
        self.config, self.spaces = config, spaces
        self._end_workers()
        self._round_synced = False
        self._start_workers(self._state_blob())

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

    def _recover(self, before: bytes | None) -> None:
        """After a failed update: learner 0 takes back its state from `before` (None: keeps
        the state it has), and every worker is replaced by a fresh one holding it."""
        if self._allreduce is not None:  # workers still in a step stop waiting for learner 0
            self._allreduce.abort()
        if before is not None:
            self.learner.set_state(pickle.loads(before))
        self._end_workers()
        self._round_synced = False
        if not self._stopped:
            self._start_workers(before if before is not None else self._state_blob())

    def replica_states(self) -> list[dict]:
        """Every learner's state, learner 0's first (the replicas must be equal)."""
        with self._exchange:
            states = [pickle.loads(self._state_blob())]
            for worker in self.workers:
                self._send(worker, _GetState(), "get its state")
            for worker in self.workers:
                blob = self._receive(worker, RESULT_TIMEOUT_S, "get its state")
                states.append(pickle.loads(blob))
            return states

    def foreach_learner(self, func: Any, **kwargs: Any) -> list:
        """RLlib's `LearnerGroup.foreach_learner`: `func(learner, **kwargs)` on every learner,
        learner 0's value first. The workers hold learner 0's state when `func` runs; what
        `func` changes on learner 0 reaches them before the next update (learner 0's state
        is the one that counts)."""
        with self._exchange:
            if self._stopped:
                raise LearnerWorkerError("the data-parallel learners were stopped", rank=0)
            self._sync_workers(self._state_blob())
            blob = cloudpickle.dumps(func)
            for worker in self.workers:
                self._send(worker, _Apply(blob, kwargs), "run foreach_learner's function")
            values = [func(self.learner, **kwargs)]
            for worker in self.workers:
                values.append(
                    self._receive(worker, RESULT_TIMEOUT_S, "run foreach_learner's function")
                )
                worker.digest = b""  # (it may have changed: learner 0's state goes again)
            return values


def _digest(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=16).digest()


def _rank_rng(seed: int, rank: int, module_index: int = 0) -> np.random.Generator:
    """Learner `rank`'s minibatch generator for one update (of its module `module_index`),
    from learner 0's draw."""
    return np.random.default_rng([seed, rank, module_index])


__all__ = [
    "DataParallelLearners",
    "LearnerWorkerError",
    "num_total_minibatches",
    "reduce_results",
    "shard_episodes",
]
