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
from collections import deque
from typing import Any

import numpy as np

from trainer.core.spaces import space_from_dict, space_to_dict
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
    """The buffer's metrics in its own (non-root) MetricsLogger, under RLlib's names: what
    `add()` and `sample()` did since the last `get_metrics()`, lifetime totals, and smoothed
    sizes. (RLlib also logs each number per agent and per module; with one agent and one
    module those repeat the env-step numbers, and are left out.)"""

    # Sums reported per `get_metrics()` call, and sums over the buffer's life.
    _PER_REDUCE = {"reduce": "sum", "clear_on_reduce": True}
    _LIFETIME = {"reduce": "sum"}

    def __init__(self, smoothing_window: int):
        self.logger = MetricsLogger(root=False)
        self.window = smoothing_window

    def log_add(self, buffer: EpisodeReplayBuffer, *, episodes_added: int, steps_added: int,
                episodes_evicted: int, steps_evicted: int) -> None:
        log = self.logger.log_value
        log(NUM_EPISODES_STORED, buffer.get_num_episodes(), reduce="mean", window=self.window)
        log(NUM_ENV_STEPS_STORED, buffer.get_num_timesteps(), reduce="mean", window=self.window)
        for key, value in ((NUM_EPISODES_ADDED, episodes_added), (NUM_ENV_STEPS_ADDED, steps_added),
                           (NUM_EPISODES_EVICTED, episodes_evicted),
                           (NUM_ENV_STEPS_EVICTED, steps_evicted)):
            log(key, value, **self._PER_REDUCE)
            log(key + "_lifetime", value, **self._LIFETIME)

    def log_sample(self, *, steps_sampled: int, episodes_per_sample: int,
                   steps_per_sample: int, mean_n_step: float | None, resamples: int) -> None:
        log = self.logger.log_value
        log(NUM_EPISODES_PER_SAMPLE, episodes_per_sample, **self._PER_REDUCE)
        log(NUM_ENV_STEPS_PER_SAMPLE, steps_per_sample, **self._PER_REDUCE)
        log(NUM_ENV_STEPS_PER_SAMPLE_LIFETIME, steps_per_sample, **self._LIFETIME)
        log(NUM_ENV_STEPS_SAMPLED, steps_sampled, **self._PER_REDUCE)
        log(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps_sampled, **self._LIFETIME)
        log(ENV_STEP_UTILIZATION, steps_per_sample / max(steps_sampled, 1), reduce="mean",
            window=self.window)
        if mean_n_step:
            log(ACTUAL_N_STEP, mean_n_step, reduce="mean", window=self.window)
        log(NUM_RESAMPLES, resamples, **self._PER_REDUCE)


class TimestepIndex:
    """One entry per stored env step: the episode's global index (its position in the order
    episodes were first added) and the step's index within the episode, plus, for the
    prioritized buffer, the step's node in the segment trees. Columns are numpy arrays that
    grow by doubling."""

    def __init__(self, with_nodes: bool = False):
        self.with_nodes = with_nodes
        self._size = 0
        self._episodes = np.zeros(0, np.int64)
        self._timesteps = np.zeros(0, np.int64)
        self._nodes = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return self._size

    @property
    def episodes(self) -> np.ndarray:
        return self._episodes[:self._size]

    @property
    def timesteps(self) -> np.ndarray:
        return self._timesteps[:self._size]

    @property
    def nodes(self) -> np.ndarray:
        return self._nodes[:self._size]

    def extend(self, episode: int, timesteps: np.ndarray, nodes: np.ndarray | None = None
               ) -> None:
        count = len(timesteps)
        needed = self._size + count
        if needed > len(self._episodes):
            grown = max(needed, 2 * len(self._episodes), 1024)
            for name in ("_episodes", "_timesteps", "_nodes"):
                column = np.zeros(grown, np.int64)
                column[:self._size] = getattr(self, name)[:self._size]
                setattr(self, name, column)
        self._episodes[self._size:needed] = episode
        self._timesteps[self._size:needed] = timesteps
        if nodes is not None:
            self._nodes[self._size:needed] = nodes
        self._size = needed

    def keep(self, mask: np.ndarray) -> None:
        """Keeps the entries where `mask` is True, in their order."""
        kept = int(mask.sum())
        for name in ("_episodes", "_timesteps", "_nodes"):
            column = getattr(self, name)
            column[:kept] = column[:self._size][mask]
        self._size = kept

    def get_state(self) -> dict:
        state = {"episodes": self.episodes.copy(), "timesteps": self.timesteps.copy()}
        if self.with_nodes:
            state["nodes"] = self.nodes.copy()
        return state

    def set_state(self, state: dict) -> None:
        episodes = np.asarray(state["episodes"], np.int64).reshape(-1)
        timesteps = np.asarray(state["timesteps"], np.int64).reshape(-1)
        nodes = (np.asarray(state["nodes"], np.int64).reshape(-1) if self.with_nodes
                 else np.zeros(len(episodes), np.int64))
        if not len(episodes) == len(timesteps) == len(nodes):
            raise ValueError("the timestep index's columns differ in length")
        self._size = 0
        self.extend(0, timesteps, nodes)
        self._episodes[:self._size] = episodes


