"""The layout of a checkpoint RLlib 2.60 writes, by its file names: enough to tell one from this
project's checkpoints without reading it (`trainer.compat.rllib_checkpoint` reads it).

RLlib writes nested folders, one per `Checkpointable` component, each with `metadata.json`
(naming `ray_version` and `checkpoint_version`), `class_and_ctor_args.pkl` and a state file; an
Algorithm's folder also holds `rllib_checkpoint.json`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: The file at the top of an Algorithm checkpoint RLlib wrote.
RLLIB_CHECKPOINT_FILE = "rllib_checkpoint.json"
#: Every component folder's files.
RLLIB_METADATA_FILE = "metadata.json"
CLASS_AND_CTOR_ARGS_FILE = "class_and_ctor_args.pkl"
#: Where the reader is (resolved by this dotted path where it is needed: it sits above the
#: algorithms and modules that read such checkpoints).
RLLIB_CHECKPOINT_READER = "trainer.compat.rllib_checkpoint"


def is_rllib_checkpoint(path: str | os.PathLike) -> bool:
    """Whether `path` is a folder RLlib wrote (an Algorithm's, a module's or any component's):
    it holds `rllib_checkpoint.json`, or its metadata names a Ray version beside
    `class_and_ctor_args.pkl`."""
    path = os.fspath(path)
    if os.path.isfile(os.path.join(path, RLLIB_CHECKPOINT_FILE)):
        return True
    metadata = os.path.join(path, RLLIB_METADATA_FILE)
    if not os.path.isfile(metadata) or not os.path.isfile(
        os.path.join(path, CLASS_AND_CTOR_ARGS_FILE)
    ):
        return False
    try:
        with open(metadata, encoding="utf-8") as file:
            return "ray_version" in json.load(file)
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class RLlibModuleClass:
    """How a module class of an algorithm's folder is written as one of RLlib's module
    checkpoints (its `AlgorithmEntry.rllib_module_classes`): RLlib's class and catalog by import
    path, what RLlib's algorithm config adds to the module's model config with its defaults
    (`_model_config_auto_includes`), and the constant buffers RLlib's module holds besides its
    parameters; or, for a numpy module, `torch_twin`: "module:function" returning the torch
    module of the same networks with its weights, which is written instead."""

    rllib_class: str = ""
    catalog: str | None = None
    auto_includes: Mapping[str, Any] = field(default_factory=dict)
    constant_buffers: Mapping[str, float] = field(default_factory=dict)
    torch_twin: str = ""


@dataclass(frozen=True)
class ModuleRead:
    """How one of RLlib's module classes is read (an algorithm folder's
    `AlgorithmEntry.rllib_module_reads`): as this project's module of RLlib's class `as_class`
    (an import path), with the model config's `model_config` keys set, the state's key prefixes
    renamed (`renamed`, RLlib's -> here), the prefixes of what has no counterpart here dropped
    (`dropped`: a target network the learner keeps), and the prefixes of what RLlib's module
    lacks kept as built here (`kept`)."""

    as_class: str
    model_config: Mapping[str, Any] = field(default_factory=dict)
    renamed: Mapping[str, str] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
