"""The checkpoint format's names: its name and version, the fixed file names, and
`CheckpointError`; and where a save without atomic exchange keeps the previous checkpoint
(`backup_path`). The reader, the writer and the manager import these from here."""

import os

#: Name and version of the on-disk layout; a reader refuses checkpoints of a newer version.
FORMAT_NAME = "localrl-checkpoint"
FORMAT_VERSION = 1
METADATA_FILE = "metadata.json"
CLASS_AND_CONFIG_FILE = "class_and_config.pkl"
CONFIG_FILE = "config.json"
STATE_FILE_SUFFIX = ".msgpack"


class CheckpointError(Exception):
    """A checkpoint cannot be read or written: names the path and what is wrong."""

    def __init__(self, path: str | os.PathLike, cause: str):
        self.path = str(path)
        self.cause = cause
        super().__init__(f"checkpoint {self.path}: {cause}")


def backup_path(path: str) -> str:
    """Where the previous checkpoint waits while a save without atomic exchange replaces it."""
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(parent, f".{name}.previous")
