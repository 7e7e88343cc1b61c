"""The single-agent EnvRunner's recorder of its steps by column.

A `sample()` call runs the rollout loop both runners share (`runners/rollout_loop.py`) over a
`ColumnRecorder`: per vector step one forward pass (or random actions, `act`), one env step
(`step`), and the step recorded (`record`), until the call has its steps or episodes. The
recorder writes each step as one row per field into `StepColumns`
(`runners/step_columns.py`), runs the env-to-module pipeline over the row, and does Python
work per sub-env only where an episode starts or ends; when the call ends it hands out the
ended episodes and the chunks of the running ones.

Episode objects exist while an episode runs only where something reads them: callbacks at
its start (`on_episode_created`, `on_episode_start`) make one from the start; an
`on_episode_step` callback reads each episode as a `LiveEpisode`, an object over its rows in the
columns, made at its start and frozen into a view of its rows when it ends; a recurrent module
(which reads its state from the episode) makes every episode's object get each step as it is
taken (`steps_objects`). The others are made from their rows when they end or are cut.

What is not in the loop lives in the runner: re-creating a vector env that raised
(`EnvRunner._try_env_step`), starting fresh episodes (`EnvRunner._reset_all`), and the state a
checkpoint captures. What the recorder reads, sets and calls of the runner is `RecorderRunner`
(the EnvRunner imports this module, so it is not named here).

"The per-step loop" below is the reference the tests hold this loop to
(`tests/step_loop_reference.py`): it appends each step to each sub-env's episode object, and
this loop records the same episodes and fires the same events in the same order.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Protocol

import numpy as np

from trainer.callbacks import CallbackChain
from trainer.compat.rllib_utils import Columns
from trainer.connectors.connector_v2 import ConnectorPipelineV2
from trainer.core.obs_tree import tree_map
from trainer.env.episode import LiveEpisode, SingleAgentEpisode, new_episode_ids
from trainer.env.episode_list import ColumnRows
from trainer.env.vectorize import ASYNC, SYNC
from trainer.runners.env_to_module_rows import LatestStepView, module_observations
from trainer.runners.module_frames import ModuleFrames, with_frame_lookback
from trainer.runners.step_columns import StepColumns
from trainer.runners.sub_env_record import SubEnvRecord
from trainer.runners.sub_env_recovery import (
    RecoveryRunner,
    drop_episode,
    failed_sub_envs,
    recover_sub_envs,
    take_child_failures,
)
from trainer.runners.vector_rows import sub_env_infos, unbatch

#: Every sub-env records an episode from the first reset on.
RECORD_HAS_EPISODE = "a sub-env records an episode from the first reset on"


class RecorderRunner(RecoveryRunner, Protocol):
    """What a `ColumnRecorder` reads, sets and calls of its single-agent EnvRunner, besides
    what sub-env recovery does (`RecoveryRunner`): its settings, module, pipeline and
    callbacks, the step's actions and env step, the episodes' start and end, and the
    metrics of the call."""

    #: The vector env's current observations (a batch over the sub-envs).
    _obs: Any
    #: With an env-to-module pipeline: the module's next inputs.
    _module_obs: Any
    #: The next `sample()` starts fresh episodes.
    _needs_reset: bool

    @property
    def config(self) -> Any: ...

    @property
    def module(self) -> Any: ...

    @property
    def num_envs(self) -> int: ...

    @property
    def vectorize_mode(self) -> str: ...

    @property
    def pipeline_explore(self) -> bool: ...

    @property
    def _callbacks(self) -> CallbackChain: ...

    @property
    def _recording_pipeline(self) -> ConnectorPipelineV2 | None: ...

    @property
    def _module_frames(self) -> ModuleFrames | None: ...

    @property
    def _guarded(self) -> bool: ...

    @property
    def _child_guarded(self) -> bool: ...

    @property
    def _stateful(self) -> bool: ...

    @property
    def _ended_episodes(self) -> list[tuple[float, int, float]]: ...

    def _records_each_step(self) -> bool: ...

    def _step_actions(
        self, observations: Any, explore: bool, random_actions: bool
    ) -> tuple[np.ndarray, Any, np.ndarray, Any, list[Any] | None, dict | None]: ...

    def _try_env_step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]] | None: ...

    def _reset_all(self) -> None: ...

    def _to_module(self, episodes: list[SingleAgentEpisode], env_indices: list[int]) -> None: ...

    def _event_kwargs(self, env_index: int, episode: SingleAgentEpisode | None) -> dict: ...

    def _finish_episode(self, record: SubEnvRecord) -> None: ...

    def _note_ended(
        self, episode: SingleAgentEpisode, episode_return: float, episode_len: int
    ) -> None: ...

    def _log_old_episode_data(self, old: dict, window: int) -> None: ...

    def _log_sample_metrics(self, steps: int, episodes: int) -> None: ...


def data_of(episode: SingleAgentEpisode | None) -> tuple[dict, dict]:
    """An episode's (connector_data, custom_data); fresh dicts for one without object yet."""
    if episode is None:
        return {}, {}
    return episode.connector_data, episode.custom_data


def with_earlier_chunks(
    episode_return: float, episode_len: int, prev_chunks: list[SingleAgentEpisode]
) -> tuple[float, int]:
    """An ended episode's return and length from its last chunk's, its earlier chunks (those
    earlier `sample()` calls returned) counted in, as RLlib's episode metrics count them."""
    if prev_chunks:
        episode_return += sum(c.get_return() for c in prev_chunks)
        episode_len += sum(len(c) for c in prev_chunks)
    return episode_return, episode_len


