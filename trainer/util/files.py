"""Durable file writes: `write_file_synced` (write, flush, fsync) and `replace_file`, which a
reader sees whole or not at all (a temporary sibling, fsynced, renamed over the target): run
folders' index, result and plot files, and checkpoint files."""

from __future__ import annotations

import os


def write_file_synced(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def replace_file(path: str, data: bytes) -> None:
    """Writes `path` so a reader sees the old contents or the new, never a part: a temporary
    sibling, fsynced, then renamed over it."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        write_file_synced(temporary, data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
