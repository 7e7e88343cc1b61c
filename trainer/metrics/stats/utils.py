"""Value helpers of the stats classes (RLlib 2.60's `ray.rllib.utils.metrics.stats.utils`).

RLlib's versions also move torch and tf tensors to the CPU; values here are Python and numpy
numbers (there is no torch), so only numpy's scalars are turned into Python numbers.
"""

from __future__ import annotations

import numbers
from collections import deque
from typing import Any

import numpy as np


def safe_isnan(value: Any) -> bool:
    """Whether `value` is NaN (False for anything that is not a number)."""
    try:
        return bool(np.isnan(value))
    except (TypeError, ValueError):
        return False


def single_value_to_cpu(value: Any) -> Any:
    """`value` as a plain Python number where it is a numpy scalar or 0-d array."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    return value


def number_value(value: Any, stats_cls_name: str) -> Any:
    """`value` as a plain number; ValueError naming the class for anything else (RLlib's
    numeric stats fail later and less clearly on lists, dicts and strings)."""
    if type(value) is float or type(value) is int:  # the common case, without ABC checks
        return value
    value = single_value_to_cpu(value)
    if not isinstance(value, numbers.Number):
        raise ValueError(
            f"{stats_cls_name}: logged value {value!r} is not a number; log "
            "structured values or items with reduce='item' or 'item_series'"
        )
    return value


def batch_values_to_cpu(values: list | deque) -> list:
    """`values` as a new list of plain values."""
    return [single_value_to_cpu(value) for value in values] if values else []
