"""RLlib's env-to-module pieces (`ray.rllib.connectors.env_to_module`), each rewriting the last
observation of every episode it is given. Pieces that need an episode's history read the
episode's actions and rewards, or keep their own per-episode data in the episode
(`episode.connector_data`, carried across chunks and in checkpoints)."""

from __future__ import annotations

import abc
import functools
import importlib
import math
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.connector_v2 import ConnectorPipelineV2, ConnectorV2

#: Where the pipelines restored from checkpoints are rebuilt (`from_checkpoint`).
CONNECTOR_PIPELINES = "trainer.algorithms.connector_pipelines"
#: RLlib's default batching pieces, which RLlib's `env_to_module` package exports too; they
#: live in `trainer.connectors.batching`, a layer above (they read the episodes' recurrent
#: records), and are found there by name.
DEFAULT_PIECES_MODULE = "trainer.connectors.batching"
DEFAULT_PIECES = (
    "AddObservationsFromEpisodesToBatch",
    "AddStatesFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "BatchIndividualItems",
    "NumpyToTensor",
)


def __getattr__(name: str) -> Any:
    if name in DEFAULT_PIECES:
        return getattr(importlib.import_module(DEFAULT_PIECES_MODULE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# RLlib's key names in PrevActionsPrevRewards' Dict observations.
ORIG_OBS_KEY = "_orig_obs"
PREV_ACTIONS_KEY = "prev_n_actions"
PREV_REWARDS_KEY = "prev_n_rewards"


#: What the filter adds to the std before dividing by it: RLlib 2.60's `SMALL_NUMBER`.
SMALL_NUMBER = 1e-6


class RunningStat:
    """Count `n`, `mean` and sum of squared deviations `m2` of a stream of arrays, pushed a
    batch of rows at a time, mergeable exactly with another (Chan et al.).

    It keeps running sums of the values' deviations from a `shift` near the mean:
        s = sum(x - shift),   q = m2 when the shift was set + sum((x - shift) ** 2),
        mean = shift + s / n,   m2 = q - s * (s / n).
    A batch of rows adds to the sums row after row, the carried sums first
    (`np.add.accumulate`): each row's statistics after its own push come for the whole batch
    in a few numpy calls, and are the same to the bit however a stream is split into batches.
    The shift moves to the mean when n reaches a power of two (and in `merged`, `from_state`):
    then n (mean - shift)^2 <= m2, and m2 = q - s * s / n loses no precision to cancellation
    (it agrees with Welford's one-at-a-time updates to float64 rounding)."""

    def __init__(self, shape: tuple[int, ...]):
        self._set(0, np.zeros(shape, dtype=np.float64), np.zeros(shape, dtype=np.float64))

    def _set(self, n: int, mean: np.ndarray, m2: np.ndarray) -> None:
        """These statistics, shifted to their mean."""
        self.n, self.shift, self.s, self.q = n, mean, np.zeros_like(mean), m2

    @property
    def mean(self) -> np.ndarray:
        return self.shift + self.s / self.n if self.n else self.shift.copy()

    @property
    def m2(self) -> np.ndarray:
        return self.q - self.s * (self.s / self.n) if self.n else self.q.copy()

    @property
    def std(self) -> np.ndarray:
        # RLlib 2.60's RunningStat: the sample standard deviation, 0 below two values (a
        # de-std'ed first observation is then divided by SMALL_NUMBER alone, and clipped;
        # RLlib's filter takes the variance as float32).
        if self.n <= 1:
            return np.zeros_like(self.shift)
        return np.sqrt(np.maximum(self.m2 / (self.n - 1), 0.0))

    def push(self, x: np.ndarray) -> None:
        self.push_rows(np.asarray(x, dtype=np.float64)[None], each=False)

    def push_rows(self, rows: np.ndarray, *, each: bool = True) -> Any:
        """Pushes the rows of `rows` (float64) in order; returns each row's deviation from the
        mean and the std (`std`'s rules), both right after its own push (unless not `each`:
        None)."""
        if 0 < len(rows) < (1 << self.n.bit_length()) - self.n:  # (most batches)
            return self._push_part(rows, each)
        parts = []
        while len(rows):
            room = (1 << self.n.bit_length()) - self.n  # rows until n is a power of two
            parts.append(self._push_part(rows[:room], each))
            rows = rows[room:]
            if self.n & (self.n - 1) == 0:  # the shift moves to the mean
                self._set(self.n, self.mean, self.m2)
        if not each:
            return None
        if not parts:
            return rows.copy(), rows.copy()
        deviations, stds = zip(*parts, strict=True)
        return np.concatenate(deviations), np.concatenate(stds)

    def _push_part(self, rows: np.ndarray, each: bool) -> Any:
        """`push_rows` of rows that take n up to the next power of two at most."""
        n0, k = self.n, len(rows)
        d = rows - self.shift
        s = d.copy()
        s[0] += self.s
        s = _running_sums(s)  # each row's s after its push
        q = d * d
        q[0] += self.q
        q = _running_sums(q)  # each row's q after its push
        self.n, self.s, self.q = n0 + k, s[-1], q[-1]
        if not each:
            return None
        n, n_1 = n0 + _counts(k, rows.shape[1:])  # each row's n after its push, and n - 1
        a = s / n  # each row's mean - shift
        m2 = q - s * a
        var = m2 / n_1 if n0 else np.zeros_like(m2)  # (n0 == 0: one row, n == 1, std 0)
        deviation = d - a
        return deviation, np.sqrt(np.maximum(var, 0.0, out=var), out=var)

    def merged(self, other: RunningStat) -> RunningStat:
        result = RunningStat(self.shift.shape)
        n = self.n + other.n
        if n == 0:
            return result
        mean = self.mean
        delta = other.mean - mean
        result._set(
            n,
            mean + delta * (other.n / n),
            self.m2 + other.m2 + delta * delta * (self.n * other.n / n),
        )
        return result

    def to_state(self) -> dict:
        return {"n": self.n, "mean": self.mean, "m2": self.m2}

    @classmethod
    def from_state(cls, state: dict) -> RunningStat:
        stat = cls(np.shape(state["mean"]))
        mean = np.array(state["mean"], dtype=np.float64)
        stat._set(int(state["n"]), mean, np.array(state["m2"], dtype=np.float64))
        return stat


#: Per (rows, shape of a row): each row's place in the batch and one less, 1, 2, ... and
#: 0, 1, ... down the rows, as one array (`RunningStat._push_part`).
_COUNTS: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}


def _counts(rows: int, shape: tuple[int, ...]) -> np.ndarray:
    counts = _COUNTS.get((rows, shape))
    if counts is None:
        places = np.arange(1.0, rows + 1.0)
        counts = np.stack([places, places - 1.0]).reshape((2, rows) + (1,) * len(shape))
        if math.prod(shape) <= 64:  # small rows: as the rows' shape (numpy broadcasts slower)
            counts = counts + np.zeros((2, rows) + shape)
        _COUNTS[rows, shape] = counts
    return counts


def _running_sums(terms: np.ndarray) -> np.ndarray:
    """The sums of `terms` down its rows, row after row, in place: numpy's accumulate for
    narrow rows, one vector addition per row for wide ones (numpy accumulates down a wide
    array an element at a time); the same additions either way."""
    if terms[0].size <= 64:
        return np.add.accumulate(terms, out=terms)
    for i in range(1, len(terms)):
        np.add(terms[i - 1], terms[i], out=terms[i])
    return terms


@functools.cache
def _float_row_filter(width: int, de_mean: bool, de_std: bool, clipped: bool) -> Any:
    """`step(rows, n, state, clip) -> n`: a MeanStdFilter's pushes and filtering of `rows`
    (lists of `width` Python floats, rewritten in place, in order) from the statistics' count
    `n` (at least 1) and `state` (shift, s, q: one list, rewritten), as
    `RunningStat.push_rows` and `MeanStdFilter._filtered` compute them, the same IEEE
    operations in the same order. Written out for the width (each column's sums in local
    variables; Python indexes lists slower than it does arithmetic), as `dataclasses` writes
    its methods. A row, column j:
        d = x_j - shift_j;  s_j += d;  q_j += d * d;  a = s_j / n        (n: after its push)
        var = max((q_j - s_j * a) / (n - 1), 0);  v = (d - a) / (sqrt(var) + SMALL_NUMBER)
        v = min(max(v, -clip), clip)
    and when n reaches a power of two the shift moves to the mean (`RunningStat`)."""
    columns = range(width)
    state = ", ".join([f"shift{j}" for j in columns] + [f"s{j}" for j in columns])
    state += ", " + ", ".join(f"q{j}" for j in columns)
    lines = [
        f"def step(rows, n, state, clip, sqrt=math.sqrt, eps={SMALL_NUMBER!r}):",
        f"    {state}, = state",
        "    low = -clip",
        "    for row in rows:",
        f"        {', '.join(f'x{j}' for j in columns)}, = row",
        "        n += 1",
        "        n_1 = n - 1",
    ]
    for j in columns:
        lines += [
            f"        d = x{j} - shift{j}",
            f"        s{j} += d",
            f"        q{j} += d * d",
            f"        a = s{j} / n",
            f"        v{j} = " + ("d - a" if de_mean else f"x{j}"),
        ]
        if de_std:
            lines += [
                f"        var = (q{j} - s{j} * a) / n_1",
                "        if var < 0.0:  # (a NaN stays)",
                "            var = 0.0",
                f"        v{j} = v{j} / (sqrt(var) + eps)",
            ]
        if clipped:
            lines += [
                f"        if v{j} < low:",
                f"            v{j} = low",
                f"        elif v{j} > clip:",
                f"            v{j} = clip",
            ]
    lines.append("        if not n & n_1:  # n is a power of two: the shift moves to the mean")
    lines += [
        f"            shift{j}, s{j}, q{j} = shift{j} + s{j} / n, 0.0, q{j} - s{j} * (s{j} / n)"
        for j in columns
    ]
    lines += [
        f"        row[:] = {', '.join(f'v{j}' for j in columns)},",
        f"    state[:] = {state},",
        "    return n",
    ]
    namespace: dict[str, Any] = {"math": math}
    exec("\n".join(lines), namespace)  # noqa: S102 (the text above, of ints and names only)
    return namespace["step"]


#: Batches of at most this many numbers are filtered with Python floats (the same arithmetic
#: as numpy's, without its cost per call), larger ones with numpy (`normalize_rows`).
_FLOAT_LOOP_SIZE = 32

#: Rows pushed into the normalizing statistics wait for the buffer's push up to this many
#: batches or bytes, or until the buffer is read (`MeanStdFilter._buffered`).
_UNBUFFERED = (256, 1 << 20)


class MeanStdFilter(ConnectorV2):
    """Normalizes Box observations to mean 0 and std 1 with running statistics, then clips them
    to [-clip_by_value, clip_by_value].

    Each EnvRunner updates its statistics with every observation it sees (unless
    `update_stats=False`). After each training step the runners' new observations are merged
    exactly into one set of statistics, which goes to every runner (evaluation runners included)
    with the next weights, into checkpoints, and to restarted runners.

    With `multi_agent=True` (a MultiAgentEnv's runs, as RLlib's) each agent has statistics of
    its own, made for its observation space the first time the MultiAgentEnvRunner asks for it
    (`agent_observation_space`, `transform_agent_observation`), merged and synced agent by
    agent.
    """

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        de_mean_to_zero: bool = True,
        de_std_to_one: bool = True,
        clip_by_value: float | None = 10.0,
        update_stats: bool = True,
        **kwargs: Any,
    ):
        self.multi_agent = bool(multi_agent)
        #: With `multi_agent`: each agent's filter (a single-agent MeanStdFilter), by agent id.
        self._agent_filters: dict[Any, MeanStdFilter] = {}
        self.de_mean_to_zero = de_mean_to_zero
        self.de_std_to_one = de_std_to_one
        self.clip_by_value = clip_by_value
        self._update_stats = update_stats
        self._synced: RunningStat | None = None  # the merged statistics of the last sync
        self._buffer: RunningStat | None = None  # this runner's observations since then
        self._stats: RunningStat | None = None  # synced + buffer: what normalizes
        #: `_stats` as [n, shift + s + q (one Python list)] while small batches are filtered
        #: (`_normalize_floats`); written back when the statistics are read.
        self._hot: list | None = None
        #: Rows pushed into `_stats`, not yet into `_buffer` (`_buffered` pushes them): (a
        #: batch, the order of its rows pushed), and their bytes.
        self._unbuffered: list[tuple[np.ndarray, list[int] | None]] = []
        self._unbuffered_bytes = 0
        super().__init__(input_observation_space, input_action_space, **kwargs)

    # -- multi-agent: a filter per agent ------------------------------------------------------
    def _agent_filter(self, agent_id: Any, space: gym.Space | None = None) -> MeanStdFilter:
        """`agent_id`'s filter, made (or given its input space) for `space`."""
        piece = self._agent_filters.get(agent_id)
        if piece is None:
            piece = self._agent_filters[agent_id] = MeanStdFilter(
                de_mean_to_zero=self.de_mean_to_zero,
                de_std_to_one=self.de_std_to_one,
                clip_by_value=self.clip_by_value,
                update_stats=self._update_stats,
            )
        if space is not None and piece.input_observation_space is None:
            try:
                piece.input_observation_space = space
            except ValueError as error:
                raise ValueError(
                    f"MeanStdFilter(multi_agent=True), agent {agent_id!r}: {error}"
                ) from None
        return piece

    def agent_observation_space(self, agent_id: Any, space: gym.Space) -> gym.Space:
        """The space of `agent_id`'s observations (of the env space `space`) after this
        (multi-agent) piece."""
        output = self._agent_filter(agent_id, space).observation_space
        assert output is not None, "a filter with an input space has an output space"
        return output

    def transform_agent_observation(self, agent_id: Any, space: gym.Space, observation: Any) -> Any:
        """`agent_id`'s observation filtered by its own statistics (pushed first, unless
        `update_stats=False`)."""
        piece = self._agent_filter(agent_id, space)
        return piece.normalize(np.asarray(observation, np.float64), update=self._update_stats)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        if self.multi_agent:  # RLlib's Dict of agent spaces; None until known
            if input_observation_space is None:
                return None
            return per_agent_spaces(self, "MeanStdFilter", input_observation_space)
        if not isinstance(input_observation_space, gym.spaces.Box):
            raise ValueError(
                f"MeanStdFilter filters Box observations; this env's are "
                f"{input_observation_space} (add FlattenObservations before it)"
            )
        if self._stats is None or self._stats.mean.shape != input_observation_space.shape:
            self._reset(input_observation_space.shape)
        if self.clip_by_value is None:
            return gym.spaces.Box(-np.inf, np.inf, input_observation_space.shape, np.float32)
        return gym.spaces.Box(
            -self.clip_by_value, self.clip_by_value, input_observation_space.shape, np.float32
        )

    def _reset(self, shape: tuple[int, ...]) -> None:
        self._synced, self._buffer, self._stats = (
            RunningStat(shape),
            RunningStat(shape),
            RunningStat(shape),
        )
        self._hot = None
        self._unbuffered, self._unbuffered_bytes = [], 0

    def _normalizing(self) -> RunningStat:
        """The normalizing statistics (`_stats`), with what `_normalize_floats` kept."""
        if self._stats is None:
            raise RuntimeError("MeanStdFilter: its input observation space is not set yet")
        if self._hot is not None:
            stats, shape = self._stats, self._stats.shift.shape
            stats.n, state = self._hot
            stats.shift, stats.s, stats.q = np.reshape(state, (3, *shape))
            self._hot = None
        return self._stats

    def _buffered(self) -> RunningStat:
        """The buffer (`_buffer`), the rows kept for it pushed (the same sums as pushing each
        batch as it came)."""
        assert self._buffer is not None, "made with the normalizing statistics"
        if self._unbuffered:
            batches = [rows if order is None else rows[order] for rows, order in self._unbuffered]
            rows = batches[0] if len(batches) == 1 else np.concatenate(batches)
            self._buffer.push_rows(rows, each=False)
            self._unbuffered, self._unbuffered_bytes = [], 0
        return self._buffer

    def _statistics(self) -> tuple[RunningStat, RunningStat, RunningStat]:
        """(synced, buffer, stats): made once the input observation space is known."""
        stats = self._normalizing()
        assert self._synced is not None
        return self._synced, self._buffered(), stats

    def normalize(self, observation: np.ndarray, *, update: bool) -> np.ndarray:
        """One observation, filtered (its statistics pushed first when `update`)."""
        return self.normalize_rows(np.asarray(observation)[None], update=update)[0]

    def normalize_rows(
        self, observations: np.ndarray, *, update: bool, order: list[int] | None = None
    ) -> np.ndarray:
        """Each row of `observations` filtered in `order` (row indices; None: first to last),
        as `normalize` one row after the other gives them, to the bit: with `update`, a row is
        filtered by the statistics after its own push (into both the normalizing statistics
        and the buffer), computed for all rows at once (`RunningStat.push_rows`, the same bits
        however the rows come in batches). The float32 result has the rows' shape and order;
        rows left out of `order` come back unfiltered."""
        x = np.asarray(observations)
        kept = x.astype(np.float64)  # (a copy: the buffer's rows, `_buffered`)
        if update:
            self._unbuffered.append((kept, None if order is None else list(order)))
            self._unbuffered_bytes += kept.nbytes
            if len(self._unbuffered) >= _UNBUFFERED[0] or self._unbuffered_bytes >= _UNBUFFERED[1]:
                self._buffered()
            if 0 < kept.size <= _FLOAT_LOOP_SIZE and self._pushed_before():
                return self._normalize_floats(kept, order)
        index = None if order is None else np.array(order, dtype=np.intp)
        rows = kept if index is None else kept.take(index, axis=0)
        filtered = self._filtered(rows, update)
        if index is None:
            return filtered.astype(np.float32)
        out = x.astype(np.float32)
        out[index] = filtered
        return out

    def _filtered(self, rows: np.ndarray, update: bool) -> np.ndarray:
        """`rows` (float64) filtered in numpy (pushed first when `update`)."""
        stats = self._normalizing()
        if update:
            deviation, std = stats.push_rows(rows)
        else:
            deviation, std = rows - stats.mean, stats.std
        filtered = deviation if self.de_mean_to_zero else rows
        if self.de_std_to_one:
            filtered = filtered / (std + SMALL_NUMBER)
        if self.clip_by_value is not None:  # (a NaN stays)
            clip = self.clip_by_value
            filtered = np.minimum(np.maximum(filtered, -clip), clip)
        return filtered

    def _pushed_before(self) -> bool:
        """Whether the normalizing statistics hold a row (the Python-float filter's rows then
        each have n >= 2)."""
        return self._hot is not None or self._normalizing().n > 0

    def _normalize_floats(self, rows: np.ndarray, order: list[int] | None) -> np.ndarray:
        """`normalize_rows` of a few rows (float64), pushed, after the statistics' first row:
        the same IEEE operations in the same order as `RunningStat.push_rows` and the filter's
        in numpy (so the same bits) in Python floats, without numpy's cost per call, by a
        function written for the rows' width (`_float_row_filter`). The normalizing
        statistics stay a Python list between such calls (`_hot`)."""
        hot = self._hot
        if hot is None:
            stats = self._normalizing()
            state = np.concatenate([stats.shift.ravel(), stats.s.ravel(), stats.q.ravel()])
            hot = self._hot = [stats.n, state.tolist()]
        out = rows.reshape(len(rows), -1).tolist()
        step = _float_row_filter(
            len(out[0]), self.de_mean_to_zero, self.de_std_to_one, self.clip_by_value is not None
        )
        clip = math.inf if self.clip_by_value is None else float(self.clip_by_value)
        hot[0] = step(out if order is None else [out[i] for i in order], hot[0], hot[1], clip)
        return np.array(out, dtype=np.float32).reshape(rows.shape)

    @property
    def transforms_rows(self) -> bool:
        """As `ConnectorV2.transforms_rows`, and `normalize` not overridden either."""
        return super().transforms_rows and type(self).normalize is MeanStdFilter.normalize

    def transform_rows(
        self,
        observations: np.ndarray,
        *,
        order: list[int] | None = None,
        update_stats: bool | None = None,
    ) -> Any:
        update = self._update_stats if update_stats is None else update_stats
        return self.normalize_rows(observations, update=update, order=order)

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: Any,
        episodes: list,
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        update_stats: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        episodes = list(self.single_agent_episode_iterator(episodes))
        if not episodes:
            return batch
        if type(self).normalize is not MeanStdFilter.normalize:  # a subclass's, per episode
            update = self._update_stats if update_stats is None else update_stats
            for episode in episodes:
                observation = self.normalize(episode.get_observations(-1), update=update)
                episode.set_observations(new_data=observation, at_indices=-1)
            return batch
        rows = np.stack([np.asarray(ep.get_observations(-1), np.float64) for ep in episodes])
        filtered = self.transform_rows(rows, update_stats=update_stats)
        for episode, row in zip(episodes, filtered, strict=True):
            episode.set_observations(new_data=row, at_indices=-1)
        return batch

    def get_state(
        self, components: Any = None, *, not_components: Any = None, **kwargs: Any
    ) -> dict:
        if self.multi_agent:  # [[agent id, its state], ...]: agent ids of any plain type
            return {
                AGENTS_KEY: [
                    [agent_id, piece.get_state()]
                    for agent_id, piece in self._agent_filters.items()
                    if piece._synced is not None
                ]
            }
        synced, buffer, _ = self._statistics()
        return {"synced": synced.to_state(), "buffer": buffer.to_state()}

    def set_state(self, state: dict) -> None:
        """Takes statistics: a runner's own state (exact resume), or a merged one (no buffer:
        the runner starts collecting anew)."""
        if self.multi_agent:
            for agent_id, agent_state in state[AGENTS_KEY]:
                self._agent_filter(_agent_key(agent_id)).set_state(agent_state)
            return
        self._synced = RunningStat.from_state(state["synced"])
        self._hot = None
        self._unbuffered, self._unbuffered_bytes = [], 0
        self._buffer = (
            RunningStat.from_state(state["buffer"])
            if "buffer" in state
            else RunningStat(self._synced.mean.shape)
        )
        self._stats = self._synced.merged(self._buffer)

    def merge_states(self, states: list[dict]) -> dict:
        """This piece's synced statistics plus every runner's new observations (each state's
        `buffer`), once each: the statistics of all observations seen so far."""
        if self.multi_agent:
            by_agent: dict[Any, list[dict]] = {}
            for state in states:
                for agent_id, agent_state in state[AGENTS_KEY]:
                    by_agent.setdefault(_agent_key(agent_id), []).append(agent_state)
            for agent_id in self._agent_filters:
                by_agent.setdefault(agent_id, [])
            merged_agents = []
            for agent_id, agent_states in by_agent.items():
                piece = self._agent_filter(agent_id)
                if piece._synced is None:  # an agent only the other runners have seen
                    piece._reset(RunningStat.from_state(agent_states[0]["buffer"]).mean.shape)
                merged_agents.append([agent_id, piece.merge_states(agent_states)])
            return {AGENTS_KEY: merged_agents}
        merged, _, _ = self._statistics()
        for state in states:
            merged = merged.merged(RunningStat.from_state(state["buffer"]))
        return {"synced": merged.to_state()}

    def __repr__(self) -> str:
        return (
            f"MeanStdFilter({'multi_agent=True, ' if self.multi_agent else ''}"
            f"de_mean_to_zero={self.de_mean_to_zero}, de_std_to_one="
            f"{self.de_std_to_one}, clip_by_value={self.clip_by_value})"
        )


