"""Recording what the EnvRunners sample (`offline_data(output=...)`), as RLlib 2.60's
`OfflineSingleAgentEnvRunner` writes it: under `<output>/<env name, lower case>/`, a folder
`run-<runner index:06d>-<write:05d>` per write holding one parquet file, in RLlib's column
layout (one row per env step) or, with `output_write_episodes=True` (RLlib's default), one row
per episode (`item`: the msgpack'd episode state, codec.py). The evaluation EnvRunners record
what they sample too (as RLlib's, whose evaluation runners are recording runners as well),
under `evaluation-run-...` folders.

Each file is written beside its final name and renamed into place: a killed run leaves whole
files only (and at most an empty folder or a hidden temporary file, which readers skip).

Differences from RLlib's recorder: the rows of each sample are written once (RLlib 2.60,
without `output_max_rows_per_file`, writes its whole growing buffer again at every sample, and
with it, only the last full chunk of a sample); columns are not compressed (RLlib compresses
`output_compress_columns` with cloudpickle and LZ4 where lz4 is installed: a reader would have
to unpickle them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from trainer.metrics import WEIGHTS_SEQ_NO
from trainer.offline import columns as C
from trainer.offline.codec import episode_state, pack_episode
from trainer.offline.files import import_extra, local_path


def output_folder(output: str, env: Any) -> Path:
    """`<output>/<env name in lower case>` (an env class: its name)."""
    name = env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
    return Path(local_path(output)) / str(name).lower()


def _column(values: list) -> Any:
    """A pyarrow array of `values`: numbers as they are, arrays as fixed-size lists of their
    flat values."""
    pa = import_extra("pyarrow")
    if values and isinstance(values[0], (bytes, str)) or all(v is None for v in values):
        # As they are: numpy's bytes arrays would drop trailing zero bytes.
        return pa.array(values)
    first = np.asarray(values[0]) if values else np.zeros(())
    if first.ndim == 0:
        return pa.array(np.asarray(values))
    flat = np.stack([np.asarray(v).reshape(-1) for v in values])
    return pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), flat.shape[1])


def _steps(episode: Any) -> tuple[list, list, list, dict[str, list]]:
    """An episode's (or chunk's) observations (T + 1), actions, rewards and extra model
    outputs (T each)."""
    # Not `weights_seq_no`: the EnvRunners give it to finished chunks only, so a file of
    # unfinished ones would lack the column its neighbours have (files of one recording keep
    # one schema, which readers that concatenate them need).
    extras = {
        key: list(episode.get_extra_model_outputs(key))
        for key in episode.extra_model_outputs
        if key != WEIGHTS_SEQ_NO
    }
    return (
        list(episode.get_observations()),
        list(episode.get_actions()),
        list(episode.get_rewards()),
        extras,
    )


def episode_rows(episode: Any) -> dict[str, list]:
    """RLlib's column rows of one episode (or chunk): one per env step."""
    observations, actions, rewards, extras = _steps(episode)
    steps = len(actions)
    terminateds, truncateds = [False] * steps, [False] * steps
    if steps:
        terminateds[-1] = bool(episode.is_terminated)
        truncateds[-1] = bool(episode.is_truncated)
    return {
        C.EPS_ID: [str(episode.id_)] * steps,
        C.AGENT_ID: [None] * steps,
        C.MODULE_ID: [None] * steps,
        C.OBS: observations[:steps],
        C.ACTIONS: actions,
        C.REWARDS: [float(r) for r in rewards],
        C.NEXT_OBS: observations[1 : steps + 1],
        C.TERMINATEDS: terminateds,
        C.TRUNCATEDS: truncateds,
        **extras,
    }


def episode_item(episode: Any) -> bytes:
    """The `item` of one done episode."""
    observations, actions, rewards, extras = _steps(episode)
    return pack_episode(
        episode_state(
            str(episode.id_),
            observations,
            actions,
            rewards,
            extras,
            terminated=episode.is_terminated,
            truncated=episode.is_truncated,
            t_started=episode.t_started,
        )
    )


class OfflineRecorder:
    """Rows per EnvRunner, written to parquet files (see the module docstring)."""

    def __init__(self, config: Any, *, prefix: str = "run"):
        """`prefix`: the start of each write's folder name (the evaluation EnvRunners record
        under "evaluation-run", so that no file of theirs takes a training runner's name)."""
        self.folder = output_folder(config.output, config.env)
        self.prefix = prefix
        self.write_episodes = bool(config.output_write_episodes)
        self.max_rows = config.output_max_rows_per_file
        self.write_remaining = bool(config.output_write_remaining_data)
        self._rows: dict[int, dict[str, list]] = {}
        self._writes: dict[int, int] = {}
        #: The files written so far.
        self.files: list[Path] = []
        import_extra("pyarrow.parquet")  # the extra's absence is a config error, not a late one

    def record(self, runner_index: int, episodes: list) -> None:
        """Adds the episodes one runner returned; writes what makes a file."""
        for episode in episodes:
            if not len(episode):
                continue
            rows = (
                {C.EPISODE_ITEM: [episode_item(episode)]}
                if self.write_episodes
                else episode_rows(episode)
            )
            held = self._rows.get(runner_index, {})
            if not self._count(runner_index):
                held = {key: [] for key in rows}
            elif held.keys() != rows.keys():
                # Only the columns every held row has, so that each stays aligned with the
                # rows (an extra output some chunks lack stays out of the file).
                held = {key: values for key, values in held.items() if key in rows}
            self._rows[runner_index] = held
            for key, values in held.items():
                values.extend(rows[key])
        self._write_ready(runner_index)

    def _count(self, runner_index: int) -> int:
        held = self._rows.get(runner_index, {})
        return len(next(iter(held.values()), []))

    def _write_ready(self, runner_index: int) -> None:
        if self.max_rows is None:
            if self._count(runner_index):
                self._write(runner_index, self._count(runner_index))
            return
        while self._count(runner_index) >= self.max_rows:
            self._write(runner_index, self.max_rows)

    def _write(self, runner_index: int, rows: int) -> None:
        pa, parquet = import_extra("pyarrow"), import_extra("pyarrow.parquet")
        held = self._rows[runner_index]
        table = pa.table({key: _column(values[:rows]) for key, values in held.items()})
        self._rows[runner_index] = {key: values[rows:] for key, values in held.items()}
        self._writes[runner_index] = self._writes.get(runner_index, 0) + 1
        folder = self.folder / f"{self.prefix}-{runner_index:06d}-{self._writes[runner_index]:05d}"
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / "0_000000_000000.parquet"
        temporary = folder / f".{final.name}.tmp"
        parquet.write_table(table, temporary)
        os.replace(temporary, final)
        self.files.append(final)

    def stop(self) -> None:
        """Writes each runner's leftover rows when `output_write_remaining_data` asks for it
        (RLlib's recorder drops them otherwise)."""
        if not self.write_remaining:
            return
        for runner_index in list(self._rows):
            if self._count(runner_index):
                self._write(runner_index, self._count(runner_index))
