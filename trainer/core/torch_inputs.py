"""Torch tensors through the numpy modules and distributions: RLlib's default modules are torch
ones, and scripts written for them pass torch tensors and read torch tensors back
(`.detach().cpu().numpy()`, `.numpy()`, `torch.isfinite(...)`). A numpy module (or numpy
distribution) given a torch tensor computes in numpy and answers in torch tensors: `from_torch`
on the way in, `to_torch` on the way out. Torch is never imported here: a tensor exists only
where torch is imported already.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def from_torch(value: Any) -> tuple[Any, Any]:
    """(`value` as numpy, the torch module) for a torch tensor (detached, on the CPU);
    (`value`, None) for anything else. With `to_torch`, a numpy module answers a caller that
    passes torch tensors (as to RLlib's default modules, torch ones) in torch tensors."""
    torch = _torch_of(value)
    if torch is None:
        return value, None
    return value.detach().cpu().numpy(), torch


def to_torch(array: Any, torch: Any) -> Any:
    """`array` as a torch tensor when `torch` (what `from_torch` returned) is set, else as it
    is."""
    if torch is None:
        return array
    return torch.from_numpy(np.ascontiguousarray(array))


def _torch_of(value: Any) -> Any:
    """The torch module if `value` is a torch tensor, else None (never imports torch: a tensor
    exists only where torch is imported already)."""
    if type(value).__module__.startswith("torch"):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.Tensor):
            return torch
    return None
