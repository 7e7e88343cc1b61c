"""The "processes" backend: each remote EnvRunner is a worker process of this machine
(`trainer.runners.worker`), and `ProcessRunner` is the main process's `RunnerHandle` on one.

Requests go over a socket pair as pickled `protocol` records; replies come back in request
order (the worker answers each exactly once), so a caller can send several requests and read
only the last reply: earlier replies are still checked for errors. Every read waits at most a
timeout; a worker that does not answer in time has its stack read (faulthandler, on SIGUSR1,
into a pipe), is killed and reported as `EnvRunnerTimeout`; one that died as `EnvRunnerCrashed`.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from functools import cache
from multiprocessing import Pipe
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any

from trainer.errors import EnvRunnerCrashed, EnvRunnerTimeout
from trainer.runners import protocol
from trainer.runners.handle import RunnerBackend, RunnerHandle
from trainer.runners.worker_forkserver import WorkerFds, start_workers
from trainer.util.child_process import AdoptedChild, end_process
from trainer.util.imports import collector_paused

#: Niceness of a background worker where the idle scheduling class is not available.
BACKGROUND_NICENESS = 10
#: Longest wait for a stalled worker's stack dump before it is killed.
STACK_WAIT_S = 0.5
#: Largest first request written to a worker's socket before the worker runs: the socket's
#: buffer takes it whole (Linux's smallest default is 208 KiB), so the write cannot wait for a
#: reader that is not there yet.
EARLY_REQUEST_MAX = 64 * 1024
#: Innermost frames of a stalled worker's stack kept in the timeout's message.
STACK_FRAMES = 8


@cache
def _idle_class_is_reversible() -> bool:
    """Whether this process may move a process out of SCHED_IDLE again (root, CAP_SYS_NICE, or
    an RLIMIT_NICE that allows niceness 0). Without that right a runner put in the idle class
    stays there, and on a machine whose cores are all busy it would get almost no CPU (weight
    3 against 1024) even while training waits for it. Tried on a short-lived thread of ours."""
    works: list[bool] = []

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            works.append(True)
        except (AttributeError, OSError):
            works.append(False)

    thread = threading.Thread(target=probe, name="localrl-sched-probe")
    thread.start()
    thread.join()
    return works == [True]


def _run_in_background(pid: int) -> None:
    """Lets process `pid` run only on cycles no other process wants (evaluation runners while
    a training step runs beside them). Linux's SCHED_IDLE class does exactly that, where the
    runner can be brought back (`_run_in_foreground`) when something waits for it; niceness 10
    is the fallback elsewhere. Measured in bench/evaluation.py: at niceness 10 the evaluation
    processes still preempt the learner's BLAS threads, which then spin waiting for each other."""
    if _idle_class_is_reversible():
        try:
            os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
            return
        except OSError:
            pass
    try:
        os.setpriority(os.PRIO_PROCESS, pid, BACKGROUND_NICENESS)
    except OSError:
        pass  # not allowed either: the runner runs at normal priority


def _run_in_foreground(pid: int) -> None:
    """Process `pid` at normal priority again (`_run_in_background` undone): when the
    algorithm waits only on the evaluation runners, in the idle class they would starve behind
    any other busy process (measured: a parallel round of 2000 steps took 75-95 s instead of
    0.4 s beside two busy loops on 2 cores). Lowering a niceness may not be allowed: then
    the runner stays at niceness 10, slower, but not starved."""
    try:
        if os.sched_getscheduler(pid) == os.SCHED_IDLE:
            os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):
        pass  # not Linux, or the process is gone
    try:
        if os.getpriority(os.PRIO_PROCESS, pid) > 0:
            os.setpriority(os.PRIO_PROCESS, pid, 0)
    except OSError:
        pass  # not allowed: it stays at niceness 10


def _end_worker(process: subprocess.Popen | AdoptedChild, stack_fd: int) -> None:
    """Ends a worker process for good (used by kill(), garbage collection and at exit)."""
    try:
        os.close(stack_fd)
    except OSError:
        pass
    end_process(process)


