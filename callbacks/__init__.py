"""The callback API: `RLlibCallback` (alias `DefaultCallbacks`), `make_multi_callbacks`, and the
chain that runs them in order (classes first, then per-event callables)."""

from callbacks.callback import (
    ALGORITHM_EVENTS,
    ENV_RUNNER_EVENTS,
    EVENTS,
    DefaultCallbacks,
    RLlibCallback,
    make_multi_callbacks,
)
from callbacks.chain import CallbackChain, CallbackError

__all__ = [
    "ALGORITHM_EVENTS",
    "ENV_RUNNER_EVENTS",
    "EVENTS",
    "CallbackChain",
    "CallbackError",
    "DefaultCallbacks",
    "RLlibCallback",
    "make_multi_callbacks",
]
