"""`MultiAgentEpisodeList`: the list of episodes `MultiAgentEnvRunner.sample()` returns, with a
compact pickle.

A worker process ships its episodes back to the main process by pickling them. One by one, a
`MultiAgentEpisode` pickles as a tree of objects: its agents' `SingleAgentEpisode`s, a lookback
buffer object per column and a small numpy array in each. A `MultiAgentEpisodeList` pickles as

    columns   every numeric array in every agent's buffers, concatenated by dtype and row
              shape (CartPole agents: observations, actions, rewards, log-probs and
              distribution inputs are five arrays for the whole sample)
    records   per episode, a tuple of its slots; per agent, a tuple of its single-agent
              episode's slots; per buffer, where its data lies in the columns (or the data
              itself when it is not a numeric array), its lookback, flag and spaces; an
              agent's info dicts, when all are empty, as their count

and unpickles as the same objects, their arrays slices of the received columns. A list holding
anything but `MultiAgentEpisode`s pickles as a plain list.
"""

from __future__ import annotations

from collections import defaultdict
from operator import attrgetter
from typing import Any

import numpy as np

from trainer.env.episode import SingleAgentEpisode
from trainer.env.lookback_buffer import InfiniteLookbackBuffer
from trainer.env.multi_agent_episode import MultiAgentEpisode

#: The slots each record holds, in order.
_EPISODE_SLOTS: tuple[str, ...] = MultiAgentEpisode.__slots__
_AGENT_SLOTS: tuple[str, ...] = tuple(
    name for name in SingleAgentEpisode.__slots__ if name not in SingleAgentEpisode._LOCAL_SLOTS
)
#: Array kinds that go into the columns (bool, integers, floats, complex).
_NUMERIC = frozenset("biufc")


class MultiAgentEpisodeList(list):
    """A `list` of `MultiAgentEpisode`s; only its pickled form differs from a plain list."""

    def __copy__(self) -> MultiAgentEpisodeList:
        """A shallow copy, as a list's: the same episodes (a pickled copy would make new ones)."""
        return MultiAgentEpisodeList(self)

    def __reduce__(self) -> Any:
        if not all(type(episode) is MultiAgentEpisode for episode in self):
            return MultiAgentEpisodeList, (list(self),)
        columns = _Columns()
        records = [_episode_record(episode, columns) for episode in self]
        return _unpack, (columns.packed(), records)


class _Columns:
    """Numeric arrays concatenated by (dtype, row shape); each added array's place in them."""

    def __init__(self) -> None:
        self._groups: dict[tuple[np.dtype, tuple[int, ...]], int] = {}
        self._arrays: list[list[np.ndarray]] = []
        self._rows: list[int] = []

    def add(self, array: np.ndarray) -> tuple[int, int, int]:
        """(column, first row, end row) of `array` in the packed columns."""
        key = (array.dtype, array.shape[1:])
        column = self._groups.get(key)
        if column is None:
            column = self._groups[key] = len(self._arrays)
            self._arrays.append([])
            self._rows.append(0)
        first = self._rows[column]
        end = self._rows[column] = first + len(array)
        self._arrays[column].append(array)
        return column, first, end

    def packed(self) -> list[np.ndarray]:
        return [np.concatenate(arrays) for arrays in self._arrays]


def _buffer_record(buffer: InfiniteLookbackBuffer, columns: _Columns) -> tuple:
    data = buffer.data
    where = None
    if type(data) is np.ndarray and data.ndim and data.dtype.kind in _NUMERIC:
        where, data = columns.add(data), None
    return (where, data, buffer.lookback, buffer.finalized, buffer._space, buffer.space_struct)


def _buffer(record: tuple, columns: list[np.ndarray]) -> InfiniteLookbackBuffer:
    where, data, lookback, finalized, space, space_struct = record
    if where is not None:
        column, first, end = where
        data = columns[column][first:end]
    buffer = InfiniteLookbackBuffer._unchecked(data, finalized=finalized)
    buffer.lookback, buffer._space, buffer.space_struct = lookback, space, space_struct
    return buffer


#: All of a single-agent episode's slots at once, and where its buffers are among them.
_agent_slots = attrgetter(*_AGENT_SLOTS)
_AGENT_BUFFER_AT = tuple(
    _AGENT_SLOTS.index(name) for name in ("observations", "actions", "rewards")
)
_AGENT_INFOS_AT = _AGENT_SLOTS.index("_infos")
_AGENT_BUFFER_DICT_AT = _AGENT_SLOTS.index("extra_model_outputs")


