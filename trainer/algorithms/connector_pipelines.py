"""The connector pipelines restored from an algorithm checkpoint for a user's own env loop
(`EnvToModulePipeline.from_checkpoint`, `ModuleToEnvPipeline.from_checkpoint`, which name this
module by its dotted path: the pipelines sit below the algorithms).

    <checkpoint>/env_runner/<pipeline>/   checked (`trainer.connectors.checkpoint`), and the
                                          algorithm checkpoint above it opened and verified
                                          whole, its metadata recording this directory
    module-to-env                         the config's `module_to_env_connector` pieces (made
                                          as below; none has saved state), then RLlib's
                                          default pieces, from the saved action space and
                                          normalize_actions / clip_actions
    env-to-module                         the config's `env_to_module_connector` factory called
                                          with the saved spaces (no env is made), its pieces
                                          given the saved state, then RLlib's default batching
                                          pieces (`trainer.connectors.batching`)

The config is read as `Algorithm.from_checkpoint` reads it (a pickled config only when it is
signed with this user's key, else config.json); nothing else is unpickled.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.algorithms.checkpointing import load_class_and_config, open_algorithm_checkpoint
from trainer.checkpoints.format import METADATA_FILE, CheckpointError
from trainer.checkpoints.reader import Checkpoint
from trainer.checkpoints.writer import file_digest
from trainer.connectors.batching import default_env_to_module_pieces
from trainer.connectors.checkpoint import (
    CONNECTOR_CHECKPOINTS_KEY,
    ENV_TO_MODULE_DIR,
    MODULE_TO_ENV_DIR,
    read_pipeline_directory,
)
from trainer.connectors.connector_v2 import (
    ConnectorPipelineV2,
    build_pipeline,
    call_factory,
    call_module_to_env_factory,
)
from trainer.connectors.env_to_module import EnvToModulePipeline
from trainer.connectors.module_to_env import ModuleToEnvPipeline, default_module_to_env_pipeline
from trainer.core.spaces import space_from_dict

#: The kind a pipeline class restores (the `kind` of its directory's metadata.json).
KIND_OF: dict[type, str] = {
    EnvToModulePipeline: ENV_TO_MODULE_DIR,
    ModuleToEnvPipeline: MODULE_TO_ENV_DIR,
}


def load_pipeline(path: Any, expected: type) -> ConnectorPipelineV2:
    """The pipeline of class `expected` saved in the directory `path`."""
    path = os.path.abspath(os.fspath(path))
    metadata, state, metadata_bytes = read_pipeline_directory(path)
    checkpoint = _recording_checkpoint(path, metadata_bytes)
    kind = metadata["kind"]
    if KIND_OF.get(expected, kind) != kind:
        raise CheckpointError(
            path, f"holds a {kind} pipeline, not what {expected.__name__} restores"
        )
    observation_space = space_from_dict(metadata.get("observation_space"))
    action_space = space_from_dict(metadata.get("action_space"))
    if observation_space is None or action_space is None:
        raise CheckpointError(path, f"{METADATA_FILE} does not name the pipeline's spaces")
    user_pieces: list = []
    if metadata.get("pieces"):
        made = _config_pieces(path, checkpoint, observation_space, action_space, kind)
        user_pipeline = build_pipeline(made, observation_space, action_space)
        if state:
            user_pipeline.set_state(state)
        user_pieces = list(user_pipeline.connectors)
    if kind == KIND_OF[ModuleToEnvPipeline]:
        defaults = default_module_to_env_pipeline(
            action_space,
            observation_space,
            normalize_actions=bool(metadata.get("normalize_actions", True)),
            clip_actions=bool(metadata.get("clip_actions", False)),
        )
        to_env = ModuleToEnvPipeline(connectors=user_pieces + list(defaults.connectors))
        to_env.set_input_spaces(observation_space, action_space)
        return to_env
    pipeline = EnvToModulePipeline(connectors=user_pieces + default_env_to_module_pieces())
    pipeline.set_input_spaces(observation_space, action_space)
    return pipeline


def _recording_checkpoint(path: str, metadata_bytes: bytes) -> Checkpoint:
    """The algorithm checkpoint two levels above `path`, verified whole; its metadata must
    record this directory's metadata.json."""
    root = os.path.dirname(os.path.dirname(path))
    checkpoint = open_algorithm_checkpoint(root)
    recorded = checkpoint.metadata.get(CONNECTOR_CHECKPOINTS_KEY) or {}
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    if recorded.get(relative) != file_digest(metadata_bytes):
        raise CheckpointError(
            path,
            f"{METADATA_FILE} is not the one the algorithm checkpoint {root} recorded "
            f"(its {CONNECTOR_CHECKPOINTS_KEY!r} entry)",
        )
    return checkpoint


class _SavedSpaces:
    """What a connector factory gets for `env` when a pipeline is rebuilt from a checkpoint:
    the spaces the EnvRunner's env had (no env is made)."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        self.observation_space = self.single_observation_space = observation_space
        self.action_space = self.single_action_space = action_space

    @property
    def unwrapped(self) -> _SavedSpaces:
        return self

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"env.{name}: a pipeline restored from a checkpoint is built without an env; its "
            "connector factory gets the saved observation_space and action_space only"
        )


def _config_pieces(
    path: str,
    checkpoint: Checkpoint,
    observation_space: gym.Space,
    action_space: gym.Space,
    kind: str,
) -> Any:
    """The config's env-to-module or module-to-env pieces (`kind`), made by its factory as
    the EnvRunner made them."""
    _, config = load_class_and_config(
        checkpoint, algorithm_base=Algorithm, config_base=AlgorithmConfig
    )
    env = _SavedSpaces(observation_space, action_space)
    spaces = (observation_space, action_space)
    if kind == KIND_OF[ModuleToEnvPipeline]:
        to_env = config.module_to_env_connector
        if to_env is None:
            raise CheckpointError(path, "its algorithm config has no module_to_env_connector")
        return call_module_to_env_factory(to_env, env, spaces)
    factory = config.env_to_module_factory()
    if factory is None:
        raise CheckpointError(path, "its algorithm config has no env_to_module_connector")
    return call_factory(factory, env, spaces)
