"""numpy's BLAS thread pools, capped where many small products run (see `BlasThreads`), and
sized by measurement for a PPO update (see `AdaptiveBlasThreads`)."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

_Item = TypeVar("_Item")


@functools.cache
def _controller() -> Any:
    """threadpoolctl's view of the loaded BLAS libraries: made once (it scans them)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


#: The environment variables by which a user sizes numpy's BLAS pools (OpenBLAS reads all
#: three); one set explicitly is the user's choice and is left alone.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


#: The variable Ray sets in an actor that has none (`set_omp_num_threads_if_unset`).
RAY_THREAD_VAR = "OMP_NUM_THREADS"
#: Where Linux keeps the environment a process started with (os.environ's changes not in it).
_START_ENVIRONMENT = "/proc/self/environ"


def user_blas_settings() -> dict[str, str]:
    """The `BLAS_THREAD_VARS` the user set, with their values: all of them set in this process,
    except the `OMP_NUM_THREADS` that Ray gives an actor by default (`ray_thread_limit`)."""
    settings = {var: os.environ[var] for var in BLAS_THREAD_VARS if var in os.environ}
    if ray_thread_limit() is not None:
        del settings[RAY_THREAD_VAR]
    return settings


def user_sized_pools() -> bool:
    """Whether the user sized the BLAS pools (see `user_blas_settings`): they are then left as
    the user sized them."""
    return bool(user_blas_settings())


def ray_thread_limit() -> int | None:
    """The CPUs of this Ray actor, where Ray set its `OMP_NUM_THREADS` (None elsewhere, and
    where the user set the variable).

    Ray sets `OMP_NUM_THREADS` = the actor's CPUs in an actor started without it, in the
    actor's process, when the actor is created. That is Ray's default, not the user's sizing:
    treated as the user's, it left a Tune trial's pools at the trial's CPUs (its main process
    and its EnvRunner processes: 2 on a 2-core machine, one bundle), and a PPO update on two
    threads next to the trial's own processes took 6-12 times as long as in a plain process.
    It is the most threads the learner takes instead (the CPUs the actor holds); the pools are
    sized as in any process below that. A user's setting reaches the actor in its start
    environment (their shell's, through Ray's processes, or `runtime_env`'s `env_vars`):
    Linux's record of it (`/proc/self/environ`) tells them apart. Elsewhere the variable counts
    as the user's."""
    value = os.environ.get(RAY_THREAD_VAR)
    if value is None or not _in_ray_worker():
        return None
    start = _start_environment()
    if start is None or RAY_THREAD_VAR in start:
        return None
    try:
        return max(1, int(value))
    except ValueError:
        return None


def _in_ray_worker() -> bool:
    """Whether this process is a Ray worker (an actor's or a task's), without importing Ray:
    one that has not imported it is none. Read from Ray's own worker module, never through
    `ray`'s attributes: under the RLlib launcher `ray` is a stand-in whose unknown names raise."""
    worker_module = sys.modules.get("ray._private.worker")
    if worker_module is None or getattr(worker_module, "__localrl_shim__", False):
        return False
    worker = getattr(worker_module, "global_worker", None)
    mode = getattr(worker, "mode", None)
    return mode is not None and mode == getattr(worker_module, "WORKER_MODE", object())


def _start_environment() -> frozenset[str] | None:
    """The names of the environment variables this process started with (Linux), or None."""
    try:
        with open(_START_ENVIRONMENT, "rb") as environ:
            entries = environ.read().split(b"\0")
    except OSError:
        return None
    return frozenset(entry.split(b"=", 1)[0].decode(errors="replace") for entry in entries if entry)