def _main_thread_stack(dump: str) -> str:
    """The frames of the worker's serving thread in a faulthandler dump, innermost first, at
    most `STACK_FRAMES` (the parent-watch thread, always asleep, is left out)."""
    threads: list[list[str]] = []
    for line in dump.splitlines():
        if line.startswith(("Thread ", "Current thread ")):
            threads.append([])
        elif threads and line.strip().startswith("File "):
            threads[-1].append(line.strip())
    for frames in threads:
        if frames and not any("child_process.py" in frame for frame in frames):
            return "\n".join(frames[:STACK_FRAMES])
    return ""


class _WorkerEnds:
    """The main process's and the worker's ends of one worker's socket and stack pipe."""

    def __init__(self) -> None:
        self.conn, self.child_conn = Pipe(duplex=True)
        # The worker writes its threads' stacks here on SIGUSR1 (see `ProcessRunner.stack`).
        self.stack_read, self.stack_write = os.pipe()
        os.set_blocking(self.stack_read, False)

    def close_child_ends(self) -> None:
        """After the worker is started: it has its own copies."""
        self.child_conn.close()
        os.close(self.stack_write)

    def close_parent_ends(self) -> None:
        self.conn.close()
        os.close(self.stack_read)


def start_runners(
    indices: Sequence[int],
    *,
    first_request: Callable[[int], protocol.Request] | None = None,
    preload: Sequence[str] = (),
) -> list[ProcessRunner]:
    """A worker process per EnvRunner index, started together: forked from the worker
    template in one request where possible (start-up does not grow with the number of
    workers: see `worker_forkserver`), spawned if that fails. `first_request(index)` (the
    `Init`), where it fits the socket's buffer (`EARLY_REQUEST_MAX`), is written before the
    worker starts: a forked worker finds it waiting and builds its EnvRunner while the next
    workers are forked. The runners it was sent to have it pending; the caller sends it to
    the others."""
    early: dict[int, tuple[protocol.Request, bytes]] = {}
    if first_request is not None:
        for index in indices:
            request = first_request(index)
            pickled = bytes(ForkingPickler.dumps(request))
            if len(pickled) <= EARLY_REQUEST_MAX:
                early[index] = (request, pickled)
    for fork in (True, False):
        ends = [_WorkerEnds() for _ in indices]
        for index, end in zip(indices, ends, strict=True):
            if index in early:
                end.conn.send_bytes(early[index][1])
        try:
            processes = start_workers(
                [
                    WorkerFds(index, end.child_conn.fileno(), end.stack_write)
                    for index, end in zip(indices, ends, strict=True)
                ],
                fork=fork,
                preload=preload,
            )
        except BaseException:
            for end in ends:
                end.close_parent_ends()
            raise
        finally:
            for end in ends:
                end.close_child_ends()
        if processes is not None:
            runners = [
                ProcessRunner(index, process, end.conn, end.stack_read)
                for index, process, end in zip(indices, processes, ends, strict=True)
            ]
            for runner in runners:
                if runner.worker_index in early:
                    runner.expect_reply(early[runner.worker_index][0])
            return runners
        # A failed fork: workers forked late may hold these ends; they are not reused.
        for end in ends:
            end.close_parent_ends()
    raise AssertionError("unreachable: spawning returns the processes or raises")


