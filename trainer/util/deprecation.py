"""One deprecation warning per older RLlib form and process: `warn_once(form, replacement)`
logs "`form` is RLlib's older API; use `replacement`" the first time `form` is seen. EnvRunner
worker processes collect theirs (`collect_in_this_process`, `drain`) and send them with their
replies, so the main process logs each once, however many runners used the form.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("trainer")

_warned: set[str] = set()
#: In an EnvRunner worker process: warnings wait in `_pending` for the main process to log.
_collect_only = False
_pending: list[tuple[str, str]] = []


def warn_once(form: str, replacement: str) -> None:
    """Logs "`form` is RLlib's older API; use `replacement`" the first time `form` is seen."""
    if form in _warned:
        return
    _warned.add(form)
    if _collect_only:
        _pending.append((form, replacement))
        return
    logger.warning("DeprecationWarning: %s is RLlib's older API; use %s instead", form, replacement)


def collect_in_this_process() -> None:
    """Called by worker processes: warnings are kept for `drain()` instead of logged."""
    global _collect_only
    _collect_only = True


def drain() -> list[tuple[str, str]]:
    """The warnings collected since the last call (sent to the main process with a reply)."""
    items = list(_pending)
    _pending.clear()
    return items
