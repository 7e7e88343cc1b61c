"""`EpisodeReplayBuffer`: RLlib 2.60's uniform replay buffer of whole episodes
(`ray.rllib.utils.replay_buffers.episode_replay_buffer`).

The buffer keeps episodes, not loose steps: `episodes` is a deque of `SingleAgentEpisode`s
(oldest first), and a chunk whose `id_` is already stored is appended to its episode
(`concat_episode`), so episodes complete over several `add()` calls. Past `capacity` env steps,
whole episodes are evicted from the front (never the only one left: one episode longer than the
capacity stays until another arrives).

`sample()` draws env steps uniformly (each stored step is one entry of the timestep index):
- `sample_episodes=True` (what DQN uses): `batch_size_B` one-step episodes, each holding the
  n-step transition (o_t, a_t, sum_k gamma^k r_(t+k), o_(t+n)) with `n_step` and `weights`
  (ones) in its `extra_model_outputs`; near an episode's end the transition stops there (fewer
  than n steps). With `batch_length_T`, slices of that many steps instead.
- otherwise (the default): a dict of [B, T] arrays (`obs`, `actions`, `rewards`, `is_first`,
  `is_last`, `is_terminated`, `is_truncated`), rows running on into a next episode.

`sample_transitions()` (not in RLlib) draws exactly as `sample(sample_episodes=True)` does but
returns the batch as arrays, without building an episode per row: DQN's training step uses it.

The state (`get_state`) is plain data (dicts, lists, strings, numbers, numpy arrays) for
`ormsgpack.packb(state, option=ormsgpack.OPT_SERIALIZE_NUMPY)`; numpy'ized episodes of one layout
are stored as concatenated columns (a handful of arrays, not a dict per episode).
"""

from __future__ import annotations

import copy
import platform
from collections import deque
from typing import Any

import numpy as np

from trainer.core.spaces import batch, map_structure, space_from_dict, space_to_dict
from trainer.env.episode import REWARD_SPACE, SingleAgentEpisode
from trainer.env.lookback_buffer import InfiniteLookbackBuffer
from trainer.metrics import MetricsLogger
from trainer.util.rng import generator_state, set_generator_state

# RLlib's metric names (ray.rllib.utils.metrics), as the buffer reports them.
NUM_EPISODES_STORED = "num_episodes_stored"
NUM_EPISODES_ADDED = "num_episodes_added"
NUM_EPISODES_ADDED_LIFETIME = "num_episodes_added_lifetime"
NUM_EPISODES_EVICTED = "num_episodes_evicted"
NUM_EPISODES_EVICTED_LIFETIME = "num_episodes_evicted_lifetime"
NUM_ENV_STEPS_STORED = "num_env_steps_stored"
NUM_ENV_STEPS_ADDED = "num_env_steps_added"
NUM_ENV_STEPS_ADDED_LIFETIME = "num_env_steps_added_lifetime"
NUM_ENV_STEPS_EVICTED = "num_env_steps_evicted"
NUM_ENV_STEPS_EVICTED_LIFETIME = "num_env_steps_evicted_lifetime"
NUM_EPISODES_PER_SAMPLE = "num_episodes_per_sample"
NUM_ENV_STEPS_PER_SAMPLE = "num_env_steps_per_sample"
NUM_ENV_STEPS_PER_SAMPLE_LIFETIME = "num_env_steps_per_sample_lifetime"
NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_ENV_STEPS_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"
ENV_STEP_UTILIZATION = "env_step_utilization"
ACTUAL_N_STEP = "actual_n_step"
NUM_RESAMPLES = "num_resamples"


class BufferMetrics:
    """The buffer's metrics under RLlib's names: what `add()` and `sample()` did since the last
    `get_metrics()` (sums), lifetime totals, and sizes and ratios smoothed over a window.
    (RLlib also logs each number per agent and per module; with one agent and one module those
    repeat the env-step numbers, and are left out.)

    `add()` and `sample()` only update plain counters here; they reach the (non-root)
    MetricsLogger when it is read, one `log_value` per key instead of one per key per call."""

    # Sums reported per `reduce()` of the logger, and sums over the buffer's life.
    _PER_REDUCE: dict[str, Any] = {"reduce": "sum"}
    _LIFETIME: dict[str, Any] = {"reduce": "lifetime_sum"}
    _WINDOWED = (NUM_EPISODES_STORED, NUM_ENV_STEPS_STORED, ENV_STEP_UTILIZATION, ACTUAL_N_STEP)

    def __init__(self, smoothing_window: int):
        self._logger = MetricsLogger(root=False)
        self.window = smoothing_window
        self._sums: dict[str, float] = {}  # per-reduce sums; "<key>_lifetime" also lifetime
        self._windowed: dict[str, deque] = {
            key: deque(maxlen=smoothing_window) for key in self._WINDOWED
        }

    @property
    def logger(self) -> MetricsLogger:
        """The logger, with everything counted so far logged into it."""
        log = self._logger.log_value
        for key, values in self._windowed.items():
            for value in values:
                log(key, value, reduce="mean", window=self.window)
            values.clear()
        for key, value in self._sums.items():
            log(key, value, **self._PER_REDUCE)
            if key in _WITH_LIFETIME:
                log(key + "_lifetime", value, **self._LIFETIME)
        self._sums.clear()
        return self._logger

    def _count(self, key: str, value: float) -> None:
        self._sums[key] = self._sums.get(key, 0) + value

    def log_add(
        self,
        buffer: Any,  # a buffer with get_num_episodes() / get_num_timesteps()
        *,
        episodes_added: int,
        steps_added: int,
        episodes_evicted: int,
        steps_evicted: int,
    ) -> None:
        self._windowed[NUM_EPISODES_STORED].append(buffer.get_num_episodes())
        self._windowed[NUM_ENV_STEPS_STORED].append(buffer.get_num_timesteps())
        self._count(NUM_EPISODES_ADDED, episodes_added)
        self._count(NUM_ENV_STEPS_ADDED, steps_added)
        self._count(NUM_EPISODES_EVICTED, episodes_evicted)
        self._count(NUM_ENV_STEPS_EVICTED, steps_evicted)

    def log_sample(
        self,
        *,
        steps_sampled: int,
        episodes_per_sample: int,
        steps_per_sample: int,
        mean_n_step: float | None,
        resamples: int,
    ) -> None:
        self._count(NUM_EPISODES_PER_SAMPLE, episodes_per_sample)
        self._count(NUM_ENV_STEPS_PER_SAMPLE, steps_per_sample)
        self._count(NUM_ENV_STEPS_SAMPLED, steps_sampled)
        self._windowed[ENV_STEP_UTILIZATION].append(steps_per_sample / max(steps_sampled, 1))
        if mean_n_step:
            self._windowed[ACTUAL_N_STEP].append(mean_n_step)
        self._count(NUM_RESAMPLES, resamples)


