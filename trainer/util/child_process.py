"""What every child process of the trainer (an EnvRunner worker, the named-object server) shares:
how it is started, how it finds the user's modules, how it ends with the training process, and
how it is ended.

    main process                                child (python -m MODULE PARENT_PID KERNEL ...)
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
- Everywhere, a watchdog thread that exits the process once it was re-parented (its parent
  died), checking twice a second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable

#: prctl's option number for the parent-death signal (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: Exit code of a child that found its parent gone.
PARENT_GONE_EXIT_CODE = 3
#: Longest wait for a child to exit once it was told to (terminated, killed).
EXIT_WAIT_S = 5.0


# -- in the main process ---------------------------------------------------------------------
def kernel_signal_wanted() -> bool:
    """Whether a child started now from this thread may use the kernel's parent-death signal
    (see the module docstring): on Linux, from the main thread only."""
    return sys.platform.startswith("linux") and (
        threading.current_thread() is threading.main_thread())


def spawn(module: str, *args: str, pass_fds: Iterable[int] = (), env: dict | None = None,
          stdin: int | None = subprocess.DEVNULL) -> subprocess.Popen:
    """Starts `python -m module PARENT_PID KERNEL *args` (see `start_child`)."""
    return subprocess.Popen(
        [sys.executable, "-m", module, str(os.getpid()), str(int(kernel_signal_wanted())),
         *args],
        pass_fds=tuple(pass_fds), env=env, stdin=stdin)


def end_process(process: subprocess.Popen, *, terminate_first: bool = False) -> None:
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
def start_child(argv: list[str]) -> list[str]:
    """Sets up a child started by `spawn` (see the module docstring); returns its own
    arguments (those after PARENT_PID and KERNEL)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        try:
            # Also under PYTHONUNBUFFERED, which writes text and newline separately.
            stream.reconfigure(line_buffering=True, write_through=False)
        except (AttributeError, ValueError):
            pass
    parent_pid, kernel_signal = int(argv[1]), bool(int(argv[2]))
    die_with_parent(parent_pid, kernel_signal)
    return argv[3:]


def add_import_paths(paths: Iterable[str]) -> None:
    """Makes the main process's import path reachable here (the user's modules), after ours."""
    for entry in paths:
        if entry not in sys.path:
            sys.path.append(entry)


def set_parent_death_signal() -> bool:
    """Asks the kernel to SIGKILL this process when its parent dies; False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(PARENT_GONE_EXIT_CODE)


def die_with_parent(parent_pid: int, kernel_signal: bool) -> None:
    """Guards this process against outliving `parent_pid` (see the module docstring)."""
    if kernel_signal:
        set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the guards were set
        os._exit(PARENT_GONE_EXIT_CODE)
    threading.Thread(target=_watch, args=(parent_pid,), name="localrl-parent-watch",
                     daemon=True).start()
