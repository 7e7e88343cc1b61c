"""Value helpers of the stats classes (RLlib 2.60's `ray.rllib.utils.metrics.stats.utils`).

Values become plain Python numbers: numpy's scalars, and torch tensors of one element (a
torch Learner's loss), which RLlib also takes. RLlib keeps a GPU tensor there until the stat
is read; here it is read when logged (`.item()`). torch is never imported for this: a tensor
exists only where torch is imported already.
"""

from __future__ import annotations

import numbers
import sys
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
    """`value` as a plain Python number where it is a numpy scalar or 0-d array, or a torch
    tensor of one element (on any device; detached)."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.detach().cpu().item()
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
