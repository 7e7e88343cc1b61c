"""TensorBoard event files in the run folder, as Tune's TBXLoggerCallback writes them.

Every number of each iteration's result dict is written twice: under `ray/tune/<key>` (Tune's
tags) stepped by `training_iteration`, and under `env_steps/<key>` stepped by
`num_env_steps_sampled_lifetime`, so TensorBoard plots each by iteration and by env steps.
`tensorboard --logdir localrl_results` then shows every run. Written through tensorboardX (the
`tensorboard` extra, which installs TensorBoard too); without it the run has no event files and
the main job says so once, naming the extra.

tensorboardX imports torch, boto3 and google-cloud when they are installed, for features event
files of scalars do not use (tensor type hints, s3:// and gs:// log dirs). torch alone took
1.1 s of the main job's start (and ~300 MB) where an RLlib user has it installed, so the import
here keeps the three out (`import_tensorboardx`): 0.03 s.
"""

from __future__ import annotations

import importlib.abc
import math
import sys
import threading
from typing import Any

from trainer.cli.extras import TENSORBOARD, missing_note
from trainer.cli.run_folder import flatten
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, TRAINING_ITERATION
from trainer.util.imports import OnceImport

#: Tag prefixes: Tune's (by iteration), and the same scalars by env steps.
BY_ITERATION = "ray/tune/"
BY_ENV_STEPS = "env_steps/"


def scalars(result: dict) -> dict[str, float]:
    """The result's numbers by their Tune names ("env_runners/episode_return_mean"); NaN kept
    (TensorBoard shows it as a gap), booleans and text left out."""
    return {
        key: float(value)
        for key, value in flatten(result).items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }


#: What tensorboardX imports only for what the event writer does not use (see above).
UNUSED_BY_TENSORBOARDX = ("torch", "boto3", "google.cloud")


def _unused(name: str | None) -> bool:
    return name is not None and any(
        name == unused or name.startswith(unused + ".") for unused in UNUSED_BY_TENSORBOARDX
    )


class _KeepOut(importlib.abc.MetaPathFinder):
    """Fails the imports of UNUSED_BY_TENSORBOARDX (and their submodules) made by the threads
    in `threads` (those in `import_tensorboardx`), as if they were not installed; every other
    import, and every other thread's, goes on (another thread may be importing torch for the
    user meanwhile).

    Put at the head of `sys.meta_path` once (`_keep_out`) and left there: the import machinery
    walks that list by index without a lock, so a finder removed while another thread's import
    walks it makes that walk skip the finder after the one it is at (the PathFinder, when it
    is at the FrozenImporter), and an installed module is not found: the main job's matplotlib
    import, on the thread beside tensorboardX's, could fail half-way so. An insertion at the
    head only makes such a walk ask one finder twice."""

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() in self.threads and _unused(name):
            raise ModuleNotFoundError(f"{name} is kept out of tensorboardX's import", name=name)
        return None


_KEEP_OUT = _KeepOut()
_KEEP_OUT_INSTALL = threading.Lock()


def _keep_out() -> _KeepOut:
    """`_KEEP_OUT`, at the head of `sys.meta_path` from the first call on (see `_KeepOut`)."""
    with _KEEP_OUT_INSTALL:
        if not any(finder is _KEEP_OUT for finder in sys.meta_path):
            sys.meta_path.insert(0, _KEEP_OUT)
    return _KEEP_OUT


def import_tensorboardx() -> Any:
    """`import tensorboardX` without UNUSED_BY_TENSORBOARDX (which load normally afterwards);
    raises ImportError when it is not installed. A tensorboardX that cannot do without one of
    them is imported with it."""
    keep_out, thread = _keep_out(), threading.get_ident()
    keep_out.threads.add(thread)
    try:
        import tensorboardX

        return tensorboardX
    except ImportError as error:
        if not _unused(error.name):
            raise
    finally:
        keep_out.threads.discard(thread)
    import tensorboardX  # a version that needs one of them

    return tensorboardX


#: The one import of tensorboardX in this process: the background thread's, or the writer's
#: when it comes first; the other waits for it (see `OnceImport`).
_TENSORBOARDX = OnceImport("tensorboardX", import_tensorboardx)


class EventWriter:
    """Writes each result to event files in `directory`; `close()` flushes them."""

    def __init__(self, directory: str):
        tensorboardx = _TENSORBOARDX.get()
        self._scalar = tensorboardx.summary.scalar
        self._summary = tensorboardx.proto.summary_pb2.Summary
        self._writer = tensorboardx.FileWriter(logdir=directory, flush_secs=5)

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
        by_iteration, by_env_steps = [], []
        for key, value in scalars(result).items():
            if not math.isfinite(value):
                # TensorBoard cannot draw it, and tensorboardX logs a warning for each one (a
                # NaN mean of an iteration in which no episode ended, every such iteration).
                continue
            # `SummaryWriter.add_scalar`'s summary (its tag cleaning included), one per scalar.
            by_iteration.extend(self._scalar(BY_ITERATION + key, value).value)
            by_env_steps.extend(self._scalar(BY_ENV_STEPS + key, value).value)
        # One event per step axis holding every scalar, as TensorFlow's merged summaries: an
        # event per scalar cost 90 us each (7 ms per iteration) in tensorboardX's queue.
        self._writer.add_summary(self._summary(value=by_iteration), iteration, wall_time)
        self._writer.add_summary(self._summary(value=by_env_steps), env_steps, wall_time)

    def close(self) -> None:
        self._writer.close()


def import_in_background() -> threading.Thread:
    """Starts importing tensorboardX (`import_tensorboardx`) in a thread, so that it overlaps
    `build()`; `create_writer` finds it loaded or waits for it (and says so when tensorboardX
    is missing)."""
    return _TENSORBOARDX.start()


def create_writer(directory: str, note: Any) -> EventWriter | None:
    """`EventWriter.create(directory)`; `note(...)` naming the extra when it cannot be made."""
    writer = EventWriter.create(directory)
    if writer is None:
        note(missing_note("TensorBoard event files: not written", "tensorboardX", TENSORBOARD))
    return writer
