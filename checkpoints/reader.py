"""Reading a checkpoint directory: `open_checkpoint(path)` checks `metadata.json`, every file's
size and SHA-256, then hands out the msgpack state of each component. Every problem is a
`CheckpointError` naming the path and the cause; nothing here unpickles.
"""

from __future__ import annotations

import json
import os
from typing import Any

import ormsgpack

from checkpoints import (
    CLASS_AND_CONFIG_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    METADATA_FILE,
    STATE_FILE_SUFFIX,
    CheckpointError,
    backup_path,
)
from checkpoints.codec import decode
from checkpoints.writer import file_digest


class Checkpoint:
    """A checkpoint directory whose metadata was read and whose files were all verified."""

    def __init__(self, path: str, metadata: dict, contents: dict[str, bytes]):
        self.path = path
        self.metadata = metadata
        self._contents = contents

    @property
    def files(self) -> dict[str, dict]:
        """name -> {"size", "sha256"} for every file besides metadata.json."""
        return self.metadata["files"]

    @property
    def components(self) -> list[str]:
        """The names of the msgpack state files, without their suffix."""
        return sorted(name[:-len(STATE_FILE_SUFFIX)] for name in self.files
                      if name.endswith(STATE_FILE_SUFFIX))

    def has(self, component: str) -> bool:
        return component + STATE_FILE_SUFFIX in self.files

    def load_plain(self, component: str) -> Any:
        """The state as any msgpack reader sees it (arrays as maps of dtype, shape and bytes)."""
        name = component + STATE_FILE_SUFFIX
        if name not in self._contents:
            raise CheckpointError(self.path, f"has no {name} (components: {self.components})")
        try:
            return ormsgpack.unpackb(self._contents[name])
        except Exception as error:
            raise CheckpointError(self.path, f"{name} is not valid msgpack: "
                                             f"{type(error).__name__}: {error}") from None

    def load(self, component: str) -> Any:
        """The state stored for `component`, numpy arrays rebuilt."""
        return decode(self.load_plain(component))

    def class_and_config_bytes(self) -> bytes:
        """The pickled class and config (verified, not unpickled: that is the caller's choice)."""
        if CLASS_AND_CONFIG_FILE not in self.files:
            raise CheckpointError(self.path, f"has no {CLASS_AND_CONFIG_FILE}; pass config= to "
                                             "from_checkpoint")
        return self._read_verified(CLASS_AND_CONFIG_FILE)

    def _read_verified(self, name: str) -> bytes:
        entry = self.files[name]
        file_path = os.path.join(self.path, name)
        try:
            with open(file_path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            raise CheckpointError(self.path, f"file {name} is missing") from None
        except OSError as error:
            raise CheckpointError(self.path, f"file {name} cannot be read: {error}") from None
        if len(data) != entry["size"]:
            change = "truncated" if len(data) < entry["size"] else "longer than written"
            raise CheckpointError(self.path, f"file {name} is {change}: {len(data)} bytes, "
                                             f"metadata.json says {entry['size']}")
        if file_digest(data) != entry["sha256"]:
            raise CheckpointError(self.path, f"file {name} was altered: its SHA-256 does not "
                                             "match metadata.json")
        return data


def _read_metadata(path: str) -> dict:
    metadata_path = os.path.join(path, METADATA_FILE)
    try:
        with open(metadata_path, "rb") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise CheckpointError(path, f"not a checkpoint: it has no {METADATA_FILE}") from None
    except OSError as error:
        raise CheckpointError(path, f"{METADATA_FILE} cannot be read: {error}") from None
    try:
        metadata = json.loads(text)
    except ValueError as error:
        raise CheckpointError(path, f"{METADATA_FILE} is damaged (not JSON: {error})") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise CheckpointError(path, f"not a checkpoint of this library: {METADATA_FILE} does "
                                    f"not say format={FORMAT_NAME!r}")
    version = metadata.get("format_version")
    if not isinstance(version, int):
        raise CheckpointError(path, f"{METADATA_FILE} has no valid format_version "
                                    f"(got {version!r})")
    if version > FORMAT_VERSION:
        raise CheckpointError(path, f"written with checkpoint format version {version}, newer "
                                    f"than this library reads (up to {FORMAT_VERSION}); "
                                    "upgrade localrl to load it")
    files = metadata.get("files")
    if not isinstance(files, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("size"), int)
            and isinstance(e.get("sha256"), str) for e in files.values()):
        raise CheckpointError(path, f"{METADATA_FILE} is damaged: no valid 'files' table")
    return metadata


def open_checkpoint(path: str | os.PathLike, *, components: list[str] | None = None
                    ) -> Checkpoint:
    """Reads and verifies the checkpoint at `path`: metadata, then every msgpack state file (or
    only `components`). While a save without atomic exchange is between its two renames, the
    previous checkpoint is read from its backup."""
    path = os.path.abspath(os.fspath(path))
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
    wanted = [name for name in metadata["files"] if name.endswith(STATE_FILE_SUFFIX)
              and (components is None or name[:-len(STATE_FILE_SUFFIX)] in components)]
    checkpoint._contents = {name: checkpoint._read_verified(name) for name in wanted}
    return checkpoint
