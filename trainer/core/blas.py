"""numpy's BLAS thread pools, capped where many small products run (see `BlasThreads`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@functools.cache
def _controller() -> Any:
    """threadpoolctl's view of the loaded BLAS libraries: made once (it scans them)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


#: The environment variables by which a user sizes numpy's BLAS pools (OpenBLAS reads all
#: three); one set explicitly is the user's choice and is left alone.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


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
        self.user_sized = any(var in os.environ for var in BLAS_THREAD_VARS)

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
