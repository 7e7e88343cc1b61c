"""An EnvRunner saved on its own (RLlib's `EnvRunner.save_to_path` / `restore_from_path`), in
this project's checkpoint format (`trainer.checkpoints`): a directory with `metadata.json`
(`"kind": "env_runner"`, the runner's class as an import path) and `env_runner.msgpack`, the
runner's `get_state()` (its module's weights, its connector pieces' states, its counters). The
same state is the `env_runner_<i>` component of an Algorithm's checkpoint."""

from __future__ import annotations

import os
from typing import Any

from trainer.checkpoints import (
    FORMAT_NAME,
    FORMAT_VERSION,
    STATE_FILE_SUFFIX,
    CheckpointError,
    open_checkpoint,
    write_checkpoint,
)
from trainer.checkpoints.config_data import import_path
from trainer.checkpoints.format import library_version
from trainer.checkpoints.location import local_path
from trainer.checkpoints.writer import new_checkpoint_path, packed_state

#: Why RLlib's per-component Checkpointable methods refuse on the EnvRunners, and which.
COMPONENT_PROTOCOL_REFUSAL = (
    "an EnvRunner's state is a component of the Algorithm's checkpoint (env_runner_<i>), "
    "written by save_to_path / restore_from_path; RLlib's per-component Checkpointable "
    "protocol is not implemented"
)
COMPONENT_PROTOCOL_METHODS = (
    "get_checkpointable_components",
    "get_ctor_args_and_kwargs",
    "get_metadata",
    "from_checkpoint",
)

RUNNER_KIND = "env_runner"
#: The state file (without its suffix).
RUNNER_STATE = "env_runner"


def save_runner(runner: Any, path: str | os.PathLike | None, *, state: Any = None) -> str:
    """Writes `runner`'s checkpoint at `path` (default: a new temporary directory); returns the
    path. `state`: a state to write instead of the runner's own (checked against the runner)."""
    path = new_checkpoint_path(path, "env_runner_")
    packed = packed_state(runner, path, state, "runner")
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": library_version(),
        "kind": RUNNER_KIND,
        "env_runner_class": import_path(type(runner)),
    }
    return write_checkpoint(path, {RUNNER_STATE + STATE_FILE_SUFFIX: packed}, metadata)


def restore_runner(runner: Any, path: str | os.PathLike) -> None:
    """Sets `runner`'s state from the runner checkpoint at `path`, checked before anything
    changes."""
    path = os.path.abspath(local_path(path))
    checkpoint = open_checkpoint(path)
    kind = checkpoint.metadata.get("kind")
    if kind != RUNNER_KIND:
        raise CheckpointError(
            path,
            f"not an EnvRunner checkpoint (metadata.json says kind={kind!r}); an Algorithm's "
            "checkpoint is read with Algorithm.from_checkpoint / restore_from_path",
        )
    state = checkpoint.load(RUNNER_STATE)
    try:
        runner.check_state(state)
    except Exception as error:
        raise CheckpointError(path, f"does not fit this runner: {error}") from None
    runner.set_state(state)
