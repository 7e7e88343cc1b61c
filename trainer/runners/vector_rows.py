"""Per-sub-env rows of a vector env's batched outputs (observations, infos), and the float
arrays of a batch (for the EnvRunner's NaN check). Pure functions over gymnasium's batch
formats."""

from __future__ import annotations

from typing import Any

import numpy as np


def unbatch(batched: Any, n: int) -> Any:
    """Per-sub-env rows of a batched observation: an array as it is (its rows index it), a
    nested dict / tuple of arrays as a list of nested rows."""
    if isinstance(batched, np.ndarray):
        return batched
    if isinstance(batched, dict):
        columns = {key: unbatch(value, n) for key, value in batched.items()}
        return [{key: column[i] for key, column in columns.items()} for i in range(n)]
    if isinstance(batched, tuple):
        parts = [unbatch(value, n) for value in batched]
        return [tuple(part[i] for part in parts) for i in range(n)]
    return list(batched)  # a column inside a dict or tuple


def unbatch_infos(infos: dict, num_envs: int) -> list[dict]:
    """gymnasium's batched info dict (`key` batches with `_key` masks, nested dicts batched
    the same way) as one dict per sub-env: for vector envs that batch their infos themselves
    (gym_env_vectorize_mode="vector_entry_point"). A value without a mask that is not a batch
    of `num_envs` rows goes to every sub-env as it is."""
    per_env: list[dict] = [{} for _ in range(num_envs)]
    for key, values in infos.items():
        if isinstance(key, str) and key.startswith("_") and key[1:] in infos:
            continue  # the mask of `key[1:]`
        mask = infos.get(f"_{key}")
        if isinstance(values, dict):
            rows = unbatch_infos(values, num_envs)
        elif mask is not None or (
            isinstance(values, (np.ndarray, list, tuple)) and len(values) == num_envs
        ):
            rows = values
        else:
            rows = [values] * num_envs
        for i in range(num_envs):
            if mask is None or mask[i]:
                per_env[i][key] = rows[i]
    return per_env


def sub_env_infos(env: Any, infos: dict, num_envs: int) -> list[dict]:
    """Each sub-env's info dict of the last reset/step: as the sub-env returned it where the
    vector env keeps them (`RawInfosMixin`), else unbatched from gymnasium's batched form."""
    kept = getattr(env, "sub_env_infos", None)
    return kept if kept is not None else unbatch_infos(infos, num_envs)


def float_leaves(values: Any) -> list[np.ndarray]:
    """The float arrays in a batch (an array, or a dict/tuple of them: Dict and Tuple
    spaces)."""
    if isinstance(values, dict):
        return [leaf for value in values.values() for leaf in float_leaves(value)]
    if isinstance(values, (tuple, list)):
        return [leaf for value in values for leaf in float_leaves(value)]
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        return [values]
    return []
