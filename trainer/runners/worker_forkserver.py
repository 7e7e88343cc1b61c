"""Worker processes that start without booting Python: forked from a template process.

A worker process needs Python, numpy, gymnasium and this package imported before it can build
its EnvRunner. Booting them costs about 0.3 s of CPU per process, so on few cores N workers
took about N times as long to start as one. Instead one template process (a fork server)
imports all of that once, and each worker is forked from it, its imports done.

    main process (training)                     template (`trainer.runners.worker_template`):
                                                python -m trainer.runners.worker_template
                                                    PARENT_PID KERNEL FD BLAS_THREADS [EXTRA]
    start_workers([(index, conn_fd, stack_fd), ...])
    (or earlier, prestart_template(EXTRA))
      first call, or os.environ / cwd changed
      since the template started: spawn one ->  imports numpy, gymnasium, cloudpickle and the
                                                trainer (`PRELOAD`), and EXTRA's modules;
                                                gc.freeze(); checks it runs a single thread
                                 <-----------   {"ready": true, "preloaded": [...]}
      subreaper on (prctl, for this batch only)
      {"indices": [i, ...], "std": [1, 2],
       "preload": [module, ...]} +
      file descriptors (SCM_RIGHTS): each
      runner's socket end and stack pipe, the   imports the modules of "preload" not yet
      current stdout and stderr   ----------->  imported (torch's, for a torch module); then
                                                fork: one intermediate process --fork--> a
                                                worker per index, back to back; then the
                                                intermediate exits, so the workers are
                                                re-parented to the main process (the
                                                nearest child subreaper)
                                 <-----------   {"pids": [worker pid, ...]}, the intermediate
                                                reaped
      subreaper back off; each worker is the
      main process's child: AdoptedChild(pid)   worker: closes the other workers'
                                                descriptors, waits until adopted, then the
                                                guards of `trainer.util.child_process`
                                                (kernel parent-death signal, parent watch),
                                                its stdout/stderr, a fresh numpy seed, the
                                                user's BLAS threads, then `worker.run`: the
                                                protocol, exactly as a spawned worker

A torch config's `build()` starts the template first thing, with torch as EXTRA
(`prestart_template`): the template's imports then run while the main process imports its own
torch and validates the config, instead of after.

All the workers of one `build()` (or one restart) are one request: one round trip to the
template and one intermediate process, whatever their number, so starting 5 costs little more
than starting 1 (`bench/startup.py`).

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
  (`FORK_TIMEOUT_S`, per request), the worker's adoption (`ADOPTION_TIMEOUT_S`). A template that died or
  does not answer is replaced once; a fresh one that fails too makes the workers spawned as
  `python -m trainer.runners.worker` (logged), until the environment changes.
- Where fork, file-descriptor passing or the child subreaper are not available (not Linux),
  every worker is spawned that way.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import select
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

from trainer.core.blas import BLAS_THREAD_VARS, user_blas_settings
from trainer.util.child_process import (
    AdoptedChild,
    child_subreaper,
    child_working_directory,
    end_process,
    set_child_subreaper,
    spawn,
)
from trainer.util.imports import collector_paused

logger = logging.getLogger("trainer")

#: BLAS thread pools in the workers (the variables of `BLAS_THREAD_VARS`, one thread each by
#: default): they run small batches, where extra threads only contend for the cores (measured in
#: bench/threads.py). A user's explicit setting wins.
#: What the template imports before it forks: what every worker imports to build its EnvRunner
#: (gymnasium's classic-control envs are the ones most scripts use).
PRELOAD = (
    "numpy",
    "gymnasium",
    "cloudpickle",
    "trainer",
    "trainer.runners.env_runner",
    "trainer.runners.worker",
    "trainer.named_objects",
    "trainer.util.log",
    "gymnasium.envs.classic_control",
)
#: The template's process name (/proc/PID/comm, `ps`); its workers take back the usual name.
TEMPLATE_NAME = "localrl-forksrv"
#: Longest wait for a template to have imported `PRELOAD`.
STARTUP_TIMEOUT_S = 60.0
#: Longest wait for a template's answer to a fork.
FORK_TIMEOUT_S = 10.0
#: Longest wait for a template to import what a fork request adds to `PRELOAD` (torch: about
#: 1.5 s of CPU, more on a busy machine), on top of `FORK_TIMEOUT_S`.
PRELOAD_TIMEOUT_S = 60.0
#: Longest wait of a forked worker for its re-parenting to the main process.
ADOPTION_TIMEOUT_S = 5.0
#: How often the template checks that its parent lives.
PARENT_CHECK_S = 0.5
#: Largest message between the main process and the template.
MESSAGE_MAX = 4096
#: Most workers forked by one request (each passes 2 descriptors; the kernel takes at most
#: 253 in one message, and the reply's pids must fit `MESSAGE_MAX`).
FORK_BATCH_MAX = 64


class WorkerFds(NamedTuple):
    """What one worker to be started serves: EnvRunner `worker_index` on the socket `conn_fd`,
    writing its stack to `stack_fd` (see `trainer.runners.worker.run`)."""

    worker_index: int
    conn_fd: int
    stack_fd: int


# Internal: the pool falls back to starting the worker without the template.
class TemplateFailed(RuntimeError):
    """The template did not start, or did not fork a worker."""

    #: Whether the template got the worker's descriptors before it failed.
    sent = False


def forking_available() -> bool:
    """Whether workers can be forked from a template here (Linux: fork, descriptor passing
    and the child subreaper); elsewhere they are spawned."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and hasattr(socket, "send_fds")
        and child_subreaper() is not None
    )


