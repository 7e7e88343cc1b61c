"""Imports of optional libraries started early, on a thread of their own; large imports (and
unpicklings) without the cyclic garbage collector's passes."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def import_in_background(name: str, load: Callable[[], object]) -> threading.Thread:
    """Runs `load` (imports of `name`, an optional library) on a daemon thread, so that it
    overlaps the caller's own start-up; an ImportError is left for the library's user to report
    when it imports it again. Joining the thread waits for it; importing the same modules waits
    as well (Python's import locks are per module)."""

    def run() -> None:
        try:
            load()
        except ImportError:
            pass

    thread = threading.Thread(target=run, name=f"import-{name}", daemon=True)
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
