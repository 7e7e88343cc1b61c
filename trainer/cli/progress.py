"""What `train` shows while it runs.

One row per iteration (iteration, env steps, mean and max return, evaluation return when there
is one, env steps per second, time so far, time left to the nearest stop criterion). On a
terminal a status line stays under the rows: a bar toward the stop criterion, the time left, and
what Ctrl-C does; it is redrawn in place (carriage return and erase-line). Elsewhere (a pipe, a
file, CI) there are only the plain rows, one per line, flushed as they come.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from collections.abc import Iterator
from typing import TextIO

from trainer.cli.stop import Progress
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED,
)

_ERASE_LINE = "\r\033[K"
_BAR_WIDTH = 24


def format_duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{seconds}s"


def _number(value: float, width: int) -> str:
    return f"{'-':>{width}}" if value is None or math.isnan(value) else f"{value:{width}.2f}"


class ProgressDisplay:
    def __init__(
        self, progress: Progress, stream: TextIO | None = None, terminal: bool | None = None
    ):
        self.progress = progress
        self.stream = stream if stream is not None else sys.stdout
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self._status = ""
        self._note = "Ctrl-C: save and stop"

    def line(self, text: str) -> None:
        """A line of its own (settings, checkpoints, the end), above the status line."""
        self._write(text + "\n")

    def iteration(self, result: dict, session_seconds: float) -> None:
        """The row for one `train()` result."""
        self.progress.add(result)
        env_runners = result[ENV_RUNNER_RESULTS]
        row = (
            f"iter {result['training_iteration']:4d} | "
            f"env steps {result['num_env_steps_sampled_lifetime']:8d} | "
            f"return mean {_number(env_runners['episode_return_mean'], 8)} "
            f"max {_number(env_runners['episode_return_max'], 8)} | "
        )
        modules = env_runners.get("module_episode_returns_mean")
        if modules:  # a multi-agent run: each module's return
            row += " ".join(f"{m} {_number(v, 6)}" for m, v in sorted(modules.items())) + " | "
        evaluation = result.get(EVALUATION_RESULTS, {}).get(ENV_RUNNER_RESULTS, {})
        if EPISODE_RETURN_MEAN in evaluation:
            row += f"eval {_number(evaluation['episode_return_mean'], 8)} | "
        steps_per_second = env_runners.get(NUM_ENV_STEPS_SAMPLED, 0) / max(
            result["time_this_iter_s"], 1e-9
        )
        row += f"{steps_per_second:7.0f} steps/s | {session_seconds:6.1f} s"
        left = self.progress.time_left()
        if left is not None:
            row += f" | left {format_duration(left[0])} ({left[1]})"
        self._write(row + "\n")

    def note(self, text: str) -> None:
        """Changes the status line's last field (what happens next) and shows it at once.
        Safe in a signal handler: it writes to the file descriptor, not through the stream,
        whose buffer the interrupted code may be in the middle of using."""
        self._note = text
        if self.terminal:
            self._status = self._status_line()
            data = _ERASE_LINE + self._status
        else:
            data = text + "\n"
        try:
            os.write(self.stream.fileno(), data.encode())
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.stream.write(data)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Takes the status line down while other output (a log record) is written."""
        shown = self._take_down_status()
        try:
            yield
        finally:
            if shown:
                self.stream.write(self._status)
                self.stream.flush()

    def close(self) -> None:
        """Takes the status line down for good; later lines are plain."""
        self._take_down_status()
        self._status = ""
        self.terminal = False

    def _take_down_status(self) -> bool:
        """Erases the status line if one is shown; says whether it was."""
        shown = bool(self.terminal and self._status)
        if shown:
            self.stream.write(_ERASE_LINE)
            self.stream.flush()
        return shown

    def _write(self, text: str) -> None:
        if self.terminal:
            self._status = self._status_line()
            text = _ERASE_LINE + text + self._status
        self.stream.write(text)
        self.stream.flush()

    def _status_line(self) -> str:
        fraction = self.progress.fraction_done()
        filled = int(round(fraction * _BAR_WIDTH))
        status = f"[{'#' * filled}{'.' * (_BAR_WIDTH - filled)}] {fraction:4.0%}"
        left = self.progress.time_left()
        if left is not None:
            status += f" | {format_duration(left[0])} left to {left[1].lstrip('~')}"
        return status + f" | {self._note}"
