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


def log_formatter(where: str = "") -> logging.Formatter:
    """Time, level, logger and message; `where` (such as "EnvRunner 2") marks a worker's
    records."""
    place = f" [{where}]" if where else ""
    return logging.Formatter(f"%(asctime)s %(levelname)s %(name)s{place}: %(message)s",
                             "%H:%M:%S")
