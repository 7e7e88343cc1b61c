"""The optional extras the command line uses, and the one line that names the extra to install
when one is missing.

Every optional import of the command line goes through `require` (or, where the command goes on
without the library, `missing_note`), so that a missing library ends in one line such as
`error: --video cartpole.gif needs pygame, which is not installed: pip install -e '.[video]'`
rather than in a traceback. The command is `pip install -e '<checkout>[extra]'` where localrl
runs from a source checkout (the README's `pip install -e '.[...]'`), else
`pip install 'localrl[extra]'`.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

import trainer
from trainer.util.imports import installed

#: The extras of setup.cfg the command line names.
PLOT = "plot"
VIDEO = "video"
TENSORBOARD = "tensorboard"
TORCH = "torch"
RAY = "ray"
TUNE = "tune"
PETTINGZOO = "pettingzoo"
EXPORT = "export"

#: Exit status of a command that cannot run without an extra (as a flag it cannot honour).
MISSING_EXTRA_EXIT_STATUS = 2

#: The file that marks the folder above the package as a source checkout.
_CHECKOUT_MARKER = "setup.cfg"


class MissingExtra(Exception):
    """An optional library is not installed; the message names the extra that installs it.
    `trainer.cli.main` prints it as one line and exits with MISSING_EXTRA_EXIT_STATUS."""

    def __init__(self, what: str, library: str, extra: str):
        self.what, self.library, self.extra = what, library, extra
        super().__init__(
            f"{what} needs {library}, which is not installed: {install_command(extra)}"
        )


def checkout_root() -> str | None:
    """The source checkout localrl runs from (an editable install), or None."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(trainer.__file__)))
    return root if os.path.isfile(os.path.join(root, _CHECKOUT_MARKER)) else None


def install_command(extra: str) -> str:
    """The pip command that installs `extra`: `pip install -e '.[extra]'` from a checkout (the
    checkout's path when it is not the current folder), else `pip install 'localrl[extra]'`."""
    root = checkout_root()
    if root is None:
        return f"pip install 'localrl[{extra}]'"
    where = "." if os.path.abspath(os.getcwd()) == root else root
    return f"pip install -e '{where}[{extra}]'"


def _is_missing(error: ImportError, module: str) -> bool:
    """Whether `error` says that `module` itself (or a package above it) is not installed, as
    opposed to an installed `module` failing on an import of its own."""
    name = error.name
    return name is None or module == name or module.startswith(name + ".")


def require(module: str, extra: str, what: str, library: str | None = None) -> ModuleType:
    """`import module`, or MissingExtra naming `extra` when it is not installed. `what` is what
    needs it, as the message starts ("--video cartpole.gif"); `library` how the message names
    what is missing (default: the module's top-level package)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if not _is_missing(error, module):
            raise
        raise MissingExtra(what, library or module.split(".")[0], extra) from None


def require_installed(module: str, extra: str, what: str) -> None:
    """MissingExtra (as `require`) when `module` is not installed, without importing it: for
    torch, whose import (~1 s) `build()` overlaps with the start of the EnvRunners' worker
    template (a broken install fails there, in the build's config check)."""
    if not installed(module):
        raise MissingExtra(what, module.split(".")[0], extra)


def require_for_config(config: Any, what: str) -> None:
    """MissingExtra when `config` (an AlgorithmConfig, of a checkpoint or of flags) runs on torch
    or on Ray and that is not installed; `what` names where the config came from."""
    if config.uses_torch:
        require_installed("torch", TORCH, f"{what} ({config.torch_reason})")
    if config.backend == "ray":
        require("ray", RAY, f"{what} (env_runners(backend='ray'))")


def available(module: str) -> bool:
    """Whether `module` imports (a blocked or missing module does not)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def missing_note(what: str, library: str, extra: str) -> str:
    """The line a command that goes on without `library` prints once."""
    return f"{what}: {library} is not installed ({install_command(extra)})"