def per_agent_spaces(piece: Any, name: str, input_observation_space: gym.Space) -> gym.Space:
    """A per-agent piece's output space: RLlib's Dict of agent spaces, each agent's mapped by
    `piece.agent_observation_space`; a single-agent env's space is refused."""
    if not isinstance(input_observation_space, gym.spaces.Dict):
        raise ValueError(
            f"{name}(multi_agent=True): the env is single-agent (its observation space is "
            f"{input_observation_space}); leave multi_agent out"
        )
    return gym.spaces.Dict(
        {
            agent_id: piece.agent_observation_space(agent_id, space)
            for agent_id, space in input_observation_space.spaces.items()
        }
    )


#: The key of a multi-agent MeanStdFilter's state: `[[agent id, state], ...]`.
AGENTS_KEY = "agents"


def _agent_key(agent_id: Any) -> Any:
    """An agent id as read back from a state (msgpack turns tuples into lists)."""
    return tuple(agent_id) if isinstance(agent_id, list) else agent_id


def _applied_per_agent(piece: ConnectorV2) -> RuntimeError:
    """The error of a `multi_agent=True` piece called over episodes: the MultiAgentEnvRunner
    applies it to each agent's observations instead."""
    name = type(piece).__name__
    return RuntimeError(
        f"{name}(multi_agent=True) runs in a MultiAgentEnvRunner, which applies it per agent; "
        f"a single-agent env takes {name}()"
    )