class StepRows:
    """One vector step as per-sub-env rows, for the episode objects that get each step:
    Python scalars made once per step, not numpy scalars per sub-env; Discrete actions as
    ints, Box actions keep their rows. `state_rows`: a recurrent module's state out per
    sub-env, and `extras`: the module's other outputs by key (a row per sub-env), recorded
    among the model outputs."""

    def __init__(
        self,
        obs: Any,
        actions: np.ndarray,
        rewards: np.ndarray,
        terminateds: np.ndarray,
        truncateds: np.ndarray,
        logp: np.ndarray,
        dist_inputs: np.ndarray | None,
        infos: list[dict],
        state_rows: list | None,
        extras: dict[str, np.ndarray] | None = None,
    ):
        num_envs = len(rewards)
        self.observations = unbatch(obs, num_envs)
        self.actions = actions.tolist() if actions.ndim == 1 else list(actions)
        self.rewards, self.logp = rewards.tolist(), logp.tolist()
        self.terminateds, self.truncateds = terminateds.tolist(), truncateds.tolist()
        self.dist_inputs = [None] * num_envs if dist_inputs is None else dist_inputs
        self.infos = infos
        self.state_rows = state_rows
        self.extras = extras

    def append_to(self, episode: SingleAgentEpisode | None, i: int) -> None:
        """Appends sub-env `i`'s step to its episode (a recurrent module's state out and the
        rows of the other outputs copied: a row of the batch's array would keep the whole
        batch alive)."""
        assert episode is not None, RECORD_HAS_EPISODE
        if self.state_rows is None and self.extras is None:
            episode.record_sampled_step(
                self.observations[i],
                self.actions[i],
                self.rewards[i],
                self.infos[i],
                self.terminateds[i],
                self.truncateds[i],
                self.logp[i],
                self.dist_inputs[i],
            )
            return
        outputs = {Columns.ACTION_LOGP: self.logp[i]}
        if self.dist_inputs[i] is not None:
            outputs[Columns.ACTION_DIST_INPUTS] = self.dist_inputs[i]
        if self.extras is not None:
            for key, values in self.extras.items():
                outputs[key] = values[i].copy()
        if self.state_rows is not None:
            outputs[Columns.STATE_OUT] = tree_map(np.array, self.state_rows[i])
        episode.add_env_step(
            self.observations[i],
            self.actions[i],
            self.rewards[i],
            self.infos[i],
            terminated=self.terminateds[i],
            truncated=self.truncateds[i],
            extra_model_outputs=outputs,
        )


