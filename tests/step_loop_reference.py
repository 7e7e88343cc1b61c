"""The per-step sampling loop, kept as the reference the EnvRunner's rollout loop is checked
against.

The EnvRunner samples through one loop (`trainer/runners/rollout.py`), which records steps by
column where nothing reads an episode between steps. This loop appends each step to each
sub-env's episode object, the plain way to record: both draw the same actions from the same
generators, so the tests `tests/test_columnar_*.py` sample with each and compare the episodes,
metrics and callback events. `use_step_loop(runner)` makes one runner sample with it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.core.obs_tree import tree_map
from trainer.env.episode import SingleAgentEpisode
from trainer.env.episode_list import EpisodeList
from trainer.env.vectorize import ASYNC
from trainer.runners.env_runner import (
    _RECORD_HAS_EPISODE,
    _SAMPLING_HAS_ENV,
    EnvRunner,
    SubEnvRecord,
)
from trainer.runners.sub_env_guard import SubEnvGuard
from trainer.runners.sub_env_recovery import (
    GUARDED_IS_SYNC,
    SUB_ENV_IS_GUARDED,
    drop_episode,
    recover_sub_envs,
    take_child_failures,
)
from trainer.runners.vector_rows import sub_env_infos, unbatch


class StepLoopSampling:
    """EnvRunner's sampling modes through the per-step loop (`_step`), mixed in before the
    runner's class by `use_step_loop`."""

    #: A complete-episodes sample lets the running episodes finish: a sub-env whose episode
    #: ends meanwhile idles (`SubEnvRecord.idle`).
    _draining: bool = False
    #: The steps of episodes dropped in the current step (re-created in their child process).
    _lost_in_step: tuple[int, ...] = ()

    def _sample_timesteps(
        self, num_timesteps: int, explore: bool, random_actions: bool, force_reset: bool
    ) -> list[SingleAgentEpisode]:
        if force_reset or self._needs_reset:
            self._reset_all()
        done: list[SingleAgentEpisode] = []
        steps = 0
        while steps < num_timesteps:
            steps += self._step(explore, random_actions, done)
        self._log_sample_metrics(steps, len(done))
        # Cut the unfinished episodes: the chunks so far go out, the successors continue.
        chunks = []
        for record in self._sub_env_records:
            episode = record.episode
            assert episode is not None, _RECORD_HAS_EPISODE
            if len(episode) == 0:
                continue
            # A recurrent module's chunk keeps the step before as its lookback: the state (and
            # previous action and reward) the successor's first step starts from.
            successor = episode.cut(len_lookback_buffer=1 if self._stateful else 0)
            record.episode = successor
            record.event_kwargs["episode"] = successor
            chunks.append(episode.to_numpy())
            record.prev_chunks.append(episode)
        return EpisodeList(done + chunks)  # the finished ones were numpy'ized as they ended

    def _sample_complete_episodes(
        self, min_timesteps: int, explore: bool, random_actions: bool
    ) -> list[SingleAgentEpisode]:
        self._reset_all()
        done: list[SingleAgentEpisode] = []
        steps = 0
        while steps < min_timesteps:
            steps += self._step(explore, random_actions, done)
        # Let the running episodes finish; sub-envs that are done stay idle.
        self._draining = True
        try:
            while not all(record.idle for record in self._sub_env_records):
                steps += self._step(explore, random_actions, done)
        finally:
            self._draining = False
        self._log_sample_metrics(steps, len(done))
        self._needs_reset = True
        return EpisodeList(done)

    def _sample_episodes(
        self, num_episodes: int, explore: bool, random_actions: bool
    ) -> list[SingleAgentEpisode]:
        self._reset_all()
        done: list[SingleAgentEpisode] = []
        steps = 0
        while len(done) < num_episodes:
            steps += self._step(explore, random_actions, done)
        # Episodes that ended in the step of the last one asked for are not counted either.
        extra = len(done) - num_episodes
        if extra > 0:
            del self._ended_episodes[max(0, len(self._ended_episodes) - extra) :]
        self._log_sample_metrics(steps, min(len(done), num_episodes))
        # Episodes still running are dropped; the next sample() starts fresh ones.
        self._needs_reset = True
        for record in self._sub_env_records:
            record.prev_chunks = []
        return EpisodeList(done[:num_episodes])

    def _step(self, explore: bool, random_actions: bool, done: list[SingleAgentEpisode]) -> int:
        """One step of every sub-env; finished episodes are appended to `done`."""
        env = self.env
        assert env is not None, _SAMPLING_HAS_ENV
        actions, env_actions, logp, dist_inputs, state_rows, extras = self._step_actions(
            self._obs if self._env_to_module is None else self._module_obs, explore, random_actions
        )
        results = self._try_env_step(env_actions)
        if results is None:  # the vector env was re-created: every sub-env starts afresh
            self._reset_all()
            return 0
        obs, rewards, terminateds, truncateds, infos = results
        records = self._sub_env_records
        if self.vectorize_mode == ASYNC:
            for record, ended in zip(records, (terminateds | truncateds).tolist(), strict=True):
                record.child_autoreset = ended
        num_envs = self.num_envs
        obs_rows = unbatch(obs, num_envs)
        per_env_infos = sub_env_infos(env, infos, num_envs)
        recreated = take_child_failures(self, per_env_infos) if self._child_guarded else ()
        # Python scalars once per step, not numpy scalars per sub-env.
        # Discrete actions as ints; Box actions keep their float32 rows.
        action_list = actions.tolist() if actions.ndim == 1 else list(actions)
        reward_list = rewards.tolist()
        terminated_list = terminateds.tolist()
        truncated_list = truncateds.tolist()
        logp_list = logp.tolist()
        dist_rows = [None] * num_envs if dist_inputs is None else dist_inputs
        fire_with = self._callbacks.fire_with if self._callbacks.has("on_episode_step") else None
        stepped_indices: list[int] = []
        started_indices: list[int] = []
        ended_indices: list[int] = []
        guarded = self._guarded
        for i, record in enumerate(records):
            if record.idle:
                continue
            if self._steps_no_episode(i, record, recreated, obs_rows, per_env_infos):
                # A reset that began its episode here: its start event fires below (a sub-env
                # that raised begins its new episode when re-created, after the step; its
                # episode may be a chunk's successor, empty, that started calls ago).
                failed = self._guarded and env.envs[i].failure is not None
                if not failed and record.episode is not None and len(record.episode) == 0:
                    started_indices.append(i)
                continue
            episode = record.episode
            assert episode is not None, _RECORD_HAS_EPISODE
            if state_rows is not None or extras is not None:
                self._record_recurrent_step(
                    episode,
                    obs_rows[i],
                    action_list[i],
                    reward_list[i],
                    per_env_infos[i],
                    terminated_list[i],
                    truncated_list[i],
                    {
                        Columns.ACTION_LOGP: logp_list[i],
                        Columns.ACTION_DIST_INPUTS: dist_rows[i],
                        **{key: values[i].copy() for key, values in (extras or {}).items()},
                        Columns.STATE_OUT: None if state_rows is None else state_rows[i],
                    },
                )
            else:
                episode.record_sampled_step(
                    obs_rows[i],
                    action_list[i],
                    reward_list[i],
                    per_env_infos[i],
                    terminated_list[i],
                    truncated_list[i],
                    logp_list[i],
                    dist_rows[i],
                )
            stepped_indices.append(i)
            if terminated_list[i] or truncated_list[i]:
                ended_indices.append(i)
        if self._env_to_module is not None and stepped_indices:
            stepped_episodes: list[SingleAgentEpisode] = []
            for i in stepped_indices:
                episode = records[i].episode
                assert episode is not None, _RECORD_HAS_EPISODE
                stepped_episodes.append(episode)
            self._to_module(stepped_episodes, stepped_indices)
        # The start and step events after the pipeline's pass, in sub-env order, as RLlib's:
        # they see what it wrote.
        fires_start = self._callbacks.has("on_episode_start")
        for i, record in enumerate(records):
            if i in started_indices and fires_start:
                self._callbacks.fire_with("on_episode_start", record.event_kwargs)
            elif i in stepped_indices and fire_with is not None:
                fire_with("on_episode_step", record.event_kwargs)
        self._end_episodes(ended_indices, done)
        self._obs = obs
        self.global_timestep += len(stepped_indices)
        self.num_env_steps_stepped += len(stepped_indices)
        lost, self._lost_in_step = sum(self._lost_in_step), ()
        if guarded:
            lost += recover_sub_envs(self)
        return len(stepped_indices) - lost  # (a dropped episode's steps are not sampled)

    def _steps_no_episode(
        self,
        i: int,
        record: SubEnvRecord,
        recreated: set[int] | tuple[()],
        obs_rows: Any,
        per_env_infos: list[dict],
    ) -> bool:
        """The per-step loop: whether sub-env `i`'s last env step is no step of its episode:
        it raised (a guarded sub-env, re-created after the step), or the step was its reset
        (its autoreset, or its re-creation in its child process in "async" mode), which
        begins its next episode here."""
        if self._guarded:
            env = self.env
            assert isinstance(env, gym.vector.SyncVectorEnv), GUARDED_IS_SYNC
            guard = env.envs[i]
            assert isinstance(guard, SubEnvGuard), SUB_ENV_IS_GUARDED
            if guard.failure is not None:
                record.awaiting_reset = False  # re-created after this step
                return True
        if recreated and i in recreated:
            # Re-created in its child process ("async"): this step was the new sub-env's
            # reset. Its episode is dropped (unless it had not started) and one begins.
            if not record.awaiting_reset:
                self._lost_in_step = (*self._lost_in_step, drop_episode(self, record))
                self._create_episode(i)
        elif not record.awaiting_reset:
            return False
        # This step was the sub-env's reset: its new episode starts here.
        record.awaiting_reset = False
        self._begin_episode(i, obs_rows[i], per_env_infos[i], fire_start=False)
        return True

    def _end_episodes(self, indices: list[int], done: list[SingleAgentEpisode]) -> None:
        """The per-step loop: the episodes of sub-envs `indices` ended in this step; each
        goes into `done` and its sub-env starts the next (or idles while draining)."""
        for i in indices:
            record = self._sub_env_records[i]
            episode = record.episode
            assert episode is not None, _RECORD_HAS_EPISODE
            self._finish_episode(record)
            # Numpy'ized now, as RLlib does, while its rows are still in the CPU's caches (at
            # the end of a 10k-step sample, converting ~500 episodes cost twice as much).
            done.append(episode.to_numpy())
            if self._draining:
                record.idle = True
            else:
                self._create_episode(i)
                record.awaiting_reset = True

    @staticmethod
    def _record_recurrent_step(
        episode: SingleAgentEpisode,
        observation: Any,
        action: Any,
        reward: float,
        infos: dict,
        terminated: bool,
        truncated: bool,
        model_outputs: dict[str, Any],
    ) -> None:
        """Records a step of a recurrent module, or of one with other outputs, its state out
        among the model outputs (copied: a row of the batch's array would keep the whole batch
        alive)."""
        outputs = {key: value for key, value in model_outputs.items() if value is not None}
        if Columns.STATE_OUT in outputs:
            outputs[Columns.STATE_OUT] = tree_map(np.array, outputs[Columns.STATE_OUT])
        episode.add_env_step(
            observation,
            action,
            reward,
            infos,
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs=outputs,
        )