def _refuse_as_learner_connector(piece: str, as_learner_connector: bool) -> None:
    """RLlib's pieces also run in the learner's pipeline; here the env-to-module piece's
    output is in the episodes, which is what the learner trains on."""
    if as_learner_connector:
        raise ValueError(
            f"{piece}(as_learner_connector=True): learner connectors are not "
            "supported here; the env-to-module piece's output is what the "
            "learner trains on"
        )


class FlattenObservations(ConnectorV2):
    """Flattens any gymnasium observation (Dict, Tuple, Discrete as one-hot, Box) into one
    float32 vector (`gymnasium.spaces.flatten`).

    With `multi_agent=True` (a MultiAgentEnv's runs) it flattens the observations of the agents
    in `agent_ids` (all agents when None), each by its own space: the input space is then
    RLlib's Dict of agent spaces, and the MultiAgentEnvRunner applies the piece per agent
    (`agent_observation_space`, `flatten_agent_observation`)."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        agent_ids: Any = None,
        as_learner_connector: bool = False,
        keys_to_remove: list | None = None,
        **kwargs: Any,
    ):
        if as_learner_connector:
            _refuse_as_learner_connector("FlattenObservations", True)
        if agent_ids is not None and not multi_agent:
            raise ValueError(
                f"FlattenObservations(agent_ids={agent_ids!r}): agent_ids needs "
                "multi_agent=True (a MultiAgentEnv's agents)"
            )
        self.multi_agent = bool(multi_agent)
        #: The agents whose observations are flattened (None: all of them).
        self.agent_ids = None if agent_ids is None else set(agent_ids)
        #: Keys of a Dict observation dropped before flattening (RLlib's `keys_to_remove`).
        self.keys_to_remove = list(keys_to_remove or [])
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def _kept_space(self, space: gym.Space) -> gym.Space:
        if not self.keys_to_remove or not isinstance(space, gym.spaces.Dict):
            return space
        return gym.spaces.Dict(
            {key: sub for key, sub in space.spaces.items() if key not in self.keys_to_remove}
        )

    def flattens_agent(self, agent_id: Any) -> bool:
        """Whether this (multi-agent) piece flattens `agent_id`'s observations."""
        return self.agent_ids is None or agent_id in self.agent_ids

    def agent_observation_space(self, agent_id: Any, space: gym.Space) -> gym.Space:
        """The space of `agent_id`'s observations after this piece (its env space when the
        piece leaves the agent out)."""
        if not self.flattens_agent(agent_id):
            return space
        return self._flat_space(space)

    def flatten_agent_observation(self, agent_id: Any, space: gym.Space, observation: Any) -> Any:
        """`agent_id`'s observation (of the env space `space`) after this piece."""
        if not self.flattens_agent(agent_id):
            return observation
        return self._flatten(self._kept_space(space), observation)

    transform_agent_observation = flatten_agent_observation

    @staticmethod
    def _flatten(space: gym.Space, observation: Any) -> np.ndarray:
        if isinstance(space, gym.spaces.Dict):
            observation = {key: observation[key] for key in space.spaces}
        return np.asarray(gym.spaces.flatten(space, observation), dtype=np.float32)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        if input_observation_space is None:
            return None
        if self.multi_agent:
            return per_agent_spaces(self, "FlattenObservations", input_observation_space)
        return self._flat_space(input_observation_space)

    def _flat_space(self, input_observation_space: gym.Space) -> gym.Space:
        space = gym.spaces.flatten_space(self._kept_space(input_observation_space))
        if not isinstance(space, gym.spaces.Box):
            raise ValueError(
                f"FlattenObservations: {input_observation_space} does not flatten into a Box"
            )
        return gym.spaces.Box(
            space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32
        )

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        if self.input_observation_space is None:
            raise RuntimeError("FlattenObservations: its input observation space is not set")
        if self.multi_agent:
            raise _applied_per_agent(self)
        space = self._kept_space(self.input_observation_space)
        for episode in self.single_agent_episode_iterator(episodes):
            flat = self._flatten(space, episode.get_observations(-1))
            episode.set_observations(new_data=flat, at_indices=-1)
        return batch


