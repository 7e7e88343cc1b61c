"""The checkpoint format's constants and error type.

A checkpoint is a directory: `metadata.json` (format version, checksums), msgpack state files, and
one cloudpickle file with the algorithm class and config. The reader and writer arrive with the
checkpoint issue; this module fixes the names they share.
"""

#: Version of the on-disk layout; a reader refuses checkpoints written with a newer one.
FORMAT_VERSION = 1
METADATA_FILE = "metadata.json"
CLASS_AND_CONFIG_FILE = "class_and_config.pkl"
STATE_FILE_SUFFIX = ".msgpack"


class CheckpointError(Exception):
    """A checkpoint cannot be read or written: names the path and what is wrong."""

    def __init__(self, path, cause: str):
        self.path = str(path)
        self.cause = cause
        super().__init__(f"checkpoint {self.path}: {cause}")


__all__ = [
    "CLASS_AND_CONFIG_FILE",
    "FORMAT_VERSION",
    "METADATA_FILE",
    "STATE_FILE_SUFFIX",
    "CheckpointError",
]