def worker_environment() -> dict[str, str]:
    """A spawned worker's environment: this process's, with one BLAS thread by default (also
    in a Ray actor, whose `OMP_NUM_THREADS` of Ray's is not the user's: see
    `trainer.core.blas.ray_thread_limit`)."""
    env = dict(os.environ)
    user_settings = user_blas_settings()
    env.update({var: user_settings.get(var, "1") for var in BLAS_THREAD_VARS})
    return env


#: Environment variables a library sets on itself when imported, which do not make a template
#: stale: threadpoolctl (imported by the first BLAS-capped product, see `trainer.core.blas`)
#: does `os.environ.setdefault("KMP_DUPLICATE_LIB_OK", "True")`, and the worker that imports
#: it sets the same; torch sets `TORCHINDUCTOR_CACHE_DIR` to its default when a module is first
#: built, and a worker's torch does the same; tensorboardX, which the main job imports on a
#: thread while `build()` starts the EnvRunners, sets `CRC32C_SW_MODE` to "auto" where it is
#: unset (a template started before that and one started after would otherwise differ, and
#: the evaluation EnvRunners waited for a fresh template's imports).
SELF_SET_VARIABLES = frozenset(
    {"KMP_DUPLICATE_LIB_OK", "TORCHINDUCTOR_CACHE_DIR", "CRC32C_SW_MODE"}
)
#: Environment variables a test runner changes between the calls it makes in one process, which
#: no worker reads: pytest names the running test in `PYTEST_CURRENT_TEST`. Counted, every test
#: of a suite that builds EnvRunners would start a fresh template (and import torch again).
TEST_RUNNER_VARIABLES = frozenset({"PYTEST_CURRENT_TEST"})


