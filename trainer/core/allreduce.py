"""The gradient all-reduce of data-parallel learners on one machine: N processes, one shared
memory block, no locks.

    the block:  aborted (1 int) | written[N] | read[N] (ints: each rank's last step) |
                slots[N, capacity] (float64)

    rank r, its step s (every rank makes the same calls, in the same order):
      wait until read[q] >= s - 1 for every rank q   (all have read step s - 1's slots)
      slot r <- its vector;  written[r] <- s
      wait until written[q] >= s for every rank q
      mean = (slot 0 + slot 1 + ... + slot N-1) / N, summed in rank order
      read[r] <- s

Each rank writes only its own slot and counters, so a rank that dies holds nothing the others
need to take back (a lock held by a killed process would stay held: multiprocessing's
barriers are not used for that reason). Every rank sums the same numbers in the same order, so
every rank gets the same bits: replicas that start equal and apply the same mean stay equal.

A rank that does not arrive within `timeout_s`, or any rank calling `abort()` (a learner whose
update failed, or learner 0 on finding a worker dead), makes every waiting rank raise
`AllReduceError`; the block is then of no further use (`broken`).

Rank 0 makes the block (`SharedMemoryAllReduce.create`), owns it and unlinks it at `close()`;
the other ranks attach to it by name (`attach`, with the `AllReduceHandle`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

#: Busy polls before a waiting rank starts to sleep between polls (a step's gradients arrive
#: within microseconds of each other when the learners are in step).
_SPIN_POLLS = 2000
#: The sleep between polls after that.
_POLL_SLEEP_S = 50e-6


class AllReduceError(RuntimeError):
    """A rank did not reach an all-reduce within its timeout, or the all-reduce was aborted (a
    rank failed or died): the step's mean was not computed and the block is broken."""


@dataclass(frozen=True)
class AllReduceHandle:
    """What a rank needs to attach: the block's name and shape, and the wait's bound."""

    name: str
    num_ranks: int
    capacity: int
    timeout_s: float


class SharedMemoryAllReduce:
    """The mean of one float64 vector per rank, on every rank (see the module docstring)."""

    def __init__(
        self, memory: shared_memory.SharedMemory, handle: AllReduceHandle, rank: int, owner: bool
    ) -> None:
        self._memory = memory
        self.handle = handle
        self.rank = rank
        self._owner = owner
        ranks = handle.num_ranks
        counters = np.ndarray((1 + 2 * ranks,), dtype=np.int64, buffer=memory.buf)
        self._aborted = counters[:1]
        self._written = counters[1 : 1 + ranks]
        self._read = counters[1 + ranks :]
        self._slots = np.ndarray(
            (ranks, handle.capacity),
            dtype=np.float64,
            buffer=memory.buf,
            offset=8 * (1 + 2 * ranks),
        )
        #: This rank's calls of `mean` so far.
        self._step = 0

    @classmethod
    def create(cls, num_ranks: int, capacity: int, timeout_s: float) -> SharedMemoryAllReduce:
        """Rank 0's block for `num_ranks` vectors of up to `capacity` numbers."""
        if num_ranks < 1 or capacity < 1:
            raise ValueError(f"all-reduce of {num_ranks} ranks x {capacity} numbers")
        memory = shared_memory.SharedMemory(
            create=True, size=8 * (1 + 2 * num_ranks + num_ranks * capacity)
        )
        np.ndarray((1 + 2 * num_ranks,), dtype=np.int64, buffer=memory.buf)[:] = 0
        handle = AllReduceHandle(memory.name, num_ranks, capacity, timeout_s)
        return cls(memory, handle, 0, owner=True)

    @classmethod
    def attach(cls, handle: AllReduceHandle, rank: int) -> SharedMemoryAllReduce:
        """Rank `rank`'s view of the block rank 0 made. (Its processes share rank 0's resource
        tracker, where rank 0 registered the block: rank 0 unlinks it once, at `close()`.)"""
        return cls(shared_memory.SharedMemory(name=handle.name), handle, rank, owner=False)

    @property
    def broken(self) -> bool:
        return bool(self._aborted[0])

    def mean(self, vector: np.ndarray) -> np.ndarray:
        """The mean over the ranks of each rank's `vector` (at most `capacity` numbers; every
        rank gives the same length), as float64. Raises AllReduceError when a rank does not
        arrive within the timeout, or the all-reduce is aborted."""
        size = vector.shape[0]
        if size > self.handle.capacity:
            raise ValueError(
                f"all-reduce of {size} numbers: the block holds {self.handle.capacity}"
            )
        step = self._step + 1
        deadline = time.monotonic() + self.handle.timeout_s
        self._wait_for(self._read, step - 1, deadline, "read the last step's gradients")
        self._slots[self.rank, :size] = vector
        self._written[self.rank] = step
        self._wait_for(self._written, step, deadline, "reach the gradient all-reduce")
        total = self._slots[0, :size].copy()
        for rank in range(1, self.handle.num_ranks):
            total += self._slots[rank, :size]
        self._read[self.rank] = step
        self._step = step
        return total / self.handle.num_ranks

    def _wait_for(self, counters: np.ndarray, step: int, deadline: float, doing: str) -> None:
        polls = 0
        while True:
            if self._aborted[0]:
                raise AllReduceError(
                    f"learner {self.rank}: the gradient all-reduce was aborted (a learner "
                    "failed or died)"
                )
            if counters.min() >= step:
                return
            polls += 1
            if polls > _SPIN_POLLS:
                if time.monotonic() > deadline:
                    self.abort()
                    raise AllReduceError(
                        f"learner {self.rank}: another learner did not {doing} within "
                        f"{self.handle.timeout_s:g} s (it died, hung or failed)"
                    )
                time.sleep(_POLL_SLEEP_S)

    def abort(self) -> None:
        """Every rank waiting, or about to wait, raises AllReduceError (a rank failed or died:
        no mean can be computed)."""
        self._aborted[0] = 1

    def close(self) -> None:
        """Detaches; rank 0 also frees the block."""
        del self._aborted, self._written, self._read, self._slots
        self._memory.close()
        if self._owner:
            try:
                self._memory.unlink()
            except FileNotFoundError:
                pass


__all__ = ["AllReduceError", "AllReduceHandle", "SharedMemoryAllReduce"]
