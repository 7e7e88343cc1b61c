import os
import time

import pytest


def live_worker_pids() -> list[int]:
    """PIDs of EnvRunner worker processes whose parent is this test process."""
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        # Field 4 of /proc/PID/stat is the parent pid (after the parenthesised command name).
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == me and state != "Z" and b"trainer.worker_process" in cmdline:
            pids.append(int(entry))
    return pids


@pytest.fixture(autouse=True)
def no_orphan_workers():
    """Every test must end every worker process it started."""
    yield
    deadline = time.monotonic() + 5.0
    while live_worker_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_worker_pids() == [], "worker processes outlived the test"
