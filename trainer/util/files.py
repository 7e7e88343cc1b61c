"""Durable file writes: `write_file_synced` (write, flush, fsync), `replace_file`, which a
reader sees whole or not at all (a temporary sibling, fsynced, renamed over the target), and
`fsync_dir` (makes a directory's new or renamed entries durable): run folders' index, result
and plot files, and checkpoint files."""

from __future__ import annotations

import os


def write_file_synced(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def fsync_dir(path: str) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


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