class EpisodeArrays:
    """A stored episode's columns as numpy arrays with their lookback offsets: the sampler
    reads rows from these without going through `InfiniteLookbackBuffer.get` per item."""

    __slots__ = ("episode", "length", "observations", "obs_offset", "actions", "action_offset",
                 "rewards", "reward_offset")

    def __init__(self, episode: SingleAgentEpisode):
        self.episode = episode
        self.length = len(episode)
        self.observations = episode.observations.data
        self.obs_offset = episode.observations.lookback
        self.actions = episode.actions.data
        self.action_offset = episode.actions.lookback
        self.rewards = np.asarray(episode.rewards.data, np.float64)
        self.reward_offset = episode.rewards.lookback


class Transitions:
    """What one draw of n-step transitions picked, row by row (see `_draw_transitions`)."""

    __slots__ = ("stored", "timesteps", "n_steps", "steps", "returns", "weights",
                 "resamples", "nodes")

    def __init__(self):
        self.stored: list[EpisodeArrays] = []
        self.timesteps: list[int] = []
        self.n_steps: list[int] = []  # the n drawn for each row (RLlib's `n_step` column)
        self.steps: list[int] = []  # the steps each row's transition really spans (<= n)
        self.returns: list[float] = []
        self.weights: list[float] = []
        self.nodes: list[int] = []
        self.resamples = 0

    def __len__(self) -> int:
        return len(self.timesteps)