_STEP_LOOP_CLASSES: dict[type, type] = {}


def use_step_loop(runner: EnvRunner) -> EnvRunner:
    """Makes `runner` sample with the per-step loop: its class becomes a subclass of its own
    with `StepLoopSampling` mixed in first (made once per class), so every other method stays
    the runner's."""
    cls = type(runner)
    if cls not in _STEP_LOOP_CLASSES:
        _STEP_LOOP_CLASSES[cls] = type(f"StepLoop{cls.__name__}", (StepLoopSampling, cls), {})
    runner.__class__ = _STEP_LOOP_CLASSES[cls]
    return runner


def count_rollouts(runner: EnvRunner) -> list:
    """A list that gets an item each time `runner` samples through its rollout loop
    (`EnvRunner._sample_columnar`): none for a runner that `use_step_loop` switched."""
    calls: list = []
    rollout = runner._sample_columnar

    def counted(*args: Any, **kwargs: Any) -> list[SingleAgentEpisode]:
        calls.append(1)
        return rollout(*args, **kwargs)

    runner._sample_columnar = counted  # type: ignore[method-assign]
    return calls


def sample_both_ways(
    config: Any,
    columnar: bool,
    calls: int,
    read: Any = None,
    **sample_kwargs: Any,
) -> tuple:
    """`calls` samples of the local runner of `config`'s algorithm, through the rollout loop
    (`columnar`) or the reference per-step loop, checking which loop ran: (the episodes, the
    runner's metrics, `read(runner)` — the connector state by default)."""
    algo = config.build()
    runner = algo.env_runner_group.local_env_runner
    if not columnar:
        use_step_loop(runner)
    rollouts = count_rollouts(runner)
    episodes = [runner.sample(**sample_kwargs) for _ in range(calls)]
    assert len(rollouts) == (calls if columnar else 0)
    read = read or (lambda sampled: sampled.get_connector_state())
    result = (episodes, runner.get_metrics(), read(runner))
    algo.stop()
    return result