def _environment_key() -> tuple:
    """What a template takes from the main process when it starts (environment variables,
    working directory): a template whose key differs from the current one is stale."""
    try:
        cwd = child_working_directory() or os.getcwd()
    except OSError:  # the working directory was deleted
        cwd = None
    return tuple(
        sorted(
            item
            for item in os.environ.items()
            if item[0] not in SELF_SET_VARIABLES | TEST_RUNNER_VARIABLES
        )
    ), cwd


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

    def __init__(self, preload: Sequence[str] = (), meanwhile: Sequence[str] = ()) -> None:
        """Starts the template; it imports `preload` (beyond `PRELOAD`) before it is ready.
        `meanwhile`: what this process imports if its first fork request finds the template
        not ready yet, instead of waiting idle (see `prestart_template`)."""
        #: The environment the template was started in (see `_environment_key`).
        self.key = _environment_key()
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ)
        user_threads = {var: n for var, n in user_blas_settings().items() if n != "1"}
        env.update({var: "1" for var in BLAS_THREAD_VARS})
        self.process = spawn(
            "trainer.runners.worker_template",
            str(child_sock.fileno()),
            json.dumps(user_threads),
            *([json.dumps(list(preload))] if preload else []),
            pass_fds=(child_sock.fileno(),),
            env=env,
        )
        child_sock.close()
        self.pid = self.process.pid
        self._sock = parent_sock
        self._ready = False
        #: Modules fork requests had it import beyond `PRELOAD`.
        self.preloaded: set[str] = set()
        self._meanwhile = tuple(meanwhile)
        self._finalizer = weakref.finalize(self, _close_template, parent_sock, self.process)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        self._finalizer()

    def _receive(self, timeout: float) -> dict[str, Any]:
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            raise TemplateFailed(
                f"the worker template (pid {self.pid}) did not answer within {timeout:g} s"
            )
        try:
            data = self._sock.recv(MESSAGE_MAX)
        except OSError:
            data = b""
        if not data:
            raise TemplateFailed(
                f"the worker template (pid {self.pid}) exited (code {self.process.poll()})"
            )
        message = json.loads(data)
        if "error" in message:
            raise TemplateFailed(f"the worker template (pid {self.pid}): {message['error']}")
        return message

    def fork(self, workers: Sequence[WorkerFds], preload: Sequence[str] = ()) -> list[AdoptedChild]:
        """Workers forked from the template, one per entry of `workers` (at most
        `FORK_BATCH_MAX`), in one request, after the template has imported the modules of
        `preload` (once: later requests find them imported); this process is their parent.
        The caller has made this process a child subreaper. Raises `TemplateFailed`, with
        `sent` telling whether the template may have got the descriptors (then workers
        forked late could hold them: they are not used again)."""
        if not self._ready:
            if self._meanwhile and not select.select([self._sock], [], [], 0)[0]:
                import_in_order(self._meanwhile)
            self.preloaded.update(self._receive(STARTUP_TIMEOUT_S).get("preloaded", ()))
            self._ready = True
        std = [fd for fd in (1, 2) if _is_open(fd)]
        new_modules = [module for module in preload if module not in self.preloaded]
        request = json.dumps(
            {
                "indices": [worker.worker_index for worker in workers],
                "std": std,
                "preload": new_modules,
            }
        ).encode()
        fds = [fd for worker in workers for fd in (worker.conn_fd, worker.stack_fd)]
        try:
            socket.send_fds(self._sock, [request], [*fds, *std])
        except OSError as error:
            raise TemplateFailed(f"the worker template (pid {self.pid}) is gone: {error}") from None
        timeout = FORK_TIMEOUT_S + (PRELOAD_TIMEOUT_S if new_modules else 0.0)
        try:
            pids = self._receive(timeout)["pids"]
        except TemplateFailed as error:
            error.sent = True
            raise
        self.preloaded.update(new_modules)
        return [AdoptedChild(int(pid)) for pid in pids]


