"""Imports of optional libraries, each run once per process (started early on a thread of its
own where that overlaps the caller's start-up); large imports (and unpicklings) without the
cyclic garbage collector's passes; whether a library is installed, found without importing it."""

from __future__ import annotations

import gc
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar, cast

T = TypeVar("T")


class OnceImport(Generic[T]):
    """`load`, the import of the optional package `name`, under one lock: run by whichever
    thread asks first (`get`, or `start`'s thread) while every other caller waits for it and
    gets its outcome, so that no two threads of this process import the package at once.

    Why: a thread importing a submodule (`matplotlib.figure`) while another runs the package's
    `__init__` does not wait for it (importlib waits only for a parent not yet in
    `sys.modules`): it meets a half-made package, or deadlocks on the two modules' locks, which
    Python breaks by failing one of the imports. And an import that failed half-way leaves the
    submodules it got to in `sys.modules`, bound to the dead package module, so that importing
    the package again runs its `__init__` over those leftovers (CI: "module 'matplotlib' has no
    attribute 'get_data_path'", the plot's import after the background import had failed and
    its error had been dropped). So a failed attempt takes the package's modules it left out of
    `sys.modules`; a failure on the background thread (a clash with another thread's imports,
    say) is tried once more by the first caller, on its own thread; a failure after that stays,
    raised to every later caller."""

    def __init__(self, name: str, load: Callable[[], T]):
        self.name = name
        self._load = load
        self._lock = threading.Lock()
        self._attempts = 0
        self._value: T | None = None
        self._error: BaseException | None = None
        self._background: threading.Thread | None = None  # `start`'s thread
        self._failed_in_background = False

    def get(self) -> T:
        """`load()`'s value: imported now, or by the thread that got here first (waited for).
        Raises the import's error: itself to the caller whose attempt failed, an ImportError
        naming it to every later one."""
        with self._lock:
            if self._attempts == 0 or (self._failed_in_background and self._attempts == 1):
                self._attempt()
        if self._error is not None:
            raise ImportError(
                f"importing {self.name} failed earlier in this process "
                f"({type(self._error).__name__}: {self._error})"
            ) from self._error
        return cast(T, self._value)

    def _attempt(self) -> None:
        """One run of `load` (under the lock); on failure, the package's modules it left in
        `sys.modules` are taken out (the class says why) and the error is raised."""
        before = set(sys.modules)
        self._attempts += 1
        try:
            self._value, self._error = self._load(), None
        except BaseException as error:
            self._error = error
            self._failed_in_background = threading.current_thread() is self._background
            for module in set(sys.modules) - before:
                if module == self.name or module.startswith(self.name + "."):
                    sys.modules.pop(module, None)
            raise

    def start(self) -> threading.Thread:
        """Runs `get()` on a daemon thread, so that the import overlaps the caller's own
        start-up; its error (the library not installed, say) is left for the library's user,
        whose `get()` tries once more."""

        def run() -> None:
            try:
                self.get()
            except Exception:  # noqa: BLE001 - left for the next get(), which tries again
                pass

        thread = threading.Thread(target=run, name=f"import-{self.name}", daemon=True)
        self._background = thread  # before it runs: its `_attempt` reads it
        thread.start()
        return thread


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then as it was: a large import
    (or unpickling) allocates hundreds of thousands of objects, and each few hundred of them
    started a collection: torch's import ran about 360 of them, a tenth of its CPU (0.1 s of
    1.0 s), and leaves only a few thousand objects of garbage behind."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def installed(module: str) -> bool:
    """Whether `module` is installed, without importing it (a module blocked in sys.modules
    counts as missing)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[module] is None
        return False