def _infos_record(infos: InfiniteLookbackBuffer, columns: _Columns) -> tuple:
    """An agent's info dicts: `(count,)` when all are empty dicts in a plain buffer (made
    again on arrival: `_empty_infos`), else their buffer's record."""
    data = infos.data
    if (
        type(data) is list
        and not infos.lookback
        and not infos.finalized
        and infos._space is None
        and infos.space_struct is None
        and data.count(_EMPTY_INFO) == len(data)
        and set(map(type, data)) <= {dict}
    ):
        return (len(data),)
    return _buffer_record(infos, columns)


def _empty_infos(count: int) -> InfiniteLookbackBuffer:
    """The plain buffer of `count` empty info dicts `_infos_record` recorded."""
    return InfiniteLookbackBuffer._unchecked([{} for _ in range(count)], finalized=False)


_EMPTY_INFO: dict = {}


def _agent_record(episode: SingleAgentEpisode, columns: _Columns) -> list:
    values = list(_agent_slots(episode))
    for at in _AGENT_BUFFER_AT:
        values[at] = _buffer_record(values[at], columns)
    if type(values[_AGENT_INFOS_AT]) is InfiniteLookbackBuffer:  # (else a count of empty ones)
        values[_AGENT_INFOS_AT] = _infos_record(values[_AGENT_INFOS_AT], columns)
    values[_AGENT_BUFFER_DICT_AT] = {
        key: _buffer_record(buffer, columns)
        for key, buffer in values[_AGENT_BUFFER_DICT_AT].items()
    }
    return values


def _agent_episode(record: list, columns: list[np.ndarray]) -> SingleAgentEpisode:
    values = list(record)
    for at in _AGENT_BUFFER_AT:
        values[at] = _buffer(values[at], columns)
    infos = values[_AGENT_INFOS_AT]
    if type(infos) is tuple:  # (else a count of empty ones, as the episode kept them)
        values[_AGENT_INFOS_AT] = (
            _empty_infos(infos[0]) if len(infos) == 1 else _buffer(infos, columns)
        )
    values[_AGENT_BUFFER_DICT_AT] = {
        key: _buffer(buffer, columns) for key, buffer in values[_AGENT_BUFFER_DICT_AT].items()
    }
    # (Slot by slot, not through __setstate__'s dict: a third of the time, hundreds of agent
    # episodes per sample.)
    episode = SingleAgentEpisode.__new__(SingleAgentEpisode)
    for name, value in zip(_AGENT_SLOTS, values, strict=True):
        setattr(episode, name, value)
    episode._env_runner = None
    return episode


#: All of a multi-agent episode's slots at once, and where its agents and mappings are.
_episode_slots = attrgetter(*_EPISODE_SLOTS)
_AGENTS_AT = _EPISODE_SLOTS.index("agent_episodes")
_MAPPINGS_AT = _EPISODE_SLOTS.index("env_t_to_agent_t")


def _episode_record(episode: MultiAgentEpisode, columns: _Columns) -> list:
    values = list(_episode_slots(episode))
    values[_AGENTS_AT] = [
        (aid, _agent_record(agent, columns)) for aid, agent in values[_AGENTS_AT].items()
    ]
    values[_MAPPINGS_AT] = [
        (aid, _buffer_record(mapping, columns)) for aid, mapping in values[_MAPPINGS_AT].items()
    ]
    return values


def _unpack(columns: list[np.ndarray], records: list[list]) -> MultiAgentEpisodeList:
    episodes = MultiAgentEpisodeList()
    for record in records:
        values = list(record)
        values[_AGENTS_AT] = {
            aid: _agent_episode(agent, columns) for aid, agent in values[_AGENTS_AT]
        }
        values[_MAPPINGS_AT] = defaultdict(
            InfiniteLookbackBuffer,
            {aid: _buffer(mapping, columns) for aid, mapping in values[_MAPPINGS_AT]},
        )
        episode = MultiAgentEpisode.__new__(MultiAgentEpisode)
        for name, value in zip(_EPISODE_SLOTS, values, strict=True):
            setattr(episode, name, value)
        episodes.append(episode)
    return episodes
