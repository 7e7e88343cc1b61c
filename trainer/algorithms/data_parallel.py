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
           learner r >= 1 (a worker): _Update(shard r, kwargs, seed) -> its update
           learner 0 (the algorithm's learner, in this process): its update on shard 0
             every gradient step: gradient <- the mean over the N learners
                                  (`trainer.core.allreduce`)
           results <- reduced over the learners (counts summed, the rest averaged)

Where the workers run:
- "processes" (the default): spawned processes of this machine (`_ProcessLink`, a pipe each),
  the all-reduce through shared memory (`SharedMemoryAllReduce`);
- "ray" (`env_runners(backend="ray")`, as the EnvRunners): Ray actors on any node of the
  cluster (`_RayLink`), asking for `num_cpus_per_learner`, `num_gpus_per_learner` and
  `custom_resources_per_learner` as RLlib's learner actors do, in a Tune trial's placement
  group where there is one; the all-reduce over TCP to this process (`TcpAllReduce`).
Both serve the same `_LearnerServer`, so everything below holds on either.

Learner 0 is the algorithm's own learner (`algo.learner`), in the main process; RLlib puts all
N in Ray actors and none in the driver. The difference is where, not what: N learners compute
on N shards either way, and everything the algorithm reads of its learner (the weights for the
EnvRunners, `get_state`, checkpoints, `learner_group`) is learner 0's, which equals every
replica after each update. A checkpoint holds that one learner state and restores with any N.

Failure states, each named:
- a worker that does not start (`LearnerWorkerError`, at build, every started worker ended);
- a worker whose update raises or that dies mid-update (its process ends, its actor is
  killed or its node lost; the all-reduce breaks for the others, at once where learner 0's
  watcher sees the death, else within `ALLREDUCE_TIMEOUT_S`): learner 0 takes back its state from before the update, every
  worker is replaced by a fresh one holding that state, and the update raises
  `LearnerWorkerError` naming the learner and its error (its type and message kept): nothing is
  half-trained;
- `stop()` ends every worker (a process asked first, then terminated, then killed; an actor
  killed; each wait bounded).
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
from trainer.core.allreduce import AllReduceError, SharedMemoryAllReduce, TcpAllReduce
from trainer.core.allreduce import attach as join_allreduce
from trainer.core.blas import BLAS_THREAD_VARS, user_sized_pools
from trainer.errors import RemoteError
from trainer.runners.ray_runner import (
    connect,
    death_reason,
    kill_actor,
    resources_hint,
    watched_actor_class,
)

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
            # (its rest keeps the step before it in its lookback: a recurrent module's state
            # before the rest is that step's state_out)
            pending[position] = episode.slice(slice(room, None), len_lookback_buffer=1)
    return shards


def shard_whole_episodes(episodes: list, num_shards: int) -> list[list]:
    """`num_shards` lists of whole episodes (for a loss that needs complete episodes, such as
    one on returns-to-go), each next episode, longest first, into the list with the fewest
    steps; with fewer episodes than shards, every shard holds all of them (the mean of equal
    gradients is the gradient)."""
    if len(episodes) < num_shards:
        return [list(episodes) for _ in range(num_shards)]
    shards: list[list] = [[] for _ in range(num_shards)]
    lengths = [0] * num_shards
    for episode in sorted(episodes, key=len, reverse=True):
        shortest = lengths.index(min(lengths))
        shards[shortest].append(episode)
        lengths[shortest] += len(episode)
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


def attach_allreduce(learner: Any, allreduce: SharedMemoryAllReduce | TcpAllReduce | None) -> None:
    """Gives every stepping learner of `learner` the all-reduce (None: steps alone again)."""
    for each in module_learners(learner):
        each.gradient_allreduce = allreduce


def _gradient_capacity(learner: Any) -> int:
    return max(
        each.gradient_size() for each in module_learners(learner) if hasattr(each, "gradient_size")
    )


# -- a worker ---------------------------------------------------------------------------------
class _LearnerServer:
    """A worker's learner, answering learner 0's messages (in a worker process, `_worker_main`,
    or in a Ray actor, `_LearnerActor`)."""

    def __init__(self) -> None:
        self.learner: Any = None
        self.allreduce: Any = None

    def start(self, payload: bytes) -> Any:
        """Builds the learner from an `_Init` (`payload`, cloudpickled) and joins the
        all-reduce: `_Done(pid)`, or `_Failed`."""
        try:
            init: _Init = cloudpickle.loads(payload)
            learner = init.algo_class.learner_for(init.config, init.spaces)
            call_build_hooks(learner)
            self.allreduce = join_allreduce(init.allreduce, init.rank)
            attach_allreduce(learner, self.allreduce)
            self.learner = learner
        except BaseException as error:  # noqa: BLE001 - reported to learner 0
            return _failed(error)
        return _Done(os.getpid())

    def answer(self, message: Any) -> Any:
        """`message`'s reply: `_Done(value)`, or `_Failed` (an update that fails aborts the
        all-reduce first, so that the others stop waiting for this learner's steps)."""
        learner = self.learner
        try:
            if isinstance(message, _SetState):
                learner.set_state(pickle.loads(message.state_blob))
                return _Done()
            if isinstance(message, _Update):
                return _Done(getattr(learner, message.method)(*message.args, **message.kwargs))
            if isinstance(message, _GetState):
                return _Done(pickle.dumps(learner.get_state()))
            if isinstance(message, _Apply):
                return _Done(cloudpickle.loads(message.func)(learner, **message.kwargs))
            raise TypeError(f"learner worker: unknown message {type(message).__name__}")
        except BaseException as error:  # noqa: BLE001 - reported to learner 0
            if isinstance(message, _Update) and self.allreduce is not None:
                self.allreduce.abort()
            return _failed(error)

    def close(self) -> None:
        if self.allreduce is not None:
            self.allreduce.close()
            self.allreduce = None


def _worker_main(conn: Any, payload: bytes) -> None:
    """A worker process: builds its learner (`_Init`), then answers messages until `_Stop` or
    until learner 0's process is gone."""
    server = _LearnerServer()
    reply = server.start(payload)
    conn.send(reply)
    if isinstance(reply, _Failed):
        return
    parent = os.getppid()
    try:
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
            conn.send(server.answer(message))
    finally:
        server.close()


class _LearnerActor:
    """A worker as a Ray actor: the same `_LearnerServer`; `watch` never returns, so that its
    failure says at once that the actor died (as `trainer.runners.ray_runner`'s actors)."""

    def __init__(self, payload: bytes) -> None:
        self._server = _LearnerServer()
        self._started = self._server.start(payload)

    def started(self) -> Any:
        return self._started

    def answer(self, message: Any) -> Any:
        return self._server.answer(message)

    def watch(self) -> None:
        threading.Event().wait()


# -- the link to a worker: a process and its pipe, or a Ray actor -----------------------------
class _Gone(Exception):
    """The worker is gone (its process ended, its actor died): `detail` says how."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class _ProcessLink:
    """A worker process of this machine (spawned) and its pipe."""

    def __init__(self, context: Any, payload: bytes, rank: int, num_learners: int) -> None:
        parent_conn, child_conn = context.Pipe()
        self.process = context.Process(
            target=_worker_main,
            args=(child_conn, payload),
            name=f"localrl-learner-{rank}",
            daemon=True,
        )
        with _main_module_hidden(), _worker_threads(num_learners):
            self.process.start()
        child_conn.close()
        self.conn = parent_conn
        self.where = f"pid {self.process.pid}"

    def send(self, message: Any) -> None:
        try:
            self.conn.send(message)
        except (OSError, ValueError) as error:
            self.process.join(STOP_TIMEOUT_S)
            raise _Gone(f"exit code {self.process.exitcode}") from error

    def poll(self, timeout_s: float) -> bool:
        try:
            return bool(self.conn.poll(timeout_s))
        except (EOFError, OSError):
            return True

    def receive(self) -> Any:
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self.process.join(STOP_TIMEOUT_S)
            raise _Gone(f"exit code {self.process.exitcode}") from None

    def dead(self) -> bool:
        return self.process.exitcode is not None

    def ask_to_stop(self) -> None:
        try:
            if self.process.is_alive():
                self.conn.send(_Stop())
        except (OSError, ValueError):
            pass

    def end(self) -> None:
        """Waits for the process to end (asked before), then terminates, then kills it."""
        self.process.join(STOP_TIMEOUT_S)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(STOP_TIMEOUT_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(STOP_TIMEOUT_S)
        self.conn.close()


class _RayLink:
    """A worker as a Ray actor, on any node of the cluster (`learner_actor_options`)."""

    def __init__(self, payload: bytes, options: dict) -> None:
        actor_class = watched_actor_class(_LearnerActor, "LearnerActor")
        self.actor = actor_class.options(**options).remote(payload)
        self._watch = self.actor.watch.remote()
        #: The calls sent and not yet read, oldest first.
        self._pending: list[Any] = [self.actor.started.remote()]
        self.where = "a Ray actor"
        self._killed = False

    def send(self, message: Any) -> None:
        if self._killed or self.dead():
            raise _Gone(self._death_text())
        self._pending.append(self.actor.answer.remote(message))

    def poll(self, timeout_s: float) -> bool:
        import ray

        ready, _ = ray.wait([self._pending[0], self._watch], num_returns=1, timeout=timeout_s)
        return bool(ready)

    def receive(self) -> Any:
        import ray
        from ray.exceptions import RayError

        ref = self._pending.pop(0)
        try:
            return ray.get(ref, timeout=STOP_TIMEOUT_S)
        except RayError:
            self._pending.clear()
            raise _Gone(self._death_text()) from None

    def dead(self) -> bool:
        import ray

        return self._killed or bool(ray.wait([self._watch], timeout=0)[0])

    def _death_text(self) -> str:
        import ray
        from ray.exceptions import RayError

        try:
            ray.get(self._watch, timeout=0)
        except RayError as error:
            return f"its Ray actor died: {death_reason(error)}"
        except Exception:  # noqa: BLE001 - not ended yet (GetTimeoutError)
            pass
        return "its Ray actor is gone"

    def ask_to_stop(self) -> None:
        pass  # (a Ray actor holds nothing to save: `end` kills it)

    def end(self) -> None:
        """Kills the actor and waits (bounded) until Ray has it dead, so that its resources are
        free for a replacement."""
        if not self._killed:
            self._killed = True
            kill_actor(self.actor, self._watch, STOP_TIMEOUT_S)


def learner_actor_options(config: Any) -> dict:
    """A learner actor's Ray options, as RLlib's: `num_cpus_per_learner` ("auto": 1 CPU
    without a GPU, else none), `num_gpus_per_learner`, `custom_resources_per_learner`; in a
    Ray Tune trial, in the trial's placement group (which reserved the learners' bundles)."""
    from ray.util import get_current_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    cpus = config.num_cpus_per_learner
    if cpus == "auto":
        cpus = 1 if not config.num_gpus_per_learner else 0
    options: dict[str, Any] = {
        "num_cpus": cpus,
        "num_gpus": config.num_gpus_per_learner or 0,
        "resources": dict(getattr(config, "custom_resources_per_learner", None) or {}),
        "max_restarts": 0,  # the group replaces a failed learner, with learner 0's state
    }
    group = get_current_placement_group()
    if group is not None:
        options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            group, placement_group_capture_child_tasks=True
        )
    return options


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
    link: _ProcessLink | _RayLink
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
        #: Where the workers run: "processes" (spawned, this machine) or "ray" (Ray actors,
        #: the EnvRunners' backend `env_runners(backend="ray")`).
        self.backend = "ray" if getattr(config, "backend", None) == "ray" else "processes"
        self._context = multiprocessing.get_context("spawn")
        self._actor_options: dict = {}
        if self.backend == "ray":
            connect(getattr(config, "ray_address", None))
            self._actor_options = learner_actor_options(config)
        self.workers: list[_Worker] = []
        self._allreduce: SharedMemoryAllReduce | TcpAllReduce | None = None
        self._stopped = False
        #: Whether the workers took learner 0's state in this iteration (`new_round`).
        self._round_synced = False
        #: One exchange with the workers at a time (IMPALA's learner thread updates while the
        #: main thread may ask for states or `foreach_learner`).
        self._exchange = threading.RLock()
        self._start_workers(self._state_blob())

    # -- starting and ending workers ----------------------------------------------------------
    def _start_workers(self, state_blob: bytes) -> None:
        """A fresh all-reduce and N - 1 fresh workers, each holding `state_blob`."""
        allreduce = self._new_allreduce()
        self._allreduce = allreduce
        attach_allreduce(self.learner, allreduce)
        workers: list[_Worker] = []
        self.workers = workers
        try:
            for rank in range(1, self.num_learners):
                payload = cloudpickle.dumps(
                    _Init(self.algo_class, self.config, self.spaces, rank, allreduce.handle)
                )
                link: _ProcessLink | _RayLink
                if self.backend == "ray":
                    link = _RayLink(payload, self._actor_options)
                else:
                    link = _ProcessLink(self._context, payload, rank, self.num_learners)
                workers.append(_Worker(rank, link))
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

    def _new_allreduce(self) -> SharedMemoryAllReduce | TcpAllReduce:
        """Shared memory for worker processes; TCP to this process for Ray actors (on any
        node: this node's address, as Ray knows it)."""
        capacity = _gradient_capacity(self.learner)
        if self.backend == "ray":
            import ray

            host = ray.util.get_node_ip_address()
            return TcpAllReduce.create(self.num_learners, capacity, ALLREDUCE_TIMEOUT_S, host)
        return SharedMemoryAllReduce.create(self.num_learners, capacity, ALLREDUCE_TIMEOUT_S)

    def _end_workers(self) -> None:
        """Ends every worker (processes: asked, then terminated, then killed; actors: killed;
        each wait bounded) and frees the all-reduce."""
        for worker in self.workers:
            worker.link.ask_to_stop()
        for worker in self.workers:
            worker.link.end()
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
            worker.link.send(message)
        except _Gone as gone:
            raise LearnerWorkerError(
                f"learner {worker.rank} ({self._where(worker)}) died before it could {doing} "
                f"({gone.detail})",
                rank=worker.rank,
                cause=gone,
            ) from None

    @staticmethod
    def _where(worker: _Worker) -> str:
        return f"pid {worker.pid}" if worker.pid else worker.link.where

    def _resources_hint(self, doing: str) -> str:
        """For a Ray actor that did not start: what it asked of the cluster and what the
        cluster has (an actor waiting for resources never starts, silently)."""
        if self.backend != "ray" or doing != "start":
            return ""
        hint = resources_hint(self._actor_options, "num_learners, num_cpus_per_learner")
        return f". {hint}" if hint else ""

    def _receive(self, worker: _Worker, timeout_s: float, doing: str) -> Any:
        """The worker's answer: its value, or LearnerWorkerError (its error, its death, or no
        answer within `timeout_s`)."""
        if not worker.link.poll(timeout_s):
            raise LearnerWorkerError(
                f"learner {worker.rank} ({self._where(worker)}) did not {doing} within "
                f"{timeout_s:g} s{self._resources_hint(doing)}",
                rank=worker.rank,
            )
        try:
            reply = worker.link.receive()
        except _Gone as gone:
            raise LearnerWorkerError(
                f"learner {worker.rank} ({self._where(worker)}) died while it was to {doing} "
                f"({gone.detail})",
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
                if any(worker.link.dead() for worker in self.workers):
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
