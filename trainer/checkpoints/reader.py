"""Reading a checkpoint directory: `open_checkpoint(path)` checks `metadata.json` (its own
SHA-256 seal, see `checkpoints.json_files`), then the size and SHA-256 of every file it lists,
all before anything is parsed or loaded, then hands out the msgpack state of each component and
the JSON and pickle files as verified bytes. Every problem is a `CheckpointError` naming the
path, the file and the cause; nothing here unpickles.

A checkpoint may come from anyone, so the reader stays inside it: every file name in
`metadata.json` must be a plain name (no directory part, no `..`, no NUL), a symlink must lead
to a file inside the directory, and only regular files are read (a FIFO or a device is refused,
never opened in a way that could block), each up to its declared size.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import ormsgpack

from trainer.checkpoints.codec import MalformedState, decode
from trainer.checkpoints.format import (
    CLASS_AND_CONFIG_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    METADATA_FILE,
    STATE_FILE_SUFFIX,
    CheckpointError,
    backup_path,
)
from trainer.checkpoints.json_files import check_seal, parse_json
from trainer.checkpoints.location import local_path
from trainer.checkpoints.writer import file_digest


class Checkpoint:
    """A checkpoint directory whose metadata was read and whose files were all verified."""

    def __init__(self, path: str, metadata: dict, contents: dict[str, bytes]):
        self.path = path
        self.metadata = metadata
        self._contents = contents
        #: An Algorithm checkpoint's module weights, read from its module checkpoints (each
        #: verified) by `trainer.algorithms.checkpointing.open_algorithm_checkpoint`.
        self.module_weights: dict[str, Any] | None = None

    @property
    def files(self) -> dict[str, dict]:
        """name -> {"size", "sha256"} for every file besides metadata.json."""
        return self.metadata["files"]

    @property
    def components(self) -> list[str]:
        """The names of the msgpack state files, without their suffix."""
        return sorted(
            name[: -len(STATE_FILE_SUFFIX)]
            for name in self.files
            if name.endswith(STATE_FILE_SUFFIX)
        )

    def has(self, component: str) -> bool:
        return component + STATE_FILE_SUFFIX in self.files

    def load_plain(self, component: str) -> Any:
        """The state as any msgpack reader sees it (arrays as maps of dtype, shape and bytes)."""
        name = component + STATE_FILE_SUFFIX
        if name not in self.files:
            raise CheckpointError(self.path, f"has no {name} (components: {self.components})")
        try:
            return ormsgpack.unpackb(self._contents[name])
        except Exception as error:  # noqa: BLE001 - RecursionError, MemoryError included
            raise CheckpointError(
                self.path, f"{name} is not valid msgpack: {type(error).__name__}: {error}"
            ) from None

    def load(self, component: str) -> Any:
        """The state stored for `component`, numpy arrays rebuilt."""
        try:
            return decode(self.load_plain(component), component)
        except MalformedState as error:
            raise CheckpointError(
                self.path, f"{component}{STATE_FILE_SUFFIX} is malformed: {error}"
            ) from None

    def class_and_config_bytes(self) -> bytes:
        """The pickled class and config (verified, not unpickled: that is the caller's choice)."""
        if CLASS_AND_CONFIG_FILE not in self.files:
            raise CheckpointError(
                self.path, f"has no {CLASS_AND_CONFIG_FILE}; pass config= to from_checkpoint"
            )
        return self._contents[CLASS_AND_CONFIG_FILE]

    def read_json(self, name: str) -> Any:
        """The verified JSON file `name`, or None when the checkpoint has none."""
        if name not in self.files:
            return None
        return parse_json(self.path, name, self._contents[name])

    def _read_verified(self, name: str) -> bytes:
        entry = self.files[name]
        data = read_confined(self.path, name, entry["size"])
        if len(data) != entry["size"]:
            change = "truncated" if len(data) < entry["size"] else "longer than written"
            raise CheckpointError(
                self.path, f"file {name} is {change}: metadata.json says {entry['size']} bytes"
            )
        if file_digest(data) != entry["sha256"]:
            raise CheckpointError(
                self.path, f"file {name} was altered: its SHA-256 does not match metadata.json"
            )
        return data


#: The most metadata.json may hold (a real one is a few KB).
MAX_METADATA_BYTES = 1 << 20


def check_file_name(path: str, name: Any) -> None:
    """Raises `CheckpointError` unless `name` is a plain file name inside the directory."""
    if (
        not isinstance(name, str)
        or not name
        or "\0" in name
        or name in (".", "..")
        or "/" in name
        or (os.sep != "/" and os.sep in name)
        or os.path.isabs(name)
    ):
        raise CheckpointError(
            path,
            f"{METADATA_FILE} names the file {name!r}: a checkpoint's "
            "files must be plain names inside its directory",
        )


def read_confined(path: str, name: str, size: int) -> bytes:
    """Up to `size` + 1 bytes of the regular file `name` inside the directory `path` (one more
    byte than declared shows a longer file). A symlink must resolve inside `path`; anything
    but a regular file (FIFO, device, socket, directory) is refused without blocking."""
    file_path = os.path.join(path, name)
    try:
        if os.path.islink(file_path):
            directory = os.path.realpath(path)
            target = os.path.realpath(file_path)
            if os.path.commonpath([directory, target]) != directory:
                raise CheckpointError(
                    path, f"file {name} is a symlink leading outside the checkpoint (to {target})"
                )
            file_path = target
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(file_path, flags)
    except FileNotFoundError:
        raise CheckpointError(path, f"file {name} is missing") from None
    except OSError as error:
        raise CheckpointError(path, f"file {name} cannot be read: {error}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise CheckpointError(
                path, f"file {name} is not a regular file ({_file_kind(mode)}); refused"
            )
        chunks, remaining = [], size + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise CheckpointError(path, f"file {name} cannot be read: {error}") from None
    finally:
        os.close(descriptor)


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


#: The first format version whose metadata.json is sealed with its own SHA-256; one of an
#: earlier version has its files verified, but not its metadata.json.
FIRST_SEALED_VERSION = 2


def read_metadata_bytes(path: str) -> bytes:
    """metadata.json's bytes, at most `MAX_METADATA_BYTES`; not parsed here."""
    if not os.path.lexists(os.path.join(path, METADATA_FILE)):
        raise CheckpointError(path, f"not a checkpoint: it has no {METADATA_FILE}")
    text = read_confined(path, METADATA_FILE, MAX_METADATA_BYTES)
    if len(text) > MAX_METADATA_BYTES:
        raise CheckpointError(
            path, f"{METADATA_FILE} is larger than {MAX_METADATA_BYTES} bytes: not a checkpoint's"
        )
    return text


def _read_metadata(path: str) -> dict:
    text = read_metadata_bytes(path)
    seal = check_seal(path, METADATA_FILE, text)
    metadata = parse_json(path, METADATA_FILE, text, max_bytes=MAX_METADATA_BYTES)
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise CheckpointError(
            path,
            f"not a checkpoint of this library: {METADATA_FILE} does "
            f"not say format={FORMAT_NAME!r}",
        )
    version = metadata.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointError(
            path, f"{METADATA_FILE} has no valid format_version (got {version!r})"
        )
    if version > FORMAT_VERSION:
        raise CheckpointError(
            path,
            f"written with checkpoint format version {version}, newer "
            f"than this library reads (up to {FORMAT_VERSION}); "
            "upgrade localrl to load it",
        )
    if seal is None and version >= FIRST_SEALED_VERSION:
        raise CheckpointError(
            path,
            f"{METADATA_FILE} is damaged: it has no self_sha256 entry, which every checkpoint "
            f"of format version {version} has",
        )
    files = metadata.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(e, dict)
        and isinstance(e.get("size"), int)
        and not isinstance(e.get("size"), bool)
        and e["size"] >= 0
        and isinstance(e.get("sha256"), str)
        for e in files.values()
    ):
        raise CheckpointError(path, f"{METADATA_FILE} is damaged: no valid 'files' table")
    for name in files:
        check_file_name(path, name)
    return metadata


def open_checkpoint(path: str | os.PathLike, *, components: list[str] | None = None) -> Checkpoint:
    """Reads and verifies the checkpoint at `path`: metadata.json (its seal), then every file
    it lists, whatever `components` says (kept for its callers: the files are all verified
    either way). While a save without atomic exchange is between its two renames, the
    previous checkpoint is read from its backup."""
    del components  # every file is verified before anything is loaded
    path = local_path(path)  # a path or a file:// URI
    if not os.path.exists(path):
        backup = backup_path(path)
        if os.path.isfile(os.path.join(backup, METADATA_FILE)):
            path = backup
        else:
            raise CheckpointError(path, "no such directory")
    if not os.path.isdir(path):
        raise CheckpointError(path, "not a checkpoint: it is a file, not a directory")
    metadata = _read_metadata(path)
    checkpoint = Checkpoint(path, metadata, {})
    checkpoint._contents = {name: checkpoint._read_verified(name) for name in metadata["files"]}
    return checkpoint
