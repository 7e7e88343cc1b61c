"""`EpisodeList`: the list of episodes `EnvRunner.sample()` returns, with a compact pickle.

A worker process ships its episodes back to the main process by pickling them. Pickling one
`SingleAgentEpisode` object at a time costs a few arrays and a dict per episode, which for short
episodes (CartPole's ~20 steps) took a tenth of the sampling time. An `EpisodeList` pickles as a
handful of arrays instead: each field (observations, actions, rewards, every extra model output)
concatenated over all episodes, plus one small record per episode (id, where its rows start, flags,
`custom_data`, infos). Unpickling rebuilds the episodes with their arrays as slices of the
concatenated ones, so the receiver sees exactly the episodes that were sent.

Episodes that do not fit that layout (lists not yet converted with `to_numpy()`, fields whose dtype
or row shape differ between episodes, different extra-output keys) pickle one by one, as a list.

An `EpisodeList` of episodes whose arrays are views of an EnvRunner's step columns (its columnar
sampling, `trainer.runners.step_columns`) pickles cheaper still: the columns go as they are, with
one record per episode saying which sub-env's rows it holds, so nothing is concatenated and the
receiver's episodes are views of the received columns. That holds while every episode still has
the very views it was given (a callback that replaced a column, or a list changed after
sampling, takes the general layout above).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from trainer.env.episode import WEIGHTS_SEQ_NO, EpisodeView, SingleAgentEpisode


class ColumnRows(NamedTuple):
    """Where an episode's arrays come from in a set of step columns (see `EpisodeList`): the
    sub-env's column `column`, observations at rows `first..last`, steps at `first + 1..last`,
    and the views the episode was given (to tell whether it still has them)."""

    column: int
    first: int
    last: int
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    extra_model_outputs: dict[str, np.ndarray]

    def holds(self, ep: SingleAgentEpisode) -> bool:
        """Whether `ep` still has exactly these views as its columns."""
        extras = ep.extra_model_outputs
        if WEIGHTS_SEQ_NO in extras and WEIGHTS_SEQ_NO not in self.extra_model_outputs:
            extras = {key: value for key, value in extras.items() if key != WEIGHTS_SEQ_NO}
        return (
            ep.observations.data is self.observations
            and ep.actions.data is self.actions
            and ep.rewards.data is self.rewards
            and not ep.observations.lookback
            and not ep.actions.lookback
            and len(extras) == len(self.extra_model_outputs)
            and all(
                key in extras and extras[key].data is view and not extras[key].lookback
                for key, view in self.extra_model_outputs.items()
            )
            and _num_infos(ep) == self.last - self.first + 1
        )


def _num_infos(ep: SingleAgentEpisode) -> int:
    infos = ep._infos
    return infos if isinstance(infos, int) else len(infos.data)


def column_rows(columns: dict[str, np.ndarray], index: int, first: int, last: int) -> ColumnRows:
    """Views of sub-env `index`'s rows `first..last` of `columns` (name -> array
    `[row, sub_env, ...]`: "observations", "actions", "rewards", "extra:<key>")."""
    steps = slice(first + 1, last + 1)
    return ColumnRows(
        index,
        first,
        last,
        columns["observations"][first : last + 1, index],
        columns["actions"][steps, index],
        columns["rewards"][steps, index],
        {
            name[len(_EXTRA) :]: values[steps, index]
            for name, values in columns.items()
            if name.startswith(_EXTRA)
        },
    )


#: The prefix of an extra model output's column name.
_EXTRA = "extra:"


class NamedColumns:
    """Step columns by name ("observations", "actions", "rewards", "extra:<key>"; arrays
    indexed `[row, sub_env, ...]`), the source of `EpisodeView`s: what a view reads without
    making its buffers. Subclasses give `arrays()`."""

    def arrays(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def episode_rows(self, index: int, first: int, last: int) -> ColumnRows:
        """Views of sub-env `index`'s rows `first..last`: observations (`first..last`), and
        the actions, rewards and model outputs of the steps `first + 1..last`."""
        return column_rows(self.arrays(), index, first, last)

    def return_of(self, index: int, first: int, last: int) -> float:
        """The return of steps `first + 1..last` of sub-env `index`, added as Python floats
        (as `SingleAgentEpisode.get_return()` adds them)."""
        rewards = self.arrays()["rewards"]
        return float(sum(rewards[first + 1 : last + 1, index].tolist()))

    def observation(self, index: int, row: int) -> np.ndarray:
        """Sub-env `index`'s observation at `row` (a view)."""
        return self.arrays()["observations"][row, index]

    def extra_model_output_keys(self) -> list[str]:
        """The extra model outputs' keys among the columns' names."""
        return [name[len(_EXTRA) :] for name in self.arrays() if name.startswith(_EXTRA)]


