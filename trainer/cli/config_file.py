"""`train --config FILE`: AlgorithmConfig settings from a JSON or TOML file.

The file holds setting names as `to_dict()` writes them, or tables named after the builder
methods, or both (TOML shown; JSON is the same as nested objects):

    algo = "PPO"                    # optional; --algo wins
    lr = 0.0003                     # any setting by name
    [training]                      # or a builder method's keyword arguments
    num_epochs = 6
    [rl_module.model_config]
    fcnet_hiddens = [32]
    [callbacks]
    callbacks_class = "my_callbacks:LogAngle"   # "module:name" is imported
    [stop]                          # Tune's result keys; the --stop-* flags win
    "env_runners/episode_return_mean" = 450
    training_iteration = 100

Values that name code (callback classes and functions, `env_task_fn`,
`custom_evaluation_function`) are given as "module:attribute" strings and imported from the
current directory or the installed packages. Every error names the file and the key.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, TRAINING_ITERATION

#: Tables that are builder methods: `[training]` is `config.training(**table)`.
BUILDER_TABLES = (
    "environment",
    "env_runners",
    "training",
    "rl_module",
    "callbacks",
    "debugging",
    "reporting",
    "fault_tolerance",
    "checkpointing",
    "exploration",
    "evaluation",
    "api_stack",
    "learners",
    "resources",
)
#: Settings whose value is code: a "module:attribute" string is imported.
CODE_SETTINGS = ("callbacks", "callbacks_class", "env_task_fn", "custom_evaluation_function")
#: The `[stop]` table's keys, as Tune names them, and the stop criterion each sets.
STOP_KEYS = {
    TRAINING_ITERATION: "iterations",
    NUM_ENV_STEPS_SAMPLED_LIFETIME: "env_steps",
    "env_runners/episode_return_mean": "mean_return",
    "time_total_s": "seconds",
    "evaluation/env_runners/episode_return_mean": "evaluation_return",
}


# Internal to the command line: it prints the message and exits (not raised by the API).
class ConfigFileError(ValueError):
    """The `--config` file cannot be read or applied; names the file and the key."""


def read_config_file(path: str) -> dict[str, Any]:
    """The file's contents as a dict: `.toml` with `tomllib`, anything else as JSON."""
    where = f"argument --config: {path}"
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ConfigFileError(f"{where}: cannot read it ({error.strerror})") from None
    if path.endswith(".toml"):
        try:
            import tomllib
        except ImportError:
            raise ConfigFileError(
                f"{where}: TOML needs Python 3.11 or newer (tomllib); give a .json file instead"
            ) from None
        try:
            content = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise ConfigFileError(f"{where}: not valid TOML: {error}") from None
    else:
        try:
            content = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ConfigFileError(
                f"{where}: not valid JSON: {error} (a .toml file is read as TOML)"
            ) from None
    if not isinstance(content, dict):
        raise ConfigFileError(
            f"{where}: must hold an object of settings, not a {type(content).__name__}"
        )
    return content


def import_object(spec: str, where: str) -> Any:
    """`"package.module:attribute"` imported, with the current directory importable."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigFileError(f"{where}={spec!r}: name code as 'module:attribute'")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as error:
        raise ConfigFileError(f"{where}={spec!r}: cannot import it ({error})") from None
    return target


def _resolve_code(key: str, value: Any, where: str) -> Any:
    if isinstance(value, str) and ":" in value:
        return import_object(value, f"{where}{key}")
    if isinstance(value, list):
        return [_resolve_code(key, item, where) for item in value]
    return value


def apply_config_file(config: AlgorithmConfig, content: dict[str, Any], path: str) -> dict:
    """Applies the settings in `content` to `config`; returns the `[stop]` table as stop
    criteria names (see `trainer.cli.stop.StopCriteria`)."""
    where = f"argument --config: {path}: "
    # "callbacks" is a table of callbacks() arguments, or (as RLlib's to_dict writes it) the
    # callback class itself.
    tables = [
        t
        for t in BUILDER_TABLES
        if t in content and (t != "callbacks" or isinstance(content[t], dict))
    ]
    settings = {k: v for k, v in content.items() if k not in ("algo", "stop", *tables)}
    for key, value in settings.items():
        value = _resolve_code(key, value, where) if key in CODE_SETTINGS else value
        try:
            config.update_from_dict({key: value})
        except ConfigError as error:
            raise ConfigFileError(f"{where}{key}: {error}") from None
    for table in tables:
        arguments = content[table]
        if not isinstance(arguments, dict):
            raise ConfigFileError(
                f"{where}[{table}] must be a table of {table}() arguments, not {arguments!r}"
            )
        if table == "callbacks":
            arguments = {
                k: _resolve_code(k, v, f"{where}[callbacks] ") for k, v in arguments.items()
            }
        else:
            arguments = {
                k: _resolve_code(k, v, f"{where}[{table}] ") if k in CODE_SETTINGS else v
                for k, v in arguments.items()
            }
        try:
            getattr(config, table)(**arguments)
        except (ConfigError, TypeError) as error:
            raise ConfigFileError(f"{where}[{table}]: {error}") from None
    return _stop_table(content.get("stop", {}), where)


def _stop_table(table: Any, where: str) -> dict:
    if not isinstance(table, dict):
        raise ConfigFileError(f"{where}[stop] must be a table of result keys, not {table!r}")
    criteria = {}
    for key, value in table.items():
        if key not in STOP_KEYS:
            raise ConfigFileError(
                f"{where}[stop] {key}: not a stop key; allowed: {', '.join(map(repr, STOP_KEYS))}"
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigFileError(f"{where}[stop] {key}={value!r}: must be a number")
        criteria[STOP_KEYS[key]] = value
    return criteria
