"""RLlib's other names for settings, sorted in one pass where a config takes them: the keyword
arguments of a builder call, or the keys of a dict given to `from_dict` / `update_from_dict`.

RLlib's older names become the current ones (one deprecation warning each), the keys RLlib's
`to_dict()` spells otherwise are renamed, Ray's cluster keys are dropped (one warning each),
and RLlib's settings without an effect here are set apart for their own check
(`ConfigBase._take_rllib_settings`); what is left is unknown. The names come from the tables
of `trainer.compat.old_api` and `trainer.compat.rllib_settings`, which import nothing of the
config.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, NamedTuple

from trainer.compat.old_api import CLUSTER_ONLY_KEYS, DICT_SPELLINGS, OLD_CONFIG_KEYS
from trainer.util.checks import INT_MAX, is_bool, is_number
from trainer.util.deprecation import warn_once

#: RLlib's per-EnvRunner resource settings: the Ray backend's actor options (without effect,
#: and warned about, with worker processes).
RAY_RESOURCE_SETTINGS = (
    "num_cpus_per_env_runner",
    "num_gpus_per_env_runner",
    "custom_resources_per_env_runner",
)


class SortedArguments(NamedTuple):
    """A builder call's keyword arguments beyond its own, sorted."""

    #: Current setting name -> value, for RLlib's older names of the builder's settings.
    renamed: dict[str, Any]
    #: RLlib's settings of this builder method that have no effect here.
    rllib: dict[str, Any]
    #: The rest: no setting of this builder method by any name.
    unknown: dict[str, Any]


def sort_arguments(
    method: str, arguments: dict[str, Any], own: Collection[str], rllib_names: Collection[str]
) -> SortedArguments:
    """`arguments` of the builder call `method(...)`, sorted in one pass: an older name of one
    of `own` (the builder's settings) is renamed with one warning; a name in `rllib_names` is
    RLlib's; any other is unknown."""
    renamed: dict[str, Any] = {}
    rllib: dict[str, Any] = {}
    unknown: dict[str, Any] = {}
    for name, value in arguments.items():
        new_name = OLD_CONFIG_KEYS.get(name)
        if new_name is not None and new_name in own:
            warn_once(f"{method}({name}=...)", f"{method}({new_name}=...)")
            renamed[new_name] = value
        elif name in rllib_names:
            rllib[name] = value
        else:
            unknown[name] = value
    return SortedArguments(renamed, rllib, unknown)


def current_names(config_dict: dict[str, Any]) -> dict[str, Any]:
    """`config_dict` with current setting names: old keys are renamed (one warning each), the
    keys RLlib's `to_dict()` writes under another name renamed silently, cluster-only keys
    dropped (one warning each)."""
    result = {}
    for key, value in config_dict.items():
        if key in OLD_CONFIG_KEYS:
            warn_once(f'config key "{key}"', f'"{OLD_CONFIG_KEYS[key]}"')
            key = OLD_CONFIG_KEYS[key]
        elif key in DICT_SPELLINGS:
            key = DICT_SPELLINGS[key]
        elif key in CLUSTER_ONLY_KEYS:
            warn_once(
                f'config key "{key}" (Ray cluster resources)',
                "nothing: every EnvRunner is one process on this machine; the key is ignored",
            )
            continue
        result[key] = value
    return result


def kind_problem(value: Any, default: Any) -> str | None:
    """What an RLlib setting without an effect here takes, by its RLlib default's kind (None
    when `value` is of that kind): such settings are stored and warned about, never used, so
    this is their only check; a value of another kind is a mistake whatever the setting."""
    if default is None:
        return None  # RLlib's None defaults stand for classes, callables, paths, ...
    if isinstance(default, bool):
        return is_bool(value)
    if isinstance(default, (int, float)):
        # An int or a float either way: RLlib takes fractional CPUs and GPUs, and "auto"
        # for its CPU counts.
        if value == "auto" and isinstance(value, str):
            return None
        if default >= 0:
            fine = is_number(value) and 0 <= value <= INT_MAX
            return None if fine else "a number >= 0 and <= 2**63 - 1"
        return None if is_number(value) and abs(value) <= INT_MAX else "a finite number"
    if default == "auto":  # RLlib's CPU counts
        if value == "auto" or (is_number(value) and 0 <= value <= INT_MAX):
            return None
        return '"auto" or a number >= 0'
    if isinstance(default, str):
        return None if isinstance(value, str) else "a string"
    if isinstance(default, dict):
        return None if value is None or isinstance(value, dict) else "a dict or None"
    if isinstance(default, (list, tuple)):
        return None if value is None or isinstance(value, (list, tuple)) else "a list or None"
    return None