class PackedColumns(NamedColumns):
    """The columns a pickled `EpisodeList` arrived with."""

    def __init__(self, columns: dict[str, np.ndarray]):
        self.columns = columns

    def arrays(self) -> dict[str, np.ndarray]:
        return self.columns


class _Meta(NamedTuple):
    """What a packed episode carries besides its arrays."""

    id_: str
    t_started: int
    env_index: int
    terminated: bool
    truncated: bool
    custom_data: dict
    temporary_timestep_data: dict
    start_time: float | None
    last_step_time: float | None
    #: The info dicts; None when all are empty (most envs': their count goes instead).
    infos: list | None

    @staticmethod
    def of(ep: SingleAgentEpisode) -> tuple:
        """The record of `ep`, as a plain tuple (a named one pickles at several times the
        cost; the receiver names it with `_Meta._make`, or unpacks it in this order)."""
        return (
            ep.id_,
            ep.t_started,
            ep.env_index,
            ep.is_terminated,
            ep.is_truncated,
            ep.custom_data,
            ep._temporary_timestep_data,
            ep._start_time,
            ep._last_step_time,
            ep.nonempty_infos(),
        )

    def settings(self) -> dict[str, Any]:
        """The keyword arguments the episode constructors take from it."""
        return {
            "t_started": self.t_started,
            "env_index": self.env_index,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "custom_data": self.custom_data,
            "temporary_timestep_data": self.temporary_timestep_data,
            "start_time": self.start_time,
            "last_step_time": self.last_step_time,
        }


class EpisodeList(list):
    """A `list` of `SingleAgentEpisode`s; only its pickled form differs from a plain list."""

    #: The step columns the episodes come from (an object with `arrays()`, the columns by
    #: name, and `episode_rows()`) and, per episode, the rows it was filled with (None for an
    #: `EpisodeView` of them, which knows its rows): set by `of_columns`.
    _source: Any = None
    _rows: list[ColumnRows | None] | None = None

    @classmethod
    def of_columns(
        cls, episodes: list[SingleAgentEpisode], source: Any, rows: list[ColumnRows | None]
    ) -> EpisodeList:
        """The list of `episodes`, each an `EpisodeView` of `source` or filled with the views
        `rows` of it."""
        assert len(episodes) == len(rows), "one entry of rows per episode"
        episode_list = cls(episodes)
        episode_list._source = source
        episode_list._rows = rows
        return episode_list

    def __copy__(self) -> EpisodeList:
        """A shallow copy, as a list's: the same episodes (a pickled copy would make new ones)."""
        copied = EpisodeList(self)
        copied._source = self._source
        copied._rows = None if self._rows is None else list(self._rows)
        return copied

    def __reduce__(self) -> Any:
        by_column = self._pack_by_column()
        if by_column is not None:
            return _unpack_by_column, by_column
        packed = _pack(self)
        if packed is None:
            return EpisodeList, (list(self),)
        return _unpack, packed

    def _pack_by_column(self) -> Any:
        """The columns and one record per episode, or None when an episode no longer has the
        views it was given (or the list changed)."""
        source, rows = self._source, self._rows
        if source is None or rows is None or len(rows) != len(self):
            return None
        records = []
        last_row = 0
        for ep, where in zip(self, rows, strict=True):
            if where is None:
                if (
                    not isinstance(ep, EpisodeView)
                    or ep._source is None  # (a LiveEpisode before it is frozen)
                    or ep._source[0] is not source
                ):
                    return None
                if ep._rows is not None and not ep._rows.holds(ep):
                    return None
                _, index, first, last = ep._source
            else:
                if type(ep) is not SingleAgentEpisode or not where.holds(ep):
                    return None
                index, first, last = where.column, where.first, where.last
            last_row = max(last_row, last)
            records.append((index, first, last, _Meta.of(ep), _weights_seq_no_of(ep)))
        return {name: array[: last_row + 1] for name, array in source.arrays().items()}, records


def _concat(arrays: list[np.ndarray]) -> np.ndarray | None:
    """One array of the rows of `arrays`, or None when their dtypes or row shapes differ.
    Arrays without rows do not count (an empty `np.asarray([])` has no meaningful dtype)."""
    rows = [a for a in arrays if len(a)]
    if not rows:
        return None
    dtype, row_shape = rows[0].dtype, rows[0].shape[1:]
    for a in rows:
        if a.dtype != dtype or a.shape[1:] != row_shape:
            return None
    return np.concatenate(rows)