# The per-reduce sums RLlib also keeps a lifetime total of ("<key>_lifetime").
_WITH_LIFETIME = {
    NUM_EPISODES_ADDED,
    NUM_ENV_STEPS_ADDED,
    NUM_EPISODES_EVICTED,
    NUM_ENV_STEPS_EVICTED,
    NUM_ENV_STEPS_PER_SAMPLE,
    NUM_ENV_STEPS_SAMPLED,
}


class StepTable:
    """One row per stored env step, in the order the steps were added: the step's episode
    (its global index: the position among all episodes ever added), its timestep in the
    episode, its segment-tree node (prioritized buffer), its reward, whether the episode
    ended there (1 terminated, 2 truncated), the row of the episode's next step (-1: none
    stored yet), and, while every step's observation and action are arrays of one shape, the
    observation, the next observation and the action.

    The sampler follows the `links` for n-step returns with a few numpy calls per batch
    instead of reading episodes row by row. Columns grow by doubling."""

    _INT_COLUMNS = ("episodes", "timesteps", "nodes", "links")

    def __init__(self) -> None:
        self._size = 0
        self._capacity = 0
        self._columns: dict[str, np.ndarray] = {
            **{name: np.zeros(0, np.int64) for name in self._INT_COLUMNS},
            "rewards": np.zeros(0, np.float64),
            "ends": np.zeros(0, np.int8),
        }
        #: obs / next_obs / actions rows; None until the first rows, {} once they stop fitting.
        self._data: dict[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return self._size

    def __getattr__(self, name: str) -> np.ndarray:
        columns = self.__dict__.get("_columns")
        if columns is not None and name in columns:
            return columns[name][: self._size]
        data = self.__dict__.get("_data")
        if data and name in data:
            return data[name][: self._size]
        raise AttributeError(name)

    @property
    def has_data(self) -> bool:
        """Whether observations and actions are held here (else read from the episodes)."""
        return bool(self._data)

    def extend(
        self,
        episode: int,
        timesteps: np.ndarray,
        nodes: np.ndarray | None,
        rewards: np.ndarray,
        ends: np.ndarray,
        data: dict[str, np.ndarray] | None,
    ) -> np.ndarray:
        """Appends rows; returns their positions."""
        count = len(timesteps)
        if not count:
            return np.zeros(0, np.int64)
        start, stop = self._size, self._size + count
        if stop > self._capacity:
            self._grow(max(stop, 2 * self._capacity, 1024))
        columns = self._columns
        columns["episodes"][start:stop] = episode
        columns["timesteps"][start:stop] = timesteps
        columns["nodes"][start:stop] = -1 if nodes is None else nodes
        columns["links"][start : stop - 1] = np.arange(start + 1, stop)
        columns["links"][stop - 1 : stop] = -1
        columns["rewards"][start:stop] = rewards
        columns["ends"][start:stop] = ends
        self._extend_data(start, stop, data)
        self._size = stop
        return np.arange(start, stop)

    def _extend_data(self, start: int, stop: int, data: dict[str, np.ndarray] | None) -> None:
        if self._data == {}:
            return  # rows stopped fitting: observations come from the episodes
        fits = data is not None and (
            self._data is None
            or all(
                data[k].dtype == column.dtype and data[k].shape[1:] == column.shape[1:]
                for k, column in self._data.items()
            )
        )
        if not fits or data is None:
            self._data = {}
            return
        if self._data is None:
            self._data = {
                k: np.zeros((self._capacity, *v.shape[1:]), v.dtype) for k, v in data.items()
            }
        for k, column in self._data.items():
            column[start:stop] = data[k]

    def _grow(self, capacity: int) -> None:
        for group in (self._columns, self._data or {}):
            for name, column in group.items():
                grown = np.zeros((capacity, *column.shape[1:]), column.dtype)
                grown[: self._size] = column[: self._size]
                group[name] = grown
        self._capacity = capacity

    def set_columns(self, **columns: np.ndarray) -> None:
        """Overwrites whole integer columns (as many values as rows)."""
        for name, values in columns.items():
            self._columns[name][: self._size] = values

    def link(self, from_position: int, to_position: int) -> None:
        self._columns["links"][from_position] = to_position

    def keep(self, mask: np.ndarray) -> np.ndarray:
        """Keeps the rows where `mask` is True, in order; returns each old row's new position
        (-1 for dropped rows). Links to dropped rows become -1."""
        new_position = np.cumsum(mask) - 1
        new_position[~mask] = -1
        kept = int(mask.sum())
        for group in (self._columns, self._data or {}):
            for column in group.values():
                column[:kept] = column[: self._size][mask]
        links = self._columns["links"][:kept]
        links[:] = np.where(links >= 0, new_position[np.maximum(links, 0)], -1)
        self._size = kept
        return new_position


class Draws:
    """One draw of n-step transitions, as arrays with a row per transition: where each starts
    (`positions` in the step table, its episode's global index and the timestep), the n drawn
    (`n_step`), the steps it spans (`steps`, < n where the stored steps end first), its
    discounted return, its last step's flags, importance weights, tree nodes and (when the
    table holds them) observations and actions."""

    def __init__(self, **columns: Any):
        self.columns = columns
        self.resamples = 0

    def __len__(self) -> int:
        return len(self.columns["positions"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def select(self, mask: np.ndarray) -> Draws:
        """The rows where `mask` is True (columns may be structs of arrays)."""
        selected = Draws(
            **{
                name: map_structure(lambda leaf: leaf[mask], column)
                for name, column in self.columns.items()
            }
        )
        selected.resamples = self.resamples
        return selected

    @staticmethod
    def concatenate(parts: list[Draws]) -> Draws:
        joined = Draws(
            **{
                name: map_structure(
                    lambda *leaves: np.concatenate(leaves), *(part[name] for part in parts)
                )
                for name in parts[0].columns
            }
        )
        joined.resamples = sum(part.resamples for part in parts)
        return joined


class EpisodeReplayBuffer:
    """Stores whole episodes (at most `capacity` env steps, oldest episodes evicted first) and
    samples their steps uniformly; see the module docstring."""

    def __init__(
        self,
        capacity: int = 10000,
        *,
        batch_size_B: int = 16,
        batch_length_T: int = 64,
        metrics_num_episodes_for_smoothing: int = 100,
        seed: int | None = None,
        **kwargs: Any,
    ):
        _check_int(type(self).__name__, "capacity", capacity, 1)
        _check_int(type(self).__name__, "batch_size_B", batch_size_B, 1)
        _check_int(type(self).__name__, "batch_length_T", batch_length_T, 0)
        self.capacity = capacity
        self.batch_size_B = batch_size_B
        self.batch_length_T = batch_length_T
        #: The stored episodes, oldest first.
        self.episodes: deque[SingleAgentEpisode] = deque()
        #: Episode id -> global index (the position among all episodes ever added; minus
        #: `_num_episodes_evicted` it is the position in `episodes`).
        self.episode_id_to_index: dict[str, int] = {}
        self._num_episodes_evicted = 0
        #: One row per stored step (RLlib's `_indices`, with the steps' data).
        self._indices = StepTable()
        self._last_row: dict[int, int] = {}  # global index -> row of its last stored step
        # Rows of evicted episodes not yet compacted away (see `_drop_evicted_rows`).
        self._dead_rows = 0
        self._num_timesteps = 0
        self._num_timesteps_added = 0
        self.sampled_timesteps = 0
        self._last_sampled_indices: list[int] = []
        self.rng = np.random.default_rng(seed)
        self._metrics = BufferMetrics(metrics_num_episodes_for_smoothing)
        self._metrics_num_episodes_for_smoothing = metrics_num_episodes_for_smoothing

    @property
    def metrics(self) -> MetricsLogger:
        return self._metrics.logger

    # -- sizes -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.get_num_timesteps()

    def get_num_episodes(self, module_id: str | None = None) -> int:
        """Episodes (complete or not) stored."""
        return len(self.episodes)

    def get_num_episodes_evicted(self, module_id: str | None = None) -> int:
        return self._num_episodes_evicted

    def get_num_timesteps(self, module_id: str | None = None) -> int:
        """Env steps stored."""
        return len(self._indices) - self._dead_rows

    def get_sampled_timesteps(self, module_id: str | None = None) -> int:
        """Env steps sampled over the buffer's life."""
        return self.sampled_timesteps

    def get_added_timesteps(self, module_id: str | None = None) -> int:
        """Env steps added over the buffer's life."""
        return self._num_timesteps_added

    def get_metrics(self) -> dict:
        """The buffer's metrics since the last call (reduced; for `MetricsLogger.aggregate`)."""
        return self.metrics.reduce()

    def get_host(self) -> str:
        """The machine this buffer lives on (RLlib's `ReplayBufferInterface.get_host`)."""
        return platform.node()

    def _episode_at(self, index: int) -> SingleAgentEpisode:
        """The stored episode of global index `index`."""
        return self.episodes[index - self._num_episodes_evicted]

    # -- adding ------------------------------------------------------------------------------
    def add(self, episodes: SingleAgentEpisode | list[SingleAgentEpisode]) -> None:
        """Stores copies of `episodes` (chunks of stored episodes are appended to them), then
        evicts the oldest episodes while more than `capacity` steps are stored (keeping at
        least one episode)."""
        episodes = _as_episode_list(episodes)
        episodes_added = steps_added = episodes_evicted = steps_evicted = 0
        first_evicted = self._num_episodes_evicted
        for incoming in episodes:
            length = len(incoming)
            self._num_timesteps += length
            self._num_timesteps_added += length
            steps_added += length
            if self._store(incoming):
                episodes_added += 1
            while self._num_timesteps > self.capacity and len(self.episodes) > 1:
                evicted = self._evict_oldest()
                episodes_evicted += 1
                steps_evicted += len(evicted)
        if episodes_evicted:
            self._drop_evicted_rows(first_evicted)
        self._metrics.log_add(
            self,
            episodes_added=episodes_added,
            steps_added=steps_added,
            episodes_evicted=episodes_evicted,
            steps_evicted=steps_evicted,
        )

    def _store(self, incoming: SingleAgentEpisode, nodes: np.ndarray | None = None) -> bool:
        """Stores a copy of `incoming` (appended to its stored episode when there is one) and
        its steps' rows; returns whether it started a new episode."""
        index = self.episode_id_to_index.get(incoming.id_)
        is_new = index is None
        if index is not None:
            # Appending copies the chunk's data: no copy of the chunk needed.
            existing = self._episode_at(index)
            first_timestep = len(existing)
            existing.concat_episode(incoming)
            existing.to_numpy()  # columns an episode without steps kept as lists
        else:
            self.episodes.append(_storable_copy(incoming))
            index = len(self.episodes) - 1 + self._num_episodes_evicted
            self.episode_id_to_index[incoming.id_] = index
            first_timestep = 0
        length = len(incoming)
        if length:
            rewards, ends, data = _step_rows(incoming)
            rows = self._indices.extend(
                index, first_timestep + np.arange(length), nodes, rewards, ends, data
            )
            previous = self._last_row.get(index)
            if previous is not None:
                self._indices.link(previous, int(rows[0]))
            self._last_row[index] = int(rows[-1])
        return is_new

    def _evict_oldest(self) -> SingleAgentEpisode:
        evicted = self.episodes.popleft()
        index = self.episode_id_to_index.pop(evicted.id_)
        self._last_row.pop(index, None)
        self._num_timesteps -= len(evicted)
        self._num_episodes_evicted += 1
        return evicted

    def _drop_evicted_rows(self, first_evicted: int) -> None:
        """Marks the rows of the episodes just evicted (global indices `first_evicted` up to
        the number evicted) as dead. Dead rows are compacted away only once they are a
        quarter of the live ones: an eviction per finished episode would otherwise move
        every stored row each time."""
        episodes = self._indices.episodes
        evicted_rows = (episodes >= first_evicted) & (episodes < self._num_episodes_evicted)
        self._on_rows_evicted(evicted_rows)
        self._dead_rows += int(evicted_rows.sum())
        if self._dead_rows > max(_COMPACT_AT_LEAST, self.get_num_timesteps() // 4):
            self._compact()

    def _on_rows_evicted(self, rows: np.ndarray) -> None:
        """Hook for the prioritized buffer: frees the evicted rows' tree nodes."""

    def _compact(self) -> None:
        new_position = self._indices.keep(self._indices.episodes >= self._num_episodes_evicted)
        self._last_row = {index: int(new_position[row]) for index, row in self._last_row.items()}
        self._dead_rows = 0
        self._on_compacted()

    def _on_compacted(self) -> None:
        """Hook for the prioritized buffer: its node -> row map follows the rows."""

    def _live_rows(self) -> np.ndarray:
        return self._indices.episodes >= self._num_episodes_evicted

    def _uniform_rows(self, count: int) -> np.ndarray:
        """`count` rows drawn uniformly among the live ones (dead rows are drawn again)."""
        rows = self.rng.integers(len(self._indices), size=count)
        if not self._dead_rows:
            return rows
        episodes = self._indices.episodes
        for _ in range(1000):
            dead = episodes[rows] < self._num_episodes_evicted
            if not dead.any():
                return rows
            rows[dead] = self.rng.integers(len(self._indices), size=int(dead.sum()))
        raise RuntimeError("replay buffer: no live row drawn in 1000 rounds")

    # -- sampling ----------------------------------------------------------------------------
    def sample(
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        batch_length_T: int | None = None,
        n_step: int | tuple | None = None,
        beta: float = 0.0,
        gamma: float = 0.99,
        include_infos: bool = False,
        include_extra_model_outputs: bool = False,
        sample_episodes: bool | None = False,
        to_numpy: bool = False,
        lookback: int = 0,
        min_batch_length_T: int = 0,
        **kwargs: Any,
    ) -> dict | list[SingleAgentEpisode]:
        """Draws from the buffer: with `sample_episodes=True` a list of episodes (n-step
        transitions, or `batch_length_T`-step slices), else a dict of [B, T] arrays. See the
        module docstring; `num_items` is `batch_size_B`'s other name."""
        batch_size_B = self._batch_size(num_items, batch_size_B)
        self._check_not_empty()
        if sample_episodes:
            return self._sample_episodes(
                batch_size_B=batch_size_B,
                batch_length_T=batch_length_T,
                n_step=n_step,
                gamma=gamma,
                include_extra_model_outputs=include_extra_model_outputs,
                to_numpy=to_numpy,
                lookback=lookback,
                min_batch_length_T=min_batch_length_T,
            )
        return self._sample_batch(batch_size_B=batch_size_B, batch_length_T=batch_length_T)

    def sample_transitions(
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        n_step: int | tuple = 1,
        gamma: float = 0.99,
        beta: float = 0.0,
    ) -> dict[str, np.ndarray]:
        """`batch_size_B` n-step transitions drawn as `sample(sample_episodes=True)` draws
        them, as arrays: `obs`, `actions`, `rewards` (discounted n-step sums), `new_obs`,
        `terminateds`, `truncateds` (of the transition's last step), `n_step` (the n drawn),
        `n_steps_taken` (the steps the transition spans: fewer than n where an episode's
        stored steps end first), `weights` (importance weights)."""
        batch_size_B = self._batch_size(num_items, batch_size_B)
        self._check_not_empty()
        draws = self._draw(batch_size_B, _check_n_step(n_step), gamma, beta)
        return self._finish_sample(
            draws,
            {
                "obs": draws["obs"],
                "actions": draws["actions"],
                "rewards": draws["returns"].astype(np.float32),
                "new_obs": draws["new_obs"],
                "terminateds": draws["terminateds"],
                "truncateds": draws["truncateds"],
                "n_step": draws["n_step"],
                "n_steps_taken": draws["steps"],
                "weights": draws["weights"].astype(np.float32),
            },
        )

    def _batch_size(self, num_items: int | None, batch_size_B: int | None) -> int:
        if num_items is not None and batch_size_B is not None:
            raise ValueError(
                f"{type(self).__name__}.sample(): give num_items={num_items} or "
                f"batch_size_B={batch_size_B}, not both (they are one setting)"
            )
        size = num_items if num_items is not None else batch_size_B
        size = size or self.batch_size_B
        _check_int(f"{type(self).__name__}.sample", "batch_size_B", size, 1)
        return size

    def _check_not_empty(self) -> None:
        if not self.get_num_timesteps():
            raise ValueError(
                f"{type(self).__name__}.sample(): the buffer holds no env steps "
                "(add episodes first)"
            )

    def _draw(self, batch_size: int, n_step: int | tuple, gamma: float, beta: float) -> Draws:
        """Uniform draws of stored steps, each with its n (drawn from [low, high) for a
        tuple); a transition stops early where its episode's stored steps end."""
        positions = self._uniform_rows(batch_size)
        draws = self._transitions(positions, self._draw_n_steps(n_step, batch_size), gamma)
        draws.columns["weights"] = np.ones(batch_size)
        return draws

    def _draw_n_steps(self, n_step: int | tuple, count: int) -> np.ndarray:
        if isinstance(n_step, tuple):
            return self.rng.integers(n_step[0], n_step[1], size=count)
        return np.full(count, n_step, np.int64)

    def _transitions(self, positions: np.ndarray, n_steps: np.ndarray, gamma: float) -> Draws:
        """The n-step transitions starting at table rows `positions`: each step's successor
        is followed (all rows at once) until n steps, the episode's end, or the last stored
        step."""
        table = self._indices
        rewards, links, ends = table.rewards, table.links, table.ends
        returns = rewards[positions].astype(np.float64)
        last = positions.copy()
        steps = np.ones(len(positions), np.int64)
        ended = ends[positions] != 0
        for k in range(1, int(n_steps.max(initial=1))):
            following = links[last]
            go = ~ended & (following >= 0) & (k < n_steps)
            if not go.any():
                break
            last = np.where(go, following, last)
            returns += np.where(go, gamma**k * rewards[last], 0.0)
            steps += go
            ended |= go & (ends[last] != 0)
        columns = {
            "positions": positions,
            "episodes": table.episodes[positions],
            "timesteps": table.timesteps[positions],
            "n_step": n_steps,
            "steps": steps,
            "returns": returns,
            "terminateds": ends[last] == 1,
            "truncateds": ends[last] == 2,
            "nodes": table.nodes[positions],
        }
        if table.has_data:
            columns.update(
                obs=table.obs[positions],
                new_obs=table.next_obs[last],
                actions=table.actions[positions],
            )
        else:
            columns.update(
                self._rows_from_episodes(columns["episodes"], columns["timesteps"], steps)
            )
        return Draws(**columns)

    def _rows_from_episodes(
        self, episodes: np.ndarray, timesteps: np.ndarray, steps: np.ndarray
    ) -> dict[str, Any]:
        """Observations and actions read from the episodes (when they are not arrays of one
        shape, e.g. dict observations), batched."""
        obs, new_obs, actions = [], [], []
        for index, t, n in zip(episodes.tolist(), timesteps.tolist(), steps.tolist(), strict=True):
            episode = self._episode_at(index)
            obs.append(episode.get_observations(t))
            new_obs.append(episode.get_observations(t + n))
            actions.append(episode.get_actions(t))
        return {"obs": batch(obs), "new_obs": batch(new_obs), "actions": batch(actions)}

    def _finish_sample(
        self,
        draws: Draws,
        result: Any,
        steps_sampled: int | None = None,
        n_steps: np.ndarray | None = None,
    ) -> Any:
        """Bookkeeping every sample does: counters (`steps_sampled`: as RLlib counts them, by
        default one per row), the indices for priority updates, and the metrics."""
        count = len(draws) if steps_sampled is None else steps_sampled
        self.sampled_timesteps += count
        nodes = draws["nodes"]
        self._last_sampled_indices = nodes[nodes >= 0].tolist()
        n_steps = draws["n_step"] if n_steps is None else n_steps
        self._metrics.log_sample(
            steps_sampled=count,
            episodes_per_sample=len(set(draws["episodes"].tolist())),
            steps_per_sample=len(set(draws["positions"].tolist())),
            mean_n_step=float(np.mean(n_steps)) if len(n_steps) else None,
            resamples=draws.resamples,
        )
        return result

    def _sample_episodes(
        self,
        *,
        batch_size_B: int,
        batch_length_T: int | None,
        n_step: int | tuple | None,
        gamma: float,
        include_extra_model_outputs: bool,
        to_numpy: bool,
        lookback: int,
        min_batch_length_T: int,
    ) -> list[SingleAgentEpisode]:
        if n_step is None:
            raise ValueError(
                f"{type(self).__name__}.sample(sample_episodes=True): n_step is "
                "required (an int >= 1, or a (low, high) range)"
            )
        if batch_length_T:
            if n_step != 1:
                raise ValueError(
                    f"{type(self).__name__}.sample(batch_length_T="
                    f"{batch_length_T}): sequences are sampled with n_step=1, "
                    f"got n_step={n_step!r}"
                )
            return self._sample_sequences(
                batch_size_B, batch_length_T, lookback, min_batch_length_T
            )
        draws = self._draw(batch_size_B, _check_n_step(n_step), gamma, 0.0)
        # RLlib's uniform buffer always carries the infos of both ends.
        episodes = [
            self._transition_episode(
                draws,
                row,
                include_infos=True,
                include_extra_model_outputs=(include_extra_model_outputs),
                keep_id=True,
                to_numpy=to_numpy,
            )
            for row in range(len(draws))
        ]
        return self._finish_sample(draws, episodes)

    def _transition_episode(
        self,
        draws: Draws,
        row: int,
        *,
        include_infos: bool,
        include_extra_model_outputs: bool,
        keep_id: bool,
        to_numpy: bool,
    ) -> SingleAgentEpisode:
        """Row `row` of `draws` as a one-step episode (o_t, a_t, R, o_(t+steps))."""
        episode = self._episode_at(int(draws["episodes"][row]))
        t, steps = int(draws["timesteps"][row]), int(draws["steps"][row])
        extra = {"weights": [float(draws["weights"][row])], "n_step": [int(draws["n_step"][row])]}
        if include_extra_model_outputs:
            extra.update(
                {
                    key: [episode.get_extra_model_outputs(key, t)]
                    for key in episode.extra_model_outputs
                }
            )
        sampled = SingleAgentEpisode(
            id_=episode.id_ if keep_id else None,
            observations=[_row(draws["obs"], row), _row(draws["new_obs"], row)],
            observation_space=episode.observation_space,
            infos=([episode.get_infos(t), episode.get_infos(t + steps)] if include_infos else None),
            actions=[_row(draws["actions"], row)],
            action_space=episode.action_space,
            rewards=[float(draws["returns"][row])],
            terminated=bool(draws["terminateds"][row]),
            truncated=bool(draws["truncateds"][row]),
            extra_model_outputs=extra,
            t_started=t,
            len_lookback_buffer=0,
            agent_id=episode.agent_id,
            module_id=episode.module_id,
        )
        return sampled.to_numpy() if to_numpy else sampled

    def _uniform_starts(self) -> tuple[SingleAgentEpisode, int, int]:
        """One uniformly drawn stored step: its episode, global index and timestep."""
        position = int(self._uniform_rows(1)[0])
        index = int(self._indices.episodes[position])
        return self._episode_at(index), index, int(self._indices.timesteps[position])

    def _sample_sequences(
        self, batch_size_B: int, batch_length_T: int, lookback: int, min_batch_length_T: int
    ) -> list[SingleAgentEpisode]:
        """Slices of up to `batch_length_T` steps from uniformly drawn starts, with `lookback`
        steps of history, until `batch_size_B` steps are gathered."""
        sequences: list[SingleAgentEpisode] = []
        indices, starts = [], []
        resamples = gathered = 0
        while gathered < batch_size_B:
            if resamples > 1000 * batch_size_B:
                raise ValueError(
                    f"{type(self).__name__}.sample(min_batch_length_T={min_batch_length_T}): "
                    "no stored episode is long enough for that many steps after its start"
                )
            episode, index, start = self._uniform_starts()
            if min_batch_length_T > 0 and start + min_batch_length_T >= len(episode):
                resamples += 1
                continue
            stop = min(start + batch_length_T, len(episode))
            sequence = episode.slice(slice(start, stop), len_lookback_buffer=lookback)
            length = len(sequence)
            sequence.extra_model_outputs["n_step"] = InfiniteLookbackBuffer(
                np.full(length + lookback, 1), lookback=lookback
            )
            sequence.extra_model_outputs["weights"] = InfiniteLookbackBuffer(
                np.ones(length + lookback), lookback=lookback
            )
            sequences.append(sequence)
            indices.append(index)
            starts.append(start)
            # RLlib's count: a sequence of T steps counts T + 1.
            gathered += length + 1
        return self._finish_sample(
            _started(indices, starts, resamples), sequences, steps_sampled=batch_size_B
        )

    def _sample_batch(self, *, batch_size_B: int, batch_length_T: int | None) -> dict:
        """[B, T] arrays: each row a run of T steps from a uniformly drawn start; where an
        episode ends inside a row, a next drawn episode follows from its first step. Index 0
        of an episode carries reward 0.0; its last index repeats the last action and has
        `is_last` (plus `is_terminated` or `is_truncated`)."""
        batch_length_T = batch_length_T or self.batch_length_T
        rows: dict[str, list] = {key: [] for key in ("obs", "actions", "rewards")}
        flags = {
            key: np.zeros((batch_size_B, batch_length_T), bool)
            for key in ("is_first", "is_last", "is_terminated", "is_truncated")
        }
        indices, starts = [], []
        for row in range(batch_size_B):
            observations: list = []
            actions: list = []
            rewards: list = []
            while len(observations) < batch_length_T:
                episode, index, start = self._uniform_starts()
                start = start if not observations else 0
                flags["is_first"][row, len(observations)] = True
                rewards.append(0.0 if start == 0 else episode.get_rewards(start - 1))
                observations.extend(episode.get_observations(slice(start, None)))
                actions.extend(episode.get_actions(slice(start, None)))
                actions.append(episode.get_actions(-1))
                rewards.extend(episode.get_rewards(slice(start, None)))
                filled = min(len(observations), batch_length_T)
                flags["is_last"][row, filled - 1] = True
                if filled == len(observations):
                    if episode.is_terminated:
                        flags["is_terminated"][row, filled - 1] = True
                    elif episode.is_truncated:
                        flags["is_truncated"][row, filled - 1] = True
                indices.append(index)
                starts.append(start)
            rows["obs"].append(observations[:batch_length_T])
            rows["actions"].append(actions[:batch_length_T])
            rows["rewards"].append(rewards[:batch_length_T])
        batch_ = {
            "obs": np.array(rows["obs"]),
            "actions": np.array(rows["actions"]),
            "rewards": np.array(rows["rewards"]),
            **flags,
        }
        return self._finish_sample(
            _started(indices, starts, 0),
            batch_,
            steps_sampled=batch_size_B * batch_length_T,
            n_steps=np.zeros(0),
        )

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """The buffer as plain data (a snapshot: later adds do not change it). The steps'
        rows are stored as (episode, timestep, node) only: the rest is rebuilt from the
        episodes."""
        if self._dead_rows:
            # Rows as a restored buffer lays them out, so that both draw alike from here on.
            self._compact()
        table, live = self._indices, self._live_rows()
        return {
            "type": type(self).__name__,
            "capacity": self.capacity,
            "episodes": _episodes_state(list(self.episodes)),
            "episode_id_to_index": list(self.episode_id_to_index.items()),
            "_num_episodes_evicted": self._num_episodes_evicted,
            "_indices": {
                "episodes": table.episodes[live],
                "timesteps": table.timesteps[live],
                "nodes": table.nodes[live],
            },
            "_num_timesteps": self._num_timesteps,
            "_num_timesteps_added": self._num_timesteps_added,
            "sampled_timesteps": self.sampled_timesteps,
            "rng": generator_state(self.rng),
        }

    def _check_state_kind(self, state: dict[str, Any]) -> None:
        name = type(self).__name__
        if (
            not isinstance(state, dict)
            or state.get("type", name) != name
            or state.get("capacity", self.capacity) != self.capacity
        ):
            kind = (
                f"{state.get('type')}(capacity={state.get('capacity')})"
                if isinstance(state, dict)
                else type(state).__name__
            )
            raise ValueError(
                f"{name}(capacity={self.capacity}).set_state(): the state is of a {kind}"
            )

    def set_state(self, state: dict[str, Any]) -> None:
        """Replaces the buffer's contents with `state` (from `get_state`, also after a msgpack
        round trip). Raises ValueError for a state of another buffer type or capacity, or one
        whose parts do not fit together."""
        name = type(self).__name__
        self._check_state_kind(state)
        episodes = _episodes_from_state(state["episodes"])
        id_to_index = {str(k): int(v) for k, v in state["episode_id_to_index"]}
        evicted = int(state["_num_episodes_evicted"])
        if [id_to_index.get(ep.id_) for ep in episodes] != list(
            range(evicted, evicted + len(episodes))
        ):
            raise ValueError(
                f"{name}.set_state(): episode_id_to_index does not list the episodes in order"
            )
        rows = state["_indices"]
        indices = np.asarray(rows["episodes"], np.int64).reshape(-1)
        timesteps = np.asarray(rows["timesteps"], np.int64).reshape(-1)
        nodes = np.asarray(rows["nodes"], np.int64).reshape(-1)
        if not len(indices) == len(timesteps) == len(nodes):
            raise ValueError(f"{name}.set_state(): the step rows' columns differ in length")
        lengths = np.array([len(ep) for ep in episodes], np.int64)
        local = indices - evicted
        if len(local) and (
            local.min() < 0
            or local.max() >= len(episodes)
            or timesteps.min() < 0
            or np.any(timesteps >= lengths[local])
        ):
            raise ValueError(f"{name}.set_state(): the step rows point outside the stored episodes")
        if len(set(zip(indices.tolist(), timesteps.tolist(), strict=True))) != len(indices) or len(
            indices
        ) != int(lengths.sum()):
            raise ValueError(f"{name}.set_state(): the step rows do not list each stored step once")
        self.episodes = deque(episodes)
        self.episode_id_to_index = id_to_index
        self._num_episodes_evicted = evicted
        self._indices, self._last_row = _rebuilt_table(episodes, evicted, indices, timesteps, nodes)
        self._dead_rows = 0
        self._num_timesteps = int(state["_num_timesteps"])
        self._num_timesteps_added = int(state["_num_timesteps_added"])
        self.sampled_timesteps = int(state["sampled_timesteps"])
        if "rng" in state:
            set_generator_state(self.rng, state["rng"])


#: Dead rows are compacted away once there are more than this many (and a quarter of the live).
_COMPACT_AT_LEAST = 4096


# -- helpers -----------------------------------------------------------------------------------
def _check_int(owner: str, name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{owner}({name}={value!r}): must be an int >= {low}")


def _check_n_step(n_step: int | tuple | list | None) -> int | tuple:
    """`n_step` as an int, or a (low, high) tuple drawn from [low, high) as RLlib draws it."""
    if n_step is None:
        return 1
    if isinstance(n_step, (tuple, list)):
        if (
            len(n_step) == 2
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in n_step)
            and 1 <= n_step[0] < n_step[1]
        ):
            return (int(n_step[0]), int(n_step[1]))
    elif isinstance(n_step, (int, np.integer)) and not isinstance(n_step, bool) and n_step >= 1:
        return int(n_step)
    raise ValueError(
        f"sample(n_step={n_step!r}): must be an int >= 1 or a (low, high) tuple "
        "of ints with 1 <= low < high (n is drawn from [low, high) per row)"
    )


def _as_episode_list(episodes: Any) -> list[SingleAgentEpisode]:
    listed = [episodes] if isinstance(episodes, SingleAgentEpisode) else list(episodes)
    for episode in listed:
        if not isinstance(episode, SingleAgentEpisode):
            raise TypeError(f"add(): expected SingleAgentEpisodes, got {type(episode).__name__}")
    return listed


def _storable_copy(episode: SingleAgentEpisode) -> SingleAgentEpisode:
    """A copy the buffer may change (chunks are appended to it), numpy'ized for the sampler:
    the columns' data copied (arrays, and the lists of items and info dicts), the episode's
    identity, flags and `custom_data` kept. (A `copy.deepcopy` of the whole episode costs
    several times more: it walks every slot and object the episode refers to.)"""
    stored = SingleAgentEpisode(
        episode.id_,
        observation_space=episode.observation_space,
        action_space=episode.action_space,
        t_started=episode.t_started,
        agent_id=episode.agent_id,
        module_id=episode.module_id,
        multi_agent_episode_id=episode.multi_agent_episode_id,
        env_index=episode.env_index,
    )
    stored.observations = _column_copy(episode.observations)
    stored.actions = _column_copy(episode.actions)
    stored.rewards = _column_copy(episode.rewards)
    stored.infos = InfiniteLookbackBuffer(
        [
            dict(info) if isinstance(info, dict) else copy.deepcopy(info)
            for info in episode.infos.data
        ],
        episode.infos.lookback,
    )
    stored.extra_model_outputs = {
        key: _column_copy(column) for key, column in episode.extra_model_outputs.items()
    }
    stored.t = episode.t
    stored.is_terminated, stored.is_truncated = episode.is_terminated, episode.is_truncated
    if episode.custom_data:
        stored.custom_data = copy.deepcopy(episode.custom_data)
    return stored.to_numpy()


def _column_copy(column: InfiniteLookbackBuffer) -> InfiniteLookbackBuffer:
    data = column.data
    if isinstance(data, list):
        data = [copy.deepcopy(item) if isinstance(item, (dict, list)) else item for item in data]
    else:
        data = map_structure(np.copy, data)
    copied = InfiniteLookbackBuffer(data, column.lookback, column.space)
    return copied


def _step_rows(episode: SingleAgentEpisode) -> tuple[np.ndarray, np.ndarray, dict | None]:
    """A chunk's steps as table rows: rewards, end flags (the last step's, when the chunk ends
    its episode), and observations / next observations / actions when they are arrays of
    one shape (None otherwise: they are then read from the episodes)."""
    length = len(episode)
    rewards = np.asarray(episode.get_rewards(), np.float64).reshape(length)
    ends = np.zeros(length, np.int8)
    ends[-1] = 1 if episode.is_terminated else 2 if episode.is_truncated else 0
    observations = _as_rows(episode.get_observations())
    actions = _as_rows(episode.get_actions())
    if observations is None or actions is None:
        return rewards, ends, None
    return (
        rewards,
        ends,
        {"obs": observations[:-1], "next_obs": observations[1:], "actions": actions},
    )


def _as_rows(items: Any) -> np.ndarray | None:
    """A column's items as one array (None for structs, or items of different shapes)."""
    if isinstance(items, np.ndarray):
        return items if items.dtype != object else None
    if not isinstance(items, list) or any(isinstance(item, (dict, tuple)) for item in items):
        return None
    try:
        rows = np.asarray(items)
    except ValueError:
        return None
    return rows if rows.dtype != object else None


def _rebuilt_table(
    episodes: list[SingleAgentEpisode],
    evicted: int,
    indices: np.ndarray,
    timesteps: np.ndarray,
    nodes: np.ndarray,
) -> tuple[StepTable, dict]:
    """The step table of restored episodes, its rows in the stored order (`indices`,
    `timesteps`: each stored step once), read from the episodes' columns; and each episode's
    last row."""
    lengths = np.array([len(episode) for episode in episodes], np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    # Every episode's rows, episode after episode ("sorted" order) ...
    parts = [_step_rows(episode) for episode in episodes if len(episode)]
    table = StepTable()
    if not parts:
        return table, {}
    rewards = np.concatenate([part[0] for part in parts])
    ends = np.concatenate([part[1] for part in parts])
    data = None
    columns = [part[2] for part in parts if part[2] is not None]
    if len(columns) == len(parts):
        try:
            data = {
                key: np.concatenate([column[key] for column in columns])
                for key in ("obs", "next_obs", "actions")
            }
        except ValueError:  # rows of different shapes: read from the episodes
            data = None
    # ... and where each stored row sits among them, and the other way round.
    local = indices - evicted
    sorted_position = offsets[local] + timesteps
    stored_position = np.empty(len(indices), np.int64)
    stored_position[sorted_position] = np.arange(len(indices))
    has_next = timesteps + 1 < lengths[local]
    links = np.where(
        has_next, stored_position[np.minimum(sorted_position + 1, len(indices) - 1)], -1
    )
    table.extend(
        0,
        timesteps,
        nodes,
        rewards[sorted_position],
        ends[sorted_position],
        None if data is None else {k: v[sorted_position] for k, v in data.items()},
    )
    table.set_columns(episodes=indices, links=links)
    last_row = {
        evicted + i: int(stored_position[offsets[i] + lengths[i] - 1])
        for i in range(len(episodes))
        if lengths[i]
    }
    return table, last_row


def _started(indices: list[int], starts: list[int], resamples: int) -> Draws:
    """The draws of the sequence and [B, T] samplers, for their metrics: the starts drawn."""
    draws = Draws(
        positions=np.array([hash((i, t)) for i, t in zip(indices, starts, strict=True)]),
        episodes=np.array(indices, np.int64),
        n_step=np.ones(len(indices), np.int64),
        nodes=np.zeros(0, np.int64),
    )
    draws.resamples = resamples
    return draws


def _row(column: Any, row: int) -> Any:
    """Row `row` of an array or of a struct of arrays."""
    return map_structure(lambda leaf: leaf[row], column)


# -- episodes as plain data --------------------------------------------------------------------


def _episodes_state(episodes: list[SingleAgentEpisode]) -> Any:
    """The stored episodes as plain data: concatenated columns plus one small record per
    episode field when they share a layout (numpy columns of one dtype and row shape, the same
    extra model output keys), else RLlib's form, a list of `episode.get_state()`."""
    packed = _pack_columns(episodes)
    if packed is None:
        return [episode.get_state() for episode in episodes]
    return packed


def _pack_columns(episodes: list[SingleAgentEpisode]) -> dict | None:
    """The episodes' columns concatenated (with per-episode lengths and lookbacks) and their
    other fields as one list or array each; None when their columns do not share a layout."""
    if not episodes:
        return None
    extra_keys = list(episodes[0].extra_model_outputs)
    if any(list(episode.extra_model_outputs) != extra_keys for episode in episodes):
        return None
    buffers = {
        "observations": [episode.observations for episode in episodes],
        "actions": [episode.actions for episode in episodes],
        "rewards": [episode.rewards for episode in episodes],
    }
    for key in extra_keys:
        buffers[f"extra:{key}"] = [episode.extra_model_outputs[key] for episode in episodes]
    columns = {}
    for name, column_buffers in buffers.items():
        datas = [buffer.data for buffer in column_buffers]
        if not all(type(data) is np.ndarray for data in datas):
            return None
        filled = [data for data in datas if len(data)]
        layouts = {(data.dtype.str, data.shape[1:]) for data in filled}
        if len(layouts) > 1 or any(layout[0][1] == "O" for layout in layouts):
            return None
        dtype, row_shape = layouts.pop() if layouts else ("<f8", ())
        columns[name] = {
            "data": np.concatenate(filled) if filled else np.zeros(0),
            # msgpack keeps numbers, not dtypes and shapes: stored alongside.
            "dtype": dtype,
            "row_shape": list(row_shape),
            "lengths": np.fromiter(map(len, datas), np.int64, len(datas)),
            "lookbacks": np.array([buffer.lookback for buffer in column_buffers], np.int64),
        }
    infos = [episode.infos.data for episode in episodes]
    agent_ids = [episode.agent_id for episode in episodes]
    module_ids = [episode.module_id for episode in episodes]
    observation_spaces = [episode.observation_space for episode in episodes]
    action_spaces = [episode.action_space for episode in episodes]
    return {
        "format": "columns",
        "columns": columns,
        # Most envs return empty infos: then only their counts (the observations') are kept.
        "infos": [list(i) for i in infos] if any(any(i) for i in infos) else None,
        "info_lookbacks": np.array([episode.infos.lookback for episode in episodes], np.int64),
        "ids": [episode.id_ for episode in episodes],
        "t_started": np.array([episode.t_started for episode in episodes], np.int64),
        "t": np.array([episode.t for episode in episodes], np.int64),
        "terminated": np.array([episode.is_terminated for episode in episodes], bool),
        "truncated": np.array([episode.is_truncated for episode in episodes], bool),
        "env_index": np.array([episode.env_index for episode in episodes], np.int64),
        "agent_ids": agent_ids if any(a is not None for a in agent_ids) else None,
        "module_ids": module_ids if any(m is not None for m in module_ids) else None,
        "observation_spaces": (
            [space_to_dict(space) for space in observation_spaces]
            if any(observation_spaces)
            else None
        ),
        "action_spaces": (
            [space_to_dict(space) for space in action_spaces] if any(action_spaces) else None
        ),
    }


def _unpacked(column: tuple, i: int) -> InfiniteLookbackBuffer:
    """Episode `i`'s part of a packed column (a copy: the episode may grow in place)."""
    data, bounds, lookbacks = column
    return InfiniteLookbackBuffer(data[bounds[i] : bounds[i + 1]].copy(), int(lookbacks[i]))


def _episodes_from_state(state: Any) -> list[SingleAgentEpisode]:
    if isinstance(state, list):
        return [SingleAgentEpisode.from_state(entry).to_numpy() for entry in state]
    if not isinstance(state, dict) or state.get("format") != "columns":
        raise ValueError(
            "the state's 'episodes' is neither a list of episode states nor packed columns"
        )
    columns = {}
    for name, column in state["columns"].items():
        lengths = np.asarray(column["lengths"], np.int64)
        data = np.asarray(column["data"], dtype=np.dtype(column["dtype"])).reshape(
            (-1, *column["row_shape"])
        )
        if lengths.sum() != len(data):
            raise ValueError(
                f"the packed column {name!r} holds {len(data)} rows, its episodes "
                f"{int(lengths.sum())}"
            )
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        columns[name] = (data, bounds, np.asarray(column["lookbacks"], np.int64))
    ids = state["ids"]
    count = len(ids)
    infos = state["infos"]
    per_episode = {
        key: state[key] if state[key] is not None else [None] * count
        for key in ("agent_ids", "module_ids", "observation_spaces", "action_spaces")
    }
    obs_bounds = columns["observations"][1]
    episodes = []
    for i in range(count):
        num_obs = int(obs_bounds[i + 1] - obs_bounds[i])
        episode = SingleAgentEpisode(
            str(ids[i]),
            t_started=int(state["t_started"][i]),
            env_index=int(state["env_index"][i]),
            agent_id=per_episode["agent_ids"][i],
            module_id=per_episode["module_ids"][i],
        )
        episode.observations = _unpacked(columns["observations"], i)
        episode.actions = _unpacked(columns["actions"], i)
        episode.rewards = _unpacked(columns["rewards"], i)
        episode.rewards.space = REWARD_SPACE
        episode.infos = InfiniteLookbackBuffer(
            list(infos[i]) if infos is not None else [{} for _ in range(num_obs)],
            int(state["info_lookbacks"][i]),
        )
        episode.extra_model_outputs = {
            name[len("extra:") :]: _unpacked(column, i)
            for name, column in columns.items()
            if name.startswith("extra:")
        }
        episode.observation_space = space_from_dict(per_episode["observation_spaces"][i])
        episode.action_space = space_from_dict(per_episode["action_spaces"][i])
        episode.t = int(state["t"][i])
        episode.is_terminated = bool(state["terminated"][i])
        episode.is_truncated = bool(state["truncated"][i])
        episode.validate()
        episodes.append(episode)
    return episodes
