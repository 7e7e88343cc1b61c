"""A config as plain data, so that a checkpoint can rebuild its algorithm without unpickling.

`config_to_data(config)` turns `config.to_dict()` into JSON data: numbers, strings, lists and
str-keyed maps stay as they are; tuples, gymnasium spaces and floats JSON cannot spell are
tagged; code (callback classes, env classes and creator functions, connector factories,
exploration classes) is recorded by its import path, `{"__import__": "module:qualname"}`, when
importing that path gives back the same object. Code that has no such path (defined in
`__main__`, a lambda, a class made inside a function, a `functools.partial`) cannot be named;
its place is listed under `"unstored"`, and only the checkpoint's pickle file (opt-in) carries it.

`config_from_data(data, config_base, algorithm_base)` imports the algorithm and config classes
and every recorded path (each must be a class or a function; the algorithm and config classes
must derive from the bases the caller gives: this format does not know the algorithms) and
rebuilds the config with `from_dict`. Every problem is a `ConfigDataError` naming the
setting.
"""

from __future__ import annotations

import math
import os
from typing import Any, TypeVar

import gymnasium as gym

from trainer.core.spaces import space_from_dict, space_to_dict
from trainer.errors import ConfigDataError as ConfigDataError
from trainer.util.import_paths import import_path as import_path
from trainer.util.import_paths import resolve_import_path as resolve_import_path

IMPORT_TAG = "__import__"
TUPLE_TAG = "__tuple__"
SPACE_TAG = "__space__"
FLOAT_TAG = "__float__"  # inf, -inf and nan, which JSON has no spelling for
#: A module or policy spec (`RLModuleSpec`, `MultiRLModuleSpec`, `PolicySpec`): its class's
#: import path and its fields (a multi-agent config's `policies` and `rl_module_spec`).
SPEC_TAG = "__spec__"
#: Version of this encoding, stored with the data.
CONFIG_DATA_VERSION = 1


def _is_code(value: Any) -> bool:
    return isinstance(value, type) or callable(value)


#: The module and policy spec classes (`RLModuleSpec`, `MultiRLModuleSpec`, `PolicySpec`): each
#: registers itself where it is defined (`register_spec_class`), as the modules sit a layer
#: above this format. A spec is stored by its fields; a class read back must be one of them.
SPEC_CLASSES: list[type] = []

SpecClass = TypeVar("SpecClass", bound=type)


def register_spec_class(cls: SpecClass) -> SpecClass:
    """Class decorator: instances of `cls` (and of its subclasses) are stored as specs."""
    if cls not in SPEC_CLASSES:
        SPEC_CLASSES.append(cls)
    return cls


def _spec_classes() -> tuple[type, ...]:
    return tuple(SPEC_CLASSES)


def _spec_fields(value: Any) -> dict[str, Any]:
    """The constructor arguments of a spec (a dataclass's fields, a PolicySpec's four)."""
    import dataclasses

    if dataclasses.is_dataclass(value):
        fields = {
            f.name: getattr(value, f.name)
            for f in dataclasses.fields(value)
            if f.name not in ("model_config_dict", "module_specs")  # RLlib's removed names
        }
    else:
        names = ("policy_class", "observation_space", "action_space", "config")
        fields = dict(zip(names, value.get_state(), strict=True))
    for name, item in fields.items():
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            fields[name] = dataclasses.asdict(item)  # DefaultModelConfig
        elif isinstance(item, (set, frozenset)):
            fields[name] = sorted(item, key=str)  # modules_to_load
    return fields


def _encode_spec(value: Any, where: str, unstored: list[str]) -> Any:
    path = import_path(type(value))
    if path is None:
        unstored.append(where)
        return None
    return {SPEC_TAG: path, "fields": encode(_spec_fields(value), where, unstored)}


def _decode_spec(data: dict, where: str) -> Any:
    cls = decode({IMPORT_TAG: data[SPEC_TAG]}, where)
    if not (isinstance(cls, type) and issubclass(cls, _spec_classes())):
        raise ConfigDataError(where, f"{data[SPEC_TAG]!r} is not a module or policy spec class")
    fields = decode(data.get("fields"), where)
    if not isinstance(fields, dict):
        raise ConfigDataError(where, "a spec without its fields")
    try:
        return cls(**fields)
    except Exception as error:  # noqa: BLE001 - reported with the setting
        raise ConfigDataError(where, f"{type(error).__name__}: {error}") from None


