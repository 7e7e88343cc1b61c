"""The connector pipelines of an algorithm checkpoint, for a user's own env loop (RLlib's
`EnvToModulePipeline.from_checkpoint(<checkpoint>/env_runner/env_to_module_connector)` and
`ModuleToEnvPipeline.from_checkpoint(<checkpoint>/env_runner/module_to_env_connector)`).

A save writes, beside the algorithm's files, one directory per pipeline:

    env_runner/env_to_module_connector/   metadata.json (sealed): its pieces' names, the input
                                          spaces, the SHA-256 of state.msgpack
                                          state.msgpack: the pipeline's state (a
                                          MeanStdFilter's statistics), merged over the
                                          EnvRunners as the driver holds it
    env_runner/module_to_env_connector/   metadata.json: the action space and the config's
                                          normalize_actions / clip_actions

and the algorithm's metadata.json records the SHA-256 of each metadata.json (so its seal covers
them); `verify_connector_checkpoints` checks that chain whenever the algorithm checkpoint is
opened. `trainer.algorithms.connector_pipelines` rebuilds the pipelines from it (it reads the
algorithm's config, a layer above this one). Multi-agent checkpoints have no such directories:
their EnvRunners map agents to modules themselves.
"""

from __future__ import annotations

import os
from typing import Any

from trainer.checkpoints.codec import pack, unpack
from trainer.checkpoints.format import METADATA_FILE, CheckpointError
from trainer.checkpoints.json_files import check_seal, parse_json, sealed_json
from trainer.checkpoints.reader import MAX_METADATA_BYTES, read_confined
from trainer.checkpoints.writer import file_digest
from trainer.core.spaces import space_to_dict

#: The pipelines' directories inside an algorithm checkpoint (RLlib's component names).
ENV_RUNNER_DIR = "env_runner"
#: Each directory's name is also the `kind` its metadata.json records.
ENV_TO_MODULE_DIR = "env_to_module_connector"
MODULE_TO_ENV_DIR = "module_to_env_connector"
#: The algorithm metadata's record of the pipelines: {directory: SHA-256 of its metadata.json}.
CONNECTOR_CHECKPOINTS_KEY = "connector_checkpoints"
STATE_FILE = "state.msgpack"
#: A pipeline state larger than this is not a checkpoint's (a MeanStdFilter's is kilobytes).
MAX_STATE_BYTES = 256 << 20


def _write(directory: str, kind: str, document: dict, state: Any) -> str:
    """Writes one pipeline directory; returns the SHA-256 of its metadata.json."""
    os.makedirs(directory, exist_ok=True)
    state_bytes = pack(state)
    with open(os.path.join(directory, STATE_FILE), "wb") as handle:
        handle.write(state_bytes)
    metadata = sealed_json(
        {
            "kind": kind,
            **document,
            "state_file": STATE_FILE,
            "state_size": len(state_bytes),
            "state_sha256": file_digest(state_bytes),
        }
    )
    with open(os.path.join(directory, METADATA_FILE), "wb") as handle:
        handle.write(metadata)
    return file_digest(metadata)


def write_connector_checkpoints(directory: str, algorithm: Any) -> dict[str, str] | None:
    """Writes the env-to-module and module-to-env pipeline directories of a single-agent
    algorithm into `directory` (a checkpoint being written); returns {relative path: SHA-256
    of its metadata.json} for the algorithm's metadata, or None for a multi-agent one."""
    config = algorithm.config
    runner = algorithm.env_runner
    spaces = getattr(runner, "env_spaces", None)
    if config.is_multi_agent or runner is None or spaces is None:
        return None
    observation_space, action_space = spaces
    pipeline = getattr(runner, "env_to_module", None)
    pieces = [type(piece).__name__ for piece in getattr(pipeline, "connectors", [])]
    state = pipeline.get_state() if pipeline is not None and pipeline.is_stateful else {}
    base = os.path.join(directory, ENV_RUNNER_DIR)
    digests = {}
    env_to_module = f"{ENV_RUNNER_DIR}/{ENV_TO_MODULE_DIR}"
    digests[env_to_module] = _write(
        os.path.join(base, ENV_TO_MODULE_DIR),
        ENV_TO_MODULE_DIR,
        {
            "pieces": pieces,
            "observation_space": space_to_dict(observation_space),
            "action_space": space_to_dict(action_space),
        },
        state,
    )
    module_to_env = f"{ENV_RUNNER_DIR}/{MODULE_TO_ENV_DIR}"
    # The names of the config's module-to-env pieces (before RLlib's default ones; the
    # EnvRunners keep no state of theirs across runners, so none is saved).
    custom = getattr(runner, "_module_to_env", None)
    digests[module_to_env] = _write(
        os.path.join(base, MODULE_TO_ENV_DIR),
        MODULE_TO_ENV_DIR,
        {
            "pieces": [type(piece).__name__ for piece in getattr(custom, "connectors", [])],
            "observation_space": space_to_dict(observation_space),
            "action_space": space_to_dict(action_space),
            "normalize_actions": bool(config.normalize_actions),
            "clip_actions": bool(config.clip_actions),
        },
        {},
    )
    return digests