def _one_hot_or_flat(action: Any, space: gym.Space) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        row = np.zeros(space.n, dtype=np.float32)
        row[int(action) - space.start] = 1.0
        return row
    return np.asarray(action, dtype=np.float32).ravel()


class PrevActionsPrevRewards(ConnectorV2):
    """Adds the last `n_prev_actions` actions (one-hot for Discrete) and `n_prev_rewards`
    rewards to the observation: `{"_orig_obs": obs, "prev_n_actions": ..., "prev_n_rewards": ...}`
    (zeros before the episode's first steps). Follow it with `FlattenObservations` for the MLP.

    With `multi_agent=True` (a MultiAgentEnv's runs) each agent's observation gets that agent's
    own last actions and rewards (an action's reward: what the agent got from that step until
    it acted again, as its episode sums them); the MultiAgentEnvRunner keeps each agent's
    history (`trainer.runners.multi_agent_observations.AgentHistory`) and applies the piece per
    agent (`agent_observation_space`, `transform_agent_observation`)."""

    #: The keys of the dict observation it makes (RLlib's class attributes).
    ORIG_OBS_KEY = ORIG_OBS_KEY
    PREV_ACTIONS_KEY = PREV_ACTIONS_KEY
    PREV_REWARDS_KEY = PREV_REWARDS_KEY

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        multi_agent: bool = False,
        n_prev_actions: int = 1,
        n_prev_rewards: int = 1,
        **kwargs: Any,
    ):
        for name, value in (("n_prev_actions", n_prev_actions), ("n_prev_rewards", n_prev_rewards)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"PrevActionsPrevRewards({name}={value!r}): a whole number >= 0")
        self.multi_agent = bool(multi_agent)
        self.n_prev_actions = int(n_prev_actions)
        self.n_prev_rewards = int(n_prev_rewards)
        super().__init__(input_observation_space, input_action_space, **kwargs)

    @staticmethod
    def _action_size(action_space: gym.Space) -> int:
        if isinstance(action_space, gym.spaces.Discrete):
            return int(action_space.n)
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(f"PrevActionsPrevRewards: Discrete or Box actions, not {action_space}")
        return int(np.prod(action_space.shape))

    def _dict_space(self, observation_space: gym.Space, action_space: gym.Space) -> gym.Space:
        """The Dict observation space for observations of `observation_space` and actions of
        `action_space`."""
        spaces = {ORIG_OBS_KEY: observation_space}
        if self.n_prev_actions:
            size = self.n_prev_actions * self._action_size(action_space)
            low, high = (
                (0.0, 1.0)
                if not isinstance(action_space, gym.spaces.Box)
                else (
                    np.tile(action_space.low.ravel(), self.n_prev_actions),
                    np.tile(action_space.high.ravel(), self.n_prev_actions),
                )
            )
            spaces[PREV_ACTIONS_KEY] = gym.spaces.Box(low, high, (size,), np.float32)
        if self.n_prev_rewards:
            spaces[PREV_REWARDS_KEY] = gym.spaces.Box(
                -np.inf, np.inf, (self.n_prev_rewards,), np.float32
            )
        return gym.spaces.Dict(spaces)

    def _dict_observation(
        self, observation: Any, actions: Any, rewards: Any, action_space: gym.Space | None
    ) -> dict[str, Any]:
        """`observation` with the latest `actions` and `rewards` (oldest first; fewer than
        asked for at an episode's start: zeros before them)."""
        new = {ORIG_OBS_KEY: observation}
        if self.n_prev_actions and action_space is not None:
            width = self._action_size(action_space)
            rows = [np.zeros(width, np.float32)] * (self.n_prev_actions - len(actions))
            rows += [_one_hot_or_flat(a, action_space) for a in actions]
            new[PREV_ACTIONS_KEY] = np.concatenate(rows).astype(np.float32)
        if self.n_prev_rewards:
            padded = [0.0] * (self.n_prev_rewards - len(rewards)) + [float(r) for r in rewards]
            new[PREV_REWARDS_KEY] = np.asarray(padded, dtype=np.float32)
        return new

    def agent_observation_space(
        self, agent_id: Any, space: gym.Space, action_space: gym.Space
    ) -> gym.Space:
        """(multi-agent) The space of `agent_id`'s observations after this piece."""
        return self._dict_space(space, action_space)

    def transform_agent_observation(
        self,
        agent_id: Any,
        space: gym.Space,
        observation: Any,
        *,
        actions: list,
        rewards: list,
        action_space: gym.Space,
    ) -> dict[str, Any]:
        """(multi-agent) `agent_id`'s observation with its own last actions and rewards
        (oldest first, as many as it has in the episode, up to the piece's numbers)."""
        return self._dict_observation(
            observation,
            actions[len(actions) - self.n_prev_actions :] if self.n_prev_actions else [],
            rewards[len(rewards) - self.n_prev_rewards :] if self.n_prev_rewards else [],
            action_space,
        )

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        if input_observation_space is None or input_action_space is None:
            return input_observation_space
        if self.multi_agent:
            name = "PrevActionsPrevRewards"
            if not isinstance(input_observation_space, gym.spaces.Dict) or not isinstance(
                input_action_space, gym.spaces.Dict
            ):
                raise ValueError(
                    f"{name}(multi_agent=True): the env is single-agent (its observation "
                    f"space is {input_observation_space}); leave multi_agent out"
                )
            return gym.spaces.Dict(
                {
                    agent_id: self._dict_space(space, input_action_space[agent_id])
                    for agent_id, space in input_observation_space.spaces.items()
                }
            )
        return self._dict_space(input_observation_space, input_action_space)

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        if self.multi_agent:
            raise _applied_per_agent(self)
        action_space = self.input_action_space
        if action_space is None and self.n_prev_actions:
            raise RuntimeError("PrevActionsPrevRewards: its input action space is not set")
        for episode in self.single_agent_episode_iterator(episodes):
            # The latest steps (from the lookback buffer, too); fewer at an episode's start.
            actions = (
                episode.get_actions(slice(-self.n_prev_actions, None))
                if self.n_prev_actions
                else []
            )
            rewards = (
                episode.get_rewards(slice(-self.n_prev_rewards, None))
                if self.n_prev_rewards
                else []
            )
            new = self._dict_observation(
                episode.get_observations(-1), actions, rewards, action_space
            )
            episode.set_observations(new_data=new, at_indices=-1)
        return batch


