"""`MultiAgentEpisodeReplayBuffer`: RLlib 2.60's replay buffer of `MultiAgentEpisode`s
(`ray.rllib.utils.replay_buffers.multi_agent_episode_buffer`).

    add(MultiAgentEpisodes)
        -> `episodes`: the multi-agent episodes (chunks of a stored episode are appended to it
           with `concat_episode`); past `capacity` env steps the oldest are evicted, never the
           last one left (RLlib's rule)
        -> per module: the new steps of each agent's `SingleAgentEpisode` go into that module's
           own `EpisodeReplayBuffer` (`module_buffers[module_id]`, holding at most `capacity`
           steps of its agents, oldest agent episodes evicted first)

`sample()` in RLlib's default "independent" mode draws `batch_size_B` steps per module from
that module's buffer (uniformly here; by priority in `MultiAgentPrioritizedEpisodeReplayBuffer`)
and returns them as one-step `SingleAgentEpisode`s carrying the n-step transition, with
`agent_id` and `module_id`. The "synchronized" mode draws env steps of the stored
multi-agent episodes and returns `{module_id: columns}` of every agent that has a whole
transition there. `sample_transitions()` (not in RLlib) draws as "independent" does and returns
`{module_id: arrays}`: DQN's training step learns from those.

Counting is RLlib's: `get_num_timesteps()` env steps stored, `get_num_timesteps(module_id)`
that module's agent steps, `get_sampled_timesteps()` grows by `batch_size_B` per call,
`get_sampled_timesteps(module_id)` by the rows drawn for the module.
"""

from __future__ import annotations

import copy
import platform
from collections import defaultdict, deque
from typing import Any

import numpy as np

from trainer.core.spaces import batch
from trainer.env.episode import SingleAgentEpisode
from trainer.env.lookback_buffer import InfiniteLookbackBuffer
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.metrics import MetricsLogger
from trainer.replay_buffers.episode_replay_buffer import (
    BufferMetrics,
    EpisodeReplayBuffer,
    _check_int,
    _check_n_step,
    _storable_copy,
)
from trainer.util.rng import generator_state, set_generator_state

# A module buffer's metric -> RLlib's per-module name for it (logged as (name, module_id)).
_MODULE_METRIC_NAMES = {
    "num_episodes_stored": "num_module_episodes",
    "num_env_steps_stored": "num_module_steps_stored",
    "num_episodes_added": "num_module_episodes_added",
    "num_episodes_added_lifetime": "num_module_episodes_added_lifetime",
    "num_episodes_evicted": "num_module_episodes_evicted",
    "num_episodes_evicted_lifetime": "num_module_episodes_evicted_lifetime",
    "num_env_steps_added": "num_module_steps_added",
    "num_env_steps_added_lifetime": "num_module_steps_added_lifetime",
    "num_env_steps_evicted": "num_module_steps_evicted",
    "num_env_steps_evicted_lifetime": "num_module_steps_evicted_lifetime",
    "num_episodes_per_sample": "num_module_episodes_per_sample",
    "num_env_steps_per_sample": "num_module_steps_per_sample",
    "num_env_steps_per_sample_lifetime": "num_module_steps_per_sample_lifetime",
    "num_env_steps_sampled": "num_module_steps_sampled",
    "num_env_steps_sampled_lifetime": "num_module_steps_sampled_lifetime",
    "env_step_utilization": "module_step_utilization",
    "actual_n_step": "module_actual_n_step",
    "num_resamples": "num_module_resamples",
}


