"""How a child process of the trainer (an EnvRunner worker, the named-object server) ends when
the training process is gone, so it never outlives it.

Two guards, both set by `die_with_parent(parent_pid, kernel_signal)` first thing in the child:

- On Linux, the kernel's parent-death signal (`prctl(PR_SET_PDEATHSIG, SIGKILL)`): the child is
  killed the moment its parent dies, even while it is stuck in C code holding the GIL, where no
  Python thread can run. The kernel ties it to the parent's *thread* that started the child, so
  the parent asks for it (`kernel_signal`) only when that thread is its main thread (a child
  started by the parallel-evaluation thread would otherwise die when that thread ends).
- Everywhere, a watchdog thread that exits the process once it was re-parented (its parent
  died), checking twice a second.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

#: prctl's option number for the parent-death signal (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: Exit code of a child that found its parent gone.
PARENT_GONE_EXIT_CODE = 3


def kernel_signal_wanted() -> bool:
    """Whether a child started now from this thread may use the kernel's parent-death signal
    (see the module docstring): on Linux, from the main thread only."""
    return sys.platform.startswith("linux") and (
        threading.current_thread() is threading.main_thread())


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
