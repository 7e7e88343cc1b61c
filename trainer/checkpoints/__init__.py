"""The checkpoint format.

A checkpoint is a directory:

- `metadata.json`: format name and version, library version, algorithm class, training
  iteration, time, the spaces and network shapes, the size and SHA-256 of every other file, the
  pickled config's signature, and its own SHA-256 (`checkpoints.json_files`);
- one msgpack state file per component (`learner.msgpack`, `algorithm.msgpack`,
  `metrics.msgpack`, `env_runner_<i>.msgpack`, `eval_env_runner_<i>.msgpack`,
  `evaluation_metrics.msgpack`, `replay_buffer.msgpack`), readable with `ormsgpack.unpackb`
  alone (arrays are maps of dtype, shape and raw bytes: see `checkpoints.codec`);
- `config.json`: the algorithm class and the config's settings as plain data, code settings by
  import path (`trainer.checkpoints.config_data`): what `Algorithm.from_checkpoint(path)` without a config,
  `python -m trainer evaluate` and `--resume` build from;
- `class_and_config.pkl`: the algorithm class and its config, cloudpickled, for configs whose
  code has no import path (defined in `__main__`, lambdas); unpickled only when its HMAC verifies
  with the user's key (`checkpoints.signing`; `python -m trainer trust PATH` re-signs one from
  elsewhere, `checkpoints.trust`) or on the explicit opt-in `allow_pickle=True` /
  `--trust-pickle`, since unpickling a planted file runs its code.

`checkpoints.writer` saves atomically, `checkpoints.reader` verifies and loads,
`checkpoints.manager.CheckpointManager` keeps a run's best and latest checkpoints, and
`python -m checkpoints inspect PATH` prints what a checkpoint holds.
"""

from trainer.checkpoints.format import (
    CLASS_AND_CONFIG_FILE,
    CONFIG_FILE,
    FORMAT_NAME,
    FORMAT_VERSION,
    METADATA_FILE,
    STATE_FILE_SUFFIX,
    CheckpointError,
    backup_path,
)
from trainer.checkpoints.manager import CheckpointManager
from trainer.checkpoints.reader import Checkpoint, open_checkpoint
from trainer.checkpoints.writer import write_checkpoint

__all__ = [
    "CLASS_AND_CONFIG_FILE",
    "CONFIG_FILE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "METADATA_FILE",
    "STATE_FILE_SUFFIX",
    "Checkpoint",
    "CheckpointManager",
    "CheckpointError",
    "backup_path",
    "open_checkpoint",
    "write_checkpoint",
]
