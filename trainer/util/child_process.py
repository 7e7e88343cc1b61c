"""What every child process of the trainer (an EnvRunner worker, the named-object server) shares:
how it is started, how it finds the user's modules, how it ends with the training process, and
how it is ended.

    main process                                child (python -m MODULE PARENT_PID KERNEL ...,
                                                       `python_module_command`)
    spawn(module, *args) -> Popen         ->    args = start_child(sys.argv)
    end_process(process)                        add_import_paths(paths)   (from its first message)

`start_child` sets up, first thing in the child: SIGINT ignored (Ctrl-C is the main process's to
handle), stdout/stderr line-buffered (several children share a terminal: each printed line is
one write, so lines never split each other), and two guards so it never outlives the training
process:

- On Linux, the kernel's parent-death signal (`prctl(PR_SET_PDEATHSIG, SIGKILL)`): the child is
  killed the moment its parent dies, even while it is stuck in C code holding the GIL, where no
  Python thread can run. The kernel ties it to the parent's *thread* that started the child, so
  the parent asks for it (KERNEL=1) only when that thread is its main thread (a child started
  by the parallel-evaluation thread would otherwise die when that thread ends).
- Where that signal is not available (not Linux, or a child of another thread), a watchdog
  thread that exits the process once it was re-parented (its parent died), checking twice a
  second. (Where the signal is set the thread would add nothing, and starting it cost a
  forked worker 0.6 ms of its start-up.)

EnvRunner workers are mostly not spawned but forked from a template process
(`trainer.runners.worker_forkserver`) and adopted: the main process is a child subreaper
(`set_child_subreaper`) while the template forks, so the worker is re-parented to it
(`wait_until_adopted`), takes the same two guards, and the main process holds it as an
`AdoptedChild` (the part of `Popen` used here).
"""

from __future__ import annotations

import functools
import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

#: prctl's option number for the parent-death signal (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: prctl's options for the child subreaper and the process name (linux/prctl.h).
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
#: Exit code of a child that found its parent gone.
PARENT_GONE_EXIT_CODE = 3
#: Longest wait for a child to exit once it was told to (terminated, killed).
EXIT_WAIT_S = 5.0


# -- in the main process ---------------------------------------------------------------------
def kernel_signal_wanted() -> bool:
    """Whether a child started now from this thread may use the kernel's parent-death signal
    (see the module docstring): on Linux, from the main thread only."""
    return sys.platform.startswith("linux") and (
        threading.current_thread() is threading.main_thread()
    )


#: Set by Ray Tune in a trial's actor to the folder it started in, before Tune moves the actor
#: into the trial's folder (`ray.tune.Trainable`; `RAY_CHDIR_TO_TRIAL_DIR`).
TUNE_START_FOLDER_VAR = "TUNE_ORIG_WORKING_DIR"


def child_working_directory() -> str | None:
    """The folder child processes start in: this process's, except in a Ray Tune trial, whose
    actor Tune moved into the trial's folder. There they start where the trial's actor started,
    the driver's working folder, as Ray starts an RLlib trial's EnvRunner actors, so env and
    callback code that reads files by relative paths finds them as under Ray. None: this
    process's own."""
    start = os.environ.get(TUNE_START_FOLDER_VAR)
    if start and os.path.isdir(start):
        return start
    return None


#: The folder holding this project's `trainer` package (site-packages, or the checkout).
_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: What `python -c BOOT -m MODULE ...` runs: `python -m MODULE ...` with this project's
#: `trainer` imported first, so that a user's own `trainer.py` or `trainer/` in the working
#: folder or on `PYTHONPATH` (which `-m` would find first) cannot stand in for it; then
#: `sys.path[0]` is the working folder, as `-m` makes it.
_BOOT = (
    "import os,runpy,sys;"
    f"sys.path[0]={_PROJECT_ROOT!r};"
    "import trainer;"
    "sys.path[0]=os.getcwd();"
    "del sys.argv[1];"
    "runpy._run_module_as_main(sys.argv.pop(1))"
)


def python_module_command(module: str, *args: str) -> list[str]:
    """The command line of `python -m module *args`, immune to a user's module named
    `trainer` (see `_BOOT`)."""
    return [sys.executable, "-c", _BOOT, "-m", module, *args]


