"""Module checkpoints: an RLModule (or a MultiRLModule) saved on its own, in this project's
checkpoint format (`trainer.checkpoints`).

A module's checkpoint is a directory with `metadata.json` (the format's name and version, the
library version, `"kind": "rl_module"`, the module's class as a "module:qualname" import path
and its constructor arguments as plain data: spaces, flags, model config) and
`module_state.msgpack` (its `get_state()`). A MultiRLModule's checkpoint has
`"kind": "multi_rl_module"`, its own class and arguments, the ids of its modules, and one
subdirectory per module id, each a module's checkpoint: the layout RLlib uses, so
`restore_from_path(path, component="module_id")` and `RLModule.from_checkpoint(path/module_id)`
work on one module of N.

Nothing here unpickles: a class is imported by its path, which is why a module class defined in
a function or by a lambda cannot be saved (the error says so). A class the running script
defines (`__main__`, as RLlib's example scripts do) is named by its place in the script,
"__main__:qualname", also where a Ray worker (a Tune trial's actor) saves it, holding the
script's class by value: the script, or a later run of it, rebuilds it; elsewhere loading it
is refused, naming the script.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from trainer.checkpoints.codec import NotPlainData, pack
from trainer.checkpoints.config_data import (
    ConfigDataError,
    decode,
    encode,
    import_path,
    resolve_import_path,
)
from trainer.checkpoints.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    METADATA_FILE,
    STATE_FILE_SUFFIX,
    CheckpointError,
)
from trainer.checkpoints.format import library_version as library_version
from trainer.checkpoints.location import local_path
from trainer.checkpoints.reader import open_checkpoint
from trainer.checkpoints.rllib_layout import RLLIB_CHECKPOINT_READER, is_rllib_checkpoint
from trainer.checkpoints.writer import write_checkpoint
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec
from trainer.core.rl_module import RLModuleSpec, validate_module_id

RL_MODULE_KIND = "rl_module"
MULTI_RL_MODULE_KIND = "multi_rl_module"
#: RLlib's component name of the module inside a learner's or an EnvRunner's state.
COMPONENT_RL_MODULE = "rl_module"


#: The import path prefix of a class the running script defines (`python script.py`, or a
#: script the launcher runs): it resolves while that script is `__main__`.
MAIN_PREFIX = "__main__:"


def _class_path(module: Any, path: str) -> str:
    cls = type(module)
    class_path = import_path(cls)
    if class_path is None and cls.__module__ == "__main__" and "<" not in cls.__qualname__:
        # A script's own module class (RLlib's examples define theirs in the script): named
        # by its place in the script, which a process running the same script resolves. In a
        # Ray worker (a Tune trial's actor, an EnvRunner) the class came by value from the
        # script's process (cloudpickle pickles `__main__` classes so), so the worker's own
        # `__main__` does not hold it; the script that saved it does.
        class_path = MAIN_PREFIX + cls.__qualname__
    if class_path is None:
        raise CheckpointError(
            path,
            f"{cls.__qualname__} (module {cls.__module__!r}) cannot be named by an import "
            "path, so a checkpoint could not rebuild it: define the module class at the top "
            "level of an importable module or of the script (not inside a function)",
        )
    return class_path


def _constructor_data(module: Any, path: str, *, multi: bool) -> dict[str, Any]:
    """The constructor arguments a checkpoint stores (spaces, flags, model config)."""
    _, kwargs = module.get_ctor_args_and_kwargs()
    names = ["observation_space", "action_space", "inference_only", "model_config"]
    if not multi:
        names.append("learner_only")
    unstored: list[str] = []
    data = {name: encode(kwargs.get(name), name, unstored) for name in names}
    if unstored:
        raise CheckpointError(
            path,
            f"{type(module).__qualname__}'s {', '.join(unstored)} cannot be stored as plain "
            "data (a space of an unsupported kind, or code without an import path)",
        )
    return data


def _metadata(kind: str, module: Any, path: str, *, multi: bool) -> dict[str, Any]:
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": library_version(),
        "kind": kind,
        "module_class": _class_path(module, path),
        "constructor": _constructor_data(module, path, multi=multi),
    }


def _packed_state(state: Any, path: str) -> bytes:
    try:
        return pack(state)
    except NotPlainData as error:
        raise CheckpointError(
            path,
            f"the module's state cannot be stored: {error.where}: {error.problem} (get_state() "
            "must return plain data: dicts, lists, numbers, strings, numpy arrays)",
        ) from None


def save_module(module: Any, path: str | os.PathLike | None, *, state: Any = None) -> str:
    """Writes the checkpoint of `module` (a MultiRLModule with one subdirectory per module)
    at `path` (default: a new temporary directory); returns the path."""
    if path is None:
        import tempfile

        path = tempfile.mkdtemp(prefix="rl_module_")
    path = os.path.abspath(local_path(path))
    if isinstance(module, MultiRLModule):
        states = state if state is not None else module.get_state()
        ids = list(module.keys())
        for module_id in ids:
            if not isinstance(module_id, str):
                raise CheckpointError(
                    path, f"module id {module_id!r} names a directory: it must be a string"
                )
        metadata = {
            **_metadata(MULTI_RL_MODULE_KIND, module, path, multi=True),
            "modules": ids,
        }
        written = write_checkpoint(path, {}, metadata)
        for module_id in ids:
            save_module(
                module[module_id],
                os.path.join(written, module_id),
                state=states.get(module_id) if isinstance(states, dict) else None,
            )
        return written
    module_state = state if state is not None else module.get_state()
    files = {module.STATE_FILE_NAME + STATE_FILE_SUFFIX: _packed_state(module_state, path)}
    return write_checkpoint(path, files, _metadata(RL_MODULE_KIND, module, path, multi=False))


def _read_metadata(path: str) -> dict[str, Any]:
    """`metadata.json` of a module checkpoint (verified by `open_checkpoint`)."""
    checkpoint = open_checkpoint(path, components=[])
    kind = checkpoint.metadata.get("kind")
    if kind not in (RL_MODULE_KIND, MULTI_RL_MODULE_KIND):
        raise CheckpointError(
            path,
            f"not a module checkpoint ({METADATA_FILE} says kind={kind!r}); an Algorithm's "
            "checkpoint is read with Algorithm.from_checkpoint / restore_from_path",
        )
    return checkpoint.metadata


def _module_class(metadata: dict[str, Any], path: str) -> type:
    class_path = metadata.get("module_class")
    try:
        cls = resolve_import_path(str(class_path))
    except Exception as error:  # noqa: BLE001 - reported with the path
        where = (
            ": the script that saved it defined the class (as __main__); load it from that "
            "script, or give the class (RLModuleSpec(module_class=..., load_state_path=...))"
            if str(class_path).startswith(MAIN_PREFIX)
            else ""
        )
        raise CheckpointError(
            path,
            f"cannot import the module class {class_path!r} ({type(error).__name__}: "
            f"{error}){where}",
        ) from None
    if not isinstance(cls, type):
        raise CheckpointError(path, f"{class_path!r} is not a class")
    return cls


def _constructor(metadata: dict[str, Any], path: str) -> dict[str, Any]:
    data = metadata.get("constructor")
    if not isinstance(data, dict):
        raise CheckpointError(path, f"{METADATA_FILE} has no valid 'constructor' entry")
    try:
        return {key: decode(value, key) for key, value in data.items()}
    except ConfigDataError as error:
        raise CheckpointError(path, str(error)) from None


def _module_state(path: str, state_name: str) -> Any:
    checkpoint = open_checkpoint(path)
    if not checkpoint.has(state_name):
        raise CheckpointError(path, f"has no {state_name}{STATE_FILE_SUFFIX}")
    return checkpoint.load(state_name)


def spec_of_checkpoint(path: str | os.PathLike) -> Any:
    """The `RLModuleSpec` (or `MultiRLModuleSpec`) that builds the module saved at `path`."""
    path = os.path.abspath(local_path(path))
    metadata = _read_metadata(path)
    cls = _module_class(metadata, path)
    kwargs = _constructor(metadata, path)
    try:
        if metadata["kind"] == RL_MODULE_KIND:
            return RLModuleSpec(module_class=cls, **kwargs)
        ids = metadata.get("modules")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise CheckpointError(path, f"{METADATA_FILE} has no valid 'modules' list")
        return MultiRLModuleSpec(
            multi_rl_module_class=cls,
            rl_module_specs={
                module_id: spec_of_checkpoint(_submodule_path(path, module_id)) for module_id in ids
            },
            **kwargs,
        )
    except (TypeError, ValueError) as error:
        # A crafted 'constructor' entry: arguments the spec does not take.
        raise CheckpointError(
            path, f"{METADATA_FILE} has no valid 'constructor' entry ({error})"
        ) from None


def _submodule_path(path: str, module_id: str) -> str:
    try:
        validate_module_id(module_id, error=True)
    except ValueError as error:
        raise CheckpointError(path, str(error)) from None
    return os.path.join(path, module_id)


def load_module(path: str | os.PathLike, expected: type | None = None) -> Any:
    """The module saved at `path`, built from its spec and restored; `expected`: the class it
    must be (or derive from)."""
    path = os.path.abspath(local_path(path))
    if is_rllib_checkpoint(path):  # a module RLlib 2.60 saved (read without its pickles' code)
        module = importlib.import_module(RLLIB_CHECKPOINT_READER).load_rllib_module(path)
        if expected is not None and not isinstance(module, expected):
            raise CheckpointError(
                path, f"holds a {type(module).__qualname__}, which is not a {expected.__qualname__}"
            )
        return module
    spec = spec_of_checkpoint(path)
    cls = getattr(spec, "module_class", None) or spec.multi_rl_module_class
    if expected is not None and not issubclass(cls, expected):
        raise CheckpointError(
            path, f"holds a {cls.__qualname__}, which is not a {expected.__qualname__}"
        )
    module = spec.build()
    restore_module(module, path)
    return module


def restore_module(module: Any, path: str | os.PathLike, *, component: str | None = None) -> None:
    """Sets `module`'s state from the checkpoint at `path`. For a MultiRLModule, every saved
    module it holds is restored, or only `component` ("module_id" or "rl_module/module_id")."""
    path = os.path.abspath(local_path(path))
    metadata = _read_metadata(path)
    if isinstance(module, MultiRLModule):
        if metadata["kind"] != MULTI_RL_MODULE_KIND:
            raise CheckpointError(
                path, "holds a single module; restore it into one module of the MultiRLModule"
            )
        saved = list(metadata.get("modules") or [])
        wanted = saved
        if component is not None:
            module_id = (
                component.split("/", 1)[1] if component.startswith("rl_module/") else component
            )
            if module_id not in saved:
                raise CheckpointError(
                    path, f"has no module {module_id!r} (component={component!r}; saved: {saved})"
                )
            wanted = [module_id]
        for module_id in wanted:
            if module_id in module:
                restore_module(module[module_id], _submodule_path(path, module_id))
        return
    if component is not None:
        raise ValueError(
            f"restore_from_path(component={component!r}) names a module of a MultiRLModule; "
            "this is a single module"
        )
    if metadata["kind"] != RL_MODULE_KIND:
        raise CheckpointError(path, "holds a MultiRLModule; restore it into a MultiRLModule")
    module.set_state(_module_state(path, module.STATE_FILE_NAME))


__all__ = [
    "COMPONENT_RL_MODULE",
    "load_module",
    "restore_module",
    "save_module",
    "spec_of_checkpoint",
]