class MultiAgentEpisodeReplayBuffer:
    """Stores `MultiAgentEpisode`s, and each module's agents' steps in a buffer of its own;
    samples per module (see the module docstring)."""

    #: The buffer each module's steps live in.
    _MODULE_BUFFER_CLASS: type[EpisodeReplayBuffer] = EpisodeReplayBuffer

    def __init__(
        self,
        capacity: int = 10000,
        *,
        batch_size_B: int = 16,
        batch_length_T: int = 1,
        metrics_num_episodes_for_smoothing: int = 100,
        seed: int | None = None,
        **kwargs: Any,
    ):
        name = type(self).__name__
        _check_int(name, "capacity", capacity, 1)
        _check_int(name, "batch_size_B", batch_size_B, 1)
        _check_int(name, "batch_length_T", batch_length_T, 0)
        _check_int(
            name, "metrics_num_episodes_for_smoothing", metrics_num_episodes_for_smoothing, 1
        )
        self.capacity = capacity
        self.batch_size_B = batch_size_B
        self.batch_length_T = batch_length_T
        self._metrics_num_episodes_for_smoothing = metrics_num_episodes_for_smoothing
        #: The stored multi-agent episodes, oldest first.
        self.episodes: deque[MultiAgentEpisode] = deque()
        #: Episode id -> global index (position among all episodes ever added).
        self.episode_id_to_index: dict[str, int] = {}
        self._num_episodes_evicted = 0
        self._num_timesteps = 0
        self._num_timesteps_added = 0
        self._num_agent_timesteps = 0
        self._num_agent_timesteps_added = 0
        self.sampled_timesteps = 0
        self.sampled_timesteps_per_module: dict[Any, int] = defaultdict(int)
        #: module id -> the buffer of its agents' steps.
        self.module_buffers: dict[Any, EpisodeReplayBuffer] = {}
        # (episode id, agent id) -> the agent's steps already handed to its module's buffer.
        self._steps_handed_over: dict[tuple[str, Any], int] = {}
        self.rng = np.random.default_rng(seed)
        self._metrics = BufferMetrics(metrics_num_episodes_for_smoothing)

    # -- module buffers ----------------------------------------------------------------------
    def _module_buffer_kwargs(self) -> dict[str, Any]:
        """The arguments each module's buffer is built with (besides capacity and seed)."""
        return {
            "batch_size_B": self.batch_size_B,
            "batch_length_T": self.batch_length_T,
            "metrics_num_episodes_for_smoothing": self._metrics_num_episodes_for_smoothing,
        }

    def _module_buffer(self, module_id: Any) -> EpisodeReplayBuffer:
        buffer = self.module_buffers.get(module_id)
        if buffer is None:
            # Seeded from this buffer's generator: a seeded buffer stays reproducible.
            seed = int(self.rng.integers(2**63))
            buffer = self._MODULE_BUFFER_CLASS(
                self.capacity, seed=seed, **self._module_buffer_kwargs()
            )
            self.module_buffers[module_id] = buffer
        return buffer

    # -- sizes -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.get_num_timesteps()

    def get_module_ids(self) -> list[Any]:
        """The modules with steps in the buffer (in the order they first came)."""
        return list(self.module_buffers)

    def get_num_episodes(self, module_id: Any = None) -> int:
        """Multi-agent episodes stored; with `module_id`, that module's agent episodes."""
        if module_id is None:
            return len(self.episodes)
        buffer = self.module_buffers.get(module_id)
        return 0 if buffer is None else buffer.get_num_episodes()

    def get_num_episodes_evicted(self, module_id: Any = None) -> int:
        if module_id is None:
            return self._num_episodes_evicted
        buffer = self.module_buffers.get(module_id)
        return 0 if buffer is None else buffer.get_num_episodes_evicted()

    def get_num_timesteps(self, module_id: Any = None) -> int:
        """Env steps stored; with `module_id`, that module's agent steps."""
        if module_id is None:
            return self._num_timesteps
        buffer = self.module_buffers.get(module_id)
        return 0 if buffer is None else buffer.get_num_timesteps()

    def get_num_agent_timesteps(self) -> int:
        """Agent steps stored (each agent's step in an env step counts)."""
        return self._num_agent_timesteps

    def get_added_timesteps(self, module_id: Any = None) -> int:
        """Env steps added over the buffer's life; with `module_id`, that module's agent
        steps."""
        if module_id is None:
            return self._num_timesteps_added
        buffer = self.module_buffers.get(module_id)
        return 0 if buffer is None else buffer.get_added_timesteps()

    def get_added_agent_timesteps(self) -> int:
        return self._num_agent_timesteps_added

    def get_sampled_timesteps(self, module_id: Any = None) -> int:
        """`batch_size_B` per `sample()` call; with `module_id`, the rows drawn for it."""
        if module_id is None:
            return self.sampled_timesteps
        return self.sampled_timesteps_per_module.get(module_id, 0)

    def get_host(self) -> str:
        return platform.node()

    @property
    def metrics(self) -> MetricsLogger:
        return self._metrics.logger

    def get_metrics(self) -> dict:
        """The buffer's metrics since the last call: the whole buffer's under RLlib's names,
        and each module's under RLlib's per-module names (`num_module_steps_added/{module}`,
        ...)."""
        results = self.metrics.reduce()
        for module_id, buffer in self.module_buffers.items():
            for key, value in buffer.get_metrics().items():
                name = _MODULE_METRIC_NAMES.get(key)
                if name is not None:
                    results.setdefault(name, {})[module_id] = value
        return results

    @property
    def _module_to_indices(self) -> dict[Any, list[tuple[int, Any, int]]]:
        """RLlib's per-module index (read-only here): each stored step of a module as
        (agent episode index in the module's buffer, agent id, timestep)."""
        indices = {}
        for module_id, buffer in self.module_buffers.items():
            live = buffer._live_rows()
            episodes = buffer._indices.episodes[live].tolist()
            timesteps = buffer._indices.timesteps[live].tolist()
            indices[module_id] = [
                (index, buffer._episode_at(index).agent_id, t)
                for index, t in zip(episodes, timesteps, strict=True)
            ]
        return indices

    # -- adding ------------------------------------------------------------------------------
    def add(self, episodes: MultiAgentEpisode | list[MultiAgentEpisode]) -> None:
        """Stores copies of `episodes` (a chunk of a stored episode is appended to it) and
        hands each agent's new steps to its module's buffer; then evicts the oldest episodes
        while more than `capacity` env steps are stored (never the last one)."""
        episodes = _as_multi_agent_episodes(episodes)
        episodes_added = steps_added = episodes_evicted = steps_evicted = 0
        for incoming in episodes:
            env_steps, agent_steps = incoming.env_steps(), incoming.agent_steps()
            self._num_timesteps += env_steps
            self._num_timesteps_added += env_steps
            self._num_agent_timesteps += agent_steps
            self._num_agent_timesteps_added += agent_steps
            steps_added += env_steps
            index = self.episode_id_to_index.get(incoming.id_)
            if index is None:
                stored = _stored_copy(incoming)
                self.episodes.append(stored)
                self.episode_id_to_index[incoming.id_] = (
                    len(self.episodes) - 1 + self._num_episodes_evicted
                )
                episodes_added += 1
            else:
                stored = self.episodes[index - self._num_episodes_evicted]
                stored.concat_episode(_stored_copy(incoming))
            self._hand_over_new_steps(stored, incoming)
            while self._num_timesteps > self.capacity and len(self.episodes) > 1:
                evicted = self._evict_oldest()
                episodes_evicted += 1
                steps_evicted += evicted.env_steps()
        self._metrics.log_add(
            self,
            episodes_added=episodes_added,
            steps_added=steps_added,
            episodes_evicted=episodes_evicted,
            steps_evicted=steps_evicted,
        )

    def _hand_over_new_steps(self, stored: MultiAgentEpisode, incoming: MultiAgentEpisode) -> None:
        """Each agent's steps of `stored` not yet in its module's buffer go there: the
        incoming chunk's agent episode when it holds exactly those steps (the module buffer
        copies it), else those steps read from the concatenated episode (a step an agent
        completes across two chunks is whole only there)."""
        for agent_id, agent_episode in stored.agent_episodes.items():
            key = (stored.id_, agent_id)
            handed_over = self._steps_handed_over.get(key, 0)
            length = len(agent_episode)
            if length <= handed_over:
                continue
            incoming_agent = incoming.agent_episodes.get(agent_id)
            if incoming_agent is not None and len(incoming_agent) == length - handed_over:
                chunk = incoming_agent
            elif handed_over == 0:
                chunk = agent_episode
            else:
                chunk = agent_episode.slice(slice(handed_over, None), len_lookback_buffer=0)
            if chunk.module_id is None:
                chunk.module_id = stored.module_for(agent_id)
            self._module_buffer(chunk.module_id).add(chunk)
            self._steps_handed_over[key] = length

    def _evict_oldest(self) -> MultiAgentEpisode:
        evicted = self.episodes.popleft()
        del self.episode_id_to_index[evicted.id_]
        self._num_episodes_evicted += 1
        self._num_timesteps -= evicted.env_steps()
        self._num_agent_timesteps -= evicted.agent_steps()
        for agent_id in evicted.agent_episodes:
            self._steps_handed_over.pop((evicted.id_, agent_id), None)
        return evicted

    # -- sampling ----------------------------------------------------------------------------
    def sample(
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        batch_length_T: int | None = None,
        n_step: int | tuple | None = 1,
        gamma: float = 0.99,
        include_infos: bool = False,
        include_extra_model_outputs: bool = False,
        replay_mode: str = "independent",
        modules_to_sample: list[Any] | None = None,
        **kwargs: Any,
    ) -> list[SingleAgentEpisode] | dict[Any, dict[str, np.ndarray]]:
        """ "independent" (default): `batch_size_B` one-step episodes (n-step transitions) per
        module, drawn from the module's buffer; "synchronized": `{module_id: columns}` of
        the agents with a whole transition at `batch_size_B` drawn env steps."""
        batch_size_B = self._batch_size(num_items, batch_size_B)
        n_step = _check_n_step(n_step or 1)
        if replay_mode == "independent":
            return self._sample_independent(
                batch_size_B,
                n_step=n_step,
                gamma=gamma,
                include_infos=include_infos,
                include_extra_model_outputs=include_extra_model_outputs,
                modules_to_sample=modules_to_sample,
                **kwargs,
            )
        if replay_mode == "synchronized":
            return self._sample_synchronized(
                batch_size_B, n_step=n_step, gamma=gamma, modules_to_sample=modules_to_sample
            )
        raise ValueError(
            f"{type(self).__name__}.sample(replay_mode={replay_mode!r}): must be "
            "'independent' or 'synchronized'"
        )

    def sample_transitions(
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        n_step: int | tuple = 1,
        gamma: float = 0.99,
        beta: float = 0.0,
        modules_to_sample: list[Any] | None = None,
    ) -> dict[Any, dict[str, np.ndarray]]:
        """`batch_size_B` n-step transitions per module (of `modules_to_sample`, default
        all with steps), as arrays (see `EpisodeReplayBuffer.sample_transitions`)."""
        batch_size_B = self._batch_size(num_items, batch_size_B)
        sampled = {
            module_id: self.module_buffers[module_id].sample_transitions(
                batch_size_B, n_step=n_step, gamma=gamma, beta=beta
            )
            for module_id in self._modules_to_sample(modules_to_sample)
        }
        self._count_sample(batch_size_B, {module_id: batch_size_B for module_id in sampled})
        return sampled

    def _batch_size(self, num_items: int | None, batch_size_B: int | None) -> int:
        if num_items is not None and batch_size_B is not None:
            raise ValueError(
                f"{type(self).__name__}.sample(): give num_items or batch_size_B, not both"
            )
        size = num_items if num_items is not None else batch_size_B or self.batch_size_B
        _check_int(type(self).__name__, "batch_size_B", size, 1)
        return size

    def _modules_to_sample(self, modules_to_sample: list[Any] | None) -> list[Any]:
        """The modules to draw from: those asked for (each must be known), else every module
        with steps stored."""
        if not self.get_num_timesteps():
            raise ValueError(f"{type(self).__name__}.sample(): the buffer is empty")
        if modules_to_sample is None:
            return [m for m, buffer in self.module_buffers.items() if buffer.get_num_timesteps()]
        unknown = [m for m in modules_to_sample if m not in self.module_buffers]
        if unknown:
            raise ValueError(
                f"{type(self).__name__}.sample(modules_to_sample={list(modules_to_sample)}): "
                f"no steps of module {unknown[0]!r} are stored (modules: "
                f"{self.get_module_ids()})"
            )
        return list(dict.fromkeys(modules_to_sample))

    def _count_sample(self, batch_size_B: int, rows_per_module: dict[Any, int]) -> None:
        """RLlib's counters: `batch_size_B` per call, and each module's rows."""
        self.sampled_timesteps += batch_size_B
        for module_id, rows in rows_per_module.items():
            self.sampled_timesteps_per_module[module_id] += rows

    def _sample_independent(
        self,
        batch_size_B: int,
        *,
        n_step: int | tuple,
        gamma: float,
        include_infos: bool,
        include_extra_model_outputs: bool,
        modules_to_sample: list[Any] | None,
        **kwargs: Any,
    ) -> list[SingleAgentEpisode]:
        sampled: list[SingleAgentEpisode] = []
        rows = {}
        for module_id in self._modules_to_sample(modules_to_sample):
            episodes = self.module_buffers[module_id].sample(
                batch_size_B,
                n_step=n_step,
                gamma=gamma,
                include_infos=include_infos,
                include_extra_model_outputs=include_extra_model_outputs,
                sample_episodes=True,
                **self._module_sample_kwargs(kwargs),
            )
            rows[module_id] = len(episodes)
            sampled.extend(episodes)
        self._count_sample(batch_size_B, rows)
        return sampled

    def _module_sample_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Further `sample()` arguments the module buffers take (the prioritized one's
        `beta`)."""
        return {}

    def _sample_synchronized(
        self,
        batch_size_B: int,
        *,
        n_step: int | tuple,
        gamma: float,
        modules_to_sample: list[Any] | None,
    ) -> dict[Any, dict[str, np.ndarray]]:
        """RLlib's "synchronized" mode: env steps drawn uniformly over the stored episodes;
        at each, every agent (of a module in `modules_to_sample`) with an observation at
        both ends of the n-step transition and an action at its start gives a row of its
        module. A draw without such an agent is drawn again."""
        if not self._num_timesteps:
            raise ValueError(f"{type(self).__name__}.sample(): the buffer is empty")
        wanted = None if modules_to_sample is None else set(modules_to_sample)
        lengths = np.array([len(episode) for episode in self.episodes], np.int64)
        ends = np.cumsum(lengths)
        columns: dict[Any, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        rows: dict[Any, int] = defaultdict(int)
        drawn = attempts = 0
        while drawn < batch_size_B:
            attempts += 1
            if attempts > 1000 * batch_size_B:
                raise ValueError(
                    f"{type(self).__name__}.sample(replay_mode='synchronized', "
                    f"n_step={n_step!r}): hardly any stored env step has an agent with a "
                    "whole transition of that many steps"
                )
            n = (
                int(self.rng.integers(n_step[0], n_step[1]))
                if isinstance(n_step, tuple)
                else n_step
            )
            step = int(self.rng.integers(int(ends[-1])))
            which = int(np.searchsorted(ends, step, side="right"))
            episode = self.episodes[which]
            # The transition's end: env step t (1..len) of the episode, its start t - n.
            t = step - int(ends[which] - lengths[which]) + 1
            if t - n < 0:
                continue
            observations = episode.get_observations(slice(t - n, t + 1), return_list=True)
            actions = episode.get_actions(t - n)
            agents = [
                agent_id
                for agent_id in observations[0]
                if agent_id in actions and agent_id in observations[-1]
            ]
            if wanted is not None:
                agents = [a for a in agents if episode.module_for(a) in wanted]
            if not agents:
                continue
            rewards = episode.get_rewards(slice(t - n, t), return_list=True)
            at_end = t == len(episode)
            for agent_id in agents:
                module_id = episode.module_for(agent_id)
                agent_episode = episode.agent_episodes[agent_id]
                column = columns[module_id]
                column["obs"].append(observations[0][agent_id])
                column["new_obs"].append(observations[-1][agent_id])
                column["actions"].append(actions[agent_id])
                column["rewards"].append(
                    sum(gamma**k * float(r.get(agent_id) or 0.0) for k, r in enumerate(rewards))
                )
                # The transition ends the agent's episode only at the episode's last step.
                agent_done = at_end and agent_episode.is_done
                terminated = agent_done and agent_episode.is_terminated
                column["terminateds"].append(terminated)
                column["truncateds"].append(agent_done and not terminated)
                column["weights"].append(1.0)
                column["n_step"].append(n)
                rows[module_id] += 1
            drawn += 1
        self._count_sample(batch_size_B, rows)
        return {
            module_id: {
                "obs": batch(column["obs"]),
                "actions": batch(column["actions"]),
                "rewards": np.array(column["rewards"]),
                "new_obs": batch(column["new_obs"]),
                "terminateds": np.array(column["terminateds"]),
                "truncateds": np.array(column["truncateds"]),
                "weights": np.array(column["weights"]),
                "n_step": np.array(column["n_step"]),
            }
            for module_id, column in columns.items()
        }

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """The buffer as plain data: the multi-agent episodes, the counters, and each
        module's buffer's state."""
        return {
            "type": type(self).__name__,
            "capacity": self.capacity,
            "episodes": [episode.get_state() for episode in self.episodes],
            "episode_id_to_index": list(self.episode_id_to_index.items()),
            "_num_episodes_evicted": self._num_episodes_evicted,
            "_num_timesteps": self._num_timesteps,
            "_num_timesteps_added": self._num_timesteps_added,
            "_num_agent_timesteps": self._num_agent_timesteps,
            "_num_agent_timesteps_added": self._num_agent_timesteps_added,
            "sampled_timesteps": self.sampled_timesteps,
            "sampled_timesteps_per_module": list(self.sampled_timesteps_per_module.items()),
            "_steps_handed_over": [
                [episode_id, agent_id, steps]
                for (episode_id, agent_id), steps in self._steps_handed_over.items()
            ],
            "module_buffers": [
                [module_id, buffer.get_state()] for module_id, buffer in self.module_buffers.items()
            ],
            "rng": generator_state(self.rng),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Replaces the buffer's contents with `state` (from `get_state`, also after a
        msgpack round trip). Raises ValueError for a state of another buffer type or
        capacity, or one whose parts do not fit together."""
        name = type(self).__name__
        if (
            not isinstance(state, dict)
            or state.get("type") != name
            or state.get("capacity") != self.capacity
        ):
            kind = (
                f"{state.get('type')}(capacity={state.get('capacity')})"
                if isinstance(state, dict)
                else type(state).__name__
            )
            raise ValueError(
                f"{name}(capacity={self.capacity}).set_state(): the state is of a {kind}"
            )
        episodes = [MultiAgentEpisode.from_state(s) for s in state["episodes"]]
        id_to_index = {str(k): int(v) for k, v in state["episode_id_to_index"]}
        evicted = int(state["_num_episodes_evicted"])
        if [id_to_index.get(ep.id_) for ep in episodes] != list(
            range(evicted, evicted + len(episodes))
        ):
            raise ValueError(
                f"{name}.set_state(): episode_id_to_index does not list the episodes in order"
            )
        if int(state["_num_timesteps"]) != sum(ep.env_steps() for ep in episodes):
            raise ValueError(f"{name}.set_state(): the env step count does not match the episodes")
        module_buffers = {}
        for module_id, module_state in state["module_buffers"]:
            buffer = self._MODULE_BUFFER_CLASS(self.capacity, **self._module_buffer_kwargs())
            buffer.set_state(module_state)
            module_buffers[module_id] = buffer
        self.episodes = deque(episodes)
        self.episode_id_to_index = id_to_index
        self._num_episodes_evicted = evicted
        self._num_timesteps = int(state["_num_timesteps"])
        self._num_timesteps_added = int(state["_num_timesteps_added"])
        self._num_agent_timesteps = int(state["_num_agent_timesteps"])
        self._num_agent_timesteps_added = int(state["_num_agent_timesteps_added"])
        self.sampled_timesteps = int(state["sampled_timesteps"])
        self.sampled_timesteps_per_module = defaultdict(
            int, {m: int(n) for m, n in state["sampled_timesteps_per_module"]}
        )
        self._steps_handed_over = {
            (str(episode_id), agent_id): int(steps)
            for episode_id, agent_id, steps in state["_steps_handed_over"]
        }
        self.module_buffers = module_buffers
        set_generator_state(self.rng, state["rng"])


