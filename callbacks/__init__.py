"""The public import path of the callback API (`from callbacks import RLlibCallback`); the code
lives in `trainer.callbacks`, which the trainer itself imports, so that a user's own
`callbacks.py` next to a script cannot break `import trainer`. With such a file, import from
`trainer.callbacks` instead. `callbacks.callback`, `callbacks.chain` and `callbacks.old_api` are
the very modules of `trainer.callbacks` (one class, one state, whichever path imports them)."""

import sys as _sys
from typing import Any

from trainer import callbacks as _impl
from trainer.callbacks import (  # noqa: F401
    ALGORITHM_EVENTS,
    ENV_RUNNER_EVENTS,
    EVENTS,
    CallbackChain,
    CallbackError,
    MultiCallbacks,
    RLlibCallback,
    __all__,
    callback,
    chain,
    make_multi_callbacks,
    old_api,
    warn_once,
)

for _name in ("callback", "chain", "old_api"):
    _sys.modules[f"{__name__}.{_name}"] = getattr(_impl, _name)


def __getattr__(name: str) -> Any:
    return getattr(_impl, name)  # `DefaultCallbacks` (with its warning), and the rest