def encode(value: Any, where: str, unstored: list[str]) -> Any:
    """`value` as JSON data; the places of code without an import path go to `unstored`."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {FLOAT_TAG: repr(value)}
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: encode(item, f"{where}[{key!r}]", unstored) for key, item in value.items()}
    elif isinstance(value, list):
        return [encode(item, f"{where}[{i}]", unstored) for i, item in enumerate(value)]
    elif isinstance(value, tuple):
        return {
            TUPLE_TAG: [encode(item, f"{where}[{i}]", unstored) for i, item in enumerate(value)]
        }
    elif isinstance(value, gym.Space):
        try:
            return {SPACE_TAG: space_to_dict(value)}
        except Exception:  # noqa: BLE001 - a space kind without a description
            pass
    elif hasattr(value, "item") and getattr(value, "shape", None) == ():
        return encode(value.item(), where, unstored)  # numpy scalars
    elif isinstance(value, _spec_classes()):
        return _encode_spec(value, where, unstored)
    elif isinstance(value, os.PathLike):
        return os.fspath(value)  # a spec's load_state_path given as a pathlib.Path
    elif _is_code(value):
        path = import_path(value)
        if path is not None:
            return {IMPORT_TAG: path}
    unstored.append(where)
    return None


def decode(data: Any, where: str) -> Any:
    if isinstance(data, list):
        return [decode(item, f"{where}[{i}]") for i, item in enumerate(data)]
    if not isinstance(data, dict):
        return data
    if IMPORT_TAG in data:
        try:
            value = resolve_import_path(data[IMPORT_TAG])
        except Exception as error:  # noqa: BLE001 - reported with the setting
            raise ConfigDataError(
                where, f"cannot import {data[IMPORT_TAG]!r} ({type(error).__name__}: {error})"
            ) from None
        if not _is_code(value):
            raise ConfigDataError(where, f"{data[IMPORT_TAG]!r} is not a class or function")
        return value
    if SPEC_TAG in data:
        return _decode_spec(data, where)
    if TUPLE_TAG in data:
        return tuple(decode(item, f"{where}[{i}]") for i, item in enumerate(data[TUPLE_TAG]))
    if SPACE_TAG in data:
        try:
            return space_from_dict(data[SPACE_TAG])
        except Exception as error:  # noqa: BLE001 - reported with the setting
            raise ConfigDataError(where, f"not a space description ({error})") from None
    if FLOAT_TAG in data:
        if data[FLOAT_TAG] not in ("inf", "-inf", "nan"):
            raise ConfigDataError(where, f"{data[FLOAT_TAG]!r} is not inf, -inf or nan")
        return float(data[FLOAT_TAG])
    return {key: decode(item, f"{where}[{key!r}]") for key, item in data.items()}


def config_to_data(config: Any, algorithm_class: type | None = None) -> dict:
    """The config (and the algorithm class: `config.algo_class` unless given) as JSON data, see
    the module docstring; `"unstored"` lists the settings that only a pickle can carry."""
    unstored: list[str] = []
    # Only what differs from a new config of the same class: smaller, and RLlib's older
    # setting names (kept in to_dict() for RLlib's sake) are not replayed with warnings.
    defaults = type(config)().to_dict()
    changed = {
        key: value
        for key, value in config.to_dict().items()
        if key not in defaults or not _equal(value, defaults[key])
    }
    settings = encode(changed, "config", unstored)
    classes = {
        "config_class": type(config),
        "algorithm_class": algorithm_class or config.algo_class,
    }
    data = {
        "version": CONFIG_DATA_VERSION,
        **{key: import_path(cls) for key, cls in classes.items()},
        "settings": settings,
        "unstored": unstored,
    }
    unstored += [key for key in classes if data[key] is None]
    return data


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - arrays and other values without a plain ==
        return False


def config_from_data(data: Any, config_base: type, algorithm_base: type) -> tuple[type, Any]:
    """(algorithm class, config) rebuilt from `config_to_data`'s output. Raises
    `ConfigDataError` if a setting was not stored, a path does not import, or the stored
    classes do not derive from `config_base` and `algorithm_base` (`AlgorithmConfig` and
    `Algorithm`, which the caller passes in)."""
    if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
        raise ConfigDataError("config", "not a stored config")
    unstored = data.get("unstored")
    if unstored is not None and not isinstance(unstored, list):
        raise ConfigDataError("unstored", f"is a {type(unstored).__name__}, not a list")
    if unstored:
        raise ConfigDataError(
            ", ".join(map(str, unstored)),
            "stored only in the pickle file (code defined in __main__, a "
            "lambda, a local class or a partial has no import path)",
        )
    classes: dict[str, type] = {}
    for key, base in (("config_class", config_base), ("algorithm_class", algorithm_base)):
        cls = decode({IMPORT_TAG: data.get(key)}, key) if isinstance(data.get(key), str) else None
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise ConfigDataError(key, f"{data.get(key)!r} is not a subclass of {base.__name__}")
        classes[key] = cls
    settings = decode(data["settings"], "config")
    try:
        config = classes["config_class"]().update_from_dict(settings)
    except Exception as error:  # noqa: BLE001 - a config error, reported with its cause
        raise ConfigDataError("config", f"{type(error).__name__}: {error}") from None
    return classes["algorithm_class"], config
