"""Writing a checkpoint directory atomically.

`write_checkpoint(path, files, metadata)` writes every file into a temporary sibling directory
(`.NAME.saving-PID-TOKEN`), flushes and fsyncs each, writes `metadata.json` (with every file's size
and SHA-256, sealed with its own: `checkpoints.json_files`) last, fsyncs the directory, and only then puts it in place:

- no checkpoint at `path` yet: one `rename`;
- a checkpoint at `path`: Linux's `renameat2(RENAME_EXCHANGE)` swaps the two directories in one
  step, then the old one is deleted. Where that call is missing, the old checkpoint is first
  renamed to `.NAME.previous` and the reader falls back to it while `path` is absent, so at every
  moment one complete checkpoint answers for `path`.

A save that fails or is killed leaves the previous checkpoint untouched; its temporary directory
is removed (or, after a kill, at the next save to the same path).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from trainer.checkpoints.codec import NotPlainData, pack
from trainer.checkpoints.format import METADATA_FILE, CheckpointError, backup_path
from trainer.checkpoints.json_files import sealed_json
from trainer.checkpoints.location import local_path
from trainer.util.files import (
    fsync_dir,
    replace_file,  # noqa: F401 (its older import path)
)
from trainer.util.files import write_file_synced as _write_file

#: Test hook: called with each file name right after that file was written (fault injection
#: between file writes). None in normal use.
after_file_written: Callable[[str], None] | None = None

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _renameat2() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _renameat2()


def _exchange(a: str, b: str) -> bool:
    """Swaps directories `a` and `b` in one step; False where the system cannot."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), b)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_temporaries(path: str) -> None:
    """Temporary directories of earlier saves to `path` whose process is gone (killed mid-save)."""
    parent, name = os.path.split(path)
    prefix = f".{name}.saving-"
    for entry in os.listdir(parent):
        if not entry.startswith(prefix):
            continue
        pid = entry[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def _check_replaceable(path: str) -> None:
    """Only a checkpoint (or an empty directory) may be replaced: never a user's other files."""
    if not os.path.exists(path):
        return
    if not os.path.isdir(path):
        raise CheckpointError(
            path, "exists and is a file, not a checkpoint directory; refusing to replace it"
        )
    if os.listdir(path) and not os.path.isfile(os.path.join(path, METADATA_FILE)):
        raise CheckpointError(
            path,
            f"exists and is not a checkpoint (no {METADATA_FILE}); refusing to replace its files",
        )


def new_checkpoint_path(path: str | os.PathLike | None, prefix: str) -> str:
    """Where a component's checkpoint goes: `path` as an absolute local path, or a new
    temporary directory named `prefix...` (RLlib's `save_to_path()` without a path)."""
    if path is None:
        path = tempfile.mkdtemp(prefix=prefix)
    return os.path.abspath(local_path(path))


def packed_state(owner: Any, path: str, state: Any, what: str) -> bytes:
    """`owner`'s state (its `get_state()`, or `state` once `owner.check_state` took it), packed
    for the checkpoint at `path`; a `CheckpointError` naming `what` ("learner", "runner")
    where the given state does not fit or cannot be stored."""
    if state is None:
        state = owner.get_state()
    else:
        try:
            owner.check_state(state)
        except Exception as error:
            raise CheckpointError(path, f"state= does not fit this {what}: {error}") from None
    try:
        return pack(state)
    except NotPlainData as error:
        raise CheckpointError(
            path, f"the {what}'s state cannot be stored: {error.where}: {error.problem}"
        ) from None


def write_checkpoint(
    path: str,
    files: dict[str, bytes],
    metadata: dict,
    *,
    write_subdirectories: Callable[[str], None] | None = None,
) -> str:
    """Writes `files` (name -> bytes) and `metadata.json` (`metadata` plus a "files" entry with
    each file's size and sha256) as the checkpoint directory `path`, atomically.

    `write_subdirectories(directory)`, when given, writes more into the temporary directory
    before its metadata.json (an Algorithm checkpoint's module checkpoints, each a checkpoint
    directory of its own with its own metadata and checksums): they are put in place with the
    rest, in the same single step."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as error:
        raise CheckpointError(path, f"cannot create the parent directory: {error}") from None
    _check_replaceable(path)
    backup = backup_path(path)
    if os.path.isdir(path) and os.path.isdir(backup):
        shutil.rmtree(backup, ignore_errors=True)  # left by an earlier, completed fallback save
    _remove_stale_temporaries(path)
    temporary = os.path.join(
        parent, f".{os.path.basename(path)}.saving-{os.getpid()}-{os.urandom(4).hex()}"
    )
    try:
        os.mkdir(temporary)
        entries = {}
        for name, data in files.items():
            _write_file(os.path.join(temporary, name), data)
            entries[name] = {"size": len(data), "sha256": file_digest(data)}
            if after_file_written is not None:
                after_file_written(name)
        if write_subdirectories is not None:
            write_subdirectories(temporary)
        document = {**metadata, "files": entries}
        _write_file(os.path.join(temporary, METADATA_FILE), sealed_json(document))
        fsync_dir(temporary)
        if after_file_written is not None:
            after_file_written(METADATA_FILE)
        _put_in_place(temporary, path, backup)
    except OSError as error:
        raise CheckpointError(path, f"cannot write the checkpoint: {error}") from None
    finally:
        if os.path.isdir(temporary):
            shutil.rmtree(temporary, ignore_errors=True)
    return path


def _put_in_place(temporary: str, path: str, backup: str) -> None:
    parent = os.path.dirname(path)
    if not os.path.exists(path):
        os.rename(temporary, path)
    elif _exchange(temporary, path):
        shutil.rmtree(temporary)  # now the previous checkpoint
    else:
        # Two renames; between them the reader answers for `path` from the backup.
        os.rename(path, backup)
        fsync_dir(parent)
        os.rename(temporary, path)
        fsync_dir(parent)
        shutil.rmtree(backup)
    fsync_dir(parent)
