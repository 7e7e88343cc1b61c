"""The library's loggers and their level (`config.debugging(log_level=...)`, RLlib's
"WARN" spelling included)."""

from __future__ import annotations

import logging

#: The loggers this library writes to (every module logs to "trainer").
LIBRARY_LOGGERS = ("trainer",)


def set_library_log_level(level: str) -> None:
    level = level.upper()
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel("WARNING" if level == "WARN" else level)