class ProcessRunner(RunnerHandle):
    """One worker process holding one `EnvRunner` (see `trainer.runners.worker`), started
    by `start_runners`: `process`, talking on `conn`, its stack dumps readable on
    `stack_fd`."""

    def __init__(
        self,
        worker_index: int,
        process: subprocess.Popen | AdoptedChild,
        conn: Connection,
        stack_fd: int,
    ):
        self.worker_index = worker_index
        self.process = process
        self._stack_fd = stack_fd
        self.conn: Connection = conn
        #: (request id, label) of each request sent and not yet answered, oldest first.
        self._pending: deque[tuple[int, str]] = deque()
        self.pid = self.process.pid
        self.healthy = True
        self._finalizer = weakref.finalize(self, _end_worker, self.process, stack_fd)

    def set_background(self, background: bool) -> None:
        (_run_in_background if background else _run_in_foreground)(self.process.pid)

    # -- requests ----------------------------------------------------------------------------
    def send(self, request: protocol.Request, *, pickled: bytes | None = None) -> None:
        try:
            if pickled is not None:
                self.conn.send_bytes(pickled)
            else:
                self.conn.send(request)
        except (OSError, EOFError, BrokenPipeError):
            self.healthy = False
            raise EnvRunnerCrashed(self.worker_index, request.label, self.exitcode(1.0)) from None
        self.expect_reply(request)

    def expect_reply(self, request: protocol.Request) -> None:
        """Notes `request` as sent (`send` does; `start_runners` wrote it before the worker
        started)."""
        self._pending.append((request.request_id, request.label))

    def has_pending(self) -> bool:
        return bool(self._pending)

    # -- replies -----------------------------------------------------------------------------
    def exitcode(self, wait_s: float = 0.0) -> int | None:
        try:
            return self.process.wait(timeout=wait_s) if wait_s else self.process.poll()
        except subprocess.TimeoutExpired:
            return None

    def reply_ready(self) -> bool:
        try:
            return bool(self.conn.poll())
        except (OSError, EOFError):
            return True  # gone: reading says how

    def read_reply(self, timeout: float) -> Any:
        request_id, label = self._pending[0]
        try:
            ready = self.conn.poll(timeout)
        except (OSError, EOFError):
            ready = True
        if not ready:
            raise self.timed_out(timeout)
        try:
            # (A sample's reply unpickles into tens of thousands of objects: without the
            # collector's passes over the main process's heap, which were half its time.)
            with collector_paused():
                reply: protocol.Reply = self.conn.recv()
        except (EOFError, OSError, ConnectionResetError):
            self._pending.clear()
            self.healthy = False
            exitcode = self.exitcode(1.0)
            self.kill()
            raise EnvRunnerCrashed(self.worker_index, label, exitcode) from None
        self._pending.popleft()
        try:
            return protocol.reply_value(reply, request_id, label, self.worker_index)
        except protocol.ProtocolError:
            self.kill()
            raise

    def timed_out(self, timeout: float) -> EnvRunnerTimeout:
        label = self._pending[0][1] if self._pending else "request"
        self._pending.clear()
        stack = self.stack()
        self.kill()
        return EnvRunnerTimeout(self.worker_index, label, timeout, stack)

    def stack(self, wait_s: float = STACK_WAIT_S) -> str:
        """The worker's main-thread stack, innermost frame first (faulthandler's dump on
        SIGUSR1), or "" if it does not come within `wait_s`."""
        if not self.is_alive():
            return ""
        try:
            os.kill(self.process.pid, signal.SIGUSR1)
        except OSError:
            return ""
        chunks: list[bytes] = []
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._stack_fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(self._stack_fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            elif chunks:
                break  # the dump is written in one go: silence after data means done
        return _main_thread_stack(b"".join(chunks).decode(errors="replace"))

    @staticmethod
    def wait(handles: Sequence[RunnerHandle], timeout: float) -> list[RunnerHandle]:
        # A pool holds runners of one backend: these handles are all ProcessRunners.
        by_conn: dict[Any, RunnerHandle] = {
            handle.conn: handle for handle in handles if isinstance(handle, ProcessRunner)
        }
        return [by_conn[conn] for conn in wait(list(by_conn), timeout=max(timeout, 0))]

    # -- lifetime ----------------------------------------------------------------------------
    def is_alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 2.0) -> None:
        if self.is_alive() and self.healthy:
            try:
                # Drain replies to requests still in flight, then say stop.
                while self._pending:
                    self.read_reply(timeout)
                self.send(protocol.stop())
                if self.conn.poll(timeout):  # its reply, unchecked: the process ends anyway
                    self.conn.recv()
                self.process.wait(timeout=timeout)
            except Exception:  # noqa: BLE001 - a worker that fails the polite stop is killed
                pass
        self.kill()

    def kill(self) -> None:
        self.healthy = False
        self._finalizer()
        try:
            self.conn.close()
        except OSError:
            pass


class ProcessBackend(RunnerBackend):
    """Remote runners as worker processes of this machine. `preload`: modules the workers
    import beyond the usual ones (torch's, for a torch module), imported once by the worker
    template so that each start and restart finds them imported."""

    def __init__(self, preload: Sequence[str] = ()) -> None:
        self.preload = tuple(preload)

    def start(self, worker_index: int) -> ProcessRunner:
        return start_runners([worker_index], preload=self.preload)[0]

    def start_many(
        self,
        worker_indices: Sequence[int],
        *,
        first_request: Callable[[int], protocol.Request] | None = None,
    ) -> Sequence[ProcessRunner]:
        return start_runners(
            worker_indices,
            first_request=first_request,
            preload=self.preload,
        )