class BlasThreads:
    """Runs numpy's products on one BLAS thread (a learner's updates, a module's weight
    initialisation), as RLlib's learner runs: Ray gives an actor
    `OMP_NUM_THREADS` = its CPUs (`set_omp_num_threads_if_unset`), one for the Algorithm whose
    local learner trains.

    Why not numpy's default pool (one thread per core): an update is thousands of small products
    (a minibatch of 64-128 rows through 256-wide layers), and OpenBLAS's threads meet after
    each one. When anything else runs on the machine, a descheduled pool thread holds up every
    product: a PPO update of 520 steps (30 epochs, minibatch 64, 256x256) took 4.9-15.4 s with
    numpy's 2 threads on 2 busy cores and 0.23-0.66 s with one. On an idle machine the second
    thread saved about a quarter of a 4000-step update (0.74x, `bench/threads.py`).

    A module's orthogonal initialisation is a QR decomposition per layer: with numpy's 2
    threads on a busy machine, building a PPO module took 0.2-0.4 s instead of a few ms.

    A user's explicit `OPENBLAS_NUM_THREADS` / `OMP_NUM_THREADS` / `MKL_NUM_THREADS` wins: the
    pools are then left as the user sized them (read when the object is made).
    """

    def __init__(self, num_threads: int = 1):
        self.num_threads = num_threads
        #: True when the user sized the pools (see `BLAS_THREAD_VARS`): they are left alone.
        self.user_sized = user_sized_pools()

    @contextmanager
    def __call__(self) -> Iterator[None]:
        """The BLAS pools capped at `num_threads` for the `with` block, then as they were."""
        if self.user_sized:
            yield
            return
        limiter = _controller().limit(limits=self.num_threads, user_api="blas")
        try:
            yield
        finally:
            limiter.restore_original_limits()


# -- updates side by side -------------------------------------------------------------------------
#: How many `one_thread_each` blocks are open (a thread's update inside one runs unpaced).
_side_by_side = 0
_side_by_side_lock = threading.Lock()