class EpisodeReplayBuffer:
    """Stores whole episodes (at most `capacity` env steps, oldest episodes evicted first) and
    samples their steps uniformly; see the module docstring."""

    def __init__(self, capacity: int = 10000, *, batch_size_B: int = 16,
                 batch_length_T: int = 64, metrics_num_episodes_for_smoothing: int = 100,
                 seed: int | None = None, **kwargs: Any):
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
        self._indices = TimestepIndex(with_nodes=self._uses_nodes())
        self._arrays: dict[int, EpisodeArrays] = {}  # global index -> the episode's arrays
        self._num_timesteps = 0
        self._num_timesteps_added = 0
        self.sampled_timesteps = 0
        self._last_sampled_indices: list[int] = []
        self.rng = np.random.default_rng(seed)
        self._metrics = BufferMetrics(metrics_num_episodes_for_smoothing)
        self._metrics_num_episodes_for_smoothing = metrics_num_episodes_for_smoothing

    @staticmethod
    def _uses_nodes() -> bool:
        return False

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
        return len(self._indices)

    def get_sampled_timesteps(self, module_id: str | None = None) -> int:
        """Env steps sampled over the buffer's life."""
        return self.sampled_timesteps

    def get_added_timesteps(self, module_id: str | None = None) -> int:
        """Env steps added over the buffer's life."""
        return self._num_timesteps_added

    def get_metrics(self) -> dict:
        """The buffer's metrics since the last call (reduced; for `MetricsLogger.aggregate`)."""
        return self.metrics.reduce()

    # -- adding ------------------------------------------------------------------------------
    def add(self, episodes: SingleAgentEpisode | list[SingleAgentEpisode]) -> None:
        """Stores copies of `episodes` (chunks of stored episodes are appended to them), then
        evicts the oldest episodes while more than `capacity` steps are stored (keeping at
        least one episode)."""
        episodes = _as_episode_list(episodes)
        episodes_added = steps_added = episodes_evicted = steps_evicted = 0
        for incoming in episodes:
            length = len(incoming)
            self._num_timesteps += length
            self._num_timesteps_added += length
            steps_added += length
            if self._store(incoming, np.arange(length)):
                episodes_added += 1
            while self._num_timesteps > self.capacity and len(self.episodes) > 1:
                evicted = self._evict_oldest()
                episodes_evicted += 1
                steps_evicted += len(evicted)
        if episodes_evicted:
            self._drop_evicted_indices()
        self._metrics.log_add(self, episodes_added=episodes_added, steps_added=steps_added,
                              episodes_evicted=episodes_evicted, steps_evicted=steps_evicted)

    def _store(self, incoming: SingleAgentEpisode, timesteps: np.ndarray,
               nodes: np.ndarray | None = None) -> bool:
        """Stores a copy of `incoming` (appended to its stored episode when there is one) and
        indexes its steps; returns whether it started a new episode."""
        stored_copy = _storable_copy(incoming)
        index = self.episode_id_to_index.get(incoming.id_)
        if index is not None:
            existing = self.episodes[index - self._num_episodes_evicted]
            self._indices.extend(index, len(existing) + timesteps, nodes)
            existing.concat_episode(stored_copy)
            existing.to_numpy()
            self._arrays[index] = EpisodeArrays(existing)
            return False
        self.episodes.append(stored_copy)
        index = len(self.episodes) - 1 + self._num_episodes_evicted
        self.episode_id_to_index[incoming.id_] = index
        self._indices.extend(index, timesteps, nodes)
        self._arrays[index] = EpisodeArrays(stored_copy)
        return True

    def _evict_oldest(self) -> SingleAgentEpisode:
        evicted = self.episodes.popleft()
        index = self.episode_id_to_index.pop(evicted.id_)
        del self._arrays[index]
        self._num_timesteps -= len(evicted)
        self._num_episodes_evicted += 1
        return evicted

    def _drop_evicted_indices(self) -> None:
        # Evicted episodes are always the oldest: exactly those with a global index below
        # the number evicted.
        self._indices.keep(self._indices.episodes >= self._num_episodes_evicted)

    # -- sampling ----------------------------------------------------------------------------
    def sample(self, num_items: int | None = None, *, batch_size_B: int | None = None,
               batch_length_T: int | None = None, n_step: int | tuple | None = None,
               beta: float = 0.0, gamma: float = 0.99, include_infos: bool = False,
               include_extra_model_outputs: bool = False, sample_episodes: bool | None = False,
               to_numpy: bool = False, lookback: int = 0, min_batch_length_T: int = 0,
               **kwargs: Any) -> dict | list[SingleAgentEpisode]:
        """Draws from the buffer: with `sample_episodes=True` a list of episodes (n-step
        transitions, or `batch_length_T`-step slices), else a dict of [B, T] arrays. See the
        module docstring; `num_items` is `batch_size_B`'s other name."""
        batch_size_B = self._batch_size(num_items, batch_size_B)
        self._check_not_empty()
        if sample_episodes:
            return self._sample_episodes(
                batch_size_B=batch_size_B, batch_length_T=batch_length_T, n_step=n_step,
                gamma=gamma, include_infos=include_infos,
                include_extra_model_outputs=include_extra_model_outputs, to_numpy=to_numpy,
                lookback=lookback, min_batch_length_T=min_batch_length_T)
        return self._sample_batch(batch_size_B=batch_size_B, batch_length_T=batch_length_T)

    def sample_transitions(self, num_items: int | None = None, *,
                           batch_size_B: int | None = None, n_step: int | tuple = 1,
                           gamma: float = 0.99, beta: float = 0.0) -> dict[str, np.ndarray]:
        """`batch_size_B` n-step transitions drawn as `sample(sample_episodes=True)` draws
        them, as arrays: `obs`, `actions`, `rewards` (discounted n-step sums), `new_obs`,
        `terminateds`, `truncateds` (of the transition's last step), `n_step` (the n drawn),
        `n_steps_taken` (the steps the transition spans: fewer than n where an episode's
        stored steps end first), `weights` (importance weights)."""
        batch_size_B = self._batch_size(num_items, batch_size_B)
        self._check_not_empty()
        draws = self._draw_transitions(batch_size_B, _check_n_step(n_step), gamma, beta)
        return self._finish_sample(draws, _transition_arrays(draws))

    def _batch_size(self, num_items: int | None, batch_size_B: int | None) -> int:
        if num_items is not None and batch_size_B is not None:
            raise ValueError(f"{type(self).__name__}.sample(): give num_items={num_items} or "
                             f"batch_size_B={batch_size_B}, not both (they are one setting)")
        size = num_items if num_items is not None else batch_size_B
        size = size or self.batch_size_B
        _check_int(f"{type(self).__name__}.sample", "batch_size_B", size, 1)
        return size

    def _check_not_empty(self) -> None:
        if not len(self._indices):
            raise ValueError(f"{type(self).__name__}.sample(): the buffer holds no env steps "
                             "(add episodes first)")

    def _draw_transitions(self, batch_size: int, n_step: int | tuple, gamma: float,
                          beta: float) -> Transitions:
        """Uniform draws of (episode, step) with the n drawn per row (from [low, high) for a
        tuple); a transition stops early where its episode's stored steps end."""
        draws = Transitions()
        positions = self.rng.integers(len(self._indices), size=batch_size)
        n_steps = self._draw_n_steps(n_step, batch_size)
        episodes, timesteps = self._indices.episodes, self._indices.timesteps
        for position, n in zip(positions.tolist(), n_steps, strict=True):
            stored = self._arrays[int(episodes[position])]
            self._append_transition(draws, stored, int(timesteps[position]), n, gamma)
            draws.weights.append(1.0)
        return draws

    def _draw_n_steps(self, n_step: int | tuple, count: int) -> list[int]:
        if isinstance(n_step, tuple):
            return self.rng.integers(n_step[0], n_step[1], size=count).tolist()
        return [n_step] * count

    @staticmethod
    def _append_transition(draws: Transitions, stored: EpisodeArrays, timestep: int, n: int,
                           gamma: float) -> None:
        steps = min(n, stored.length - timestep)
        start = stored.reward_offset + timestep
        rewards = stored.rewards[start:start + steps]
        draws.stored.append(stored)
        draws.timesteps.append(timestep)
        draws.n_steps.append(n)
        draws.steps.append(steps)
        draws.returns.append(float(rewards @ (gamma ** np.arange(steps))) if steps > 1
                             else float(rewards[0]))

    def _finish_sample(self, draws: Transitions, result: Any,
                       steps_sampled: int | None = None) -> Any:
        """Bookkeeping every sample does: counters (`steps_sampled`: as RLlib counts them, by
        default one per row), the indices for priority updates, and the metrics."""
        count = len(draws) if steps_sampled is None else steps_sampled
        self.sampled_timesteps += count
        self._last_sampled_indices = list(draws.nodes)
        unique_steps = len({(id(s), t) for s, t in zip(draws.stored, draws.timesteps,
                                                        strict=True)})
        self._metrics.log_sample(
            steps_sampled=count, episodes_per_sample=len({id(s) for s in draws.stored}),
            steps_per_sample=unique_steps, mean_n_step=sum(draws.n_steps) / max(len(draws.n_steps), 1),
            resamples=draws.resamples)
        return result

    def _sample_episodes(self, *, batch_size_B: int, batch_length_T: int | None,
                         n_step: int | tuple | None, gamma: float, include_infos: bool,
                         include_extra_model_outputs: bool, to_numpy: bool, lookback: int,
                         min_batch_length_T: int) -> list[SingleAgentEpisode]:
        if n_step is None:
            raise ValueError(f"{type(self).__name__}.sample(sample_episodes=True): n_step is "
                             "required (an int >= 1, or a (low, high) range)")
        if batch_length_T:
            if n_step != 1:
                raise ValueError(f"{type(self).__name__}.sample(batch_length_T="
                                 f"{batch_length_T}): sequences are sampled with n_step=1, "
                                 f"got n_step={n_step!r}")
            return self._sample_sequences(batch_size_B, batch_length_T, lookback,
                                          min_batch_length_T)
        draws = self._draw_transitions(batch_size_B, _check_n_step(n_step), gamma, 0.0)
        # RLlib's uniform buffer always carries the infos of both ends.
        episodes = [_transition_episode(draws, row, include_infos=True,
                                        include_extra_model_outputs=include_extra_model_outputs,
                                        keep_id=True, to_numpy=to_numpy)
                    for row in range(len(draws))]
        return self._finish_sample(draws, episodes)

    def _sample_sequences(self, batch_size_B: int, batch_length_T: int, lookback: int,
                          min_batch_length_T: int) -> list[SingleAgentEpisode]:
        """Slices of up to `batch_length_T` steps from uniformly drawn starts, with `lookback`
        steps of history, until `batch_size_B` steps are gathered."""
        draws = Transitions()
        sequences: list[SingleAgentEpisode] = []
        gathered = attempts = 0
        episodes, timesteps = self._indices.episodes, self._indices.timesteps
        while gathered < batch_size_B:
            attempts += 1
            if attempts > 1000 * batch_size_B:
                raise ValueError(
                    f"{type(self).__name__}.sample(min_batch_length_T={min_batch_length_T}): "
                    "no stored episode is long enough for that many steps after its start")
            position = int(self.rng.integers(len(self._indices)))
            stored = self._arrays[int(episodes[position])]
            start = int(timesteps[position])
            if min_batch_length_T > 0 and start + min_batch_length_T >= stored.length:
                draws.resamples += 1
                continue
            stop = min(start + batch_length_T, stored.length)
            sequence = stored.episode.slice(slice(start, stop), len_lookback_buffer=lookback)
            length = len(sequence)
            sequence.extra_model_outputs["n_step"] = InfiniteLookbackBuffer(
                np.full(length + lookback, 1), lookback=lookback)
            sequence.extra_model_outputs["weights"] = InfiniteLookbackBuffer(
                np.ones(length + lookback), lookback=lookback)
            sequences.append(sequence)
            draws.stored.append(stored)
            draws.timesteps.append(start)
            draws.n_steps.append(1)
            # RLlib's count: a sequence of T steps counts T + 1.
            gathered += length + 1
        return self._finish_sample(draws, sequences, steps_sampled=batch_size_B)

    def _sample_batch(self, *, batch_size_B: int, batch_length_T: int | None) -> dict:
        """[B, T] arrays: each row a run of T steps from a uniformly drawn start; where an
        episode ends inside a row, a next drawn episode follows from its first step. Index 0
        of an episode carries reward 0.0; its last index repeats the last action and has
        `is_last` (plus `is_terminated` or `is_truncated`)."""
        batch_length_T = batch_length_T or self.batch_length_T
        rows = {key: [] for key in ("obs", "actions", "rewards")}
        flags = {key: np.zeros((batch_size_B, batch_length_T), bool)
                 for key in ("is_first", "is_last", "is_terminated", "is_truncated")}
        draws = Transitions()
        episodes, timesteps = self._indices.episodes, self._indices.timesteps
        for row in range(batch_size_B):
            observations: list = []
            actions: list = []
            rewards: list = []
            while len(observations) < batch_length_T:
                position = int(self.rng.integers(len(self._indices)))
                stored = self._arrays[int(episodes[position])]
                episode = stored.episode
                start = int(timesteps[position]) if not observations else 0
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
                draws.stored.append(stored)
                draws.timesteps.append(start)
            rows["obs"].append(observations[:batch_length_T])
            rows["actions"].append(actions[:batch_length_T])
            rows["rewards"].append(rewards[:batch_length_T])
        return self._finish_sample(draws, {
            "obs": np.array(rows["obs"]), "actions": np.array(rows["actions"]),
                "rewards": np.array(rows["rewards"]), **flags},
            steps_sampled=batch_size_B * batch_length_T)

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """The buffer as plain data (a snapshot: later adds do not change it)."""
        return {
            "type": type(self).__name__, "capacity": self.capacity,
            "episodes": _episodes_state(list(self.episodes)),
            "episode_id_to_index": list(self.episode_id_to_index.items()),
            "_num_episodes_evicted": self._num_episodes_evicted,
            "_indices": self._indices.get_state(),
            "_num_timesteps": self._num_timesteps,
            "_num_timesteps_added": self._num_timesteps_added,
            "sampled_timesteps": self.sampled_timesteps,
            "rng": generator_state(self.rng),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Replaces the buffer's contents with `state` (from `get_state`, also after a msgpack
        round trip). Raises ValueError for a state of another buffer type or capacity, or one
        whose parts do not fit together."""
        name = type(self).__name__
        if state.get("type", name) != name or state.get("capacity", self.capacity) \
                != self.capacity:
            raise ValueError(f"{name}(capacity={self.capacity}).set_state(): the state is of a "
                             f"{state.get('type')}(capacity={state.get('capacity')})")
        episodes = _episodes_from_state(state["episodes"])
        id_to_index = {str(k): int(v) for k, v in state["episode_id_to_index"]}
        evicted = int(state["_num_episodes_evicted"])
        if [id_to_index.get(ep.id_) for ep in episodes] != list(
                range(evicted, evicted + len(episodes))):
            raise ValueError(f"{name}.set_state(): episode_id_to_index does not list the "
                             "episodes in order")
        indices = TimestepIndex(with_nodes=self._uses_nodes())
        indices.set_state(state["_indices"])
        lengths = np.array([len(ep) for ep in episodes], np.int64)
        local = indices.episodes - evicted
        if len(local) and (local.min() < 0 or local.max() >= len(episodes)
                           or np.any(indices.timesteps < 0)
                           or np.any(indices.timesteps >= lengths[local])):
            raise ValueError(f"{name}.set_state(): the timestep index points outside the "
                             "stored episodes")
        self.episodes = deque(episodes)
        self.episode_id_to_index = id_to_index
        self._num_episodes_evicted = evicted
        self._indices = indices
        self._arrays = {evicted + i: EpisodeArrays(ep) for i, ep in enumerate(episodes)}
        self._num_timesteps = int(state["_num_timesteps"])
        self._num_timesteps_added = int(state["_num_timesteps_added"])
        self.sampled_timesteps = int(state["sampled_timesteps"])
        if "rng" in state:
            set_generator_state(self.rng, state["rng"])


# -- helpers -----------------------------------------------------------------------------------
def _check_int(owner: str, name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{owner}({name}={value!r}): must be an int >= {low}")


def _check_n_step(n_step: int | tuple | list | None) -> int | tuple:
    """`n_step` as an int, or a (low, high) tuple drawn from [low, high) as RLlib draws it."""
    if n_step is None:
        return 1
    if isinstance(n_step, (tuple, list)):
        if (len(n_step) == 2 and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                     for v in n_step) and 1 <= n_step[0] < n_step[1]):
            return (int(n_step[0]), int(n_step[1]))
    elif isinstance(n_step, (int, np.integer)) and not isinstance(n_step, bool) and n_step >= 1:
        return int(n_step)
    raise ValueError(f"sample(n_step={n_step!r}): must be an int >= 1 or a (low, high) tuple "
                     "of ints with 1 <= low < high (n is drawn from [low, high) per row)")


def _as_episode_list(episodes: Any) -> list[SingleAgentEpisode]:
    listed = [episodes] if isinstance(episodes, SingleAgentEpisode) else list(episodes)
    for episode in listed:
        if not isinstance(episode, SingleAgentEpisode):
            raise TypeError(f"add(): expected SingleAgentEpisodes, got {type(episode).__name__}")
    return listed


def _storable_copy(episode: SingleAgentEpisode) -> SingleAgentEpisode:
    """A copy the buffer may change (chunks are appended to it), numpy'ized for the sampler."""
    return copy.deepcopy(episode).to_numpy()


