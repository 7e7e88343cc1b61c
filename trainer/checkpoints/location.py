"""Where a checkpoint lives: a local path, a `file://` URI, or a path on a pyarrow filesystem.

RLlib's `save_to_path`, `restore_from_path` and `from_checkpoint` take a path or URI and an
optional `filesystem` (a `pyarrow.fs.FileSystem`). Here:

- a local path, or a `file://` URI (`file:///abs/dir`, `file://localhost/abs/dir`), is a local
  directory;
- a path with another scheme (`s3://`, `gs://`, `hdfs://`, ...) needs `filesystem=`: the
  checkpoint is then written to a local temporary directory and copied onto that filesystem (a
  restore copies it back first), so the local format, its checks and its atomic save are the
  same everywhere;
- with `filesystem=`, the path is the filesystem's own (`bucket/dir`; a URI's scheme is
  stripped), as pyarrow's filesystems expect.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

from trainer.checkpoints.format import CheckpointError

#: "scheme://" at the start of a path (RFC 3986's scheme characters); Windows drive letters
#: ("C:\\...") have no "//" after the colon.
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

PYARROW_HINT = "pyarrow is not installed: pip install pyarrow"


def _pyarrow_fs() -> Any:
    try:
        import pyarrow.fs
    except ImportError:
        return None
    return pyarrow.fs


def uri_scheme(path: str) -> str | None:
    """The lower-cased scheme of a URI (`"s3"` for `"s3://bucket/x"`), else None."""
    match = _URI.match(path)
    return match.group(1).lower() if match else None


def local_path(path: str | os.PathLike) -> str:
    """The absolute local path of `path` (a path or a `file://` URI). Raises `CheckpointError`
    for a URI of another scheme, saying that it needs `filesystem=` (and pyarrow)."""
    text = os.fspath(path)
    scheme = uri_scheme(text)
    if scheme is None:
        return os.path.abspath(text)
    if scheme == "file":
        parsed = urlparse(text)
        if parsed.netloc not in ("", "localhost"):
            raise CheckpointError(
                text,
                "a file:// URI names a path on this machine "
                f"(file:///abs/dir), not on host {parsed.netloc!r}",
            )
        return os.path.abspath(unquote(parsed.path) or "/")
    hint = "" if _pyarrow_fs() is not None else f" ({PYARROW_HINT})"
    raise CheckpointError(
        text,
        f"the scheme {scheme}:// needs a filesystem: pass filesystem= "
        "a pyarrow.fs.FileSystem (for example "
        f"pyarrow.fs.S3FileSystem(...)){hint}; without one, only local "
        "paths and file:// URIs are opened",
    )


def filesystem_path(path: str | os.PathLike, filesystem: Any) -> str:
    """`path` as `filesystem` names it: a URI's scheme is stripped (`s3://bucket/x` ->
    `bucket/x`, `file:///abs/x` -> `/abs/x`); checks that `filesystem` is a pyarrow one."""
    fs = _pyarrow_fs()
    if fs is None:
        raise CheckpointError(os.fspath(path), f"filesystem={filesystem!r}: {PYARROW_HINT}")
    if not isinstance(filesystem, fs.FileSystem):
        raise CheckpointError(
            os.fspath(path),
            f"filesystem={filesystem!r}: must be a "
            "pyarrow.fs.FileSystem (or None for local "
            "paths and file:// URIs)",
        )
    text = os.fspath(path)
    scheme = uri_scheme(text)
    if scheme is None:
        return text
    parsed = urlparse(text)
    return unquote(parsed.path) if scheme == "file" else parsed.netloc + unquote(parsed.path)


@contextlib.contextmanager
def staged_for_upload(path: str | os.PathLike, filesystem: Any) -> Iterator[str]:
    """A local temporary directory to write a checkpoint into; on leaving the block without an
    error, its files replace whatever is at `path` on `filesystem`."""
    target = filesystem_path(path, filesystem)
    staging = tempfile.mkdtemp(prefix="localrl_checkpoint_upload_")
    try:
        local = os.path.join(staging, "checkpoint")
        yield local
        fs = _pyarrow_fs()
        try:
            filesystem.create_dir(target, recursive=True)
            filesystem.delete_dir_contents(target, missing_dir_ok=True)
            fs.copy_files(
                local,
                target,
                source_filesystem=fs.LocalFileSystem(),
                destination_filesystem=filesystem,
            )
        except Exception as error:  # pyarrow raises OSError and its own errors
            raise CheckpointError(
                os.fspath(path),
                f"could not be written to {filesystem!r}: {type(error).__name__}: {error}",
            ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def train_checkpoint_location(path: Any, filesystem: Any) -> tuple[Any, Any]:
    """A Ray Train `Checkpoint` (Tune's `result.checkpoint`, which RLlib's `from_checkpoint`
    takes) as its directory and filesystem (None for a local one); anything else as given.
    (Such a checkpoint refuses `os.fspath`: it names its directory by `.path`.)"""
    if (
        filesystem is None
        and hasattr(path, "to_directory")
        and hasattr(path, "filesystem")
        and isinstance(getattr(path, "path", None), str)
    ):
        checkpoint_fs = path.filesystem
        if checkpoint_fs is None or getattr(checkpoint_fs, "type_name", None) == "local":
            return path.path, None
        return path.path, checkpoint_fs
    return path, filesystem


@contextlib.contextmanager
def fetched(path: str | os.PathLike, filesystem: Any) -> Iterator[str]:
    """A local copy of the checkpoint directory at `path` on `filesystem` (removed on leaving
    the block); without a filesystem, the local path itself. `path` may be a Ray Train
    `Checkpoint` (`train_checkpoint_location`)."""
    path, filesystem = train_checkpoint_location(path, filesystem)
    if filesystem is None:
        yield local_path(path)
        return
    source = filesystem_path(path, filesystem)
    fs = _pyarrow_fs()
    try:
        info = filesystem.get_file_info(source)
    except Exception as error:
        raise CheckpointError(
            os.fspath(path), f"cannot be read from {filesystem!r}: {type(error).__name__}: {error}"
        ) from None
    if info.type != fs.FileType.Directory:
        raise CheckpointError(os.fspath(path), f"no such directory on {filesystem!r}")
    staging = tempfile.mkdtemp(prefix="localrl_checkpoint_download_")
    try:
        local = os.path.join(staging, "checkpoint")
        os.makedirs(local)  # pyarrow copies into an existing local directory only
        try:
            fs.copy_files(
                source,
                local,
                source_filesystem=filesystem,
                destination_filesystem=fs.LocalFileSystem(),
            )
        except Exception as error:
            raise CheckpointError(
                os.fspath(path),
                f"could not be read from {filesystem!r}: {type(error).__name__}: {error}",
            ) from None
        yield local
    finally:
        shutil.rmtree(staging, ignore_errors=True)