def _stored_copy(episode: MultiAgentEpisode) -> MultiAgentEpisode:
    """A copy of `episode` the buffer may change (chunks are appended to it): the agents'
    episodes copied as the single-agent buffer copies them, the per-agent maps copied, the
    rest (ids, spaces, the mapping function) shared. (A `copy.deepcopy` costs several times
    more.)"""
    stored = copy.copy(episode)
    stored.agent_episodes = {
        agent_id: _storable_copy(agent_episode)
        for agent_id, agent_episode in episode.agent_episodes.items()
    }
    stored._agent_to_module_mapping = dict(episode._agent_to_module_mapping)
    stored.agent_t_started = defaultdict(int, episode.agent_t_started)
    stored.env_t_to_agent_t = defaultdict(
        InfiniteLookbackBuffer,
        {
            agent_id: InfiniteLookbackBuffer(list(mapping.data), mapping.lookback)
            for agent_id, mapping in episode.env_t_to_agent_t.items()
        },
    )
    stored._hanging_actions_end = copy.deepcopy(episode._hanging_actions_end)
    stored._hanging_extra_model_outputs_end = copy.deepcopy(
        episode._hanging_extra_model_outputs_end
    )
    stored._hanging_rewards_end = defaultdict(float, episode._hanging_rewards_end)
    stored._hanging_rewards_begin = defaultdict(float, episode._hanging_rewards_begin)
    stored._custom_data = copy.deepcopy(episode._custom_data)
    return stored


def _as_multi_agent_episodes(episodes: Any) -> list[MultiAgentEpisode]:
    listed = [episodes] if isinstance(episodes, MultiAgentEpisode) else list(episodes)
    for episode in listed:
        if not isinstance(episode, MultiAgentEpisode):
            raise TypeError(
                f"add(): expected MultiAgentEpisodes, got {type(episode).__name__} (a "
                "single-agent run uses EpisodeReplayBuffer)"
            )
    return listed
