"""The gradient all-reduces of data-parallel learners, rank by rank in threads of this process:
shared memory (learners on one machine) and TCP (learners as Ray actors on any node). Every
rank gets the same bits, the mean; a rank that aborts or never arrives makes every other rank
raise, within a bound; TCP takes no connection without the group's token."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from trainer.core.allreduce import (
    AllReduceError,
    SharedMemoryAllReduce,
    TcpAllReduce,
    attach,
)

KINDS = [SharedMemoryAllReduce, TcpAllReduce]


def _group(kind, num_ranks: int, capacity: int = 64, timeout_s: float = 5.0) -> list:
    first = kind.create(num_ranks, capacity, timeout_s)
    return [first] + [attach(first.handle, rank) for rank in range(1, num_ranks)]


def _close(group: list) -> None:
    for end in reversed(group):
        end.close()


def _run_ranks(group: list, step) -> dict:
    """`step(rank, end)` in one thread per rank; each rank's value or AllReduceError."""
    out: dict = {}

    def run(rank: int) -> None:
        try:
            out[rank] = step(rank, group[rank])
        except AllReduceError as error:
            out[rank] = error

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(len(group))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_rank_gets_the_same_bits_the_mean_step_after_step(kind):
    group = _group(kind, 4)
    try:

        def steps(rank, end):
            rng = np.random.default_rng(rank)
            return [end.mean(rng.normal(size=50)) for _ in range(20)]

        out = _run_ranks(group, steps)
        for rank in range(1, 4):
            for mine, first in zip(out[rank], out[0], strict=True):
                assert mine.tobytes() == first.tobytes()
        rngs = [np.random.default_rng(rank) for rank in range(4)]
        for got in out[0]:
            vectors = [rng.normal(size=50) for rng in rngs]
            np.testing.assert_allclose(got, sum(vectors) / 4, rtol=1e-12)
    finally:
        _close(group)


@pytest.mark.parametrize("kind", KINDS)
def test_a_rank_that_aborts_makes_every_other_rank_raise_at_once(kind):
    group = _group(kind, 3, timeout_s=30)
    try:

        def step(rank, end):
            if rank == 2:
                time.sleep(0.2)
                end.abort()
                return "aborted"
            return end.mean(np.ones(8))

        started = time.monotonic()
        out = _run_ranks(group, step)
        assert time.monotonic() - started < 10  # not the 30 s timeout
        assert isinstance(out[0], AllReduceError) and isinstance(out[1], AllReduceError)
        assert "aborted" in str(out[1])
        assert group[0].broken and group[1].broken
    finally:
        _close(group)


@pytest.mark.parametrize("kind", KINDS)
def test_a_rank_that_never_arrives_times_the_others_out(kind):
    group = _group(kind, 2, timeout_s=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(AllReduceError, match=r"did not reach the gradient all-reduce within"):
            group[0].mean(np.ones(4))
        assert time.monotonic() - started < 5
    finally:
        _close(group)


@pytest.mark.parametrize("kind", KINDS)
def test_a_vector_over_the_capacity_is_refused(kind):
    group = _group(kind, 1, capacity=4)
    try:
        with pytest.raises(ValueError, match="holds 4"):
            group[0].mean(np.ones(5))
        np.testing.assert_array_equal(group[0].mean(np.arange(3.0)), np.arange(3.0))
    finally:
        _close(group)


def test_tcp_takes_no_connection_without_the_token():
    first = TcpAllReduce.create(2, 8, 5.0)
    stranger = socket.create_connection((first.handle.host, first.handle.port))
    stranger.sendall(b"\0" * 24)  # a wrong token, rank 1
    second = attach(first.handle, 1)
    try:
        out = _run_ranks([first, second], lambda rank, end: end.mean(np.full(3, float(rank))))
        np.testing.assert_array_equal(out[0], np.full(3, 0.5))
        np.testing.assert_array_equal(out[1], np.full(3, 0.5))
        stranger.settimeout(5)
        assert stranger.recv(1) == b""  # closed by rank 0
    finally:
        stranger.close()
        _close([first, second])