def free_cores() -> int:
    """The cores this process may run on (its CPU affinity), at most the CPUs of its Ray actor
    (`ray_thread_limit`)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # (not Linux)
        cores = os.cpu_count() or 1
    limit = ray_thread_limit()
    return min(cores, limit) if limit is not None else cores


@contextmanager
def one_thread_each() -> Iterator[None]:
    """numpy's BLAS pools on one thread for the block, for updates that run side by side on
    threads of their own, one core each (`MultiAgentLearner`): their `AdaptiveBlasThreads`
    leave the pools as they are (no probe of two threads, whose pools the other update would
    share). Pools the user sized (`user_sized_pools`) are left as the user sized them."""
    global _side_by_side
    with _side_by_side_lock:
        _side_by_side += 1
    try:
        with BlasThreads(1)():
            yield
    finally:
        with _side_by_side_lock:
            _side_by_side -= 1


# -- a PPO update's thread count, chosen by measurement ------------------------------------------
#: The most BLAS threads an update tries: a minibatch's products (128 rows through 256-wide
#: layers) gain from a second thread (1.7x on an idle machine) and little from more.
MAX_UPDATE_THREADS = 2
#: Ordinary steps between two probes of the other thread count: the first interval, and the
#: longest one that a probe losing again and again backs off to.
MIN_PROBE_INTERVAL = 8
MAX_PROBE_INTERVAL = 4096
#: Steps a probe runs. The first warms up (it may start the pool's threads, about 0.3 ms); each
#: of the others must win for the probe to win, since on a busy machine a pool of two has runs
#: of fast steps between its stalls. A probe ends at its first losing step (after the warm-up):
#: a losing probe of one thread where two are twice as fast costs two slow steps, not four.
PROBE_STEPS = 4
#: The other count is taken when its probe is this much faster than the current count's mean.
SWITCH_GAIN = 0.9
#: On more than one thread, a step this many times slower than one thread's mean means the pool
#: is waiting for a descheduled thread (the machine is busy): back to one thread at once.
STALL_FACTOR = 3.0
#: Weight of a new step in the current count's running mean.
MEAN_WEIGHT = 0.2


@dataclasses.dataclass(frozen=True)
class ThreadPolicy:
    """What the update's thread policy knows between two minibatch steps: the count ordinary
    steps run with, each count's seconds per row (a running mean for the current count, a probe's
    slowest judged step for the other), and the probe schedule."""

    threads: int = 1
    seconds_per_row: dict[int, float] = dataclasses.field(default_factory=dict)
    probe_interval: int = MIN_PROBE_INTERVAL
    steps_to_probe: int = MIN_PROBE_INTERVAL
    #: The count under probe (0: none), and the seconds per row its steps took so far.
    probing: int = 0
    probe_seconds: tuple[float, ...] = ()


def threads_for_next_step(policy: ThreadPolicy, ceiling: int) -> int:
    """The thread count of the next minibatch step: the probe's while one is under way, else the
    current one, never above `ceiling` (the pool's size when the update began)."""
    return min(policy.probing or policy.threads, ceiling)


def after_step(
    policy: ThreadPolicy, threads: int, seconds_per_row: float, ceiling: int
) -> ThreadPolicy:
    """The policy after a step that ran on `threads` and took `seconds_per_row`.

    One thread is the start and the fallback. Every `probe_interval` ordinary steps, the other
    count runs `PROBE_STEPS` steps; it is kept when every step after the first beats the current
    count's mean by `SWITCH_GAIN`, and ends at the first one that does not. A probe that loses
    doubles the interval (up to
    `MAX_PROBE_INTERVAL`), so a busy machine pays for a losing probe rarely; a switch resets it.
    On more than one thread, a step `STALL_FACTOR` times slower than one thread's mean goes back
    to one thread at once, with the next probe `MIN_PROBE_INTERVAL` steps away. A probe step
    that slow ends its probe.
    """
    if ceiling <= 1:
        return policy
    means = policy.seconds_per_row
    current = policy.threads
    if policy.probing and threads == policy.probing:
        probe_seconds = (*policy.probe_seconds, seconds_per_row)
        current_mean = means.get(current, float("inf"))
        stalled = seconds_per_row > STALL_FACTOR * current_mean
        lost = len(probe_seconds) > 1 and seconds_per_row >= SWITCH_GAIN * current_mean
        if len(probe_seconds) < PROBE_STEPS and not stalled and not lost:
            return dataclasses.replace(policy, probe_seconds=probe_seconds)
        slowest = max(probe_seconds[1:] or probe_seconds)
        means = {**means, threads: slowest}
        if slowest < SWITCH_GAIN * means.get(current, float("inf")):
            current, interval = threads, MIN_PROBE_INTERVAL
        else:
            interval = min(2 * policy.probe_interval, MAX_PROBE_INTERVAL)
        return ThreadPolicy(current, means, interval, interval)
    if threads != current:  # the ceiling held this step below the current count
        return policy
    previous = means.get(current)
    mean = (
        seconds_per_row
        if previous is None
        else previous + MEAN_WEIGHT * (seconds_per_row - previous)
    )
    means = {**means, current: mean}
    if current > 1 and seconds_per_row > STALL_FACTOR * means.get(1, float("inf")):
        # Back to one thread, and a probe soon: a stall may be a moment's load, and where the
        # load lasts, the probes that lose back off.
        return ThreadPolicy(1, means, MIN_PROBE_INTERVAL, MIN_PROBE_INTERVAL)
    steps_to_probe = policy.steps_to_probe - 1
    if steps_to_probe > 0:
        return dataclasses.replace(policy, seconds_per_row=means, steps_to_probe=steps_to_probe)
    other = 1 if current > 1 else min(MAX_UPDATE_THREADS, ceiling)
    return dataclasses.replace(
        policy, seconds_per_row=means, steps_to_probe=0, probing=other, probe_seconds=()
    )


class AdaptiveBlasThreads:
    """The BLAS thread count of a learner's updates, one or two, chosen by timing its minibatch
    steps (`after_step`).

    Two threads make an idle machine's PPO update of RLlib's 256x256 network about 1.25x faster
    (the products 1.7x). On a busy machine they make it many times slower (`BlasThreads`), and
    what else runs cannot be known in advance: the EnvRunners wait during a synchronous update,
    but a parallel evaluation round, another trial or another program may not. So the update
    measures: it starts on one thread, probes two now and then, keeps the faster, and drops back
    to one at the first stalled step.

    A seeded run's weights must not depend on what the timing chose (`seeded=True`). A
    product's result may depend on its thread count: OpenBLAS's kernels for AVX2 machines without
    AVX-512 (Haswell and Zen, numpy 2.4's OpenBLAS 0.3.31) sum a product's terms in another order
    on two threads (the last bits of most of a 128x256x256 product's entries), while its AVX-512
    kernels give the same bits. So a seeded run checks, once per minibatch size: the step's
    computation before the optimizer (`probe`, the gradient and the loss statistics) runs on one
    thread and on two, and only when the two agree bit for bit may that size's steps run on two
    (`thread_invariant`). Where they differ the run stays on one thread, the count every machine
    can give and the fallback on a busy one, and gives up the second thread's gain (about 1.2x
    on an idle machine). The rest of the update (the train batch's value estimates) runs on one
    thread in every run.

    The pools are never sized above what they were when the update began: a user's
    `OPENBLAS_NUM_THREADS` (see `BLAS_THREAD_VARS`) leaves them alone entirely, and a cap such
    as the one a parallel evaluation round sets keeps its effect.
    """

    def __init__(self, max_threads: int = MAX_UPDATE_THREADS, *, seeded: bool = False):
        """`seeded`: the run is seeded, so a step runs on more than one thread only where its
        results are the same bits on one (see the class docstring)."""
        self.max_threads = max_threads
        self.seeded = seeded
        #: A seeded run's verdict per minibatch size (rows): whether a step's probe gave the
        #: same bits on one thread and on two.
        self.thread_invariant: dict[int, bool] = {}
        self.user_sized = user_sized_pools()
        self.policy = ThreadPolicy()
        self._used_more = False
        #: Steps run at each thread count (what the tests and `bench/threads.py` read).
        self.steps_at: dict[int, int] = {}

    @contextmanager
    def __call__(self) -> Iterator[Callable[..., Iterator[Any]]]:
        """An update: yields `paced(items, rows, probe=None)`, which yields `items` with each
        step (the consumer's work between two items) run on the policy's thread count and timed;
        `rows` gives an item's row count, and `probe` what a seeded run compares (an item's step
        without its side effects, as bytes; without one a seeded run stays on one thread). The
        pools are sized as they were afterwards."""
        if self.user_sized or _side_by_side:
            yield _unpaced
            return
        pools = [pool for pool in _controller().lib_controllers if pool.user_api == "blas"]
        original = [pool.num_threads for pool in pools]
        ceiling = min([self.max_threads, *original, ray_thread_limit() or self.max_threads])
        self._used_more = False
        # The rest of the update (the train batch's value estimates over thousands of rows)
        # runs on one thread: a product's result may depend on its thread count, and those
        # products are not timed.
        for pool in pools:
            pool.set_num_threads(1)
        try:
            yield functools.partial(self._paced, pools, ceiling)
        finally:
            for pool, num_threads in zip(pools, original, strict=True):
                pool.set_num_threads(num_threads)
            if self._used_more:
                _end_spinning(pools)

    def _paced(
        self,
        pools: list[Any],
        ceiling: int,
        items: Iterable[_Item],
        rows: Callable[[_Item], int],
        probe: Callable[[_Item], bytes] | None = None,
    ) -> Iterator[_Item]:
        clock = time.perf_counter
        sized = 1
        for item in items:
            limit = ceiling
            if self.seeded and ceiling > 1:
                size = rows(item)
                if size not in self.thread_invariant:
                    self.thread_invariant[size] = self._same_bits(pools, ceiling, item, probe)
                    sized = 1
                if not self.thread_invariant[size]:
                    limit = 1
            threads = threads_for_next_step(self.policy, limit)
            if threads != sized:
                for pool in pools:
                    pool.set_num_threads(threads)
                sized = threads
                self._used_more |= threads > 1
            start = clock()
            yield item
            seconds = clock() - start
            self.steps_at[threads] = self.steps_at.get(threads, 0) + 1
            self.policy = after_step(self.policy, threads, seconds / max(1, rows(item)), limit)

    def _same_bits(
        self,
        pools: list[Any],
        ceiling: int,
        item: _Item,
        probe: Callable[[_Item], bytes] | None,
    ) -> bool:
        """Whether `probe(item)` gives the same bits on one thread and on `ceiling` (False
        without a probe); the pools are left on one thread."""
        if probe is None:
            return False
        results = []
        for threads in (ceiling, 1):
            for pool in pools:
                pool.set_num_threads(threads)
            results.append(probe(item))
        self._used_more = True
        return results[0] == results[1]


def _unpaced(
    items: Iterable[_Item],
    rows: Callable[[_Item], int],
    probe: Callable[[_Item], bytes] | None = None,
) -> Iterator[_Item]:
    """`AdaptiveBlasThreads`'s pacing where the user sized the pools: the items as they are."""
    return iter(items)


def _end_spinning(pools: list[Any]) -> None:
    """Puts an OpenBLAS pool's threads to rest now. After its last product a pool thread spins
    for about 0.1 s before it sleeps: a whole core, taken from the EnvRunners that sample right
    after the update (a Pendulum PPO iteration's sampling took 40 ms instead of 27). OpenBLAS
    starts them again at the next product on more than one thread (about 0.3 ms).

    Only while this is the process's one Python thread: OpenBLAS's shutdown must not meet a
    product that another thread is running."""
    if threading.active_count() != 1:
        return
    for pool in pools:
        if pool.internal_api != "openblas" or getattr(pool, "threading_layer", "") != "pthreads":
            continue
        shutdown = _openblas_shutdown(pool.filepath)
        if shutdown is not None:
            shutdown()


@functools.cache
def _openblas_shutdown(filepath: str) -> Callable[[], int] | None:
    import ctypes

    try:
        return ctypes.CDLL(filepath).blas_thread_shutdown_
    except (OSError, AttributeError):
        return None
