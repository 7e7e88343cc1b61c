"""What a client can learn about the named-object server's process without its help: whether it
lives, is stopped, is dying or is gone, and how it ended (`ServerProcess`), and the error that
says so (`ServerFailure`).

A client learns the server's pid from its socket (the kernel's peer credentials, Linux) when it
connects; the main process also holds the server's `Popen`, so it reads the exit status there.
Elsewhere the process is read from `/proc/PID/stat` and `/proc/PID/status`: its state letter
(T: stopped), its start time (a pid reused by another process is not the server), its CPU time
and its threads' states (a server computing in C code, or waiting for a CPU on a busy machine,
answers no ping yet is not stuck), the exiting flag and a
pending SIGKILL (a process the kernel will end: it serves nothing again), and, for a zombie not
yet reaped by the main process, its exit status. Where there is no `/proc` (not Linux) only the
ping tells (see `trainer.named_objects.client`).
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import time
from dataclasses import dataclass

from trainer.errors import NamedObjectError

#: While a client waits for a reply, it checks the server this often (its process, then a ping
#: over a connection of its own, which the server answers even while a method runs).
HEALTH_CHECK_INTERVAL_S = 1.0
#: Longest wait for the answer to a ping (connection and handshake included).
PING_TIMEOUT_S = 3.0
#: A stopped, dead or unanswering server fails the call waiting on it within this long.
UNRESPONSIVE_REPORTED_WITHIN_S = HEALTH_CHECK_INTERVAL_S + PING_TIMEOUT_S
#: Longest wait, once a connection to the server closed, for the server's exit to show (a killed
#: process closes its sockets a moment before its parent can see its exit status).
EXIT_SHOW_S = 2.0

#: The kernel's per-process flag of a process that is exiting (include/linux/sched.h).
_PF_EXITING = 0x4


class ServerFailure(NamedObjectError):
    """The server died, is stopped or stopped answering, or there is none: no method raised.
    Every call in flight on the connection fails with it. `kind`: "gone" (it died, refused or
    closed the connection, or there is none), "stopped" or "stuck" (alive, answering nothing)."""

    kind = "gone"

    def __init__(self, message: str, kind: str = "gone"):
        super().__init__(message)
        self.kind = kind


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process at the other end of a connected Unix socket (None where the
    kernel does not say: not Linux)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        pid, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, 12))
    except OSError:
        return None
    return pid or None


def describe_exit(returncode: int) -> str:
    """A `Popen.returncode` in words: "killed by signal 9 (SIGKILL)", "exited with code 1"."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "?"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with code {returncode}"


@dataclass(frozen=True)
class ProcStat:
    """The parts of `/proc/PID/stat` (and the pending signals of `/proc/PID/status`) used here."""

    state: str  # R, S, D, T, t, Z, X, ...
    start_time: int  # clock ticks after boot: with the pid, names one process for good
    cpu_ticks: int  # user + system time
    exiting: bool  # the exiting flag, or a SIGKILL pending: it runs no code of its own again
    exit_status: int  # a zombie's waitpid status (0 otherwise)

    @classmethod
    def read(cls, pid: int) -> ProcStat | None:
        """None when the process is gone (or there is no `/proc`: see `proc_available`)."""
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                raw = handle.read().decode(errors="replace")
            with open(f"/proc/{pid}/status", "rb") as handle:
                status = handle.read().decode(errors="replace")
        except OSError:
            return None
        # The name (field 2) is in parentheses and may hold anything: fields follow its last ")".
        fields = raw[raw.rfind(")") + 2 :].split()
        # fields[0] is field 3 of proc(5): state; field N is fields[N - 3].
        flags, utime, stime, start = (int(fields[i - 3]) for i in (9, 14, 15, 22))
        exit_status = int(fields[52 - 3]) if len(fields) > 52 - 3 else 0
        return cls(
            fields[0],
            start,
            utime + stime,
            bool(flags & _PF_EXITING) or _sigkill_pending(status),
            exit_status,
        )