def _read_directory(path: str) -> tuple[dict, Any, bytes]:
    """(metadata, state, metadata bytes) of a pipeline directory, each file checked."""
    data = read_confined(path, METADATA_FILE, MAX_METADATA_BYTES)
    check_seal(path, METADATA_FILE, data)
    metadata = parse_json(path, METADATA_FILE, data)
    if not isinstance(metadata, dict) or metadata.get("kind") not in (
        ENV_TO_MODULE_DIR,
        MODULE_TO_ENV_DIR,
    ):
        raise CheckpointError(
            path,
            f"{METADATA_FILE} is not a connector pipeline's (a directory "
            f"{ENV_RUNNER_DIR}/{ENV_TO_MODULE_DIR} or {ENV_RUNNER_DIR}/{MODULE_TO_ENV_DIR} of "
            "an algorithm checkpoint written here)",
        )
    size = metadata.get("state_size")
    if not isinstance(size, int) or not 0 <= size <= MAX_STATE_BYTES:
        raise CheckpointError(path, f"{METADATA_FILE} has no valid 'state_size'")
    state_bytes = read_confined(path, STATE_FILE, size)
    if len(state_bytes) != size or file_digest(state_bytes) != metadata.get("state_sha256"):
        raise CheckpointError(
            path, f"{STATE_FILE} is damaged or was altered: its size or SHA-256 differs"
        )
    try:
        state = unpack(state_bytes)
    except Exception as error:  # noqa: BLE001 - a damaged state, whatever the decoder raises
        raise CheckpointError(path, f"{STATE_FILE} is damaged ({error})") from None
    return metadata, state, data


def verify_connector_checkpoints(root: str, recorded: Any) -> None:
    """Checks each pipeline directory an algorithm checkpoint at `root` records (`recorded`,
    its metadata's `connector_checkpoints` entry): its metadata.json must have the recorded
    SHA-256 and its state file its own; raises `CheckpointError` naming the file."""
    if recorded is None:
        return
    expected = {f"{ENV_RUNNER_DIR}/{ENV_TO_MODULE_DIR}", f"{ENV_RUNNER_DIR}/{MODULE_TO_ENV_DIR}"}
    if (
        not isinstance(recorded, dict)
        or not set(recorded) <= expected
        or not all(isinstance(digest, str) for digest in recorded.values())
    ):
        raise CheckpointError(
            root, f"metadata.json has no valid {CONNECTOR_CHECKPOINTS_KEY!r} entry"
        )
    for relative, digest in recorded.items():
        directory = os.path.join(root, *relative.split("/"))
        _, _, metadata_bytes = _read_directory(directory)
        if file_digest(metadata_bytes) != digest:
            raise CheckpointError(
                directory,
                f"{METADATA_FILE} is damaged or was altered: its SHA-256 is not the one the "
                "algorithm checkpoint recorded",
            )


def read_pipeline_directory(path: str) -> tuple[dict, Any, bytes]:
    """(metadata, state, metadata.json's bytes) of the pipeline directory `path`, each file
    checked (its seal, the state's size and SHA-256); `CheckpointError` naming the problem."""
    if not os.path.isdir(path):
        raise CheckpointError(
            path,
            "no such directory: a pipeline is restored from an algorithm checkpoint's "
            f"{ENV_RUNNER_DIR}/{ENV_TO_MODULE_DIR} or {ENV_RUNNER_DIR}/{MODULE_TO_ENV_DIR} "
            "(multi-agent checkpoints have none)",
        )
    return _read_directory(path)


def metadatafile_digest(metadata_bytes: bytes) -> str:
    """The SHA-256 an algorithm checkpoint records for a pipeline's metadata.json."""
    return file_digest(metadata_bytes)