def spawn(
    module: str,
    *args: str,
    pass_fds: Iterable[int] = (),
    env: dict | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.Popen:
    """Starts `python -m module PARENT_PID KERNEL *args` (see `start_child`), in
    `child_working_directory()`."""
    return subprocess.Popen(
        python_module_command(module, str(os.getpid()), str(int(kernel_signal_wanted())), *args),
        pass_fds=tuple(pass_fds),
        env=env,
        stdin=stdin,
        cwd=child_working_directory(),
    )


def end_process(process: subprocess.Popen | AdoptedChild, *, terminate_first: bool = False) -> None:
    """Ends a child for good: SIGKILL (after SIGTERM and up to `EXIT_WAIT_S` for it to exit, with
    `terminate_first`), then reaps it, waiting at most `EXIT_WAIT_S`."""
    if process.poll() is None:
        try:
            if terminate_first:
                process.terminate()
                try:
                    process.wait(timeout=EXIT_WAIT_S)
                    return
                except subprocess.TimeoutExpired:
                    pass
            process.kill()
        except OSError:
            pass  # it exited between poll() and the signal
    try:
        process.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        pass


# -- in the child ----------------------------------------------------------------------------
def start_child(argv: list[str], *, watch_thread: bool = True) -> list[str]:
    """Sets up a child started by `spawn` (see the module docstring); returns its own
    arguments (those after PARENT_PID and KERNEL). Without `watch_thread` the child stays
    single-threaded (a fork server) and checks `parent_alive` itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        if not isinstance(stream, io.TextIOWrapper):
            continue  # replaced by something without reconfigure()
        try:
            # Also under PYTHONUNBUFFERED, which writes text and newline separately.
            stream.reconfigure(line_buffering=True, write_through=False)
        except ValueError:
            pass
    parent_pid, kernel_signal = int(argv[1]), bool(int(argv[2]))
    die_with_parent(parent_pid, kernel_signal, watch_thread=watch_thread)
    return argv[3:]


def add_import_paths(paths: Iterable[str]) -> None:
    """Makes the main process's import path reachable here (the user's modules), after ours."""
    for entry in paths:
        if entry not in sys.path:
            sys.path.append(entry)


def set_parent_death_signal() -> bool:
    """Asks the kernel to SIGKILL this process when its parent dies; False where unavailable."""
    libc = _libc()
    return libc is not None and libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0


def _watch(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(PARENT_GONE_EXIT_CODE)


def die_with_parent(parent_pid: int, kernel_signal: bool, *, watch_thread: bool = True) -> None:
    """Guards this process against outliving `parent_pid` (see the module docstring)."""
    signalled = kernel_signal and set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the guards were set
        os._exit(PARENT_GONE_EXIT_CODE)
    if watch_thread and not signalled:
        threading.Thread(
            target=_watch, args=(parent_pid,), name="localrl-parent-watch", daemon=True
        ).start()


@functools.cache
def _libc() -> Any:
    """The C library, for prctl; None where there is no prctl (not Linux). Loaded once: a
    worker forked from the template finds it loaded (each load cost it 0.3 ms)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def child_subreaper() -> bool | None:
    """Whether this process adopts its orphaned descendants (Linux's child subreaper: a
    process whose parent died is re-parented to its nearest subreaper ancestor instead of
    init); None where that is not available."""
    import ctypes

    libc, flag = _libc(), ctypes.c_int(0)
    if libc is None or libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
        return None
    return bool(flag.value)


def set_child_subreaper(enabled: bool) -> bool:
    """Makes this process a child subreaper (`enabled`), or gives that up; False where not
    possible."""
    libc = _libc()
    return libc is not None and libc.prctl(_PR_SET_CHILD_SUBREAPER, int(enabled), 0, 0, 0) == 0


def set_process_name(name: str) -> None:
    """Sets this process's name as `ps` and /proc/PID/stat show it (at most 15 bytes)."""
    import ctypes

    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def process_name() -> str:
    """This process's name as /proc/self/comm has it ("" where there is none)."""
    try:
        with open("/proc/self/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def wait_until_adopted(parent_pid: int, timeout_s: float) -> bool:
    """In a process forked by a fork server for `parent_pid` (see
    `trainer.runners.worker_forkserver`): waits until it has been re-parented to `parent_pid`
    (its intermediate parent exits at once); False if that did not happen within
    `timeout_s` (the training process is gone, or it is no subreaper)."""
    deadline = time.monotonic() + timeout_s
    while os.getppid() != parent_pid:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


class AdoptedChild:
    """A child process this process did not start itself but adopted (a fork server's
    grandchild, re-parented here as to a child subreaper), with the part of
    `subprocess.Popen`'s interface `end_process` and the runners use: `pid`, `returncode`,
    `poll()`, `wait(timeout)`, `send_signal`, `terminate()`, `kill()`. Being its parent, this
    process reaps it, so its pid is not reused while this object can still signal it."""

    #: Longest sleep between two looks while waiting for the child to exit.
    _MAX_POLL_S = 0.02

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None
        self._lock = threading.Lock()  # one waitpid at a time (two would lose the status)

    def poll(self) -> int | None:
        with self._lock:
            if self.returncode is None:
                try:
                    pid, status = os.waitpid(self.pid, os.WNOHANG)
                except ChildProcessError:  # reaped by someone else: its status is lost
                    self.returncode = 0
                else:
                    if pid:
                        self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.001
        while (code := self.poll()) is None:
            if timeout is not None and deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
            remaining = self._MAX_POLL_S if deadline is None else deadline - time.monotonic()
            time.sleep(max(0.0, min(pause, remaining)))
            pause = min(pause * 2, self._MAX_POLL_S)
        return code

    def send_signal(self, signum: int) -> None:
        with self._lock:  # never after the reap: the pid could belong to another process
            if self.returncode is None:
                os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
