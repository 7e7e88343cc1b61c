"""Runs at the start of every Python process that a script run by `python -m trainer run`
starts, the worker processes of a real Ray that one of them starts included: the launcher puts
this folder first on their PYTHONPATH (`trainer.launcher.install`).

Where the launcher's mode is in the environment, a finder goes first on `sys.meta_path` and
waits for the process's first import of `ray.rllib`: it then installs the launcher's hook on
the Ray the process imported (`trainer.launcher.install(real_ray=True)`), so that `ray.rllib`
is this project's there too. A process that imports `trainer` first takes the hook as its
parent's (`trainer.launcher.install_from_environment`), and the finder stands aside. RLlib's
Ray Serve example needs this: its `serve run` process imports the deployment's module (and
`ray.rllib` with it) before it starts Ray, and the Serve replica loads the trained module with
`RLModule.from_checkpoint`.

There too, a user's own modules named `trainer`, `callbacks` or `checkpoints` win for the
user's code, and `trainer` is this project's for the rest (a Ray worker puts the driver's
script folder first on `sys.path`): `trainer.launcher.user_modules`, loaded by its file.

Then it runs the sitecustomize module this one hides, if there is one. Standard library only:
a Python without localrl runs it too (its finder leaves `ray.rllib` to the installed RLlib
there).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

#: `trainer.launcher.finder.ENV_VAR`: the launcher's mode ("1", Ray's stand-in, or "ray").
LAUNCHER_VAR = "LOCALRL_RLLIB_LAUNCHER"


class RLlibOnFirstImport:
    """Hands the process's first import of `ray.rllib`, and every later one, to the
    launcher's finder on the installed Ray.

    It stays on `sys.meta_path` once done, answering None: taking a finder out of that list
    while another thread walks it (the import system iterates it by index, unlocked) makes
    the walker skip the finder after it, and an installed module is then "not found". A
    second thread's `ray.rllib` import waits for the install."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: The thread installing the hook, while it does (its own lookups pass by).
        self._installer: int | None = None
        self._done = False

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if self._done or (name != "ray.rllib" and not name.startswith("ray.rllib.")):
            return None
        if self._installer == threading.get_ident():
            return None
        with self._lock:
            if self._done:
                # Another thread installed the hook while this one waited: its finder went
                # onto `sys.meta_path` after this walk passed the head, so look again.
                return importlib.util.find_spec(name)
            self._installer = threading.get_ident()
            try:
                launcher = importlib.import_module("trainer.launcher")
            except ImportError:  # a Python without localrl: the installed RLlib
                return None
            else:
                if not launcher.installed():
                    launcher.install(real_ray=True)
                return importlib.util.find_spec(name)
            finally:
                self._done = True
                self._installer = None


#: The launcher's routing of the names `trainer`, `callbacks` and `checkpoints`, standard
#: library only (this project's `trainer.launcher.user_modules`).
USER_MODULES = "trainer.launcher.user_modules"


def _route_users_modules() -> None:
    """Loads `trainer.launcher.user_modules` by its file (importing `trainer` here would make
    a user's `trainer.py` first on `sys.path` impossible to tell apart, and cost every process
    its import) and installs it: this project's `trainer` for the first import of the name,
    the user's own modules of those names for the user's code."""
    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "user_modules.py"
    )
    module = sys.modules.get(USER_MODULES)
    if module is None:
        spec = importlib.util.spec_from_file_location(USER_MODULES, path)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        sys.modules[USER_MODULES] = module
        spec.loader.exec_module(module)
    module.install()


def _wait_for_rllib() -> None:
    if os.environ.get(LAUNCHER_VAR):
        _route_users_modules()
        sys.meta_path.insert(0, RLlibOnFirstImport())


def _run_the_hidden_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    this = sys.modules.pop(__name__)
    try:
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401  (the hidden one)
    except ImportError:
        sys.modules[__name__] = this


_wait_for_rllib()
_run_the_hidden_sitecustomize()
