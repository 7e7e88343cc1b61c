"""Torch tensors through the numpy modules and distributions: RLlib's default modules are torch
ones, and scripts written for them pass torch tensors and read torch tensors back
(`.detach().cpu().numpy()`, `.numpy()`, `torch.isfinite(...)`). A numpy module (or numpy
distribution) given a torch tensor computes in numpy and answers in torch tensors: `from_torch`
on the way in, `to_torch` on the way out; a tensor of a torch trace (`is_traced`) has no
numbers, so a traced module runs its torch twin instead. Torch is never imported here: a
tensor exists only where torch is imported already.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
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


def is_traced(value: Any) -> bool:
    """Whether `value` is a tensor that a torch trace (`torch.export`, `torch.onnx.export`,
    `torch.compile`) stands in for a real one with: a subclass of `torch.Tensor` (a fake or
    functional tensor), which holds no numbers numpy could read."""
    torch = _torch_of(value)
    return torch is not None and type(value) not in (torch.Tensor, torch.nn.Parameter)


@contextlib.contextmanager
def outside_the_trace() -> Iterator[None]:
    """Real tensors again, during a torch trace: what is built here (a torch twin and its
    weights) is not recorded, and enters the traced graph as constants. Torch's own switches
    (private, as torch.export's are; where a torch version lacks one, what is built is
    recorded and torch's exporter may refuse it); torch is imported already when there is a
    trace."""
    switches = []
    for module, name in _TRACE_SWITCHES:
        try:
            switches.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError):
            continue
    with contextlib.ExitStack() as stack:
        for switch in switches:
            stack.enter_context(switch())
        yield


#: torch's switches that suspend a trace: fake tensors, functionalization, proxy tracing.
_TRACE_SWITCHES = (
    ("torch._subclasses.fake_tensor", "unset_fake_temporarily"),
    ("torch._subclasses.functional_tensor", "disable_functional_mode"),
    ("torch.fx.experimental.proxy_tensor", "disable_proxy_modes_tracing"),
)


def _torch_of(value: Any) -> Any:
    """The torch module if `value` is a torch tensor, else None (never imports torch: a tensor
    exists only where torch is imported already)."""
    if type(value).__module__.startswith("torch"):
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.Tensor):
            return torch
    return None