def _sigkill_pending(status: str) -> bool:
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            if int(line.split()[1], 16) & (1 << (signal.SIGKILL - 1)):
                return True
    return False


def proc_available() -> bool:
    return os.path.isdir("/proc/self")


class ServerProcess:
    """The server process at the other end of a connection, as far as this process can see it:
    `condition()` says whether it is alive, stopped or dead (and how it ended). In the main
    process `popen` is the server's `Popen`, which gives its exit status."""

    def __init__(self, pid: int | None, popen: subprocess.Popen | None = None):
        self.pid = pid
        self.popen = popen
        first = ProcStat.read(pid) if pid is not None else None
        self._start_time = first.start_time if first is not None else None

    def __str__(self) -> str:
        return "the named-object server" + (f" (pid {self.pid})" if self.pid else "")

    def _stat(self) -> ProcStat | None:
        if self.pid is None or not proc_available():
            return None
        stat = ProcStat.read(self.pid)
        if (
            stat is not None
            and self._start_time is not None
            and stat.start_time != (self._start_time)
        ):
            return None  # the pid now names another process: the server is gone
        return stat

    def condition(self) -> tuple[str, str]:
        """(condition, words): ("alive", ""), ("stopped", why), ("dying", why) (killed or
        exiting: it serves nothing again) or ("dead", how it ended, as far as known here).
        ("alive", "") also when nothing can be known (no pid, no /proc)."""
        if self.popen is not None and self.popen.poll() is not None:
            return "dead", describe_exit(self.popen.returncode)
        if self.pid is None or not proc_available():
            return "alive", ""
        stat = self._stat()
        if stat is None:
            return "dead", "exited; its exit status went to the main process, its parent"
        if stat.state in ("Z", "X"):
            return "dead", describe_exit(os.waitstatus_to_exitcode(stat.exit_status))
        if stat.exiting:
            return "dying", "killed, and exiting"
        if stat.state in ("T", "t"):
            return "stopped", (
                f"is stopped (process state {stat.state!r}: SIGSTOP, Ctrl-Z or a debugger); it "
                "answers nothing until it gets SIGCONT"
            )
        return "alive", ""

    def wait_for_exit(self, timeout_s: float) -> tuple[str, str]:
        """`condition()` once the process is dead, stopped, or alive after `timeout_s`: how a
        server whose sockets just closed ended (they close a moment before its exit status
        shows). Returns at once where nothing more can be known (no pid and no `Popen`)."""
        deadline = time.monotonic() + timeout_s
        pause = 0.001
        while True:
            condition, how = self.condition()
            if condition in ("dead", "stopped") or time.monotonic() >= deadline:
                return condition, how
            if self.popen is None and (self.pid is None or not proc_available()):
                return condition, how
            if condition == "dying" and self.popen is not None:
                try:  # its parent: the exit status is about to show
                    self.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
                continue
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def has_runnable_thread(self) -> bool:
        """Whether a thread of the process is running or waiting for a CPU (state R): a server
        on a machine so busy that it has not yet run the ping's answer is not stuck."""
        if self._stat() is None:
            return False
        try:
            threads = os.listdir(f"/proc/{self.pid}/task")
        except OSError:
            return False
        for thread in threads:
            try:
                with open(f"/proc/{self.pid}/task/{thread}/stat", "rb") as handle:
                    raw = handle.read().decode(errors="replace")
            except OSError:
                continue
            if raw[raw.rfind(")") + 2 :].split()[:1] == ["R"]:
                return True
        return False

    def cpu_ticks(self) -> int | None:
        """The CPU time the process has used, in clock ticks (None where it cannot be read):
        a server computing in C code without releasing Python's lock answers no ping, yet its
        CPU time grows."""
        stat = self._stat()
        return None if stat is None else stat.cpu_ticks