class FrameStackingEnvToModule(ConnectorV2):
    """Stacks the last `num_frames` observations along their last axis (a Box of shape
    `(..., C)` becomes `(..., C * num_frames)` of the same dtype, oldest first; zeros before
    the episode's first frames).

    As the last piece of a single-agent pipeline whose algorithm runs a
    `FrameStackingLearner(num_frames=...)` of the same count (PPO, APPO, IMPALA), it is RLlib's
    piece: the episodes keep each frame once (a chunk that continues an episode carries the
    frames before it as its observations' lookback buffer), the module gets the stacked
    frames, and the learner stacks them again (`trainer.runners.module_frames`). Elsewhere the
    episodes hold the stacked observations, which the learner trains on as they are.

    With `multi_agent=True` (a MultiAgentEnv's runs) each agent's frames are stacked on their
    own; the MultiAgentEnvRunner keeps each agent's stack through the episode."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        num_frames: int = 1,
        multi_agent: bool = False,
        as_learner_connector: bool = False,
        **kwargs: Any,
    ):
        _refuse_as_learner_connector("FrameStackingEnvToModule", as_learner_connector)
        if int(num_frames) < 1:
            raise ValueError(f"FrameStackingEnvToModule(num_frames={num_frames}): must be >= 1")
        self.num_frames = int(num_frames)
        self.multi_agent = bool(multi_agent)
        super().__init__(input_observation_space, input_action_space, **kwargs)

    def agent_observation_space(self, agent_id: Any, space: gym.Space) -> gym.Space:
        """(multi-agent) The space of `agent_id`'s stacked observations."""
        return self._stacked_space(space)

    def stack_agent_frame(self, previous: np.ndarray | None, observation: Any) -> np.ndarray:
        """(multi-agent) An agent's stacked observation after `observation`, from its stacked
        one before (None at its first)."""
        frame = np.asarray(observation)
        if frame.dtype != np.uint8:
            frame = frame.astype(np.float32, copy=False)
        if previous is None:
            previous = np.zeros(
                frame.shape[:-1] + (frame.shape[-1] * self.num_frames,), frame.dtype
            )
        return np.concatenate([previous[..., frame.shape[-1] :], frame], axis=-1)

    def recompute_output_observation_space(
        self, input_observation_space: gym.Space | None, input_action_space: gym.Space | None
    ) -> gym.Space | None:
        if input_observation_space is None:
            return None
        if self.multi_agent:
            return per_agent_spaces(self, "FrameStackingEnvToModule", input_observation_space)
        return self._stacked_space(input_observation_space)

    def _stacked_space(self, input_observation_space: gym.Space) -> gym.Space:
        if not isinstance(input_observation_space, gym.spaces.Box):
            raise ValueError(
                f"FrameStackingEnvToModule stacks Box observations; this env's "
                f"are {input_observation_space}"
            )
        space = input_observation_space
        # Frames of bytes (images) stay bytes, as in RLlib; others are stacked as float32.
        dtype = np.uint8 if space.dtype == np.uint8 else np.float32
        low = np.concatenate([np.broadcast_to(space.low, space.shape)] * self.num_frames, -1)
        high = np.concatenate([np.broadcast_to(space.high, space.shape)] * self.num_frames, -1)
        return gym.spaces.Box(low.astype(dtype), high.astype(dtype), dtype=dtype)

    def __call__(self, *, rl_module: Any, batch: Any, episodes: list, **kwargs: Any) -> Any:
        key = "FrameStackingEnvToModule"
        if self.multi_agent:
            raise _applied_per_agent(self)
        for episode in self.single_agent_episode_iterator(episodes):
            stacked = self.stack_agent_frame(
                episode.connector_data.get(key), episode.get_observations(-1)
            )
            episode.connector_data[key] = stacked
            episode.set_observations(new_data=stacked, at_indices=-1)
        return batch


