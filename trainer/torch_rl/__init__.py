"""Torch as a framework (the `torch` extra): `TorchRLModule`, RLlib's torch action
distributions, the default torch modules and the torch learners.

Nothing here is imported unless a config asks for torch (`framework("torch")`, a
`TorchRLModule` subclass in an `RLModuleSpec`, a torch learner class) or a script imports RLlib's
torch paths: a run on the numpy modules never imports torch. Weights cross processes as numpy
arrays (`get_state()`), and checkpoints hold them as arrays in msgpack (no pickle).
"""

from __future__ import annotations

import sys

from trainer.util.imports import collector_paused, installed


def missing_torch(what: str) -> str:
    """The message for `what` (a setting, a class) when torch is not installed: the extra to
    install, and a CPU build's command."""
    return (
        f"{what} needs torch, which is not installed: pip install -e '.[torch]' (a CPU "
        "build: pip install torch --index-url https://download.pytorch.org/whl/cpu)"
    )


def torch_installed() -> bool:
    """Whether torch can be imported, found without importing it (about 1 s of CPU): a
    config's `validate()` asks this, and torch is imported where a torch object is first
    built. False where it is not found, or was made unimportable (`sys.modules["torch"] =
    None`, as a test of the missing extra does)."""
    return installed("torch")


def require_torch(what: str) -> None:
    """Raises ImportError naming `what` and the extra to install when torch is missing.
    Imports torch (the first time: without the cyclic collector's passes, which took about a
    tenth of its import, see `collector_paused`)."""
    if sys.modules.get("torch") is not None:
        return
    try:
        with collector_paused():
            import torch  # noqa: F401
    except ImportError:
        raise ImportError(missing_torch(what)) from None
