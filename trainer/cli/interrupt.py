"""Ctrl-C (SIGINT) and SIGTERM during `train`: finish the iteration, save, stop.

The first signal only sets `requested`; `train()` goes on to the end of its iteration (the
EnvRunner processes ignore SIGINT, so Ctrl-C on the terminal's process group does not reach
them), then the loop saves a checkpoint and stops. A second signal raises KeyboardInterrupt at
once: that iteration is lost and nothing is saved, but the checkpoints already written are intact
(saves are atomic). SIGTERM is handled like Ctrl-C, so a job scheduler's stop also saves.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """A context manager that turns the first SIGINT/SIGTERM into a request."""

    def __init__(self, on_request: Callable[[str], None]):
        self.on_request = on_request
        self.requested: str | None = None  # the signal's name, once one arrived
        self.signal_number: int | None = None
        self._previous: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for number in _SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt
        self.requested = signal.Signals(number).name
        self.signal_number = number
        self.on_request(self.requested)

    @property
    def exit_status(self) -> int:
        """The shell's convention for a run ended by a signal: 128 + its number."""
        return 128 + (self.signal_number or signal.SIGINT)
