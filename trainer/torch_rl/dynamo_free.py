"""torch's optimizers without `torch._dynamo` while nothing in the process compiles.

Building a `torch.optim` optimizer and stepping it import `torch._dynamo` (about 1 s of CPU,
a third of a short torch run's wall time), only to tell the compiler to leave the optimizer
alone: `add_param_group`, `zero_grad`, `state_dict`, `load_state_dict` and the functional
updates (`torch.optim.adam.adam`, ...) are wrapped by `torch._disable_dynamo`, which imports
the compiler on the first call, and `step` by `_use_grad_for_differentiable`, which imports it
on every call (and marks graph breaks, no-ops outside a compiled function).

While `torch._dynamo` is not imported no function can be compiled, so "disabled for the
compiler" and "called directly" are the same call. Here:

- `skip_until_compiler_imported()` gives each of those wrapped functions (`torch._disable_
  dynamo` caches its disabled twin in the function's `__dynamo_disable` attribute) a twin that
  calls it directly while `torch._dynamo` is not imported, and from the first call after it is
  builds and keeps torch's own (`torch._dynamo.disable`);
- `optimizer_step(optimizer)` is `optimizer.step()` as torch's wrappers run it (the profiler
  range, the step hooks, the grad mode, `_optimizer_step_code`, and the mark a torch lr
  scheduler's wrapper of the instance's `step` sets) without the import, while the compiler is
  not imported; anything else (a compiler imported, another wrapper of the instance's `step`,
  a torch whose wrappers this module does not know) is `optimizer.step()` itself.

The numbers are torch's: the same update functions run, on the same tensors."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

import torch

COMPILER = "torch._dynamo"
#: Where `torch._disable_dynamo` keeps a function's disabled twin (torch/_compile.py).
_TWIN = "__dynamo_disable"
#: The wrapped methods of `torch.optim.Optimizer` an optimizer's build and updates call.
_OPTIMIZER_METHODS = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")
#: `torch.optim`'s modules whose functional update (of the same name) is wrapped
#: (`_disable_dynamo_if_unsupported`).
_FUNCTIONAL = (
    "adam", "adamw", "sgd", "rmsprop", "adagrad", "adamax", "adadelta", "nadam", "radam", "asgd",
    "rprop",
)  # fmt: skip
_skipping = False


def compiler_imported() -> bool:
    return COMPILER in sys.modules


def _twin_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` called directly while the compiler is not imported; torch's disabled `fn` after."""

    def twin(*args: Any, **kwargs: Any) -> Any:
        if COMPILER not in sys.modules:
            return fn(*args, **kwargs)
        import torch._dynamo

        disabled = torch._dynamo.disable(fn, recursive=True, wrapping=False)
        setattr(fn, _TWIN, disabled)
        return disabled(*args, **kwargs)

    return twin


def _give_twin(wrapper: Any) -> None:
    """The function `torch._disable_dynamo` wrapped in `wrapper` gets a twin (unless it has
    one: torch's own, once built, stays)."""
    fn = getattr(wrapper, "__wrapped__", None)
    # (`_disable_dynamo_if_unsupported` wraps a `_disable_dynamo` wrapper of the same function.)
    if fn is None or not callable(fn) or getattr(fn, _TWIN, None) is not None:
        return
    setattr(fn, _TWIN, _twin_of(fn))


def skip_until_compiler_imported() -> None:
    """Gives the optimizers' compiler-disabled functions their twins (once per process; no
    effect once `torch._dynamo` is imported)."""
    global _skipping
    if _skipping or compiler_imported():
        return
    _skipping = True
    for name in _OPTIMIZER_METHODS:
        _give_twin(torch.optim.Optimizer.__dict__.get(name))
    for name in _FUNCTIONAL:
        try:
            module = importlib.import_module(f"torch.optim.{name}")
        except ImportError:
            continue
        _give_twin(getattr(module, name, None))


def _plain_step(optimizer: torch.optim.Optimizer) -> Callable[..., Any] | None:
    """The optimizer class's own `step` under torch's two wrappers (the profiler's and hooks'
    `profile_hook_step`, then `_use_grad_for_differentiable`), or None where `step` is not
    wrapped that way (a class of its own, another torch)."""
    hooked = type(optimizer).step
    if not getattr(hooked, "hooked", False):
        return None
    use_grad = getattr(hooked, "__wrapped__", None)
    code = getattr(use_grad, "__code__", None)  # (its name and qualname are the step's)
    if code is None or code.co_name != "_use_grad":
        return None
    return getattr(use_grad, "__wrapped__", None)


class _StepParts(NamedTuple):
    """What torch's wrappers of an optimizer's `step` run around the class's own step."""

    step: Callable[..., Any]
    global_pre_hooks: Mapping[Any, Callable[..., Any]]
    own_pre_hooks: Mapping[Any, Callable[..., Any]]
    own_post_hooks: Mapping[Any, Callable[..., Any]]
    global_post_hooks: Mapping[Any, Callable[..., Any]]
    record: Callable[[], Any]
    #: The instance's `step` is a torch lr scheduler's wrapper (which marks the step called).
    scheduled: bool


def _step_parts(optimizer: torch.optim.Optimizer) -> _StepParts | None:
    """The parts of `optimizer.step()` as this torch has them, or None where they are not
    known here (another torch, or the instance's `step` wrapped by something but a torch lr
    scheduler, or a compiler imported)."""
    from torch.optim import optimizer as optimizer_module

    own_step = vars(optimizer).get("step")
    scheduled = own_step is not None
    if scheduled and not getattr(own_step, "_wrapped_by_lr_sched", False):
        return None
    step = None if compiler_imported() else _plain_step(optimizer)
    parts = (
        step,
        getattr(optimizer_module, "_global_optimizer_pre_hooks", None),
        getattr(optimizer, "_optimizer_step_pre_hooks", None),
        getattr(optimizer, "_optimizer_step_post_hooks", None),
        getattr(optimizer_module, "_global_optimizer_post_hooks", None),
        getattr(optimizer, "_optimizer_step_code", None),
    )
    if any(part is None for part in parts):
        return None
    return _StepParts(*cast(tuple, (*parts, scheduled)))


def optimizer_step(optimizer: torch.optim.Optimizer) -> None:
    """`optimizer.step()`, without importing the compiler where that is the same step: torch's
    `profile_hook_step` (the profiler range, the pre-hooks, which may replace the arguments,
    the step, `_optimizer_step_code`, the post-hooks) around the class's own step under the
    grad mode `_use_grad_for_differentiable` sets, and what a torch lr scheduler's wrapper of
    the instance's `step` adds (the step marked as called)."""
    parts = _step_parts(optimizer)
    if parts is None:
        optimizer.step()
        return
    skip_until_compiler_imported()
    if parts.scheduled:
        optimizer._opt_called = True
    args: tuple = (optimizer,)
    kwargs: dict = {}
    name = f"Optimizer.step#{type(optimizer).__name__}.step"
    with torch.autograd.profiler.record_function(name):
        for pre_hook in (*parts.global_pre_hooks.values(), *parts.own_pre_hooks.values()):
            result = pre_hook(optimizer, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{parts.step} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
                args, kwargs = result
        enabled = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(optimizer.defaults["differentiable"])
            parts.step(*args, **kwargs)
        finally:
            torch.set_grad_enabled(enabled)
        parts.record()
        for post_hook in (*parts.own_post_hooks.values(), *parts.global_post_hooks.values()):
            post_hook(optimizer, args, kwargs)
