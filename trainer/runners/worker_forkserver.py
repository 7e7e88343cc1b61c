"""Worker processes that start without booting Python: forked from a template process.

A worker process needs Python, numpy, gymnasium and this package imported before it can build
its EnvRunner. Booting them costs about 0.3 s of CPU per process, so on few cores N workers
took about N times as long to start as one. Instead one template process (a fork server)
imports all of that once, and each worker is forked from it, its imports done.

    main process (training)                     template (`trainer.runners.worker_template`):
                                                python -m trainer.runners.worker_template
                                                          PARENT_PID KERNEL FD BLAS_THREADS
    start_worker(index, conn_fd, stack_fd)
      first call, or os.environ / cwd changed
      since the template started: spawn one ->  imports numpy, gymnasium, cloudpickle and the
                                                trainer (`PRELOAD`); gc.freeze(); checks it
                                                runs a single thread
                                 <-----------   {"ready": true}
      subreaper on (prctl, for this fork only)
      {"index": i, "std": [1, 2]} + file
      descriptors (SCM_RIGHTS): the runner's
      socket end, the stack pipe, the current
      stdout and stderr           ----------->  fork: intermediate process --fork--> worker;
                                                the intermediate exits at once, so the
                                                worker is re-parented to the main process
                                                (the nearest child subreaper)
                                 <-----------   {"pid": worker pid}, the intermediate reaped
      subreaper back off; the worker is the
      main process's child: AdoptedChild(pid)   worker: waits until adopted, then the guards
                                                of `trainer.util.child_process` (kernel
                                                parent-death signal, parent watch), its
                                                stdout/stderr, a fresh numpy seed, the
                                                user's BLAS threads, then `worker.run`: the
                                                protocol, exactly as a spawned worker

What holds for forked workers as for spawned ones:
- They are children of the main process: `end_process`, exit codes (-9 for SIGKILL), the
  stack dump on SIGUSR1 and the idle scheduling class work on them unchanged, and the kernel's
  parent-death signal ties them to the main process, not to the template: a worker dies with
  the training process (even one killed by SIGKILL, even while it is stuck in C code), and
  lives on when the template dies.
- The template is a child of the main process with the same guards (without the watch
  thread: it checks its parent twice a second in its own loop, so it stays single-threaded
  and forking it is safe). It ends when the main process closes its socket (at interpreter
  exit, or when a fresh template replaces it) or dies.
- Nothing of the user's is imported in the template: the env creator and callbacks travel in
  the `Init` request, unpickled in the worker. The template never unpickles anything.
- The user's state at build time: the worker gets the main process's `sys.path` in its
  `Init`, as a spawned one does; environment variables and the working directory are those
  the template started with, so a template whose were different from the main process's now
  is replaced by a fresh one (started lazily, on the first worker that needs it). stdout and
  stderr are the main process's current ones, passed with each fork.
- BLAS thread pools: the template imports numpy with one BLAS thread (a thread pool would make
  it multi-threaded); a worker gets the user's explicit `OPENBLAS_NUM_THREADS` /
  `OMP_NUM_THREADS` / `MKL_NUM_THREADS` back through threadpoolctl, and one thread by default,
  as spawned workers have.
- Every wait is bounded: the template's start (`STARTUP_TIMEOUT_S`), each fork
  (`FORK_TIMEOUT_S`), the worker's adoption (`ADOPTION_TIMEOUT_S`). A template that died or
  does not answer is replaced once; a fresh one that fails too makes the workers spawned as
  `python -m trainer.runners.worker` (logged), until the environment changes.
- Where fork, file-descriptor passing or the child subreaper are not available (not Linux),
  every worker is spawned that way.
"""

from __future__ import annotations

import json
import logging
import os
import select
import socket
import subprocess
import sys
import threading
import weakref
from typing import Any

from trainer.util.child_process import (
    AdoptedChild,
    child_subreaper,
    end_process,
    set_child_subreaper,
    spawn,
)

