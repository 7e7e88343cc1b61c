"""The callback API: `RLlibCallback` (also under RLlib's older name `DefaultCallbacks`),
`make_multi_callbacks`, and the chain that runs them in order (classes first, then per-event
callables)."""

from typing import Any

from trainer.callbacks.callback import (
    ALGORITHM_EVENTS,
    ENV_RUNNER_EVENTS,
    EVENTS,
    MultiCallbacks,
    RLlibCallback,
    make_multi_callbacks,
)
from trainer.callbacks.chain import CallbackChain, CallbackError
from trainer.compat import old_callbacks as old_api  # noqa: F401 (`callbacks.old_api`)
from trainer.compat.old_callbacks import warn_once

__all__ = [
    "ALGORITHM_EVENTS",
    "ENV_RUNNER_EVENTS",
    "EVENTS",
    "CallbackChain",
    "CallbackError",
    "DefaultCallbacks",
    "MultiCallbacks",
    "RLlibCallback",
    "make_multi_callbacks",
]


def __getattr__(name: str) -> Any:
    # `DefaultCallbacks` is the same class as `RLlibCallback`; importing it by the old name warns.
    if name == "DefaultCallbacks":
        warn_once("DefaultCallbacks", "RLlibCallback (the same class)")
        return RLlibCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