class EnvToModulePipeline(ConnectorPipelineV2):
    """RLlib's env-to-module pipeline: the pieces an EnvRunner runs over its episodes before
    the module sees their observations (what `env_runner.env_to_module` is)."""

    @classmethod
    def from_checkpoint(cls, path: Any, **kwargs: Any) -> EnvToModulePipeline:
        """The env-to-module pipeline saved in an algorithm checkpoint's
        `env_runner/env_to_module_connector` directory: the config's pieces with their saved
        state (a MeanStdFilter's statistics), then RLlib's default batching pieces, so that
        `pipeline(episodes=[...], rl_module=module)` returns the module's input batch (see
        `trainer.algorithms.connector_pipelines`, named by its path: it sits above)."""
        loader = importlib.import_module(CONNECTOR_PIPELINES)
        pipeline = loader.load_pipeline(path, expected=cls)
        assert isinstance(pipeline, EnvToModulePipeline)
        return pipeline

    def __repr__(self) -> str:
        return f"EnvToModulePipeline({self.connectors!r})"


class SingleAgentObservationPreprocessor(ConnectorV2, abc.ABC):
    """A piece that maps each episode's latest observation through `preprocess()`: override
    `preprocess(observation, episode)` (and `recompute_output_observation_space` when the
    observation changes its form)."""

    @abc.abstractmethod
    def preprocess(self, observation: Any, episode: Any) -> Any:
        """The new observation for `observation`, the latest one of `episode`."""

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict,
        episodes: list,
        explore: bool | None = None,
        persistent_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        for episode in self.single_agent_episode_iterator(episodes):
            new = self.preprocess(observation=episode.get_observations(-1), episode=episode)
            episode.set_observations(at_indices=-1, new_data=new)
        return batch


#: RLlib's name for the single-agent preprocessor base.
ObservationPreprocessor = SingleAgentObservationPreprocessor


class MultiAgentObservationPreprocessor(ConnectorV2, abc.ABC):
    """RLlib's piece that maps a multi-agent step's observations (a dict of the agents that
    observe, each observation unbatched) through `preprocess()` to a new dict: override
    `preprocess(observations, episode)` and, when the observations change their form,
    `recompute_output_observation_space` (input and output: a Dict of agent spaces).

    The MultiAgentEnvRunner applies it to each step's observations as they leave a sub-env,
    before the episodes record them (with the per-agent pieces, in the pipeline's order);
    `episode` is then None: the preprocessed observations are what the episode records."""

    multi_agent = True

    @abc.abstractmethod
    def preprocess(self, observations: dict, episode: Any) -> dict:
        """The new observations dict for `observations` (one step's, by agent id)."""

    def __call__(self, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{type(self).__name__} runs in a MultiAgentEnvRunner, which applies "
            "preprocess() to each step's observations"
        )
