"""Imported at every Python start-up where localrl is installed (`localrl_main_guard.pth`; see
setup.py), and does something only in a process started as `python -m trainer ...` or
`python -m checkpoints ...`: a finder first on `sys.meta_path` answers that first import of
`trainer` (or `checkpoints`) with this project's package, so that a user's own module of that
name in the working folder (first on `sys.path` under `-m`) cannot run in its place. The
user's code still gets the user's module: the launcher routes it (trainer.launcher.user_modules).
Standard library only, and cheap: one look at `sys.orig_argv`."""

from __future__ import annotations

import os
import sys

#: The top-level packages of this project that `python -m` runs.
_RUNNABLE = ("trainer", "checkpoints")
#: Python's options that take the next argument as their value (`-W error`, `-X dev`).
_WITH_VALUE = frozenset("WX")


def dash_m_module(argv: list[str]) -> str | None:
    """The module of a `python [options] -m MODULE ...` command line, or None (a script,
    `-c`, or no `-m`)."""
    index = 1
    while index < len(argv):
        arg = argv[index]
        if not arg.startswith("-") or arg in ("-", "--"):
            return None
        if arg.startswith("--"):
            index += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        for position, option in enumerate(arg[1:], start=1):
            rest = arg[position + 1 :]
            if option == "c":
                return None
            if option == "m":
                if rest:
                    return rest
                return argv[index + 1] if index + 1 < len(argv) else None
            if option in _WITH_VALUE:
                index += 0 if rest else 1
                break
        index += 1
    return None


class OwnPackage:
    """Answers the first import of one top-level name with this project's package."""

    def __init__(self, name: str, init_file: str):
        self.name = name
        self.init_file = init_file

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname != self.name:  # asked again only while the name is not imported
            return None
        import importlib.util

        return importlib.util.spec_from_file_location(
            fullname, self.init_file, submodule_search_locations=[os.path.dirname(self.init_file)]
        )


def _install() -> None:
    module = dash_m_module(list(getattr(sys, "orig_argv", ())))
    top = (module or "").partition(".")[0]
    if top not in _RUNNABLE:
        return
    init_file = os.path.join(os.path.dirname(os.path.abspath(__file__)), top, "__init__.py")
    if os.path.isfile(init_file):
        sys.meta_path.insert(0, OwnPackage(top, init_file))


_install()
