"""The gradient all-reduce of data-parallel learners: on one machine N processes, one shared
memory block, no locks (`SharedMemoryAllReduce`); across machines, TCP connections to rank 0
(`TcpAllReduce`, further down).

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

import contextlib
import secrets
import socket
import struct
import time
from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import Any

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


# -- across machines ---------------------------------------------------------------------------
@dataclass(frozen=True)
class TcpAllReduceHandle:
    """What a rank needs to connect to rank 0: its address, the group's secret token (a
    connection that does not present it is closed), the shape and the wait's bound."""

    host: str
    port: int
    token: bytes
    num_ranks: int
    capacity: int
    timeout_s: float


#: A step's frame: its number and the vector's length (little-endian int64s), then the numbers.
_FRAME = struct.Struct("<qq")
#: A connecting rank's first words: the token (16 bytes), then its rank (int64).
_HELLO = struct.Struct("<16sq")


class TcpAllReduce:
    """The mean of one float64 vector per rank, on every rank, over TCP: the all-reduce of
    learners on several machines (Ray actors), with `SharedMemoryAllReduce`'s calls.

        rank r >= 1, its step s:  -> rank 0: (s, size) + its vector
                                  <- rank 0: (s, size) + the mean
        rank 0, its step s:       its vector, plus rank 1's, ..., plus rank N-1's, in rank
                                  order; / N; the same bytes to every rank

    Rank 0 computes the mean once and sends its bytes, so every rank gets the same bits (as
    with shared memory, where every rank sums in the same order). Rank 0 listens; the others
    connect when they attach and present the token, and rank 0 takes their connections at its
    first step.

    Failure states: a rank that does not arrive within `timeout_s` (its peers raise
    AllReduceError); a connection that ends (a rank died or aborted): rank 0 raises and closes
    every connection, so every rank waiting raises; `abort()` from any thread closes this
    rank's connections, waking its own blocked wait. After any of them the all-reduce is
    `broken`.
    """

    def __init__(self, handle: TcpAllReduceHandle, rank: int) -> None:
        self.handle = handle
        self.rank = rank
        self._listener: socket.socket | None = None
        #: Rank 0: each other rank's connection, by rank; rank r: its one to rank 0, as [0].
        self._peers: dict[int, socket.socket] = {}
        self._aborted = False
        self._step = 0

    @classmethod
    def create(
        cls, num_ranks: int, capacity: int, timeout_s: float, host: str = "127.0.0.1"
    ) -> TcpAllReduce:
        """Rank 0's all-reduce, listening on `host` (an address the other ranks reach)."""
        if num_ranks < 1 or capacity < 1:
            raise ValueError(f"all-reduce of {num_ranks} ranks x {capacity} numbers")
        listener = socket.create_server((host, 0), backlog=max(num_ranks, 8))
        port = listener.getsockname()[1]
        handle = TcpAllReduceHandle(
            host, port, secrets.token_bytes(16), num_ranks, capacity, timeout_s
        )
        allreduce = cls(handle, 0)
        allreduce._listener = listener
        return allreduce

    @classmethod
    def attach(cls, handle: TcpAllReduceHandle, rank: int) -> TcpAllReduce:
        """Rank `rank`'s end: connected to rank 0, token and rank presented."""
        connection = socket.create_connection((handle.host, handle.port), timeout=handle.timeout_s)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.sendall(_HELLO.pack(handle.token, rank))
        allreduce = cls(handle, rank)
        allreduce._peers[0] = connection
        return allreduce

    @property
    def broken(self) -> bool:
        return self._aborted

    def mean(self, vector: np.ndarray) -> np.ndarray:
        """The mean over the ranks of each rank's `vector` (see the class docstring)."""
        size = vector.shape[0]
        if size > self.handle.capacity:
            raise ValueError(
                f"all-reduce of {size} numbers: the block holds {self.handle.capacity}"
            )
        deadline = time.monotonic() + self.handle.timeout_s
        step = self._step + 1
        try:
            if self._aborted:
                raise OSError("aborted")
            vector = np.ascontiguousarray(vector, dtype=np.float64)
            if self.rank == 0:
                mean = self._reduce(vector, step, deadline)
            else:
                connection = self._peers[0]
                connection.sendall(_FRAME.pack(step, size) + vector.tobytes())
                mean = self._receive(connection, step, size, deadline)
        except TimeoutError:
            self.abort()
            raise AllReduceError(
                f"learner {self.rank}: another learner did not reach the gradient all-reduce "
                f"within {self.handle.timeout_s:g} s (it died, hung or failed)"
            ) from None
        except (OSError, EOFError, ValueError) as error:
            self.abort()
            raise AllReduceError(
                f"learner {self.rank}: the gradient all-reduce was aborted (a learner failed "
                f"or died: {error})"
            ) from None
        self._step = step
        return mean

    def _reduce(self, vector: np.ndarray, step: int, deadline: float) -> np.ndarray:
        if len(self._peers) < self.handle.num_ranks - 1:
            self._accept(deadline)
        total = vector.copy()
        for rank in range(1, self.handle.num_ranks):
            total += self._receive(self._peers[rank], step, vector.shape[0], deadline)
        mean = total / self.handle.num_ranks
        frame = _FRAME.pack(step, mean.shape[0]) + mean.tobytes()
        for rank in range(1, self.handle.num_ranks):
            self._peers[rank].sendall(frame)
        return mean

    def _accept(self, deadline: float) -> None:
        """Rank 0 takes the other ranks' connections (a connection without the token, or
        naming a rank that is not expected, is closed)."""
        listener = self._listener
        if listener is None:
            raise OSError("the all-reduce's listener is closed")
        while len(self._peers) < self.handle.num_ranks - 1:
            listener.settimeout(max(deadline - time.monotonic(), 1e-3))
            connection, _ = listener.accept()
            try:
                # (a silent connection is given up on soon: it holds no rank's place)
                connection.settimeout(min(max(deadline - time.monotonic(), 1e-3), 2.0))
                token, rank = _HELLO.unpack(_read_exactly(connection, _HELLO.size))
            except (OSError, EOFError, struct.error):
                connection.close()
                continue
            if (
                token != self.handle.token
                or not 0 < rank < self.handle.num_ranks
                or rank in self._peers
            ):
                connection.close()
                continue
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._peers[rank] = connection

    def _receive(
        self, connection: socket.socket, step: int, size: int, deadline: float
    ) -> np.ndarray:
        connection.settimeout(max(deadline - time.monotonic(), 1e-3))
        got_step, got_size = _FRAME.unpack(_read_exactly(connection, _FRAME.size))
        if (got_step, got_size) != (step, size):
            raise ValueError(
                f"a learner sent step {got_step} of {got_size} numbers, not step {step} of {size}"
            )
        return np.frombuffer(_read_exactly(connection, 8 * size), dtype=np.float64).copy()

    def abort(self) -> None:
        """This rank's connections end: its own wait (in any thread) and every rank waiting on
        it raise AllReduceError."""
        self._aborted = True
        sockets = list(self._peers.values())
        if self._listener is not None:
            sockets.append(self._listener)  # (wakes rank 0 waiting for a connection)
        for each in sockets:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Closes every connection and rank 0's listener."""
        self._aborted = True
        for connection in list(self._peers.values()):
            with contextlib.suppress(OSError):
                connection.close()
        self._peers.clear()
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = connection.recv_into(view[got:])
        if count == 0:
            raise EOFError("the connection ended")
        got += count
    return bytes(buffer)


def attach(handle: AllReduceHandle | TcpAllReduceHandle, rank: int) -> Any:
    """Rank `rank`'s end of the all-reduce that `handle` names (shared memory or TCP)."""
    if isinstance(handle, TcpAllReduceHandle):
        return TcpAllReduce.attach(handle, rank)
    return SharedMemoryAllReduce.attach(handle, rank)


__all__ = [
    "AllReduceError",
    "AllReduceHandle",
    "SharedMemoryAllReduce",
    "TcpAllReduce",
    "TcpAllReduceHandle",
    "attach",
]
