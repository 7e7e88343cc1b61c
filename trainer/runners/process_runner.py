"""`RemoteEnvRunner`: the main process's handle on one EnvRunner worker process.

Requests are sent at once and their replies read in order (the worker answers each request
exactly once), so a caller can send several requests and read only the last reply: earlier replies
are still checked for errors. Every read waits at most a timeout; a worker that does not answer in
time is killed and reported as `EnvRunnerTimeout`, one that died as `EnvRunnerCrashed`.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import weakref
from collections import deque
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from typing import Any

from trainer.callbacks import CallbackError
from trainer.errors import EnvRunnerCrashed, EnvRunnerError, EnvRunnerTimeout
from trainer.util.child_process import kernel_signal_wanted
from trainer.util.deprecation import warn_once
from trainer.util.pickling import travel_dumps

#: BLAS thread pools in the workers: they run small batches, where extra threads only contend
#: for the cores (measured in bench/threads.py). A user's explicit setting wins.
_WORKER_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


#: Niceness of a background worker where the idle scheduling class is not available.
BACKGROUND_NICENESS = 10


def _run_in_background(pid: int) -> None:
    """Lets process `pid` run only on cycles no other process wants (evaluation runners in
    parallel to training). Linux's SCHED_IDLE class does exactly that; niceness 10 is the
    fallback elsewhere. Measured in bench/evaluation.py: at niceness 10 the evaluation
    processes still preempt the learner's BLAS threads, which then spin waiting for each other."""
    try:
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass  # not Linux, or not allowed here
    try:
        os.setpriority(os.PRIO_PROCESS, pid, BACKGROUND_NICENESS)
    except OSError:
        pass  # not allowed either: the runner runs at normal priority


def _kill(process: subprocess.Popen, stack_fd: int) -> None:
    """Ends a worker process for good (used by stop(), garbage collection and at exit)."""
    try:
        os.close(stack_fd)
    except OSError:
        pass
    if process.poll() is None:
        try:
            process.kill()
        except OSError:
            pass  # it exited between poll() and kill()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


#: Longest wait for a stalled worker's stack dump before it is killed.
STACK_WAIT_S = 0.5
#: Innermost frames of a stalled worker's stack kept in the timeout's message.
STACK_FRAMES = 8


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


class RemoteEnvRunner:
    """One worker process holding one `EnvRunner` (see `trainer.runners.worker`)."""

    def __init__(self, worker_index: int, *, background: bool = False):
        self.worker_index = worker_index
        parent_end, child_end = Pipe(duplex=True)
        env = dict(os.environ)
        for var in _WORKER_THREAD_VARS:
            env.setdefault(var, "1")
        # The worker writes its threads' stacks here on SIGUSR1 (see `stack()`).
        stack_read, stack_write = os.pipe()
        os.set_blocking(stack_read, False)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trainer.runners.worker", str(child_end.fileno()),
             str(os.getpid()), str(stack_write), str(int(kernel_signal_wanted()))],
            pass_fds=(child_end.fileno(), stack_write),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        child_end.close()
        os.close(stack_write)
        self._stack_fd = stack_read
        if background:
            _run_in_background(self.process.pid)
        self.conn: Connection = parent_end
        self._pending: deque[str] = deque()
        self.pid = self.process.pid
        self.healthy = True
        self._finalizer = weakref.finalize(self, _kill, self.process, stack_read)

    # -- requests ----------------------------------------------------------------------------
    def _send(self, label: str, message: tuple | None = None, *,
              pickled: bytes | None = None) -> None:
        """Sends one request (an object, or bytes pickled once for many workers); its reply is
        expected in order."""
        try:
            if pickled is not None:
                self.conn.send_bytes(pickled)
            else:
                self.conn.send(message)
        except (OSError, EOFError, BrokenPipeError):
            self.healthy = False
            raise EnvRunnerCrashed(self.worker_index, label, self._exitcode()) from None
        self._pending.append(label)

    def send_init(self, spec: dict) -> None:
        """Starts the runner from `spec`; each callback is pickled on its own, so one that the
        worker cannot unpickle is reported by name (a `CallbackError`)."""
        named = {id(obj): label for label, obj in spec["config"].callback_labels()}
        payload = travel_dumps(spec, named)
        self._send("__init__", ("init", list(sys.path), payload, self.worker_index))

    def send_pickled(self, label: str, message_bytes: bytes) -> None:
        """Sends a request pickled once for many workers (see `EnvRunnerGroup.sync_weights`)."""
        self._send(label, pickled=message_bytes)

    def call_async(self, method: str, **kwargs) -> None:
        # Failures name the public method (`sample`, not the internal `sample_with_metrics`).
        self._send(method.removesuffix("_with_metrics"), ("call", method, kwargs))

    def apply_async(self, func_bytes: bytes, **kwargs) -> None:
        self._send("foreach_env_runner", ("apply", func_bytes, kwargs))

    def has_pending(self) -> bool:
        return bool(self._pending)

    # -- replies -----------------------------------------------------------------------------
    def _exitcode(self) -> int | None:
        try:
            return self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None

    def read_reply(self, timeout: float) -> Any:
        """The next reply (in request order), waiting at most `timeout` seconds."""
        label = self._pending[0]
        try:
            ready = self.conn.poll(timeout)
        except (OSError, EOFError):
            ready = True
        if not ready:
            raise self.timed_out(timeout)
        try:
            status, value, *warnings = self.conn.recv()
        except (EOFError, OSError, ConnectionResetError):
            self._pending.clear()
            self.healthy = False
            exitcode = self._exitcode()
            self.kill()
            raise EnvRunnerCrashed(self.worker_index, label, exitcode) from None
        self._pending.popleft()
        for form, replacement in warnings[0] if warnings else ():
            warn_once(form, replacement)
        if status == "error":
            if isinstance(value, (CallbackError, EnvRunnerError)):
                raise value
            raise EnvRunnerError(self.worker_index, label, type(value).__name__, str(value), "")
        return value

    def timed_out(self, timeout: float) -> EnvRunnerTimeout:
        """Gives up on the pending replies: reads where the process is stuck, kills it, and
        returns the failure."""
        label = self._pending[0] if self._pending else "request"
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

    def result(self, timeout: float) -> Any:
        """Reads every pending reply and returns the last one; raises the first error."""
        value = None
        while self._pending:
            value = self.read_reply(timeout)
        return value

    # -- lifetime ----------------------------------------------------------------------------
    def is_alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 2.0) -> None:
        """Asks the worker to close its env and exit; kills it if it does not within `timeout`."""
        if self.is_alive() and self.healthy:
            try:
                # Drain replies to requests still in flight, then say stop.
                while self._pending:
                    self.read_reply(timeout)
                self.conn.send(("stop",))
                if self.conn.poll(timeout):
                    self.conn.recv()
                self.process.wait(timeout=timeout)
            except Exception:
                pass  # a worker that fails the polite stop is killed just below
        self.kill()

    def kill(self) -> None:
        self.healthy = False
        self._finalizer()
        try:
            self.conn.close()
        except OSError:
            pass