def _transition_arrays(draws: Transitions) -> dict[str, np.ndarray]:
    obs, new_obs, actions, terminateds, truncateds = [], [], [], [], []
    for stored, t, steps in zip(draws.stored, draws.timesteps, draws.steps, strict=True):
        obs.append(stored.observations[stored.obs_offset + t])
        new_obs.append(stored.observations[stored.obs_offset + t + steps])
        actions.append(stored.actions[stored.action_offset + t])
        at_end = t + steps == stored.length
        terminateds.append(at_end and stored.episode.is_terminated)
        truncateds.append(at_end and stored.episode.is_truncated)
    return {
        "obs": np.asarray(obs), "actions": np.asarray(actions),
        "rewards": np.asarray(draws.returns, np.float32), "new_obs": np.asarray(new_obs),
        "terminateds": np.asarray(terminateds, bool), "truncateds": np.asarray(truncateds, bool),
        "n_step": np.asarray(draws.n_steps, np.int64),
        "n_steps_taken": np.asarray(draws.steps, np.int64),
        "weights": np.asarray(draws.weights, np.float32),
    }


def _transition_episode(draws: Transitions, row: int, *, include_infos: bool,
                        include_extra_model_outputs: bool, keep_id: bool,
                        to_numpy: bool) -> SingleAgentEpisode:
    """Row `row` of `draws` as a one-step episode (o_t, a_t, R, o_(t+steps))."""
    stored, t, steps = draws.stored[row], draws.timesteps[row], draws.steps[row]
    episode = stored.episode
    at_end = t + steps == stored.length
    extra = {"weights": [draws.weights[row]], "n_step": [draws.n_steps[row]]}
    if include_extra_model_outputs:
        extra.update({key: [episode.get_extra_model_outputs(key, t)]
                      for key in episode.extra_model_outputs})
    sampled = SingleAgentEpisode(
        id_=episode.id_ if keep_id else None,
        observations=[stored.observations[stored.obs_offset + t],
                      stored.observations[stored.obs_offset + t + steps]],
        observation_space=episode.observation_space,
        infos=([episode.get_infos(t), episode.get_infos(t + steps)] if include_infos
               else None),
        actions=[stored.actions[stored.action_offset + t]],
        action_space=episode.action_space,
        rewards=[draws.returns[row]],
        terminated=at_end and episode.is_terminated,
        truncated=at_end and episode.is_truncated,
        extra_model_outputs=extra,
        t_started=t, len_lookback_buffer=0,
        agent_id=episode.agent_id, module_id=episode.module_id)
    return sampled.to_numpy() if to_numpy else sampled


