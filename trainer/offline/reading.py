"""Recorded transitions for the offline learners: `OfflineData` streams a dataset's files (see
the package docstring) and hands out train batches of transitions.

A transition batch is a dict of arrays of equal length: `obs`, `actions`, `rewards`,
`new_obs`, `terminateds`, `truncateds`, and each extra column of the data (`action_logp`, ...)
by its name. Each row is one env step, as RLlib 2.60's `OfflinePreLearner` makes a one-step
episode of each row (a column table's rows are not joined by `eps_id`; an episode table's
episodes are cut into their steps, as its replay buffer samples them one step long).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from trainer.offline import columns as C
from trainer.offline.codec import EpisodeFormatError, episode_columns, unpack_episode
from trainer.offline.files import dataset_files, import_extra

#: Rows kept in the shuffle pool beside a batch: at least this many, or 4 batches.
MIN_POOL_ROWS = 8192


#: Why RLlib's compressed columns are refused (the reader's and the prelearner's message).
PACKED_VALUES = (
    "RLlib's packed values (cloudpickle, LZ4, base64). Unpacking them would unpickle, which "
    "runs code from the file; record the data without column compression (RLlib: "
    "offline_data(output_compress_columns=[]), or without lz4 installed)"
)


class DatasetSchemaError(ValueError):
    """A dataset file lacks a column the reader needs, or holds values it cannot read: the
    message names the file and the column."""


@dataclasses.dataclass(frozen=True)
class ReadSettings:
    """What `offline_data()` says about reading (the config's names)."""

    input_: Any
    input_read_method: str = "read_parquet"
    input_read_schema: dict[str, str] = dataclasses.field(default_factory=dict)
    input_read_episodes: bool = False
    input_compress_columns: tuple[str, ...] = ()
    ignore_final_observation: bool = False

    @classmethod
    def of(cls, config: Any) -> ReadSettings:
        return cls(
            input_=config.input_,
            input_read_method=config.input_read_method,
            input_read_schema=dict(config.input_read_schema or {}),
            input_read_episodes=bool(config.input_read_episodes),
            input_compress_columns=tuple(config.input_compress_columns or ()),
            ignore_final_observation=bool(config.ignore_final_observation),
        )


def _flat_values(column: Any) -> tuple[np.ndarray, int]:
    """A pyarrow column of (nested) lists as (flat values, values per row), or of scalars as
    (values, 0)."""
    pa = import_extra("pyarrow")
    rows = len(column)
    values = column
    types = pa.types
    while (
        types.is_list(values.type)
        or types.is_large_list(values.type)
        or types.is_fixed_size_list(values.type)
    ):
        values = values.flatten()
    array = values.to_numpy(zero_copy_only=False)
    if array.dtype == object:
        raise TypeError("not numbers")
    if rows and len(array) != rows:
        if len(array) % rows:
            raise ValueError("rows of different lengths")
        return array, len(array) // rows
    return array, 0


class TableReader:
    """One table's rows as transitions, checked against what the learner needs."""

    def __init__(self, settings: ReadSettings, obs_space: Any, action_space: Any):
        self.settings = settings
        self.obs_space = obs_space
        self.action_space = action_space
        #: The table's column name of each key RLlib's reader knows.
        self.names = {**C.SCHEMA, **settings.input_read_schema}

    # -- one column ----------------------------------------------------------------------------
    def _array(
        self, table: Any, key: str, where: Path, shape: tuple[int, ...] | None
    ) -> np.ndarray:
        name = self.names[key]
        column = table.column(name).combine_chunks()
        pa = import_extra("pyarrow")
        if (
            pa.types.is_string(column.type)
            or pa.types.is_binary(column.type)
            or (pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type))
        ):
            packed = key in self.settings.input_compress_columns or (
                key == C.NEXT_OBS and C.OBS in self.settings.input_compress_columns
            )
            raise DatasetSchemaError(
                f"{where}: column {name!r} ({key}) holds {column.type} values"
                + (": " + PACKED_VALUES if packed else ", not numbers")
            )
        try:
            values, per_row = _flat_values(column)
        except (TypeError, ValueError) as error:
            raise DatasetSchemaError(
                f"{where}: column {name!r} ({key}) of type {column.type} cannot be read as "
                f"numbers ({error})"
            ) from None
        rows = len(column)
        if shape is None:
            return values.reshape(rows, -1) if per_row else values
        size = int(np.prod(shape)) if shape else 1
        if (per_row or 1) != size:
            raise DatasetSchemaError(
                f"{where}: column {name!r} ({key}) holds {per_row or 1} values a row; the "
                f"space {self._space_of(key)} has {size}"
            )
        return values.reshape((rows, *shape))

    def _space_of(self, key: str) -> Any:
        return self.action_space if key == C.ACTIONS else self.obs_space

    def _require(self, table: Any, key: str, where: Path) -> None:
        name = self.names[key]
        if name not in table.column_names:
            renamed = f" (input_read_schema maps {key!r} to {name!r})" if name != key else ""
            raise DatasetSchemaError(
                f"{where}: no column {name!r}{renamed}; the table has "
                f"{', '.join(map(repr, table.column_names)) or 'no columns'}. Name the column "
                f"that holds {key} with offline_data(input_read_schema={{{key!r}: '<column>'}})"
            )

    # -- a column table ------------------------------------------------------------------------
    def column_transitions(self, table: Any, where: Path) -> dict[str, np.ndarray]:
        names, settings = self.names, self.settings
        for key in (C.OBS, C.ACTIONS, C.REWARDS):
            self._require(table, key, where)
        if not settings.ignore_final_observation:
            self._require(table, C.NEXT_OBS, where)
        if names[C.TERMINATEDS] not in table.column_names and (
            names[C.DONES] not in table.column_names
        ):
            self._require(table, C.TERMINATEDS, where)
        obs_shape = self.obs_space.shape
        obs = self._array(table, C.OBS, where, obs_shape).astype(self.obs_space.dtype, copy=False)
        batch = {
            C.OBS: obs,
            C.ACTIONS: self._array(table, C.ACTIONS, where, self.action_space.shape).astype(
                self.action_space.dtype, copy=False
            ),
            C.REWARDS: self._array(table, C.REWARDS, where, ()).astype(np.float32),
        }
        if settings.ignore_final_observation:
            batch[C.NEXT_OBS] = np.zeros_like(obs)
        else:
            batch[C.NEXT_OBS] = self._array(table, C.NEXT_OBS, where, obs_shape).astype(
                obs.dtype, copy=False
            )
        done_key = C.TERMINATEDS if names[C.TERMINATEDS] in table.column_names else C.DONES
        batch[C.TERMINATEDS] = self._array(table, done_key, where, ()).astype(bool)
        if names[C.TRUNCATEDS] in table.column_names:
            batch[C.TRUNCATEDS] = self._array(table, C.TRUNCATEDS, where, ()).astype(bool)
        else:
            batch[C.TRUNCATEDS] = np.zeros(len(obs), dtype=bool)
        known = set(names.values()) | set(C.SCHEMA) | C.DROPPED
        for name in table.column_names:
            if name in known:
                continue
            try:
                values, per_row = _flat_values(table.column(name).combine_chunks())
            except (TypeError, ValueError):
                continue  # not numbers: RLlib's extra outputs are; anything else stays out
            batch[name] = values.reshape(len(obs), -1) if per_row else values
        return batch

    # -- an episode table ----------------------------------------------------------------------
    def episode_transitions(self, table: Any, where: Path) -> dict[str, np.ndarray]:
        if C.EPISODE_ITEM not in table.column_names:
            raise DatasetSchemaError(
                f"{where}: no column {C.EPISODE_ITEM!r} (input_read_episodes=True reads RLlib's "
                f"serialized episodes, one per row in 'item'); the table has "
                f"{', '.join(map(repr, table.column_names))}"
            )
        parts: dict[str, list] = {}
        for row, data in enumerate(table.column(C.EPISODE_ITEM).to_pylist()):
            try:
                episode = episode_columns(unpack_episode(data))
            except (EpisodeFormatError, ValueError, TypeError) as error:
                raise DatasetSchemaError(
                    f"{where}: row {row} of column 'item' is no RLlib episode state ({error})"
                ) from None
            if not (episode["terminated"] or episode["truncated"]):
                raise DatasetSchemaError(
                    f"{where}: episode {episode['id']!r} (row {row}) is not done: when sampling "
                    "from episodes (input_read_episodes=True) all recorded episodes must be "
                    "done (terminated or truncated), as RLlib requires"
                )
            steps = len(episode["actions"])
            obs = np.asarray(episode["obs"], dtype=self.obs_space.dtype).reshape(
                (steps + 1, *self.obs_space.shape)
            )
            ends = np.zeros(steps, dtype=bool)
            terminateds, truncateds = ends.copy(), ends.copy()
            terminateds[-1:] = episode["terminated"]
            truncateds[-1:] = episode["truncated"] and not episode["terminated"]
            step = {
                C.OBS: obs[:-1],
                C.NEXT_OBS: obs[1:],
                C.ACTIONS: np.asarray(episode["actions"], dtype=self.action_space.dtype).reshape(
                    (steps, *self.action_space.shape)
                ),
                C.REWARDS: np.asarray(episode["rewards"], dtype=np.float32),
                C.TERMINATEDS: terminateds,
                C.TRUNCATEDS: truncateds,
                **{k: np.asarray(v) for k, v in episode["extra"].items()},
            }
            for key, value in step.items():
                parts.setdefault(key, []).append(value)
        episodes = len(parts.get(C.OBS, ()))
        # The columns every episode has (an extra output some episodes lack stays out).
        return {key: np.concatenate(v) for key, v in parts.items() if len(v) == episodes}

    def transitions(self, table: Any, where: Path) -> dict[str, np.ndarray]:
        if self.settings.input_read_episodes:
            return self.episode_transitions(table, where)
        return self.column_transitions(table, where)


