"""Imports of optional libraries started early, on a thread of their own."""

from __future__ import annotations

import threading
from collections.abc import Callable


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