# -- episodes as plain data --------------------------------------------------------------------
_COLUMNS = ("observations", "actions", "rewards")


def _episodes_state(episodes: list[SingleAgentEpisode]) -> Any:
    """The stored episodes as plain data: concatenated columns plus one small record per
    episode when they share a layout (numpy columns of one dtype and row shape, the same
    extra model output keys), else RLlib's form, a list of `episode.get_state()`."""
    packed = _pack_columns(episodes)
    if packed is None:
        return [episode.get_state() for episode in episodes]
    return packed


def _column_arrays(episode: SingleAgentEpisode) -> dict[str, InfiniteLookbackBuffer]:
    columns = {name: getattr(episode, name) for name in _COLUMNS}
    columns.update({f"extra:{key}": buffer
                    for key, buffer in episode.extra_model_outputs.items()})
    return columns


def _pack_columns(episodes: list[SingleAgentEpisode]) -> dict | None:
    if not episodes:
        return None
    columns = [_column_arrays(episode) for episode in episodes]
    names = list(columns[0])
    layouts: dict[str, tuple] = {}
    for episode_columns in columns:
        if list(episode_columns) != names:
            return None
        for name, buffer in episode_columns.items():
            data = buffer.data
            if not isinstance(data, np.ndarray) or data.dtype == object:
                return None
            if len(data):
                layout = (data.dtype.str, data.shape[1:])
                if layouts.setdefault(name, layout) != layout:
                    return None
    infos = [episode.infos.data for episode in episodes]
    return {
        "format": "columns",
        "columns": {name: {"data": np.concatenate([c[name].data for c in columns
                                                   if len(c[name].data)])
                           if name in layouts else np.zeros(0),
                           "lengths": np.array([len(c[name].data) for c in columns], np.int64),
                           "lookbacks": np.array([c[name].lookback for c in columns], np.int64)}
                    for name in names},
        "infos": None if not any(any(i) for i in infos) else [list(i) for i in infos],
        "info_lookbacks": [episode.infos.lookback for episode in episodes],
        "records": [[episode.id_, episode.t_started, episode.t, bool(episode.is_terminated),
                     bool(episode.is_truncated), episode.env_index, episode.agent_id,
                     episode.module_id, space_to_dict(episode.observation_space),
                     space_to_dict(episode.action_space)] for episode in episodes],
    }