def _parquet_file(path: Path) -> Any:
    parquet = import_extra("pyarrow.parquet")
    try:
        return parquet.ParquetFile(path)
    except Exception as error:  # pyarrow's ArrowInvalid and OSError alike
        raise DatasetSchemaError(f"{path}: not a parquet file ({error})") from None


def _json_table(path: Path) -> Any:
    json = import_extra("pyarrow.json")
    try:
        return json.read_json(path)
    except Exception as error:  # pyarrow's ArrowInvalid
        raise DatasetSchemaError(f"{path}: not JSON lines ({error})") from None


class OfflineData:
    """Train batches of transitions from a dataset, epoch after epoch.

    The files' pieces (parquet row groups; JSON files) are read one at a time, each epoch the
    files in a new order and each file's row groups in a new order (a file is opened once an
    epoch), into a pool of at least `MIN_POOL_ROWS` rows (4 batches, if more); a
    batch is drawn from the shuffled pool. Memory holds the pool and one piece, whatever the
    dataset's size."""

    def __init__(self, config: Any, obs_space: Any, action_space: Any, seed: int | None = None):
        self.settings = ReadSettings.of(config)
        self.files = dataset_files(self.settings.input_, self.settings.input_read_method)
        self.reader = TableReader(self.settings, obs_space, action_space)
        self.rng = np.random.default_rng(seed)
        self._pool: dict[str, np.ndarray] = {}
        self._pieces: Iterator[tuple[Path, Any]] = iter(())
        #: Completed passes over the dataset, and rows read in all.
        self.epochs = 0
        self.rows_read = 0

    def _epoch(self) -> Iterator[tuple[Path, Any]]:
        """(where, table) of each piece of one epoch, in this epoch's order."""
        parquet = self.settings.input_read_method == "read_parquet"
        for index in self.rng.permutation(len(self.files)):
            path = self.files[index]
            if not parquet:
                yield path, _json_table(path)
                continue
            file = _parquet_file(path)
            for group in self.rng.permutation(file.num_row_groups):
                yield Path(f"{path} (row group {group})"), file.read_row_group(int(group))

    def _next_piece(self) -> dict[str, np.ndarray] | None:
        """The next piece's transitions; None where an epoch ends (the next one begins)."""
        for where, table in self._pieces:
            return self.reader.transitions(table, where)
        if self.rows_read:
            self.epochs += 1
        self._pieces = self._epoch()
        return None

    def _fill(self, rows: int) -> None:
        """Reads pieces into the pool until it holds `max(4 * rows, MIN_POOL_ROWS)` rows (a
        dataset smaller than that: its rows again, as the next epochs), then shuffles it."""
        target = max(4 * rows, MIN_POOL_ROWS)
        pieces = [self._pool] if self._pool else []
        held = len(self._pool.get(C.OBS, ()))
        read_before_epoch = -1  # rows_read where the current epoch began (-1: none yet)
        while held < target:
            piece = self._next_piece()
            if piece is None:  # an epoch ended: one without a row means there are none
                if read_before_epoch == self.rows_read:
                    if held:
                        break
                    raise DatasetSchemaError(
                        f"offline_data(input_={self.settings.input_!r}): the files hold no rows"
                    )
                read_before_epoch = self.rows_read
                continue
            count = len(piece.get(C.OBS, ()))
            self.rows_read += count
            if not count:
                continue
            pieces.append(piece)
            held += count
        keys = set.intersection(*(set(p) for p in pieces)) if pieces else set()
        pool = {key: np.concatenate([p[key] for p in pieces]) for key in keys}
        order = self.rng.permutation(len(pool[C.OBS])) if pool else np.arange(0)
        self._pool = {key: value[order] for key, value in pool.items()}

    def sample(self, rows: int) -> dict[str, np.ndarray]:
        """`rows` transitions (fewer only if the whole dataset has fewer)."""
        if len(self._pool.get(C.OBS, ())) < rows:
            self._fill(rows)
        batch = {key: value[:rows] for key, value in self._pool.items()}
        self._pool = {key: value[rows:] for key, value in self._pool.items()}
        return batch
