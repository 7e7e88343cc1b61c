"""The library's loggers and their level (`config.debugging(log_level=...)`, RLlib's
"WARN" spelling included)."""

from __future__ import annotations

import logging
import re

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
    return logging.Formatter(f"%(asctime)s %(levelname)s %(name)s{place}: %(message)s", "%H:%M:%S")


#: Terminal colour codes, which Ray puts in the errors it passes on.
_ANSI_COLOR = re.compile(r"\x1b\[[0-9;]*m")


def plain_text(text: str) -> str:
    """`text` without terminal colour codes."""
    return _ANSI_COLOR.sub("", text)