logger = logging.getLogger("trainer")

#: BLAS thread pools in the workers: they run small batches, where extra threads only contend
#: for the cores (measured in bench/threads.py). A user's explicit setting wins.
WORKER_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: What the template imports before it forks: what every worker imports to build its EnvRunner
#: (gymnasium's classic-control envs are the ones most scripts use).
PRELOAD = ("numpy", "gymnasium", "cloudpickle", "trainer", "trainer.env.env_runner",
           "trainer.runners.worker", "trainer.named_objects", "trainer.util.log",
           "gymnasium.envs.classic_control")
#: The template's process name (/proc/PID/comm, `ps`); its workers take back the usual name.
TEMPLATE_NAME = "localrl-forksrv"
#: Longest wait for a template to have imported `PRELOAD`.
STARTUP_TIMEOUT_S = 60.0
#: Longest wait for a template's answer to a fork.
FORK_TIMEOUT_S = 10.0
#: Longest wait of a forked worker for its re-parenting to the main process.
ADOPTION_TIMEOUT_S = 5.0
#: How often the template checks that its parent lives.
PARENT_CHECK_S = 0.5
#: Largest message between the main process and the template.
MESSAGE_MAX = 4096


class TemplateFailed(RuntimeError):
    """The template did not start, or did not fork a worker."""

    #: Whether the template got the worker's descriptors before it failed.
    sent = False


def forking_available() -> bool:
    """Whether workers can be forked from a template here (Linux: fork, descriptor passing
    and the child subreaper); elsewhere they are spawned."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and hasattr(socket, "send_fds") and child_subreaper() is not None)


def worker_environment() -> dict[str, str]:
    """A spawned worker's environment: this process's, with one BLAS thread by default."""
    env = dict(os.environ)
    for var in WORKER_THREAD_VARS:
        env.setdefault(var, "1")
    return env


def _environment_key() -> tuple:
    """What a template takes from the main process when it starts (environment variables,
    working directory): a template whose key differs from the current one is stale."""
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was deleted
        cwd = None
    return tuple(sorted(os.environ.items())), cwd


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def _close_template(sock: socket.socket, process: subprocess.Popen) -> None:
    """Ends a template: its socket closed, it exits (killed if it has not in time)."""
    try:
        sock.close()
    except OSError:
        pass
    try:
        process.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        pass
    end_process(process)


# -- in the main process ---------------------------------------------------------------------
class WorkerTemplate:
    """The main process's side of one template process: `fork(...)` starts a worker."""

    def __init__(self) -> None:
        #: The environment the template was started in (see `_environment_key`).
        self.key = _environment_key()
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ)
        user_threads = {var: env[var] for var in WORKER_THREAD_VARS
                        if env.get(var, "1") != "1"}
        env.update({var: "1" for var in WORKER_THREAD_VARS})
        self.process = spawn("trainer.runners.worker_template", str(child_sock.fileno()),
                             json.dumps(user_threads),
                             pass_fds=(child_sock.fileno(),), env=env)
        child_sock.close()
        self.pid = self.process.pid
        self._sock = parent_sock
        self._ready = False
        self._finalizer = weakref.finalize(self, _close_template, parent_sock, self.process)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        self._finalizer()

    def _receive(self, timeout: float) -> dict[str, Any]:
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            raise TemplateFailed(f"the worker template (pid {self.pid}) did not answer within "
                                 f"{timeout:g} s")
        try:
            data = self._sock.recv(MESSAGE_MAX)
        except OSError:
            data = b""
        if not data:
            raise TemplateFailed(f"the worker template (pid {self.pid}) exited (code "
                                 f"{self.process.poll()})")
        message = json.loads(data)
        if "error" in message:
            raise TemplateFailed(f"the worker template (pid {self.pid}): {message['error']}")
        return message

    def fork(self, worker_index: int, conn_fd: int, stack_fd: int) -> AdoptedChild:
        """A worker forked from the template, serving the runner's protocol on `conn_fd` and
        writing its stack to `stack_fd` (see `trainer.runners.worker.run`); this process is
        its parent. The caller has made this process a child subreaper. Raises
        `TemplateFailed`, with `sent` telling whether the template may have got the
        descriptors (then a worker forked late could hold them: they are not used again)."""
        if not self._ready:
            self._receive(STARTUP_TIMEOUT_S)
            self._ready = True
        std = [fd for fd in (1, 2) if _is_open(fd)]
        request = json.dumps({"index": worker_index, "std": std}).encode()
        try:
            socket.send_fds(self._sock, [request], [conn_fd, stack_fd, *std])
        except OSError as error:
            raise TemplateFailed(f"the worker template (pid {self.pid}) is gone: "
                                 f"{error}") from None
        try:
            return AdoptedChild(int(self._receive(FORK_TIMEOUT_S)["pid"]))
        except TemplateFailed as error:
            error.sent = True
            raise