class ColumnRecorder:
    """Records one `sample()` call's vector steps into `StepColumns` (see the module
    docstring); per sub-env it keeps where its episode starts in the columns and its object,
    id, start time, return and connector data."""

    def __init__(self, runner: RecorderRunner, num_timesteps: int, num_episodes: int | None):
        """The recorder of one `sample()` call of `runner`, set up in steps, each reading
        what the ones before it set:

            `_set_up_columns`     the env-to-module pipeline, the module's next input, the
                                  `StepColumns` (rows for `num_timesteps` or `num_episodes`)
                                  and each sub-env's first row
            `_set_up_episodes`    what reads the episodes while they run (step callbacks,
                                  live views, objects that get each step), and per sub-env
                                  its episode's object, or the chunk it continues
            `_set_up_pipeline`    the episodes' data the pipeline reads, and how it runs
            `_set_up_events`      the returns, the sub-envs resetting or idling, and which
                                  callbacks fire
            `_set_up_recovery`    the sub-envs' infos and restarts ("sync" / "async" mode)
        """
        self.runner = runner
        self.records = runner._sub_env_records
        self.num_envs = runner.num_envs
        #: Env steps of this call (sub-envs that stepped an episode): what `num_timesteps`
        #: counts.
        self.timesteps = 0
        #: Set by `drain`: an episode that ends starts no next one (its sub-env idles).
        self.draining = False
        self._set_up_columns(num_timesteps, num_episodes)
        self._set_up_episodes()
        self._set_up_pipeline()
        self._set_up_events()
        self._set_up_recovery()
        if self.frames is not None:
            self._set_up_frames()
        #: The episodes ended in this call, then the chunks; where each is in `columns`.
        self.episodes: list[SingleAgentEpisode] = []
        self.where: list[ColumnRows | None] = []

    def _set_up_columns(self, num_timesteps: int, num_episodes: int | None) -> None:
        """`__init__`'s first step: the pipeline, the module's next input and the columns."""
        runner, num_envs = self.runner, self.num_envs
        #: The env-to-module pipeline: each step's row of observations is its output (what
        #: the module sees, and the episodes record), made from the vector env's raw ones.
        #: When the learner stacks the frames, its pieces before the stacking: the module
        #: sees the rows stacked by `frames`.
        self.pipeline = pipeline = runner._recording_pipeline
        self.frames = runner._module_frames
        #: The row whose frames `frames` holds (row 0: the call starts where the last ended).
        self.stacked_row = 0
        #: Per sub-env, the frames before its row-0 frame, and the step its episode is at
        #: there (None: it starts with this call): the lookback of the chunk it continues.
        self.frames_before: np.ndarray | None = None
        self.continues_at: list[int | None] = []
        #: The module's next input.
        self.policy_obs: Any = runner._obs if pipeline is None else runner._module_obs
        #: Every episode has its object, which gets each step as it is taken (the raw
        #: observation while the callbacks run, then the pipeline's output; a recurrent
        #: module's state): see `EnvRunner._records_each_step`.
        self.steps_objects = runner._records_each_step()
        #: Dict / Tuple observations: the columns hold none (the objects do).
        self.obs_in_columns = (
            type(self.policy_obs) is np.ndarray and type(runner._obs) is np.ndarray
        )
        # Rows for the steps asked for, with room for the autoreset steps (which step no
        # episode) of episodes ~8 steps long on average before a column must grow.
        rows = num_timesteps // num_envs + 2 if num_episodes is None else 64
        self.columns = StepColumns(
            num_envs, rows + rows // 8 + 8, self._column_observations(self.policy_obs)
        )
        #: Per sub-env, the row of its episode's first observation in `columns`.
        self.first_row = [1 if record.awaiting_reset else 0 for record in self.records]

    def _set_up_episodes(self) -> None:
        """`__init__`'s second step: what reads the episodes while they run, and where each
        sub-env's episode stands."""
        records, num_envs = self.records, self.num_envs
        self.fires_step = self.runner._callbacks.has("on_episode_step")
        #: `on_episode_step` callbacks read each episode as a `LiveEpisode` of its rows (an
        #: object from its start that gets no per-step appends).
        self.live_views = self.fires_step and not self.steps_objects
        #: The last step's terminated / truncated flags (what a `LiveEpisode` reads).
        self.step_flags = (np.zeros(num_envs, bool), np.zeros(num_envs, bool))
        if self.steps_objects:
            for record in records:
                record.resume()
        elif self.live_views:
            self._attach_live_episodes()
        #: Per sub-env, its episode's object; None for one started in this call without
        #: callbacks at its start, whose id and start time are in `ids` / `start_times`, and
        #: for one continued from the chunk the last call returned (`carried`).
        self.live: list[SingleAgentEpisode | None] = []
        self.carried: list[SingleAgentEpisode | None] = [record.cut_from for record in records]
        self.ids: list[str] = [""] * num_envs
        self.start_times: list[float] = [0.0] * num_envs
        for i, record in enumerate(records):
            chunk = self.carried[i]
            if chunk is None:
                self.live.append(record.episode)
            else:
                self.live.append(None)
                self.ids[i] = chunk.id_
                started = chunk._start_time
                self.start_times[i] = time.perf_counter() if started is None else started

    def _set_up_pipeline(self) -> None:
        """`__init__`'s third step: the episodes' data the pipeline reads, and whether it
        runs over rows or over the episode objects."""
        pipeline = self.pipeline
        #: With a pipeline: per sub-env, its episode's (connector_data, custom_data), which the
        #: pieces read and keep across the episode's chunks.
        self.episode_data: list[tuple[dict, dict]] = []
        self.rows_by_piece = False
        if pipeline is not None:
            self.episode_data = [
                data_of(self.live[i] if self.carried[i] is None else self.carried[i])
                for i in range(self.num_envs)
            ]
            self.rows_by_piece = pipeline.transforms_rows and self.obs_in_columns
        #: The pipeline runs over the episode objects, as the per-step loop runs it (for
        #: objects that get each step, unless it filters rows).
        self.pipeline_on_objects = (
            pipeline is not None and self.steps_objects and not self.rows_by_piece
        )

    def _set_up_events(self) -> None:
        """`__init__`'s fourth step: the returns, the sub-envs resetting or idling, and the
        callbacks that fire."""
        runner, records, num_envs = self.runner, self.records, self.num_envs
        callbacks = runner._callbacks
        #: Per sub-env, its episode's return so far in this call (the metrics' returns of
        #: episodes started in it).
        self.returns = np.zeros(num_envs)
        #: The sub-envs whose episode ended in the last step: this step resets them.
        self.resetting = [i for i, record in enumerate(records) if record.awaiting_reset]
        #: The sub-envs idling (their episode ended while the call lets the running episodes
        #: play out): stepped with the others, recorded and filtered by none.
        self.idle: list[int] = []
        self.fires_start = callbacks.has("on_episode_start")
        self.fires_end = callbacks.has("on_episode_end")
        #: Per sub-env, the event arguments, copied with the episode for one without object.
        self.base_kwargs = [runner._event_kwargs(i, None) for i in range(num_envs)]
        self.objects_at_start = (
            self.fires_start
            or self.fires_step
            or self.steps_objects
            or callbacks.has("on_episode_created")
        )

    def _set_up_recovery(self) -> None:
        """`__init__`'s last step: how the sub-envs' infos are read, and how sub-envs that
        raised are re-created ("sync" mode's per-sub-env restarts, "async" mode's children)."""
        runner = self.runner
        self.sub_env_infos_of = (
            partial(sub_env_infos, runner.env, num_envs=self.num_envs)
            if runner.vectorize_mode in (SYNC, ASYNC) or self.steps_objects
            else None  # "vector_entry_point": the batched dict, unbatched only when read
        )
        #: "async" mode: the runner keeps which sub-env's child autoresets at the next step,
        #: and (`restart_failed_sub_environments`) a child re-creates a sub-env that raised.
        self.in_children = runner.vectorize_mode == ASYNC
        self.child_guarded = runner._child_guarded
        #: The sub-envs re-created in their child processes in this step.
        self.recreating: set[int] = set()
        #: "sync" mode's per-sub-env restarts: the sub-envs whose last step raised.
        self.guarded = runner._guarded
        self.failed: list[int] = []

    def _set_up_frames(self) -> None:
        """With frames stacked in the learner: the frames each continuing episode's chunk
        takes as its lookback (see `trainer.runners.module_frames`)."""
        frames = self.frames
        assert frames is not None
        self.frames_before = frames.history()
        self.continues_at = []
        for i, record in enumerate(self.records):
            chunk = self.carried[i]
            episode = chunk if chunk is not None else self.live[i]
            if record.awaiting_reset or episode is None or frames.starting[i]:
                self.continues_at.append(None)
            else:
                self.continues_at.append(episode.t)

    def _stacked(self, frames_row: np.ndarray) -> np.ndarray:
        """The module's input for the current row of frames (pushed once per row; a sub-env
        whose episode starts at the row starts from zeros)."""
        frames, row = self.frames, self.columns.row
        assert frames is not None
        if row == self.stacked_row and frames.state is not None:
            return frames.current(frames_row)
        self.stacked_row = row
        starting = np.fromiter((first == row for first in self.first_row), bool, self.num_envs)
        return frames.push(frames_row, starting)

    def _finish_frames(self) -> None:
        """The call ends with its episodes cut: the module's input at its last row (where the
        next call starts), and the chunks that continued an episode get the frames before
        them as lookback. (A call that drops its running episodes needs neither: the next
        starts fresh ones.)"""
        self._stacked(self.policy_obs)
        before = self.frames_before
        if before is None:
            return
        for episode in self.episodes:
            index = episode.env_index
            if episode.t_started and self.continues_at[index] == episode.t_started:
                with_frame_lookback(episode, before[index])

    def _attach_live_episodes(self) -> None:
        """The episodes under way read this call's rows from now on: a chunk carried in
        continues as a new `LiveEpisode`, one at its reset (a `LiveEpisode`:
        `EnvRunner._records_each_step`) is attached."""
        for i, record in enumerate(self.records):
            chunk = record.cut_from
            if chunk is not None:
                successor = LiveEpisode.successor_of(chunk)
                record.continue_with(successor)
                successor.attach(self, i, successor._first_info)
                # It starts from its chunk's last observation as the chunk holds it (a step
                # callback may have set it); the module's input stays the vector env's.
                self.columns.observations[0, i] = chunk.get_observations(-1)
            elif not record.awaiting_reset:
                episode = record.episode
                assert isinstance(episode, LiveEpisode), RECORD_HAS_EPISODE
                episode.attach(self, i, episode._last_info())

    # -- what a LiveEpisode reads (`trainer.env.episode.LiveSource`) ---------------------------
    def live_span(self, index: int) -> tuple[int, int]:
        """Sub-env `index`'s episode's first row and the last row recorded."""
        return self.first_row[index], self.columns.row

    def live_ended(self, index: int) -> tuple[bool, bool]:
        """Whether sub-env `index`'s last step terminated / truncated its episode."""
        terminateds, truncateds = self.step_flags
        return bool(terminateds[index]), bool(truncateds[index])

    def rewards_written(self, index: int) -> None:
        """Sub-env `index`'s running return, summed anew from its rows (a step callback set
        its rewards): the same additions as the running sum's."""
        self.returns[index] = self.columns.return_of(index, *self.live_span(index))

    def _column_observations(self, observations: Any) -> np.ndarray:
        """The observations a row of the columns holds: none (an empty row per sub-env) for
        Dict / Tuple ones, which only the episode objects hold."""
        if self.obs_in_columns:
            return observations
        return np.zeros((self.num_envs, 0), np.float32)

    def episode_step(self, i: int) -> int:
        """The step sub-env `i` takes now (the first of its next episode when it resets)."""
        return 1 if i in self.resetting else self.columns.row + 1 - self.first_row[i]

    def act(self, explore: bool, random_actions: bool) -> tuple:
        """The step's actions from the module's next input (`EnvRunner._step_actions`):
        (actions, the env's actions, log-probs, distribution inputs, recurrent states)."""
        observations = self.policy_obs
        if self.frames is not None:
            observations = self._stacked(observations)
        return self.runner._step_actions(observations, explore, random_actions)

    def step(self, actions: tuple) -> tuple | None:
        """The vector env stepped with the env's actions (`EnvRunner._try_env_step`); None
        where it raised and was re-created, after which every sub-env starts a fresh episode
        (`restart`)."""
        results = self.runner._try_env_step(actions[1])
        if results is None:
            self.restart()
        return results

    def drain(self) -> None:
        self.draining = True

    def all_idle(self) -> bool:
        return len(self.idle) == self.num_envs

    def restart(self) -> None:
        """The vector env was re-created: every sub-env starts a fresh episode. The steps
        this call recorded of the episodes under way are lost (their objects, which the
        re-creation counted, hold none of them unless they got each step)."""
        runner, columns, num_envs = self.runner, self.columns, self.num_envs
        lost = sum(
            columns.row - self.first_row[i] for i in range(num_envs) if i not in self.resetting
        )
        if lost and not self.steps_objects:
            runner.metrics.log_value("num_env_steps_lost_lifetime", lost, reduce="sum")
        runner._reset_all()
        self.policy_obs = runner._obs if self.pipeline is None else runner._module_obs
        row = columns.restart(self._column_observations(self.policy_obs))
        self.first_row = [row] * num_envs
        self.live = [record.episode for record in self.records]
        self.carried = [None] * num_envs
        if self.live_views:
            for i, episode in enumerate(self.live):
                assert isinstance(episode, LiveEpisode), RECORD_HAS_EPISODE
                episode.attach(self, i, episode._last_info())
        if self.pipeline is not None:
            self.episode_data = [data_of(episode) for episode in self.live]
        self.resetting = []
        self.returns[:] = 0.0

    def record(self, results: tuple, acted: tuple) -> int:
        """Records one vector step (the env's `results` for the actions `act` gave); returns
        how many sub-envs stepped an episode. Once `draining`, an episode that ends starts no
        next one: its sub-env idles."""
        actions, _, logp, dist_inputs, state_rows, extras = acted
        obs, rewards, terminateds, truncateds, infos = results
        self.step_flags = (terminateds, truncateds)
        if self.sub_env_infos_of is not None:
            infos = self.sub_env_infos_of(infos)
        failing = (
            self._take_failures(infos, terminateds | truncateds)
            if self.in_children or self.guarded
            else None
        )
        columns, resetting, idle = self.columns, self.resetting, self.idle
        pipeline = self.pipeline
        row = columns.record(
            # (the pipeline's output: below; Dict / Tuple observations: in the objects only)
            obs if pipeline is None and self.obs_in_columns else None,
            actions,
            rewards,
            logp,
            dist_inputs,
            infos,
            extras,
        )
        np.add(self.returns, rewards, out=self.returns)
        if resetting:  # this step was their autoreset: their episodes start here
            self._start_episodes(row)
        if self.pipeline_on_objects:
            self._step_objects(
                row,
                StepRows(
                    obs, actions, rewards, terminateds, truncateds, logp, dist_inputs, infos,
                    state_rows, extras,
                ),
            )  # fmt: skip
        else:
            self._step_by_rows(
                row, obs, actions, rewards, terminateds, truncateds, logp, dist_inputs, infos,
                state_rows, extras,
            )  # fmt: skip
        stepped = self.num_envs - len(resetting) - len(idle)
        ended = terminateds | truncateds
        if True in ended.tolist():
            # (A sub-env's autoreset step reports no end: only ones that stepped ended.)
            ended_now = np.flatnonzero(ended).tolist()
            if idle:
                ended_now = [i for i in ended_now if i not in idle]
            self.resetting = []
            self._end_episodes(ended_now, row, terminateds, truncateds, self.draining)
        else:
            self.resetting = []
        if failing:
            self.idle = [i for i in self.idle if i not in failing]
        self.runner._obs = obs
        self.timesteps += stepped
        return stepped

    def _take_failures(self, infos: Any, ended: np.ndarray) -> list[int]:
        """The sub-env failures of the last step: in "async" mode, which children autoreset
        at the next step and which re-created their sub-env (`_restart_in_children`); in
        "sync" mode with per-sub-env restarts, the sub-envs that raised (`failed`, re-created
        by `recover`), which take no step of their episode: they idle in this step. Returns
        those it made idle."""
        if self.in_children:
            for record, child_autoresets in zip(self.records, ended.tolist(), strict=True):
                record.child_autoreset = child_autoresets
            if self.child_guarded:
                self._restart_in_children(take_child_failures(self.runner, infos))
        if not self.guarded:
            return []
        self.failed = failed_sub_envs(self.runner)
        failing = [i for i in self.failed if i not in self.idle]
        self.resetting = [i for i in self.resetting if i not in self.failed]
        self.idle = self.idle + failing
        return failing

    def _restart_in_children(self, recreated: set[int]) -> None:
        """ "async" mode: the sub-envs `recreated` in their child processes (they raised):
        this step was the new sub-env's reset. An episode under way is dropped (its steps
        counted as lost) and the next one starts with this step, as the per-step loop does;
        an idle sub-env stays idle."""
        starting = [i for i in recreated if i not in self.idle and i not in self.resetting]
        if starting:  # (their episodes are replaced in sub-env order: `_replace_episode`)
            self.recreating = set(starting)
            self.resetting = sorted(self.resetting + starting)

    def _replace_episode(self, i: int) -> None:
        """Sub-env `i` was re-created in its child process: its episode is dropped and its
        next one created (`on_episode_created`)."""
        record = self.records[i]
        self.timesteps -= drop_episode(self.runner, record)
        self.runner._create_episode(i)
        self.live[i] = record.episode
        self.carried[i] = None
        if self.pipeline is not None:
            self.episode_data[i] = data_of(self.live[i])
        self.recreating.discard(i)

    def recover(self) -> None:
        """Re-creates the sub-envs whose last step raised (`sub_env_recovery.recover_sub_envs`:
        their episodes are dropped, each new sub-env starts one, as the per-step loop does);
        their episodes start at the last row."""
        failed = self.failed
        if not failed:
            return
        runner, row = self.runner, self.columns.row
        # (their steps in this call are lost: the call samples on to its count without them)
        self.timesteps -= recover_sub_envs(runner)
        for i in failed:
            if i in self.idle:  # (its new episode is never stepped)
                continue
            self.live[i] = self.records[i].episode
            self.carried[i] = None
            self.first_row[i] = row
            self.returns[i] = 0.0
            if self.pipeline is not None:
                self.episode_data[i] = data_of(self.live[i])
        if self.pipeline_on_objects:
            self.policy_obs = runner._module_obs
        elif self.pipeline is not None:  # the pipeline's output for the new sub-envs' resets
            self.columns.observations[row, failed] = runner._module_obs[failed]
        self.failed = []

    def _step_by_rows(
        self,
        row: int,
        obs: Any,
        actions: np.ndarray,
        rewards: np.ndarray,
        terminateds: np.ndarray,
        truncateds: np.ndarray,
        logp: np.ndarray,
        dist_inputs: np.ndarray | None,
        infos: Any,
        state_rows: list | None,
        extras: dict[str, np.ndarray] | None,
    ) -> None:
        """The step's observations through the pipeline (if any) as a row; objects that get
        each step get it (the row's observation, before the events fire)."""
        stepping: list[int] = []
        if self.steps_objects:
            stepping = [
                i for i in range(self.num_envs) if i not in self.resetting and i not in self.idle
            ]
            rows = StepRows(
                obs, actions, rewards, terminateds, truncateds, logp, dist_inputs, infos,
                state_rows, extras,
            )  # fmt: skip
            for i in stepping:
                rows.append_to(self.live[i], i)
        if self.pipeline is None:
            self.policy_obs = obs
        else:
            self._filter(obs, terminateds, truncateds)
            self.policy_obs = self.columns.observations[row]
            for i in stepping:  # what the module sees, as the pipeline left it
                live_episode = self.live[i]
                assert live_episode is not None, RECORD_HAS_EPISODE
                live_episode.set_observations(new_data=self.policy_obs[i].copy(), at_indices=-1)
        # (After the pipeline's pass, as RLlib's: the events see what it wrote.)
        self._reset_objects(row)

    def _step_objects(self, row: int, rows: StepRows) -> None:
        """The step through the episode objects, as the per-step loop takes it: in sub-env
        order, an episode starting gets its reset and the pipeline's pass, one under way its
        step; then one pipeline pass over the episodes that stepped; then the start and step
        events in sub-env order (which see what the pipeline wrote, as RLlib's). The module's
        next input is what the pipeline left (`_to_module`)."""
        runner = self.runner
        stepping: list[int] = []
        stepped: list[SingleAgentEpisode] = []
        started: list[int] = []
        for i in range(len(self.records)):
            if i in self.idle:
                continue
            if i in self.recreating:
                self._replace_episode(i)
            episode = self.live[i]
            assert episode is not None, RECORD_HAS_EPISODE
            if i in self.resetting:
                episode.add_env_reset(rows.observations[i], rows.infos[i])
                runner._to_module([episode], [i])
                started.append(i)
                continue
            rows.append_to(episode, i)
            stepping.append(i)
            stepped.append(episode)
        if stepping:
            runner._to_module(stepped, stepping)
        self.policy_obs = runner._module_obs
        self._fire_start_and_step_events(started)

    def _start_episodes(self, row: int) -> None:
        """The sub-envs resetting in this step start their next episode at `row`."""
        self.returns[self.resetting] = 0.0
        now = time.perf_counter()
        new_ids = new_episode_ids(len(self.resetting))
        for i, new_id in zip(self.resetting, new_ids, strict=True):
            self.first_row[i] = row
            self.records[i].awaiting_reset = False
            episode = self.live[i]
            if episode is None:
                self.ids[i] = new_id
                self.start_times[i] = now
            elif self.live_views:  # its reset is the row
                assert isinstance(episode, LiveEpisode), RECORD_HAS_EPISODE
                episode.attach(self, i, self.columns.sub_env_infos(row, i))
                episode._start_time = episode._last_step_time = now
            if self.pipeline is not None:
                self.episode_data[i] = data_of(self.live[i])

    def _reset_objects(self, row: int) -> None:
        """The objects of the episodes starting in this step get their reset (the module's
        observation); the start and step events fire."""
        if not self.resetting and not self.fires_step:
            return
        if self.live_views:  # (attached to their rows at the start: `_start_episodes`)
            self._fire_start_and_step_events(self.resetting)
            return
        live = self.live
        if not (
            self.fires_step or self.recreating or any(live[i] is not None for i in self.resetting)
        ):
            return  # (no object gets a reset, no event fires)
        observations = unbatch(self.policy_obs, self.num_envs)
        started = []
        for i in self.resetting:  # (re-created sub-envs' episodes first, as the loop does)
            if i in self.recreating:
                self._replace_episode(i)
            episode = self.live[i]
            if episode is not None:
                episode.add_env_reset(observations[i], self.columns.sub_env_infos(row, i))
                started.append(i)
        self._fire_start_and_step_events(started)

    def _fire_start_and_step_events(self, started: list[int]) -> None:
        """The step's events after the pipeline's pass, in sub-env order as the per-step loop
        (and RLlib's EnvRunner) fires them: `on_episode_start` for the episodes `started` in
        this step, `on_episode_step` for those under way."""
        callbacks, records = self.runner._callbacks, self.records
        resetting, idle = self.resetting, self.idle
        if self.fires_step and not (self.fires_start and started):  # step events only
            if not resetting and not idle:  # (the common step)
                stepped = [record.event_kwargs for record in records]
            else:
                stepped = [
                    records[i].event_kwargs
                    for i in range(self.num_envs)
                    if i not in resetting and i not in idle
                ]
            callbacks.fire_each("on_episode_step", stepped)
            return
        fire_with = callbacks.fire_with
        for i in range(self.num_envs) if self.fires_step else started:
            if i in resetting:
                if self.fires_start and i in started:
                    fire_with("on_episode_start", records[i].event_kwargs)
            elif i not in idle:
                fire_with("on_episode_step", records[i].event_kwargs)

    def _end_episodes(
        self,
        ended_now: list[int],
        row: int,
        terminateds: np.ndarray,
        truncateds: np.ndarray,
        draining: bool,
    ) -> None:
        """The episodes of sub-envs `ended_now` ended with `row`: each goes into `episodes`
        (on_episode_end fired, its metrics noted) and its sub-env starts the next (or idles
        while `draining`)."""
        runner, records, live = self.runner, self.records, self.live
        terminated_list = terminateds.tolist()
        truncated_list = truncateds.tolist()
        return_list = self.returns.tolist()
        now = time.perf_counter()
        rows_of: ColumnRows | None
        for i in ended_now:
            record = records[i]
            episode = live[i]
            if self.steps_objects:  # its steps are in it already
                assert episode is not None, RECORD_HAS_EPISODE
                rows_of = None
                runner._finish_episode(record)
                episode.to_numpy()
            elif self.live_views:  # the object the callbacks had, now a view of its rows
                assert isinstance(episode, LiveEpisode), RECORD_HAS_EPISODE
                rows_of = None
                episode.freeze(
                    self.first_row[i],
                    row,
                    terminated=terminated_list[i],
                    truncated=truncated_list[i],
                    last_step_time=now,
                )
                self._finish_live(i, episode, return_list[i])
            elif episode is not None:
                rows_of = self.columns.fill(
                    episode, i, self.first_row[i], row, terminated_list[i], truncated_list[i]
                )
                runner._finish_episode(record)
            else:
                rows_of = None
                episode = self._finish_view(
                    i, row, now, terminated_list[i], truncated_list[i], return_list[i]
                )
            self.episodes.append(episode)
            self.where.append(rows_of)
            if draining:  # no next episode: the sub-env idles
                self.idle.append(i)
                record.idle = True
                live[i] = None
                continue
            if self.objects_at_start:
                runner._create_episode(i)
                live[i] = record.episode
            else:
                record.episode = live[i] = None
            record.awaiting_reset = True
            self.resetting.append(i)

    def _finish_live(self, i: int, episode: LiveEpisode, episode_return: float) -> None:
        """Sub-env `i`'s `LiveEpisode` ended (frozen): `EnvRunner._finish_episode`, with its
        running return (`rewards_written`) unless `on_episode_end` made its buffers (and may
        have set rewards in them)."""
        runner, record = self.runner, self.records[i]
        prev_chunks, record.prev_chunks = record.prev_chunks, []
        if self.fires_end:
            end_kwargs = {**record.event_kwargs, "prev_episode_chunks": prev_chunks}
            runner._callbacks.fire_with("on_episode_end", end_kwargs)
            if episode._rows is not None:
                episode_return = episode.get_return()
        episode_return, episode_len = with_earlier_chunks(episode_return, len(episode), prev_chunks)
        runner._note_ended(episode, episode_return, episode_len)

    def _finish_view(
        self,
        i: int,
        row: int,
        now: float,
        terminated: bool,
        truncated: bool,
        episode_return: float,
    ) -> SingleAgentEpisode:
        """Sub-env `i`'s episode without object ended: its view of the rows, with
        `on_episode_end` fired and its return, length and duration noted."""
        runner, record = self.runner, self.records[i]
        first = self.first_row[i]
        chunk = self.carried[i]
        episode = self._view_of_rows(
            i, first, row, chunk, now, terminated, truncated,
            self.episode_data[i] if self.episode_data else None,
        )  # fmt: skip
        prev_chunks = []
        # (The running return: the same float additions, in the same order, as the
        # episode's get_return().)
        if chunk is not None:
            self.carried[i] = None
            prev_chunks = record.prev_chunks
            record.prev_chunks = []
        episode_return, episode_len = with_earlier_chunks(episode_return, row - first, prev_chunks)
        if self.fires_end:
            end_kwargs = dict(self.base_kwargs[i])
            end_kwargs["episode"] = episode
            end_kwargs["prev_episode_chunks"] = prev_chunks
            runner._callbacks.fire_with("on_episode_end", end_kwargs)
        runner._ended_episodes.append((episode_return, episode_len, now - self.start_times[i]))
        if episode._old is not None:
            runner._log_old_episode_data(
                episode._old, runner.config.metrics_num_episodes_for_smoothing
            )
        return episode

    def _filter(self, obs: Any, terminateds: np.ndarray, truncateds: np.ndarray) -> None:
        """Writes the last row's observations: the env-to-module pipeline's output for the
        raw `obs`, the sub-envs whose episode starts with this step first, then the others
        (as the per-episode calls give them); an idle sub-env keeps its last row (the
        module's input stays what it was). A pipeline that filters rows takes the row in one
        call; any other reads one `LatestStepView` per sub-env."""
        assert self.pipeline is not None
        columns, resetting, idle = self.columns, self.resetting, self.idle
        order = None
        if resetting or idle:
            starting = set(resetting + idle)
            order = resetting + [i for i in range(self.num_envs) if i not in starting]
        if self.rows_by_piece:
            module_observations(self.pipeline, columns, obs, order, None, {})
        else:
            self._filter_views(obs, terminateds, truncateds, order)
        if idle:
            columns.observations[columns.row, idle] = columns.observations[columns.row - 1, idle]

    def _filter_views(
        self, obs: Any, terminateds: np.ndarray, truncateds: np.ndarray, order: list[int] | None
    ) -> None:
        """`_filter` through one `LatestStepView` per sub-env in `order`."""
        assert self.pipeline is not None
        runner, columns = self.runner, self.columns
        row = columns.row
        raw_rows = unbatch(obs, self.num_envs)
        terminated_list, truncated_list = terminateds.tolist(), truncateds.tolist()
        views = []
        for i in range(self.num_envs) if order is None else order:
            chunk = self.carried[i]
            known = self.live[i] if chunk is None else chunk
            if known is None:
                id_, t_started = self.ids[i], 0
            else:  # the chunk carried in continues at its end
                id_, t_started = known.id_, known.t_started if chunk is None else known.t
            connector_data, custom_data = self.episode_data[i]
            views.append(
                LatestStepView(
                    columns,
                    i,
                    self.first_row[i],
                    row,
                    raw_rows[i],
                    id_=id_,
                    t_started=t_started,
                    connector_data=connector_data,
                    custom_data=custom_data,
                    terminated=terminated_list[i],
                    truncated=truncated_list[i],
                )
            )
        call_kwargs = {
            "rl_module": runner.module,
            "explore": runner.pipeline_explore,
            "shared_data": {},
            "metrics": runner.metrics,
        }
        module_observations(self.pipeline, columns, obs, order, views, call_kwargs)

    def finish(self, *, num_episodes: int | None, cut: bool) -> list[SingleAgentEpisode]:
        """The call's episodes: the ended ones, then (`cut`) the running ones' chunks; without
        `cut` (a count of episodes, or complete episodes) the running ones are dropped."""
        runner, columns = self.runner, self.columns
        if self.pipeline is not None and not self.pipeline_on_objects:
            # (a copy: the per-step loop writes into it)
            runner._module_obs = columns.observations[columns.row].copy()
        extra = len(self.episodes) - num_episodes if num_episodes is not None else 0
        if extra > 0:
            # Episodes that ended in the step of the last one asked for (other sub-envs): not
            # returned, so not counted either (RLlib stops at the count within the step).
            ended = runner._ended_episodes
            del ended[max(0, len(ended) - extra) :]
        runner._log_sample_metrics(self.timesteps, len(self.episodes) - max(extra, 0))
        if num_episodes is not None or not cut:
            # The episodes still running are dropped; the next sample() starts fresh ones.
            runner._needs_reset = True
            for record in self.records:
                record.prev_chunks = []
            if num_episodes is not None:
                del self.episodes[num_episodes:], self.where[num_episodes:]
            return columns.episode_list(self.episodes, self.where)
        self._cut_chunks()
        if self.frames is not None:
            self._finish_frames()
        return columns.episode_list(self.episodes, self.where)

    def _cut_chunks(self) -> None:
        """Each unfinished episode's chunk so far goes out (into `episodes` / `where`) and the
        episode continues from it in the next call (its successor object is made when
        something reads it: `SubEnvRecord`). Objects that got each step are cut as the
        per-step loop cuts them (a recurrent module's chunk keeps the step before as its
        lookback: the state, previous action and reward its successor's first step starts
        from)."""
        runner, columns = self.runner, self.columns
        row = columns.row
        now = time.perf_counter()
        for i, record in enumerate(self.records):
            episode = self.live[i]
            first = self.first_row[i]
            if record.awaiting_reset:
                if episode is None:  # the next episode's object, which its reset starts
                    runner._create_episode(i)
                continue
            if first == row:  # no steps in this call
                if isinstance(episode, LiveEpisode) and self.live_views:
                    episode.detach_at_reset(columns.observations[row, i])
                    continue
                if episode is None and self.carried[i] is None:
                    # Started in this call's last step without an object: it gets one, with
                    # its reset, to continue from in the next call.
                    episode = SingleAgentEpisode(self.ids[i], env_index=i)
                    episode.add_env_reset(
                        columns.observations[row, i], columns.sub_env_infos(row, i)
                    )
                    episode._start_time = self.start_times[i]
                    if self.episode_data:
                        episode.connector_data, episode.custom_data = self.episode_data[i]
                    runner._create_episode(i, restored=episode)
                continue  # (one carried in stays carried)
            rows_of = None
            if episode is None:  # started in this call without an object, or carried in
                chunk = self.carried[i]
                episode = self._view_of_rows(
                    i, first, row, chunk, now, False, False,
                    self.episode_data[i] if self.episode_data else None,
                )  # fmt: skip
                if chunk is None:
                    record.start(episode, {})
            elif self.live_views:
                assert isinstance(episode, LiveEpisode), RECORD_HAS_EPISODE
                episode.freeze(first, row, terminated=False, truncated=False, last_step_time=now)
            elif self.steps_objects:  # its successor shares its data now
                successor = episode.cut(len_lookback_buffer=1 if runner._stateful else 0)
                record.episode = successor
                record.event_kwargs["episode"] = successor
                record.prev_chunks.append(episode.to_numpy())
                self.episodes.append(episode)
                self.where.append(None)
                continue
            else:
                rows_of = columns.fill(episode, i, first, row, False, False)
                episode._last_step_time = now
            record.carry(episode)
            self.episodes.append(episode)
            self.where.append(rows_of)

    def _view_of_rows(
        self,
        index: int,
        first: int,
        last: int,
        chunk: SingleAgentEpisode | None,
        end_time: float,
        terminated: bool,
        truncated: bool,
        data: tuple[dict, dict] | None = None,
    ) -> SingleAgentEpisode:
        """The episode (chunk) of sub-env `index`'s rows `first..last`: one started in this
        call, or the continuation of `chunk`, the one the last call returned. `data`: the
        (connector_data, custom_data) the env-to-module pieces kept for it."""
        columns = self.columns
        episode = columns.view(
            self.ids[index],
            index,
            first,
            last,
            first_info=columns.sub_env_infos(first, index) if chunk is None else chunk._last_info(),
            t_started=0 if chunk is None else chunk.t,
            start_time=self.start_times[index],
            end_time=end_time,
            terminated=terminated,
            truncated=truncated,
        )
        if chunk is None:
            episode._env_runner = self.runner
            if data is not None:
                episode.connector_data, episode.custom_data = data
        else:  # what cut() hands the successor: custom data, connector data, the old API's
            chunk._hand_over(episode, ended=True)
            episode._last_step_time = end_time
        return episode