class _Forking:
    """The one template of this process, started when first needed, replaced when stale or
    failed; fork requests are one at a time (each in its own child-subreaper window)."""

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

    def prestart(self, preload: Sequence[str], meanwhile: Sequence[str]) -> None:
        """Starts a template now, importing `preload` (beyond `PRELOAD`) while this process
        goes on, unless a current one runs; the next fork request uses it (see
        `prestart_template` for `meanwhile`)."""
        with self._lock:
            key = _environment_key()
            if key == self._failed_key:
                return
            if self._template is not None:
                if self._template.key == key and self._template.alive():
                    return
                self._template.close()
                self._template = None
            was_subreaper = child_subreaper()
            try:
                set_child_subreaper(True)  # as for a template started by a fork request
                self._template = WorkerTemplate(preload, meanwhile)
            finally:
                if not was_subreaper:
                    set_child_subreaper(False)

    def fork(
        self, workers: Sequence[WorkerFds], preload: Sequence[str] = ()
    ) -> list[AdoptedChild] | None:
        """Forked workers, one per entry of `workers` (at most `FORK_BATCH_MAX`), or None
        where the template failed (the caller spawns them, on descriptors of their own: see
        `TemplateFailed.sent`)."""
        with self._lock:
            key = _environment_key()
            if key == self._failed_key:
                return None
            if self._template is not None and (
                self._template.key != key or not self._template.alive()
            ):
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
                        return template.fork(workers, preload)
                    except TemplateFailed as error:
                        template.close()
                        self._template = None
                        if fresh or error.sent:
                            logger.warning(
                                "%s; %s started as processes of their own",
                                error,
                                _workers_named(workers),
                            )
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


def _workers_named(workers: Sequence[WorkerFds]) -> str:
    indices = ", ".join(str(worker.worker_index) for worker in workers)
    return (
        f"the workers of EnvRunners {indices} are"
        if len(workers) > 1
        else f"the worker of EnvRunner {indices} is"
    )


def start_workers(
    workers: Sequence[WorkerFds], *, fork: bool = True, preload: Sequence[str] = ()
) -> list[subprocess.Popen | AdoptedChild] | None:
    """A worker process per entry of `workers`, serving its EnvRunner on its `conn_fd` (see
    `trainer.runners.worker`): forked from the template (with `fork`, where available; in
    requests of at most `FORK_BATCH_MAX`; the template imports the modules of `preload`
    first, once), else spawned. None when a fork request failed: the
    workers of earlier requests are ended, and the caller tries again with `fork=False` on
    fresh descriptors. The caller closes its copies of the descriptors."""
    started: list[subprocess.Popen | AdoptedChild] = []
    try:
        if fork and forking_available():
            for first in range(0, len(workers), FORK_BATCH_MAX):
                forked = _forking.fork(workers[first : first + FORK_BATCH_MAX], preload)
                if forked is None:
                    for process in started:
                        end_process(process)
                    return None
                started += forked
            return started
        for worker in workers:
            started.append(
                spawn(
                    "trainer.runners.worker",
                    str(worker.conn_fd),
                    str(worker.stack_fd),
                    str(worker.worker_index),
                    pass_fds=(worker.conn_fd, worker.stack_fd),
                    env=worker_environment(),
                )
            )
        return started
    except BaseException:
        for process in started:
            end_process(process)
        raise


def prestart_template(preload: Sequence[str] = (), meanwhile: Sequence[str] = ()) -> None:
    """Starts this process's worker template now (where workers are forked), importing the
    modules of `preload` beyond `PRELOAD`, so that its imports run while this process does
    other work: torch's (~1 s of CPU) while this process imports its own torch, ahead of a
    torch config's EnvRunners. If the first fork request still finds the template importing,
    this process imports the modules of `meanwhile` (what it needs later anyway) before it
    waits. Does nothing where a current template runs already."""
    if forking_available():
        _forking.prestart(preload, meanwhile)


def import_in_order(modules: Sequence[str]) -> list[str]:
    """Imports `modules` in order, up to the first that fails; returns those imported. The
    ones left out are imported again by whoever needs them, which reports the error (the
    fork request that needs it in the template, the learner in the main process). Without
    the cyclic collector's passes (`collector_paused`): torch's import runs here."""
    imported = []
    with collector_paused():
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001 - reported where the module is needed
                break
            imported.append(module)
    return imported


def template_pid() -> int | None:
    """The pid of this process's worker template, if one runs."""
    return _forking.template_pid()


def stop_template() -> None:
    """Ends this process's worker template (the next worker starts a fresh one); its workers
    live on."""
    _forking.close()
