"""TensorBoard event files in the run folder, as Tune's TBXLoggerCallback writes them.

Every number of each iteration's result dict is written twice: under `ray/tune/<key>` (Tune's
tags) stepped by `training_iteration`, and under `env_steps/<key>` stepped by
`num_env_steps_sampled_lifetime`, so TensorBoard plots each by iteration and by env steps.
`tensorboard --logdir localrl_results` then shows every run. Written through tensorboardX (the
`tensorboard` extra: `pip install 'localrl[tensorboard]'`); without it the run has no event files
and the main job says so once.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from trainer.cli.run_folder import flatten
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, TRAINING_ITERATION

#: Tag prefixes: Tune's (by iteration), and the same scalars by env steps.
BY_ITERATION = "ray/tune/"
BY_ENV_STEPS = "env_steps/"
#: What the main job says when tensorboardX is missing.
MISSING = ("TensorBoard: no event files (pip install 'localrl[tensorboard]' to write them for "
           "`tensorboard --logdir localrl_results`)")


def scalars(result: dict) -> dict[str, float]:
    """The result's numbers by their Tune names ("env_runners/episode_return_mean"); NaN kept
    (TensorBoard shows it as a gap), booleans and text left out."""
    return {key: float(value) for key, value in flatten(result).items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}


class EventWriter:
    """Writes each result to event files in `directory`; `close()` flushes them."""

    def __init__(self, directory: str):
        from tensorboardX import SummaryWriter

        self._writer = SummaryWriter(logdir=directory, flush_secs=5)

    @classmethod
    def create(cls, directory: str) -> EventWriter | None:
        """The writer, or None when tensorboardX is not installed."""
        try:
            return cls(directory)
        except ImportError:
            return None

    def write(self, result: dict) -> None:
        iteration = int(result[TRAINING_ITERATION])
        env_steps = int(result[NUM_ENV_STEPS_SAMPLED_LIFETIME])
        wall_time = result.get("timestamp")
        for key, value in scalars(result).items():
            if math.isinf(value):
                continue  # TensorBoard cannot draw it
            self._writer.add_scalar(BY_ITERATION + key, value, iteration, walltime=wall_time)
            self._writer.add_scalar(BY_ENV_STEPS + key, value, env_steps, walltime=wall_time)

    def close(self) -> None:
        self._writer.close()


#: Longest wait for the background import of tensorboardX.
IMPORT_WAIT_S = 30


def import_in_background() -> threading.Thread:
    """Starts importing tensorboardX (0.4 s, mostly protobuf) in a thread, so that it overlaps
    `build()`; `create_writer` waits for it."""

    def load() -> None:
        try:
            import tensorboardX  # noqa: F401
        except ImportError:
            pass  # create_writer says so

    thread = threading.Thread(target=load, name="import-tensorboardX", daemon=True)
    thread.start()
    return thread


def create_writer(directory: str, note: Any,
                  importing: threading.Thread | None = None) -> EventWriter | None:
    """`EventWriter.create(directory)` once `importing` is done; `note(MISSING)` when it cannot
    be made."""
    if importing is not None:
        importing.join(IMPORT_WAIT_S)
    writer = EventWriter.create(directory)
    if writer is None:
        note(MISSING)
    return writer