def _packable(ep: SingleAgentEpisode) -> bool:
    """Whether an episode fits the packed layout: numpy'ized, no lookback buffer, array (not
    struct) columns, no spaces or agent data to carry."""
    if not isinstance(ep, SingleAgentEpisode):
        return False
    observations = ep.observations
    if not (
        observations.finalized
        and not observations.lookback
        and isinstance(observations.data, np.ndarray)
    ):
        return False
    if (
        ep.agent_id is not None
        or ep.module_id is not None
        or ep.multi_agent_episode_id is not None
        or ep._observation_space is not None
        or ep._action_space is not None
    ):
        return False
    if ep.t == ep.t_started:
        return True
    for column in (ep.actions, ep.rewards, *ep.extra_model_outputs.values()):
        if column.lookback or not isinstance(column.data, np.ndarray):
            return False
    return True


def _pack(episodes: list[SingleAgentEpisode]) -> Any:
    if not episodes or not all(_packable(ep) for ep in episodes):
        return None
    stepped = [ep for ep in episodes if ep.t != ep.t_started]
    extra_keys = sorted(stepped[0].extra_model_outputs) if stepped else []
    for ep in stepped:
        if ep.extra_model_outputs.keys() != set(extra_keys):
            return None
    observations = _concat([ep.observations.data for ep in episodes])
    if observations is None:
        return None
    columns = {
        "actions": [ep.actions.data for ep in stepped],
        "rewards": [ep.rewards.data for ep in stepped],
    }
    for key in extra_keys:
        columns["extra:" + key] = [ep.extra_model_outputs[key].data for ep in stepped]
    packed_columns = {}
    for name, arrays in columns.items():
        if arrays:
            packed = _concat(arrays)
            if packed is None:
                return None
            packed_columns[name] = packed
    records = [
        (
            ep.t - ep.t_started,
            len(ep.observations.data),
            # An episode without steps keeps its own (empty) step columns, dtypes included.
            None if ep.t != ep.t_started else (ep.actions, ep.rewards, ep.extra_model_outputs),
            _Meta.of(ep),
        )
        for ep in episodes
    ]
    return observations, packed_columns, extra_keys, records


def _unpack(
    observations: np.ndarray, columns: dict[str, np.ndarray], extra_keys: list[str], records: list
) -> EpisodeList:
    episodes = EpisodeList()
    obs_start = step_start = 0
    # Absent when no episode has steps of its own (every slice of them is then empty).
    actions, rewards = columns.get("actions", _NO_ROWS), columns.get("rewards", _NO_ROWS)
    extras = {key: columns.get("extra:" + key, _NO_ROWS) for key in extra_keys}
    for length, num_obs, own_steps, fields in records:
        meta = _Meta._make(fields)
        obs_stop, step_stop = obs_start + num_obs, step_start + length
        steps = slice(step_start, step_stop)
        ep = SingleAgentEpisode._assembled(
            meta.id_,
            observations[obs_start:obs_stop],
            num_obs if meta.infos is None else meta.infos,  # a count: made when first read
            *(
                (actions[steps], rewards[steps], {k: v[steps] for k, v in extras.items()})
                if own_steps is None
                else (_NO_ROWS, _NO_ROWS, {})
            ),
            t=meta.t_started + length,
            **meta.settings(),
        )
        if own_steps is not None:
            ep.actions, ep.rewards, ep.extra_model_outputs = own_steps
        else:
            step_start = step_stop
        episodes.append(ep)
        obs_start = obs_stop
    return episodes


#: A placeholder column for episodes without steps (which keep their own empty columns).
_NO_ROWS = np.zeros(0)


def _weights_seq_no_of(ep: SingleAgentEpisode) -> int | None:
    """The weights sequence number a sampled episode carries (`add_weights_seq_no`: one per
    chunk), None for none."""
    if isinstance(ep, EpisodeView) and ep._rows is None:
        return getattr(ep, "_weights_seq_no", None)
    buffer = ep.extra_model_outputs.get(WEIGHTS_SEQ_NO)
    if buffer is None or not len(buffer.data):
        return None
    return int(buffer.data[0])


def _unpack_by_column(columns: dict[str, np.ndarray], records: list) -> EpisodeList:
    source = PackedColumns(columns)
    of_rows = EpisodeView.of_rows
    # The records' fields unpacked in `_Meta`'s order (hundreds of episodes per sample: no
    # named tuple and keyword dict per episode).
    episodes = EpisodeList(
        [
            of_rows(
                source,
                id_,
                index,
                first,
                last,
                # A count of empty infos: made when first read.
                infos=last - first + 1 if infos is None else infos,
                t_started=t_started,
                env_index=env_index,
                terminated=terminated,
                truncated=truncated,
                custom_data=custom_data,
                temporary_timestep_data=temporary_timestep_data,
                start_time=start_time,
                last_step_time=last_step_time,
            )
            for index, first, last, (
                id_,
                t_started,
                env_index,
                terminated,
                truncated,
                custom_data,
                temporary_timestep_data,
                start_time,
                last_step_time,
                infos,
            ), _ in records
        ]
    )
    for episode, record in zip(episodes, records, strict=True):
        if record[4] is not None:
            episode._weights_seq_no = record[4]
    return episodes
