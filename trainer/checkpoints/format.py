"""The checkpoint format's names: its name and version, the fixed file names, and
`CheckpointError`; and where a save without atomic exchange keeps the previous checkpoint
(`backup_path`). The reader, the writer and the manager import these from here."""

import os

from trainer.errors import CheckpointError as CheckpointError

#: Name and version of the on-disk layout; a reader refuses checkpoints of a newer version.
#: Version 2 seals metadata.json with its own SHA-256 (version 1 checkpoints still load).
FORMAT_NAME = "localrl-checkpoint"
FORMAT_VERSION = 2
METADATA_FILE = "metadata.json"
CLASS_AND_CONFIG_FILE = "class_and_config.pkl"
CONFIG_FILE = "config.json"
STATE_FILE_SUFFIX = ".msgpack"


def backup_path(path: str) -> str:
    """Where the previous checkpoint waits while a save without atomic exchange replaces it."""
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(parent, f".{name}.previous")


def library_version() -> str:
    """The installed localrl's version, stored in each checkpoint's metadata ("unknown" when
    the package is not installed, as when run from a source tree)."""
    from importlib import metadata  # about 10 ms: only when a checkpoint is written

    try:
        return metadata.version("localrl")
    except metadata.PackageNotFoundError:
        return "unknown"