def _episodes_from_state(state: Any) -> list[SingleAgentEpisode]:
    if isinstance(state, list):
        return [SingleAgentEpisode.from_state(entry).to_numpy() for entry in state]
    if not isinstance(state, dict) or state.get("format") != "columns":
        raise ValueError("the state's 'episodes' is neither a list of episode states nor "
                         "packed columns")
    columns = {}
    for name, column in state["columns"].items():
        lengths = np.asarray(column["lengths"], np.int64)
        data = np.asarray(column["data"])
        if lengths.sum() != len(data):
            raise ValueError(f"the packed column {name!r} holds {len(data)} rows, its episodes "
                             f"{int(lengths.sum())}")
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        columns[name] = (data, bounds, np.asarray(column["lookbacks"], np.int64))
    records = state["records"]
    infos = state["infos"]
    episodes = []
    for i, (id_, t_started, t, terminated, truncated, env_index, agent_id, module_id,
            observation_space, action_space) in enumerate(records):
        def column(name: str, i: int = i) -> InfiniteLookbackBuffer:
            data, bounds, lookbacks = columns[name]
            return InfiniteLookbackBuffer(data[bounds[i]:bounds[i + 1]].copy(),
                                          int(lookbacks[i]))
        num_obs = int(columns["observations"][1][i + 1] - columns["observations"][1][i])
        info_data = list(infos[i]) if infos is not None else [{} for _ in range(num_obs)]
        episode = SingleAgentEpisode(str(id_), t_started=int(t_started),
                                     env_index=int(env_index), agent_id=agent_id,
                                     module_id=module_id)
        episode.observations = column("observations")
        episode.actions = column("actions")
        episode.rewards = column("rewards")
        episode.rewards.space = REWARD_SPACE
        episode.infos = InfiniteLookbackBuffer(info_data, int(state["info_lookbacks"][i]))
        episode.extra_model_outputs = {name[len("extra:"):]: column(name) for name in columns
                                       if name.startswith("extra:")}
        episode.observation_space = space_from_dict(observation_space)
        episode.action_space = space_from_dict(action_space)
        episode.t = int(t)
        episode.is_terminated, episode.is_truncated = bool(terminated), bool(truncated)
        episode.validate()
        episodes.append(episode)
    return episodes