class _Forking:
    """The one template of this process, started when first needed, replaced when stale or
    failed; forks are one at a time (each in its own child-subreaper window)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._template: WorkerTemplate | None = None
        #: The environment in which a fresh template failed: workers are spawned until it
        #: changes (instead of waiting on a failing template for each worker).
        self._failed_key: tuple | None = None

    def template_pid(self) -> int | None:
        with self._lock:
            template = self._template
            return template.pid if template is not None and template.alive() else None

    def fork(self, worker_index: int, conn_fd: int, stack_fd: int) -> AdoptedChild | None:
        """A forked worker, or None where the template failed (the caller spawns one, on
        descriptors of its own: see `TemplateFailed.sent`)."""
        with self._lock:
            key = _environment_key()
            if key == self._failed_key:
                return None
            if self._template is not None and (self._template.key != key
                                               or not self._template.alive()):
                self._template.close()
                self._template = None
            was_subreaper = child_subreaper()
            try:
                # Before the template starts too: it inherits the kernel's note that an
                # ancestor adopts orphans, which the re-parenting of its grandchildren needs.
                set_child_subreaper(True)
                while True:
                    fresh = self._template is None
                    template = self._template = self._template or WorkerTemplate()
                    try:
                        return template.fork(worker_index, conn_fd, stack_fd)
                    except TemplateFailed as error:
                        template.close()
                        self._template = None
                        if fresh or error.sent:
                            logger.warning("%s; this EnvRunner's worker is started as a "
                                           "process of its own", error)
                            if fresh:  # not again in this environment
                                self._failed_key = key
                            return None
                        # It died since its last fork, before taking this one: a fresh one.
                        logger.warning("%s; starting a fresh one", error)
            finally:
                if not was_subreaper:  # adopting orphans is for forks only
                    set_child_subreaper(False)

    def close(self) -> None:
        with self._lock:
            if self._template is not None:
                self._template.close()
                self._template = None


_forking = _Forking()


def start_worker(worker_index: int, conn_fd: int, stack_fd: int, *, fork: bool = True
                 ) -> subprocess.Popen | AdoptedChild | None:
    """A worker process serving EnvRunner `worker_index` on `conn_fd` (see
    `trainer.runners.worker`): forked from the template (with `fork`, where available), else
    spawned. None when the fork failed: the caller tries again with `fork=False` on fresh
    descriptors. The caller closes its copies of both descriptors."""
    if fork and forking_available():
        return _forking.fork(worker_index, conn_fd, stack_fd)
    return spawn("trainer.runners.worker", str(conn_fd), str(stack_fd), str(worker_index),
                 pass_fds=(conn_fd, stack_fd), env=worker_environment())


def template_pid() -> int | None:
    """The pid of this process's worker template, if one runs."""
    return _forking.template_pid()


def stop_template() -> None:
    """Ends this process's worker template (the next worker starts a fresh one); its workers
    live on."""
    _forking.close()
