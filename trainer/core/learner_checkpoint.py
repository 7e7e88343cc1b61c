"""A learner saved on its own (RLlib's `Learner.save_to_path`, `restore_from_path` and
`Learner.from_checkpoint`), in this project's checkpoint format (`trainer.checkpoints`).

A learner's checkpoint is a directory with

- `metadata.json`: the format, `"kind": "learner"`, the learner's class as a
  "module:qualname" import path, and its config: the config class's import path and the
  settings that differ from a new config's, as plain data (`trainer.checkpoints.config_data`;
  code by import path);
- `learner.msgpack`: the learner's `get_state()` (weights, optimizer state, the algorithm's
  own counters);
- `rl_module/`: its modules as a MultiRLModule checkpoint (`trainer.core.module_checkpoint`),
  RLlib's layout: what `from_checkpoint` rebuilds the modules from (their classes, spaces and
  model configs).

`from_checkpoint` rebuilds the config, builds a learner for the saved modules
(`config.build_learner_group(spaces=..., rl_module_spec=...)`) and restores its state. Nothing
is unpickled: a learner, config or module class defined in `__main__` or inside a function
cannot be rebuilt (the error says so; restoring into a learner built by the script works).
"""

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
from trainer.checkpoints.config_data import decode, encode, import_path, resolve_import_path
from trainer.checkpoints.format import library_version
from trainer.checkpoints.location import local_path
from trainer.checkpoints.writer import new_checkpoint_path, packed_state
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.module_checkpoint import save_module, spec_of_checkpoint
from trainer.core.multi_rl_module import MultiRLModule
from trainer.errors import ConfigDataError

LEARNER_KIND = "learner"
#: The learner's state file (without its suffix) and its modules' folder (RLlib's names).
LEARNER_STATE = "learner"
MODULES_DIR = "rl_module"


def modules_of(learner: Any) -> MultiRLModule:
    """The learner's modules as one MultiRLModule (the very module objects): a learner of a
    whole MultiRLModule holds one; a learner of one module holds it as its module id; a
    learner per module (`MultiAgentLearner`) each of its modules."""
    module = learner.module
    if isinstance(module, MultiRLModule):
        return module
    multi = MultiRLModule()
    if hasattr(module, "items"):
        items = list(module.items())
    else:
        items = [(getattr(learner, "module_id", DEFAULT_MODULE_ID), module)]
    for module_id, sub in items:
        multi.add_module(module_id, getattr(sub, "rl_module", sub))  # a torch module's view
    return multi


def _config_data(config: Any) -> dict[str, Any]:
    """The config as plain data: its class and the settings that differ from a new one's."""
    unstored: list[str] = []
    defaults = type(config)().to_dict()
    changed = {}
    for key, value in config.to_dict().items():
        try:
            same = (
                key in defaults
                and bool(value == defaults[key])
                and type(value) is type(defaults[key])
            )
        except Exception:  # noqa: BLE001 - arrays and other values without a plain ==
            same = False
        if not same:
            changed[key] = value
    settings = encode(changed, "config", unstored)
    config_class = import_path(type(config))
    if config_class is None:
        unstored.append("config class")
    return {"config_class": config_class, "settings": settings, "unstored": unstored}


def save_learner(learner: Any, path: str | os.PathLike | None, *, state: Any = None) -> str:
    """Writes `learner`'s checkpoint (see the module docstring) at `path` (default: a new
    temporary directory); returns the path. `state`: a state to write instead of the
    learner's own (it must fit the learner: `check_state`)."""
    path = new_checkpoint_path(path, "learner_")
    packed = packed_state(learner, path, state, "learner")
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": library_version(),
        "kind": LEARNER_KIND,
        "learner_class": import_path(type(learner)),
        "config": _config_data(learner.config),
    }
    modules = modules_of(learner)

    def write_modules(directory: str) -> None:
        save_module(modules, os.path.join(directory, MODULES_DIR))

    return write_checkpoint(
        path,
        {LEARNER_STATE + STATE_FILE_SUFFIX: packed},
        metadata,
        write_subdirectories=write_modules,
    )


def _open(path: str) -> Any:
    checkpoint = open_checkpoint(path)
    kind = checkpoint.metadata.get("kind")
    if kind != LEARNER_KIND:
        raise CheckpointError(
            path,
            f"not a learner checkpoint (metadata.json says kind={kind!r}); an Algorithm's "
            "checkpoint is read with Algorithm.from_checkpoint / restore_from_path",
        )
    return checkpoint


def restore_learner(learner: Any, path: str | os.PathLike) -> None:
    """Sets `learner`'s state from the learner checkpoint at `path` (checked before anything
    changes)."""
    path = os.path.abspath(local_path(path))
    state = _open(path).load(LEARNER_STATE)
    try:
        learner.check_state(state)
    except Exception as error:
        raise CheckpointError(path, f"does not fit this learner: {error}") from None
    learner.set_state(state)


def _config_of(data: Any, path: str) -> Any:
    if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
        raise CheckpointError(path, "metadata.json holds no valid 'config' entry")
    if data.get("unstored"):
        raise CheckpointError(
            path,
            f"the config's {', '.join(map(str, data['unstored']))} could not be stored (code "
            "defined in __main__, a lambda, a local class): build the learner in the script "
            "and restore_from_path(path) into it",
        )
    try:
        config_class = resolve_import_path(str(data.get("config_class")))
        return config_class().update_from_dict(decode(data["settings"], "config"))
    except (ConfigDataError, ImportError, AttributeError, ValueError, TypeError) as error:
        raise CheckpointError(
            path, f"cannot rebuild the learner's config ({type(error).__name__}: {error})"
        ) from None


def load_learner(path: str | os.PathLike, expected: type | None = None) -> Any:
    """A new learner built and restored from the learner checkpoint at `path`; `expected`:
    the class it must be (or derive from)."""
    path = os.path.abspath(local_path(path))
    metadata = _open(path).metadata
    try:
        learner_class = resolve_import_path(str(metadata.get("learner_class")))
    except Exception as error:  # noqa: BLE001 - reported with the path
        raise CheckpointError(
            path,
            f"cannot import the learner class {metadata.get('learner_class')!r} "
            f"({type(error).__name__}: {error})",
        ) from None
    if expected is not None and not (
        isinstance(learner_class, type) and issubclass(learner_class, expected)
    ):
        raise CheckpointError(
            path, f"holds a {learner_class!r}, which is not a {expected.__qualname__}"
        )
    config = _config_of(metadata.get("config"), path)
    spec = spec_of_checkpoint(os.path.join(path, MODULES_DIR))
    spaces = {
        module_id: (module_spec.observation_space, module_spec.action_space)
        for module_id, module_spec in spec.rl_module_specs.items()
    }
    learner = config.build_learner_group(spaces=spaces, rl_module_spec=spec)._learner
    if type(learner) is not learner_class:
        raise CheckpointError(
            path,
            f"its config builds a {type(learner).__qualname__}, not the saved "
            f"{learner_class.__qualname__}",
        )
    restore_learner(learner, path)
    return learner


__all__ = ["load_learner", "modules_of", "restore_learner", "save_learner"]
