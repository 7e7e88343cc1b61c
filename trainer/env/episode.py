"""`SingleAgentEpisode`: one sub-env's trajectory (or a chunk of it), RLlib 2.60's class.

Layout as in RLlib: `observations` and `infos` hold `len(episode) + 1` items (the reset
observation first); `actions`, `rewards` and each `extra_model_outputs[key]` hold `len(episode)`.
Each column is an `InfiniteLookbackBuffer` whose first `lookback` items are history from earlier
chunks (see `trainer.env.lookback_buffer` for the indexing rules every getter and setter follows).
An episode that spans several `sample()` calls is returned in chunks that share `id_`; each chunk
starts (`t_started`) where the previous one stopped (`t`).

Beyond RLlib's class, an episode knows its sub-env (`env_index`) and carries what must follow it
from chunk to chunk within an EnvRunner: `custom_data` and the temporary timestep data (shared
with the successor by `cut()`, so callbacks see the whole episode's values in `on_episode_end`),
the env-to-module connectors' per-episode data, and the old API's per-episode dicts.
"""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from trainer.capabilities import OLD_API_STACK
from trainer.checkpoints.codec import is_plain_data
from trainer.compat.old_api import OldEpisodeAPI
from trainer.core.spaces import space_from_dict, space_takes, space_to_dict
from trainer.env.lookback_buffer import InfiniteLookbackBuffer, split_rows, structs_equal
from trainer.metrics import WEIGHTS_SEQ_NO  # the extra model output each step was sampled with
from trainer.util.rllib_members import refuse

#: The model outputs every EnvRunner step records (RLlib's Columns.ACTION_LOGP and
#: Columns.ACTION_DIST_INPUTS).
ACTION_LOGP = "action_logp"
ACTION_DIST_INPUTS = "action_dist_inputs"

#: The rewards column's space (RLlib's): one float per step.
REWARD_SPACE = gym.spaces.Box(float("-inf"), float("inf"), (), np.float32)


class _EpisodeIds:
    """Episode ids: 128 random bits from the OS as 32 hex digits each (as `uuid.uuid4().hex`),
    read 256 ids at a time. The ids read belong to the process that read them: a forked child
    drops them (`os.register_at_fork`) and reads its own."""

    _BATCH = 256

    def __init__(self) -> None:
        self._digits = ""
        self._next = self._BATCH  # nothing read yet
        os.register_at_fork(after_in_child=self._drop)

    def _drop(self) -> None:
        self._digits = ""
        self._next = self._BATCH

    def take(self, count: int) -> list[str]:
        if self._next + count > self._BATCH:
            self._digits = os.urandom(16 * max(self._BATCH, count)).hex()
            self._next = 0
        start = self._next
        self._next += count
        digits = self._digits
        return [digits[32 * i : 32 * i + 32] for i in range(start, start + count)]


_EPISODE_IDS = _EpisodeIds()


def new_episode_id() -> str:
    """A new episode id: 32 random hex digits, like `uuid.uuid4().hex`."""
    return _EPISODE_IDS.take(1)[0]


def new_episode_ids(count: int) -> list[str]:
    """`count` new episode ids (see `new_episode_id`)."""
    return _EPISODE_IDS.take(count)


@refuse(
    "ray.rllib.env.single_agent_episode.SingleAgentEpisode",
    OLD_API_STACK,
    "RLlib's old API stack's SampleBatch conversions; offline data here is written and read "
    "as episodes (trainer.offline)",
    "get_sample_batch",
    "get_data_dict",
)
class SingleAgentEpisode(OldEpisodeAPI):
    __slots__ = (
        "id_",
        "agent_id",
        "module_id",
        "multi_agent_episode_id",
        "observations",
        "actions",
        "rewards",
        "_infos",
        "extra_model_outputs",
        "is_terminated",
        "is_truncated",
        "t",
        "t_started",
        "_observation_space",
        "_action_space",
        "custom_data",
        "_temporary_timestep_data",
        "_start_time",
        "_last_step_time",
        "env_index",
        "_old",
        "_return_before",
        "_env_runner",
        "connector_data",
    )
    #: Slots that stay in their process (not pickled, not in `get_state`).
    _LOCAL_SLOTS = ("_env_runner",)
    #: The info dicts, or how many empty ones there are until `infos` is first read.
    _infos: InfiniteLookbackBuffer | int
    _observation_space: gym.Space | None
    _action_space: gym.Space | None

    def __init__(
        self,
        id_: str | None = None,
        *,
        observations: Any = None,
        observation_space: gym.Space | None = None,
        infos: Any = None,
        actions: Any = None,
        action_space: gym.Space | None = None,
        rewards: Any = None,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: dict[str, Any] | None = None,
        t_started: int | None = None,
        len_lookback_buffer: int | str = "auto",
        agent_id: Any = None,
        module_id: str | None = None,
        multi_agent_episode_id: str | None = None,
        env_index: int = 0,
    ):
        """An empty episode (to record into with `add_env_reset` / `add_env_step`) or one made
        from data: lists (or `InfiniteLookbackBuffer`s) of observations and infos (one more
        than steps), actions, rewards and extra model outputs. The first `len_lookback_buffer`
        items of each list are the lookback buffer ("auto", the default: all steps given,
        which leaves an episode of length 0 that can look back at them)."""
        self.id_ = id_ or new_episode_id()
        self.agent_id = agent_id
        self.module_id = module_id
        self.multi_agent_episode_id = multi_agent_episode_id
        if (
            observations is None
            and infos is None
            and actions is None
            and rewards is None
            and extra_model_outputs is None
        ):
            self._empty_columns(observation_space, action_space)
        else:
            self._columns_from_data(
                observations,
                infos,
                actions,
                rewards,
                extra_model_outputs,
                len_lookback_buffer,
                observation_space,
                action_space,
            )
        self.is_terminated = terminated
        self.is_truncated = truncated
        #: The env timestep this chunk started at (after its lookback buffer), and has reached.
        self.t_started = t_started or 0
        self.t = self.t_started + len(self.rewards)
        #: Free-form per-episode data for callbacks (kept across chunks of the same episode).
        self.custom_data: dict = {}
        self._temporary_timestep_data: dict[str, list] = {}
        self._start_time: float | None = None
        self._last_step_time: float | None = None
        self.env_index = env_index
        # The old API's user_data / custom_metrics / hist_data (made when first used) and the
        # return of the earlier chunks (for `total_reward`); see `trainer.compat.old_api`.
        self._old: dict[str, dict] | None = None
        self._return_before = 0.0
        # The EnvRunner sampling this episode (the old API's `episode.worker`).
        self._env_runner = None
        #: Per-episode data of env-to-module connector pieces (kept across chunks).
        self.connector_data: dict = {}
        if observations is not None:
            self.validate()

    @property
    def infos(self) -> InfiniteLookbackBuffer:
        """The info dicts, one per observation. An episode made from columns in which every
        info was empty keeps only their count until this is first read."""
        infos = self._infos
        if isinstance(infos, int):
            made = self._infos = InfiniteLookbackBuffer.of_list([{} for _ in range(infos)])
            return made
        return infos

    @infos.setter
    def infos(self, value: InfiniteLookbackBuffer) -> None:
        self._infos = value

    def nonempty_infos(self) -> list | None:
        """The info dicts, or None when all are empty (without making them)."""
        infos = self._infos
        if isinstance(infos, int):
            return None
        return infos.data if any(infos.data) else None

    @classmethod
    def _assembled(
        cls,
        id_: str,
        observations: np.ndarray,
        infos: list | int,
        actions: np.ndarray,
        rewards: np.ndarray,
        extra_model_outputs: dict[str, np.ndarray],
        *,
        t_started: int,
        t: int,
        env_index: int,
        terminated: bool,
        truncated: bool,
        custom_data: dict,
        temporary_timestep_data: dict,
        start_time: float | None,
        last_step_time: float | None,
    ) -> SingleAgentEpisode:
        """An episode of finalized columns, every slot set directly (no checks): for episodes
        rebuilt from a packed `EpisodeList`, hundreds per sample."""
        episode = cls.__new__(cls)
        _set_array_columns(episode, observations, actions, rewards, extra_model_outputs)
        episode._set_plain_slots(
            id_,
            infos,
            t_started=t_started,
            t=t,
            env_index=env_index,
            terminated=terminated,
            truncated=truncated,
            custom_data=custom_data,
            temporary_timestep_data=temporary_timestep_data,
            start_time=start_time,
            last_step_time=last_step_time,
        )
        return episode

    @classmethod
    def _recorded(
        cls,
        *,
        agent_id: Any,
        module_id: str | None,
        multi_agent_episode_id: str,
        observation_space: gym.Space | None,
        action_space: gym.Space | None,
        observations: list,
        infos: list,
        actions: list,
        rewards: list,
        extra_model_outputs: dict[str, list],
        start_time: float,
    ) -> SingleAgentEpisode:
        """A multi-agent episode's agent as its reset and steps record it (list columns, a
        step per action), made directly without checks: `MultiAgentEpisode.fill_columns`
        makes one per agent and episode."""
        episode = cls.__new__(cls)
        episode._set_plain_slots(
            new_episode_id(),
            infos,
            t_started=0,
            t=len(actions),
            env_index=0,
            terminated=False,
            truncated=False,
            custom_data={},
            temporary_timestep_data={},
            start_time=start_time,
            last_step_time=start_time,
        )
        episode.agent_id = agent_id
        episode.module_id = module_id
        episode.multi_agent_episode_id = multi_agent_episode_id
        episode.observations = InfiniteLookbackBuffer.of_list(observations)
        episode.actions = InfiniteLookbackBuffer.of_list(actions)
        rewards_buffer = episode.rewards = InfiniteLookbackBuffer.of_list(rewards)
        rewards_buffer._space = rewards_buffer.space_struct = REWARD_SPACE
        if observation_space is not None:
            episode.observation_space = observation_space
        if action_space is not None:
            episode.action_space = action_space
        episode.extra_model_outputs = {
            key: InfiniteLookbackBuffer.of_list(values)
            for key, values in extra_model_outputs.items()
        }
        return episode

    def _set_plain_slots(
        self,
        id_: str,
        infos: list | int,
        *,
        t_started: int,
        t: int,
        env_index: int,
        terminated: bool,
        truncated: bool,
        custom_data: dict,
        temporary_timestep_data: dict,
        start_time: float | None,
        last_step_time: float | None,
    ) -> None:
        """Every slot but the array columns, set directly (no checks), for an episode made
        with `__new__` from packed or step columns (`infos`: the dicts, or their count when
        all are empty)."""
        self.id_ = id_
        self.agent_id = self.module_id = self.multi_agent_episode_id = None
        self._infos = _infos_buffer(infos)
        self.is_terminated, self.is_truncated = terminated, truncated
        self.t_started, self.t = t_started, t
        self._observation_space = self._action_space = None
        self.custom_data = custom_data
        self._temporary_timestep_data = temporary_timestep_data
        self._start_time, self._last_step_time = start_time, last_step_time
        self.env_index = env_index
        self._old = None
        self._return_before = 0.0
        self._env_runner = None
        self.connector_data = {}

    def _empty_columns(
        self, observation_space: gym.Space | None, action_space: gym.Space | None
    ) -> None:
        """Columns without data, made directly (the EnvRunner makes them for every episode
        and chunk)."""
        self.observations = InfiniteLookbackBuffer.of_list([])
        self.infos = InfiniteLookbackBuffer.of_list([])
        self.actions = InfiniteLookbackBuffer.of_list([])
        self.rewards = InfiniteLookbackBuffer.of_list([])
        self.rewards._space = self.rewards.space_struct = REWARD_SPACE
        self._observation_space = None
        self._action_space = None
        if observation_space is not None:
            self.observation_space = observation_space
        if action_space is not None:
            self.action_space = action_space
        self.extra_model_outputs: dict[str, InfiniteLookbackBuffer] = {}

    def _columns_from_data(
        self,
        observations: Any,
        infos: Any,
        actions: Any,
        rewards: Any,
        extra_model_outputs: dict[str, Any] | None,
        len_lookback_buffer: int | str,
        observation_space: gym.Space | None,
        action_space: gym.Space | None,
    ) -> None:
        num_steps = len(rewards) if rewards is not None else 0
        if len_lookback_buffer == "auto" or (
            isinstance(len_lookback_buffer, int) and len_lookback_buffer > num_steps
        ):
            len_lookback_buffer = num_steps
        elif not isinstance(len_lookback_buffer, int) or len_lookback_buffer < 0:
            raise ValueError(
                f"SingleAgentEpisode(len_lookback_buffer={len_lookback_buffer!r}): "
                "must be 'auto' or an int >= 0"
            )
        lookback = len_lookback_buffer
        if infos is None:
            infos = [{} for _ in range(_size(observations))]
        self.observations = _buffer(observations, lookback, observation_space)
        self.infos = _buffer(infos, lookback)
        self.actions = _buffer(actions, lookback, action_space)
        self.rewards = _buffer(rewards, lookback, REWARD_SPACE)
        self._observation_space = observation_space
        self._action_space = action_space
        self.extra_model_outputs = {
            key: _buffer(values, lookback) for key, values in (extra_model_outputs or {}).items()
        }

    # -- spaces ------------------------------------------------------------------------------
    @property
    def observation_space(self) -> gym.Space | None:
        return self._observation_space

    @observation_space.setter
    def observation_space(self, value: gym.Space | None) -> None:
        self._observation_space = self.observations.space = value

    @property
    def action_space(self) -> gym.Space | None:
        return self._action_space

    @action_space.setter
    def action_space(self, value: gym.Space | None) -> None:
        self._action_space = self.actions.space = value

    # -- recording ---------------------------------------------------------------------------
    def add_env_reset(self, observation: Any, infos: dict | None = None) -> None:
        """Logs the reset observation (and infos); the episode starts here."""
        assert not self.is_reset, "add_env_reset() on an episode that already has observations"
        assert not self.is_done, "add_env_reset() on a finished episode"
        self._check_space(self._observation_space, observation, "observation")
        self.observations.append(observation)
        self.infos.append(infos or {})
        self._start_time = self._last_step_time = time.perf_counter()

    def add_env_step(
        self,
        observation: Any,
        action: Any,
        reward: float,
        infos: dict | None = None,
        *,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: dict | None = None,
    ) -> None:
        """Logs one env step: the action taken and what the env returned for it."""
        assert not (self.is_terminated or self.is_truncated), "add_env_step() on a finished episode"
        if self.observations.finalized and (
            self._observation_space is not None or self._action_space is not None
        ):
            # As RLlib: a step added to a numpy'ized episode is checked against the spaces; the
            # sampling loop's steps are not (a check per agent step cost a multi-agent runner
            # a fifth of its time).
            self._check_space(self._observation_space, observation, "observation")
            self._check_space(self._action_space, action, "action")
        # Straight into the buffers' lists while recording (the EnvRunner's hot path).
        if self.observations.finalized or self.infos.finalized:
            self.observations.append(observation)
            self.actions.append(action)
            self.rewards.append(reward)
            self.infos.append(infos or {})
        else:
            self.observations.data.append(observation)
            self.actions.data.append(action)
            self.rewards.data.append(reward)
            self.infos.data.append(infos or {})
        self.t += 1
        if extra_model_outputs:
            outputs = self.extra_model_outputs
            for key, value in extra_model_outputs.items():
                buffer = outputs.get(key)
                if buffer is None:
                    outputs[key] = InfiniteLookbackBuffer.of_list([value])
                elif buffer.finalized:
                    buffer.append(value)
                else:
                    buffer.data.append(value)
        if terminated or truncated:
            self._end(terminated, truncated)

    def _end(self, terminated: bool, truncated: bool) -> None:
        self.is_terminated = terminated
        self.is_truncated = truncated
        # The clock is read once at the end (and at cut()), not on every step.
        self._last_step_time = time.perf_counter()
        if self._start_time is None:
            self._start_time = self._last_step_time

    def record_sampled_step(
        self,
        observation: Any,
        action: Any,
        reward: float,
        infos: dict,
        terminated: bool,
        truncated: bool,
        action_logp: float,
        action_dist_inputs: Any,
    ) -> None:
        """`add_env_step` for the EnvRunner's sampling loop: the same record, with the action
        draw's two model outputs given directly (no dict per step) and `infos` stored as given
        (the runner passes a fresh dict per step). Whenever this episode is not a plain
        recording one (finalized columns, whose steps are checked against the spaces; its
        first step; other model outputs), the general `add_env_step` records it."""
        outputs = self.extra_model_outputs
        logp_buffer = outputs.get(ACTION_LOGP)
        dist_buffer = outputs.get(ACTION_DIST_INPUTS)
        observations = self.observations
        if (
            logp_buffer is None
            or logp_buffer.finalized
            or observations.finalized
            or len(outputs) != (1 if dist_buffer is None else 2)
            or (dist_buffer is None) != (action_dist_inputs is None)
            or self.infos.finalized
        ):
            extra = {ACTION_LOGP: action_logp}
            if action_dist_inputs is not None:
                extra[ACTION_DIST_INPUTS] = action_dist_inputs
            self.add_env_step(
                observation,
                action,
                reward,
                infos,
                terminated=terminated,
                truncated=truncated,
                extra_model_outputs=extra,
            )
            return
        assert not (self.is_terminated or self.is_truncated), "add_env_step() on a finished episode"
        observations.data.append(observation)
        self.actions.data.append(action)
        self.rewards.data.append(reward)
        self.infos.data.append(infos)
        self.t += 1
        logp_buffer.data.append(action_logp)
        if dist_buffer is not None:
            dist_buffer.data.append(action_dist_inputs)
        if terminated or truncated:
            self._end(terminated, truncated)

    def records_plainly(self) -> bool:
        """Whether `record_sampled_step` records this episode's next step on its fast path
        (plain lists, the action draw's two model outputs) or would once the first step made
        them (no model outputs yet): what `extend_sampled_steps` appends to."""
        outputs = self.extra_model_outputs
        if self.observations.finalized or self.infos.finalized or self.actions.finalized:
            return False
        if not outputs:
            return True
        logp_buffer, dist_buffer = outputs.get(ACTION_LOGP), outputs.get(ACTION_DIST_INPUTS)
        return (
            len(outputs) == 2
            and logp_buffer is not None
            and dist_buffer is not None
            and not logp_buffer.finalized
            and not dist_buffer.finalized
        )

    def extend_sampled_steps(
        self,
        observations: list,
        actions: list,
        rewards: list,
        infos: list,
        action_logps: list,
        action_dist_inputs: list,
    ) -> None:
        """`record_sampled_step` for several steps at once (one item per step in each list;
        the episode `records_plainly` and is not done): the lists are appended to the
        buffers. The caller sets the episode's end."""
        self.observations.data.extend(observations)
        self.actions.data.extend(actions)
        self.rewards.data.extend(rewards)
        self.infos.data.extend(infos)
        self.t += len(actions)
        outputs = self.extra_model_outputs
        if outputs:
            outputs[ACTION_LOGP].data.extend(action_logps)
            outputs[ACTION_DIST_INPUTS].data.extend(action_dist_inputs)
        else:
            outputs[ACTION_LOGP] = InfiniteLookbackBuffer.of_list(action_logps)
            outputs[ACTION_DIST_INPUTS] = InfiniteLookbackBuffer.of_list(action_dist_inputs)

    def fill_columns(
        self,
        observations: np.ndarray,
        step_infos: list[dict] | None,
        actions: np.ndarray,
        rewards: np.ndarray,
        extra_model_outputs: dict[str, np.ndarray],
        *,
        terminated: bool,
        truncated: bool,
    ) -> SingleAgentEpisode:
        """The EnvRunner's columnar sampling: sets this chunk's steps at once, numpy'ized, as
        `record_sampled_step` per step and then `to_numpy()` would leave them. The chunk has
        its first observation and info (from `add_env_reset` or `cut()`) and no steps;
        `observations` repeats that first observation, `step_infos` holds one info per step
        (None: all empty)."""
        assert self.t == self.t_started and len(self.observations.data) == 1, (
            "fill_columns() on a chunk with steps"
        )
        self._infos = _infos_buffer(chunk_infos(self.infos.data[0], step_infos, len(observations)))
        _set_array_columns(self, observations, actions, rewards, extra_model_outputs)
        self.t = self.t_started + len(rewards)
        self._last_step_time = time.perf_counter()
        if terminated or truncated:
            self.is_terminated, self.is_truncated = terminated, truncated
        return self

    @staticmethod
    def _check_space(space: gym.Space | None, value: Any, what: str) -> None:
        if space is not None and not space_takes(space, value):
            raise ValueError(
                f"SingleAgentEpisode: {what} {value!r} is not in the episode's {what} space {space}"
            )

    def validate(self) -> None:
        """Asserts that the columns fit together: one more observation (and info) than
        actions, rewards and each extra model output."""
        num_obs = len(self.observations)
        assert num_obs == len(self.infos), (
            f"episode {self.id_}: {num_obs} observations but {len(self.infos)} infos"
        )
        expected = max(num_obs - 1, 0)
        assert len(self.actions) == len(self.rewards) == expected, (
            f"episode {self.id_}: {num_obs} observations need {expected} actions and rewards, "
            f"got {len(self.actions)} and {len(self.rewards)}"
        )
        for key, values in self.extra_model_outputs.items():
            assert len(values) == expected, (
                f"episode {self.id_}: extra model output {key!r} has {len(values)} items, "
                f"expected {expected}"
            )

    # -- chunks ------------------------------------------------------------------------------
    def cut(self, len_lookback_buffer: int = 0) -> SingleAgentEpisode:
        """The successor chunk of this ongoing episode: same `id_`, starting (`t_started`) at
        this chunk's `t` with its last observation and info, and the last
        `len_lookback_buffer` steps as its lookback buffer. `custom_data` and the temporary
        timestep data are shared with the successor."""
        return self._cut(len_lookback_buffer)

    def _cut(self, len_lookback_buffer: int = 0, *, ended: bool = False) -> SingleAgentEpisode:
        """`cut()`; with `ended`, the chunk keeps its last step time (its sampling call
        stamped it when it ended) instead of being stamped now."""
        assert not self.is_done, "cut() on a finished episode"
        assert len_lookback_buffer >= 0, f"cut(len_lookback_buffer={len_lookback_buffer})"
        if len_lookback_buffer == 0:  # the EnvRunner's case: no history to copy
            successor = SingleAgentEpisode(
                self.id_,
                observation_space=self._observation_space,
                action_space=self._action_space,
                t_started=self.t,
                env_index=self.env_index,
            )
            successor.observations.data.append(self.observations.get(-1))
            successor.infos.data.append(self.infos.get(-1))
            for key in self.extra_model_outputs:
                successor.extra_model_outputs[key] = InfiniteLookbackBuffer.of_list([])
        else:
            steps = slice(-len_lookback_buffer, None)
            successor = SingleAgentEpisode(
                self.id_,
                observations=_as_list(self.get_observations(slice(-len_lookback_buffer - 1, None))),
                infos=_as_list(self.get_infos(slice(-len_lookback_buffer - 1, None))),
                actions=_as_list(self.get_actions(steps)),
                rewards=_as_list(self.get_rewards(steps)),
                extra_model_outputs={
                    key: _as_list(self.get_extra_model_outputs(key, steps))
                    for key in self.extra_model_outputs
                },
                observation_space=self._observation_space,
                action_space=self._action_space,
                t_started=self.t,
                len_lookback_buffer="auto",
                env_index=self.env_index,
            )
        self._hand_over(successor, ended=ended)
        return successor

    def _last_info(self) -> dict:
        """The last info dict, without making the empty ones a count stands for."""
        infos = self._infos
        return {} if isinstance(infos, int) else infos.data[-1]

    def _hand_over(self, successor: SingleAgentEpisode, *, ended: bool = False) -> None:
        """What `cut()`'s successor shares with or takes from this chunk besides data. The
        chunk's last step time is now, unless it `ended` already (stamped when its sampling
        call did)."""
        successor.agent_id, successor.module_id = self.agent_id, self.module_id
        successor.multi_agent_episode_id = self.multi_agent_episode_id
        successor.custom_data = self.custom_data
        successor._temporary_timestep_data = self._temporary_timestep_data
        successor._old = self._old
        try:  # for the old API's `total_reward` (rewards need not be numbers here)
            successor._return_before = self._return_before + self.get_return()
        except TypeError:
            successor._return_before = self._return_before
        successor._env_runner = self._env_runner
        successor.connector_data = self.connector_data
        if not ended:
            self._last_step_time = time.perf_counter()
        successor._start_time = self._start_time
        successor._last_step_time = self._last_step_time

    def slice(self, slice_: slice, *, len_lookback_buffer: int | None = None) -> SingleAgentEpisode:
        """A new episode holding the steps `slice_` selects (indices as for lists, clipped to
        the episode), with a lookback buffer of `len_lookback_buffer` steps (default: this
        episode's), as far as the data reaches back. `episode[a:b]` is the same."""
        if slice_.step not in (None, 1):
            raise ValueError(f"SingleAgentEpisode.slice({slice_}): only step 1 is supported")
        length = len(self)
        start, stop, _ = slice_.indices(length)
        stop = max(stop, start)
        keep_done = stop == length

        def column(buffer: InfiniteLookbackBuffer, extra: int) -> InfiniteLookbackBuffer:
            lookback = buffer.lookback if len_lookback_buffer is None else len_lookback_buffer
            # The lookback reaches at most to the start of the data.
            lookback = min(lookback, buffer.lookback + start)
            data = buffer.get(slice(start - lookback, stop + extra), neg_index_as_lookback=True)
            return InfiniteLookbackBuffer(data, lookback, buffer.space)

        episode = SingleAgentEpisode(
            self.id_,
            observations=column(self.observations, 1),
            observation_space=self._observation_space,
            infos=column(self.infos, 1),
            actions=column(self.actions, 0),
            action_space=self._action_space,
            rewards=column(self.rewards, 0),
            extra_model_outputs={
                key: column(values, 0) for key, values in self.extra_model_outputs.items()
            },
            terminated=self.is_terminated if keep_done else False,
            truncated=self.is_truncated if keep_done else False,
            t_started=self.t_started + start,
            agent_id=self.agent_id,
            module_id=self.module_id,
            multi_agent_episode_id=self.multi_agent_episode_id,
            env_index=self.env_index,
        )
        return episode

    def __getitem__(self, item: builtins.slice) -> SingleAgentEpisode:
        if isinstance(item, slice):
            return self.slice(item)
        raise TypeError(
            f"SingleAgentEpisode[{item!r}]: only slices (episode[a:b]) are "
            "supported; use get_observations(i) and the other getters for items"
        )

    def concat_episode(self, other: SingleAgentEpisode) -> None:
        """Appends `other`, this episode's successor chunk, in place: same `id_`, `other`
        starting where this one stops, whose first observation is this one's last."""
        assert other.id_ == self.id_, f"concat_episode(): ids differ ({self.id_} vs {other.id_})"
        assert not self.is_done, "concat_episode() onto a finished episode"
        assert self.t == other.t_started, (
            f"concat_episode(): this chunk ends at t={self.t}, the other starts at "
            f"t_started={other.t_started}"
        )
        other.validate()
        assert structs_equal(other.get_observations(0), self.get_observations(-1)), (
            "concat_episode(): the other chunk's first observation is not this one's last"
        )
        # The shared observation and info are kept once: the other chunk's.
        self.observations.pop()
        self.infos.pop()
        self.observations.extend(other.get_observations())
        self.actions.extend(other.get_actions())
        self.rewards.extend(other.get_rewards())
        self.infos.extend(other.get_infos())
        self.t = other.t
        if other.is_terminated:
            self.is_terminated = True
        elif other.is_truncated:
            self.is_truncated = True
        # (`weights_seq_no` goes only to finished chunks: an unfinished one lacks it)
        if WEIGHTS_SEQ_NO in self.extra_model_outputs and WEIGHTS_SEQ_NO not in (
            other.extra_model_outputs
        ):
            del self.extra_model_outputs[WEIGHTS_SEQ_NO]
        for key in other.extra_model_outputs:
            if key == WEIGHTS_SEQ_NO and key not in self.extra_model_outputs:
                continue
            assert key in self.extra_model_outputs, (
                f"concat_episode(): extra model output {key!r} is not in this episode"
            )
            self.extra_model_outputs[key].extend(other.get_extra_model_outputs(key))
        if other.custom_data is not self.custom_data:
            self.custom_data.update(other.custom_data)
        self._last_step_time = other._last_step_time
        self.validate()

    # -- reading -----------------------------------------------------------------------------
    def __len__(self) -> int:
        """Steps in this chunk (its lookback buffer not counted)."""
        return self.t - self.t_started

    def len(self) -> int:
        return self.t - self.t_started

    def env_steps(self) -> int:
        return self.t - self.t_started

    def agent_steps(self) -> int:
        return self.t - self.t_started

    @property
    def is_reset(self) -> bool:
        """Whether the reset observation was added."""
        return self.observations.len_incl_lookback() > 0

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    @property
    def is_numpy(self) -> bool:
        return self.observations.finalized

    @property
    def is_finalized(self) -> bool:
        """RLlib's older name of `is_numpy`."""
        return self.observations.finalized

    def get_return(self) -> float:
        """Sum of this chunk's rewards."""
        rewards = self.rewards
        data = rewards.data
        if not rewards.lookback:
            # Added as Python floats, left to right, however the rewards are stored.
            return float(sum(data.tolist() if type(data) is np.ndarray else data))
        return float(sum(np.asarray(rewards.get()).tolist())) if len(rewards) else 0.0

    def get_duration_s(self) -> float:
        """Wall seconds from the reset to the final step (to now while the episode runs)."""
        if self._start_time is None:
            return 0.0
        if (self.is_done or self.is_numpy) and self._last_step_time is not None:
            return self._last_step_time - self._start_time
        return time.perf_counter() - self._start_time

    def _old_dicts(self) -> dict[str, dict]:
        if self._old is None:
            self._old = {"user_data": {}, "custom_metrics": {}, "hist_data": {}}
        return self._old

    def get_observations(
        self,
        indices: Any = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        """Observation(s) at `indices`: an int gives one item; a list or slice a list (an
        array once numpy'ized); None all of this chunk's. See `trainer.env.lookback_buffer`."""
        return self.observations.get(
            indices,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
        )

    def get_infos(
        self, indices: Any = None, *, neg_index_as_lookback: bool = False, fill: Any = None
    ) -> Any:
        return self.infos.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_actions(
        self,
        indices: Any = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        return self.actions.get(
            indices,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
        )

    def get_rewards(
        self, indices: Any = None, *, neg_index_as_lookback: bool = False, fill: float | None = None
    ) -> Any:
        return self.rewards.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_extra_model_outputs(
        self,
        key: str,
        indices: Any = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
    ) -> Any:
        try:
            buffer = self.extra_model_outputs[key]
        except KeyError:
            raise KeyError(
                f"episode {self.id_}: no extra model output {key!r}; keys: "
                f"{sorted(self.extra_model_outputs)}"
            ) from None
        return buffer.get(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    # -- writing -----------------------------------------------------------------------------
    def set_observations(
        self, *, new_data: Any, at_indices: Any = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites observations: the one at an int index (-1: the latest), those of a list
        or slice, or all of this chunk's (`at_indices=None`). Env-to-module connectors write
        what the module sees this way. The number of observations never changes."""
        self.observations.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_actions(
        self, *, new_data: Any, at_indices: Any = None, neg_index_as_lookback: bool = False
    ) -> None:
        self.actions.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_rewards(
        self, *, new_data: Any, at_indices: Any = None, neg_index_as_lookback: bool = False
    ) -> None:
        self.rewards.set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    def set_extra_model_outputs(
        self,
        *,
        key: str,
        new_data: Any,
        at_indices: Any = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        assert key in self.extra_model_outputs, (
            f"set_extra_model_outputs(key={key!r}): no such key; keys: "
            f"{sorted(self.extra_model_outputs)}"
        )
        self.extra_model_outputs[key].set(
            new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )

    # -- temporary per-timestep data (dropped before the episode leaves the EnvRunner) --------
    def add_temporary_timestep_data(self, key: str, data: Any) -> None:
        """Stores a value for the current timestep under `key`, for callbacks to read back later
        in the same episode (`get_temporary_timestep_data`). Not sent to the learner."""
        if self.is_numpy:
            raise ValueError(
                "add_temporary_timestep_data() on a numpy'ized episode (its data "
                "left the EnvRunner)"
            )
        self._temporary_timestep_data.setdefault(key, []).append(data)

    def get_temporary_timestep_data(self, key: str) -> list:
        """Every value stored under `key` in this episode, in step order."""
        try:
            return self._temporary_timestep_data[key]
        except KeyError:
            raise KeyError(
                f"episode {self.id_}: no temporary timestep data under {key!r}; keys: "
                f"{sorted(self._temporary_timestep_data)}"
            ) from None

    def drop_temporary_timestep_data(self) -> None:
        self._temporary_timestep_data = {}

    # -- conversion --------------------------------------------------------------------------
    def to_numpy(self) -> SingleAgentEpisode:
        """Turns the columns into numpy arrays (in place; infos stay lists, as in RLlib) and
        returns the episode."""
        self.observations.finalize()
        if self.t != self.t_started:
            for column in (self.actions, self.rewards, *self.extra_model_outputs.values()):
                column.finalize()
        return self

    def finalize(self) -> SingleAgentEpisode:
        """RLlib's older name of `to_numpy()`."""
        return self.to_numpy()

    # -- state (checkpoints) -----------------------------------------------------------------
    def get_state(self) -> dict:
        """The episode as plain data for msgpack: columns as arrays where they stack. Infos,
        `custom_data` and temporary timestep data that are not plain data are left out."""
        return {
            "id_": self.id_,
            "agent_id": self.agent_id,
            "module_id": self.module_id,
            "multi_agent_episode_id": self.multi_agent_episode_id,
            "observation_space": _space_state(self._observation_space),
            "action_space": _space_state(self._action_space),
            "t_started": self.t_started,
            "t": self.t,
            "env_index": self.env_index,
            "observations": _column_state(self.observations),
            "actions": _column_state(self.actions),
            "rewards": _column_state(self.rewards),
            "infos": {
                "data": [
                    dict(info) if isinstance(info, dict) and is_plain_data(info) else {}
                    for info in self.infos.data
                ],
                "lookback": self.infos.lookback,
            },
            "extra_model_outputs": {
                k: _column_state(v) for k, v in self.extra_model_outputs.items()
            },
            "is_terminated": self.is_terminated,
            "is_truncated": self.is_truncated,
            "start_time": self._start_time,
            "last_step_time": self._last_step_time,
            "custom_data": self.custom_data if is_plain_data(self.custom_data) else {},
            "temporary_timestep_data": (
                self._temporary_timestep_data
                if is_plain_data(self._temporary_timestep_data)
                else {}
            ),
            "old_api": self._old if is_plain_data(self._old) else None,
            "return_before": self._return_before,
            "connector_data": self.connector_data,
        }

    @classmethod
    def from_state(cls, state: dict) -> SingleAgentEpisode:
        """The episode `get_state()` described."""
        episode = cls(
            state["id_"],
            t_started=state["t_started"],
            env_index=state["env_index"],
            agent_id=state.get("agent_id"),
            module_id=state.get("module_id"),
            multi_agent_episode_id=state.get("multi_agent_episode_id"),
        )
        episode.observations = _column_from_state(state["observations"], keep_scalars=True)
        episode.actions = _column_from_state(state["actions"])
        episode.rewards = _column_from_state(state["rewards"])
        episode.rewards.space = REWARD_SPACE
        episode.infos = InfiniteLookbackBuffer(
            list(state["infos"]["data"]), state["infos"]["lookback"]
        )
        episode.extra_model_outputs = {
            k: _column_from_state(v) for k, v in state["extra_model_outputs"].items()
        }
        episode.observation_space = space_from_dict(state["observation_space"])
        episode.action_space = space_from_dict(state["action_space"])
        episode.t = state["t"]
        episode.is_terminated = state["is_terminated"]
        episode.is_truncated = state["is_truncated"]
        episode._start_time = state["start_time"]
        episode._last_step_time = state["last_step_time"]
        episode.custom_data = state["custom_data"]
        episode._temporary_timestep_data = state["temporary_timestep_data"]
        episode._old = state.get("old_api")
        episode._return_before = state.get("return_before", 0.0)
        episode.connector_data = dict(state.get("connector_data") or {})
        episode.validate()
        return episode

    def __getstate__(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in SingleAgentEpisode.__slots__
            if name not in self._LOCAL_SLOTS
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._env_runner = None
        for name, value in state.items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        status = (
            "terminated" if self.is_terminated else "truncated" if self.is_truncated else "ongoing"
        )
        return (
            f"SingleAgentEpisode(id_={self.id_[:8]}, t_started={self.t_started}, "
            f"len={len(self)}, return={self.get_return():.2f}, {status})"
        )


def _size(data: Any) -> int:
    if data is None:
        return 0
    if isinstance(data, InfiniteLookbackBuffer):
        return data.len_incl_lookback()
    return len(data)


def _buffer(data: Any, lookback: int, space: gym.Space | None = None) -> InfiniteLookbackBuffer:
    if isinstance(data, InfiniteLookbackBuffer):
        if space is not None and data.space is None:
            data.space = space
        return data
    if data is not None and not isinstance(data, (list, np.ndarray, dict, tuple)):
        data = list(data)
    return InfiniteLookbackBuffer(data, lookback, space)


def _as_list(data: Any) -> list:
    """Getter output (a list, or an array or struct of arrays once numpy'ized) as a list of
    items for a new, recording episode."""
    return data if isinstance(data, list) else split_rows(data)


def _space_state(space: gym.Space | None) -> dict | None:
    try:
        return space_to_dict(space)
    except TypeError:
        return None  # a space without a plain-data form is left out of the state


def _column(values: Sequence) -> Any:
    """A recorded column as one array where its entries stack into numbers, else as is."""
    if isinstance(values, np.ndarray):
        return values
    if not len(values):
        return []
    try:
        array = np.asarray(values)
    except ValueError:
        return list(values)
    return array if array.dtype.kind in "biufc" else list(values)


def _column_state(buffer: InfiniteLookbackBuffer) -> dict:
    return {
        "data": _column(buffer.data) if not isinstance(buffer.data, (dict, tuple)) else buffer.data,
        "lookback": buffer.lookback,
        "finalized": buffer.finalized,
    }


def _column_from_state(state: dict, *, keep_scalars: bool = False) -> InfiniteLookbackBuffer:
    """A column back as the buffer it was: an array when it was finalized, else the list the
    episode records into (Python scalars for 1-d columns, as the EnvRunner appends them;
    numpy rows or scalars otherwise)."""
    data = state["data"]
    if state["finalized"]:
        data = np.asarray(data) if isinstance(data, list) else data
    elif isinstance(data, np.ndarray):
        data = list(data) if data.ndim > 1 or keep_scalars else data.tolist()
    else:
        data = list(data)
    return InfiniteLookbackBuffer(data, state["lookback"])


def chunk_infos(first_info: dict, step_infos: list[dict] | None, num_obs: int) -> list | int:
    """A chunk's info dicts from its first one and its steps' (None: all empty), or their
    count when every one is empty (made when first read: see `SingleAgentEpisode.infos`)."""
    if step_infos is None and not first_info:
        return num_obs
    return [first_info, *(step_infos or ({} for _ in range(num_obs - 1)))]


def _infos_buffer(infos: list | int) -> InfiniteLookbackBuffer | int:
    """The `_infos` slot's value for `chunk_infos`' result (a count stays a count)."""
    return infos if isinstance(infos, int) else InfiniteLookbackBuffer.of_list(infos)


def _set_array_columns(
    episode: SingleAgentEpisode,
    observations: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    extra_model_outputs: dict[str, np.ndarray],
) -> None:
    """Sets an episode's four array columns as finalized buffers around the given arrays,
    through the base class's own slots (an `EpisodeView`'s properties would make its rows)."""
    _OBSERVATIONS.__set__(episode, InfiniteLookbackBuffer.of_array(observations))
    _ACTIONS.__set__(episode, InfiniteLookbackBuffer.of_array(actions))
    rewards_buffer = InfiniteLookbackBuffer.of_array(rewards)
    rewards_buffer._space = rewards_buffer.space_struct = REWARD_SPACE
    _REWARDS.__set__(episode, rewards_buffer)
    _EXTRA_MODEL_OUTPUTS.__set__(
        episode,
        {
            key: InfiniteLookbackBuffer.of_array(values)
            for key, values in extra_model_outputs.items()
        },
    )


def _as_items(rows: np.ndarray) -> list:
    """A column's rows as the per-step loop records them: Python scalars, or (copied) rows."""
    return rows.tolist() if rows.ndim == 1 else list(rows.copy())


class ColumnSource(Protocol):
    """Step columns an `EpisodeView` reads its rows from (`trainer.runners.step_columns`)."""

    def episode_rows(self, index: int, first: int, last: int) -> Any: ...

    def return_of(self, index: int, first: int, last: int) -> float: ...

    def observation(self, index: int, row: int) -> Any: ...

    def extra_model_output_keys(self) -> list[str]: ...


#: The slots an `EpisodeView` fills when first read (the base class's own descriptors).
_OBSERVATIONS = SingleAgentEpisode.__dict__["observations"]
_ACTIONS = SingleAgentEpisode.__dict__["actions"]
_REWARDS = SingleAgentEpisode.__dict__["rewards"]
_EXTRA_MODEL_OUTPUTS = SingleAgentEpisode.__dict__["extra_model_outputs"]


def add_weights_seq_no(
    episode: SingleAgentEpisode, seq_no: int, *, own_slots: bool = False
) -> None:
    """Gives `episode` (a sampled chunk) RLlib's per-step extra model output
    `weights_seq_no`, `seq_no` at every step (lookback included), unless it has one.
    `own_slots`: read the base class's slots (an `EpisodeView` making its buffers)."""
    if own_slots:
        outputs, actions = _EXTRA_MODEL_OUTPUTS.__get__(episode), _ACTIONS.__get__(episode)
    else:
        outputs, actions = episode.extra_model_outputs, episode.actions
    if WEIGHTS_SEQ_NO in outputs:
        return
    values = np.full(actions.len_incl_lookback(), seq_no, np.int64)
    outputs[WEIGHTS_SEQ_NO] = InfiniteLookbackBuffer(
        values if actions.finalized else values.tolist(), lookback=actions.lookback
    )


def _made_on_read(slot: Any) -> Any:
    """An `EpisodeView` property for the base class's `slot`: the buffers are made (from the
    rows) before it is read or set."""

    def read(episode: EpisodeView) -> Any:
        episode.rows()
        return slot.__get__(episode)

    def write(episode: EpisodeView, value: Any) -> None:
        episode.rows()
        slot.__set__(episode, value)

    return property(read, write, doc=f"`SingleAgentEpisode.{slot.__name__}`, made when read.")


class EpisodeView(SingleAgentEpisode):
    """A `SingleAgentEpisode` of rows `first..last` of sub-env `index` in an EnvRunner's step
    columns, numpy'ized, whose column buffers (observations, actions, rewards, extra model
    outputs) are made the first time any of them is read or set: an `on_episode_end` callback
    that reads the length, the return or `custom_data`, or a receiver that counts steps, costs
    no buffers. Everything else is a `SingleAgentEpisode`'s; pickled, it is one."""

    __slots__ = ("_source", "_rows", "_weights_seq_no")
    #: (source, column index, first row, last row).
    _source: tuple[ColumnSource, int, int, int]
    #: The weights sequence number its buffers get when made (`record_weights_seq_no`).
    _weights_seq_no: int | None
    #: The rows' views once the buffers are made (`rows()`), else None.
    _rows: Any

    def __init__(self) -> None:  # made by `of_rows` only
        raise TypeError("EpisodeView.of_rows() makes episode views")

    @classmethod
    def of_rows(
        cls,
        source: ColumnSource,
        id_: str,
        index: int,
        first: int,
        last: int,
        *,
        infos: list | int,
        t_started: int,
        env_index: int,
        terminated: bool,
        truncated: bool,
        custom_data: dict,
        temporary_timestep_data: dict,
        start_time: float | None,
        last_step_time: float | None,
    ) -> EpisodeView:
        """A view of rows `first..last` of `source`'s column `index` (`infos`: the info dicts,
        or their count when all are empty)."""
        episode = cls.__new__(cls)
        episode._source = (source, index, first, last)
        episode._rows = None
        episode._weights_seq_no = None
        episode._set_plain_slots(
            id_,
            infos,
            t_started=t_started,
            t=t_started + last - first,
            env_index=env_index,
            terminated=terminated,
            truncated=truncated,
            custom_data=custom_data,
            temporary_timestep_data=temporary_timestep_data,
            start_time=start_time,
            last_step_time=last_step_time,
        )
        return episode

    def rows(self) -> Any:
        """The rows' views (`ColumnRows`), making the buffers if not made yet."""
        if self._rows is None:
            source, index, first, last = self._source
            rows = self._rows = source.episode_rows(index, first, last)
            _set_array_columns(
                self, rows.observations, rows.actions, rows.rewards, rows.extra_model_outputs
            )
            seq_no = getattr(self, "_weights_seq_no", None)  # (unset on a plain LiveEpisode)
            if seq_no is not None:
                add_weights_seq_no(self, seq_no, own_slots=True)
        return self._rows

    def record_weights_seq_no(self, seq_no: int) -> None:
        """`add_weights_seq_no` when the buffers are made (now, if they are)."""
        if self._rows is None:
            self._weights_seq_no = seq_no
        else:
            add_weights_seq_no(self, seq_no)

    observations = _made_on_read(_OBSERVATIONS)
    actions = _made_on_read(_ACTIONS)
    rewards = _made_on_read(_REWARDS)
    extra_model_outputs = _made_on_read(_EXTRA_MODEL_OUTPUTS)

    @property
    def is_numpy(self) -> bool:
        return True  # made of rows of arrays, whether the buffers are made yet or not

    def _cut(self, len_lookback_buffer: int = 0, *, ended: bool = False) -> SingleAgentEpisode:
        if len_lookback_buffer or self._rows is not None or self.is_done:
            return super()._cut(len_lookback_buffer, ended=ended)
        # The successor from the columns, without making this chunk's buffers.
        source, index, first, last = self._source
        successor = SingleAgentEpisode(self.id_, t_started=self.t, env_index=self.env_index)
        successor.observations.data.append(source.observation(index, last))
        successor.infos.data.append(self._last_info())
        for key in source.extra_model_output_keys():
            successor.extra_model_outputs[key] = InfiniteLookbackBuffer.of_list([])
        self._hand_over(successor, ended=ended)
        return successor

    def get_return(self) -> float:
        if self._rows is None:  # read from the columns, without making the buffers
            source, index, first, last = self._source
            return source.return_of(index, first, last)
        return super().get_return()

    def __reduce__(self) -> Any:
        """Pickled (and copied) as the `SingleAgentEpisode` it is."""
        return _plain_episode, (self.__getstate__(),)


def _plain_episode(state: dict[str, Any]) -> SingleAgentEpisode:
    episode = SingleAgentEpisode.__new__(SingleAgentEpisode)
    episode.__setstate__(state)
    return episode


class LiveSource(Protocol):
    """The sampling loop an attached `LiveEpisode` reads its sub-env's rows from while it
    runs (`trainer.runners.rollout.ColumnRecorder`)."""

    @property
    def columns(self) -> Any: ...

    def live_span(self, index: int) -> tuple[int, int]: ...

    def live_ended(self, index: int) -> tuple[bool, bool]: ...

    def rewards_written(self, index: int) -> None:
        """A setter wrote sub-env `index`'s rewards into the rows (its running return is
        summed anew)."""


#: The base class's `t`, `is_terminated` and `is_truncated` slots, which a `LiveEpisode`'s
#: properties read from the rows while it runs.
_T = SingleAgentEpisode.__dict__["t"]
_IS_TERMINATED = SingleAgentEpisode.__dict__["is_terminated"]
_IS_TRUNCATED = SingleAgentEpisode.__dict__["is_truncated"]
_INFOS_PROPERTY: property = SingleAgentEpisode.__dict__["infos"]

#: The fields a `LiveEpisode` reads one value of straight from the columns.
_STEP_FIELDS = ("actions", "rewards")


#: `LiveEpisode._made_row` of an episode from `LiveEpisode.empty()` whose (empty) columns are
#: not made yet.
_NO_COLUMNS = -2


class LiveEpisode(EpisodeView):
    """The episode object callbacks get while the EnvRunner records by column: RLlib's
    `SingleAgentEpisode` API over sub-env `index`'s rows of the running `sample()` call, so an
    `on_episode_step` callback costs what it reads, not a per-step append into every episode.

    Its states:
    - plain (before its reset, or between `sample()` calls at its reset): a
      `SingleAgentEpisode` holding what it was given;
    - attached (`attach`): its columns are the rows `first..row` of the call (`row`: the last
      step), read as the per-step loop's episode holds them (lists of Python scalars and
      array rows, not numpy'ized). One value (`get_observations(-1)`, `get_rewards(-1)`, ...)
      is read straight from the rows; anything else makes list buffers of the rows, made again
      once the call has stepped. A setter (`set_observations`, `set_rewards`, ...) writes into
      the rows, which the episode handed out later is made of. `custom_data`, the temporary
      timestep data and the connector data are its own, as any episode's;
    - frozen (`freeze`, when it ends or the call is cut): an `EpisodeView` of its rows,
      numpy'ized, the same object the callbacks had.

    Writes into the buffers themselves (`episode.rewards.data[-1] = ...`) while attached are
    not written back: the setters are the API that changes an episode's data."""

    __slots__ = ("_live", "_live_index", "_made_row", "_first_info")
    _live: LiveSource | None
    _made_row: int

    @classmethod
    def empty(cls, env_index: int = 0) -> LiveEpisode:
        """A new, empty episode (plain), as `SingleAgentEpisode(env_index=...)`."""
        episode = cls.__new__(cls)
        episode._live = None
        episode._source = None  # type: ignore[assignment]
        episode._rows = None
        # (Its empty columns are made when first read, `rows()`: most episodes are attached
        # to their rows at their reset, and never hold columns of their own.)
        episode._made_row = _NO_COLUMNS
        episode._first_info = {}
        # (Its slots set directly: one is made per episode while callbacks read them.)
        episode._set_plain_slots(
            new_episode_id(),
            [],
            t_started=0,
            t=0,
            env_index=env_index,
            terminated=False,
            truncated=False,
            custom_data={},
            temporary_timestep_data={},
            start_time=None,
            last_step_time=None,
        )
        return episode

    @classmethod
    def successor_of(cls, chunk: SingleAgentEpisode) -> LiveEpisode:
        """The continuation of `chunk` (returned by the last `sample()` call), to be attached
        at the rows that continue it; shares its custom and connector data as `cut()`'s."""
        episode = cls.empty(chunk.env_index)
        episode.id_ = chunk.id_
        episode.t_started = chunk.t
        _T.__set__(episode, chunk.t)
        episode._first_info = chunk._last_info()
        chunk._hand_over(episode, ended=True)
        return episode

    # -- the three states ----------------------------------------------------------------------
    def attach(self, source: LiveSource, index: int, first_info: dict | None = None) -> None:
        """Reads its rows from `source` (sub-env `index`) from now on; `first_info` is the
        first observation's info (its reset's, or its last chunk's last), by default the one
        it holds."""
        if first_info is None:
            first_info = self._last_info() if self.observations.len_incl_lookback() else {}
        self._first_info = first_info
        self._source = None  # type: ignore[assignment]
        self._rows = None
        self._made_row = -1
        self._live = source
        self._live_index = index

    def freeze(
        self,
        first: int,
        last: int,
        *,
        terminated: bool,
        truncated: bool,
        last_step_time: float,
    ) -> None:
        """Its rows `first..last` become its data for good: an `EpisodeView` of them."""
        source = self._live
        assert source is not None, "freeze() an attached LiveEpisode"
        index = self._live_index
        columns = source.columns
        self._live = None
        self._source = (columns, index, first, last)
        self._rows = None
        self._made_row = -1
        _T.__set__(self, self.t_started + last - first)
        _IS_TERMINATED.__set__(self, terminated)
        _IS_TRUNCATED.__set__(self, truncated)
        step_infos = columns.step_infos(index, first + 1, last)
        self._infos = _infos_buffer(chunk_infos(self._first_info, step_infos, last - first + 1))
        self._last_step_time = last_step_time

    def detach_at_reset(self, observation: Any) -> None:
        """Back to a plain episode holding its first observation only (a call ended right
        after its reset): the next call attaches it again."""
        assert self._live is not None, "detach_at_reset() an attached LiveEpisode"
        start_time = self._start_time
        self._live = None
        self._made_row = -1
        self._empty_columns(None, None)
        self.add_env_reset(observation, self._first_info)
        self._start_time = self._last_step_time = start_time

    def record_weights_seq_no(self, seq_no: int) -> None:
        """As an `EpisodeView`'s once frozen (a call's finished episode an `on_episode_step`
        callback had: its buffers get it when made); attached or plain, `add_weights_seq_no`
        now."""
        if self._live is None and self._source is not None:
            super().record_weights_seq_no(seq_no)
        else:
            add_weights_seq_no(self, seq_no)

    def rows(self) -> Any:
        if self._live is not None:
            self._make_lists()
            return None
        if self._source is None:  # plain: the base slots hold its data
            if self._made_row == _NO_COLUMNS:  # made empty by `empty()`, first read now
                self._made_row = -1
                _OBSERVATIONS.__set__(self, InfiniteLookbackBuffer.of_list([]))
                _ACTIONS.__set__(self, InfiniteLookbackBuffer.of_list([]))
                rewards = InfiniteLookbackBuffer.of_list([])
                rewards._space = rewards.space_struct = REWARD_SPACE
                _REWARDS.__set__(self, rewards)
                _EXTRA_MODEL_OUTPUTS.__set__(self, {})
            return None
        return super().rows()

    def _make_lists(self) -> None:
        """The attached episode's buffers as the per-step loop's episode holds them: made
        again when the call has stepped since."""
        source = self._live
        assert source is not None
        first, row = source.live_span(self._live_index)
        if self._made_row == row:
            return
        index, columns = self._live_index, source.columns
        steps = row - first
        # (Copies of the rows: what a setter writes into them leaves a value read before as
        # it was, as replacing a list item does.)
        observations = list(columns.observations[first : row + 1, index].copy())
        infos = [self._first_info] + [
            columns.sub_env_infos(r, index) for r in range(first + 1, row + 1)
        ]
        if steps:
            rows = columns.episode_rows(index, first, row)
            actions = _as_items(rows.actions)
            rewards = rows.rewards.tolist()
            outputs = {key: _as_items(values) for key, values in rows.extra_model_outputs.items()}
        else:
            actions, rewards, outputs = [], [], {}
        _OBSERVATIONS.__set__(self, InfiniteLookbackBuffer.of_list(observations))
        _ACTIONS.__set__(self, InfiniteLookbackBuffer.of_list(actions))
        rewards_buffer = InfiniteLookbackBuffer.of_list(rewards)
        rewards_buffer._space = rewards_buffer.space_struct = REWARD_SPACE
        _REWARDS.__set__(self, rewards_buffer)
        _EXTRA_MODEL_OUTPUTS.__set__(
            self, {key: InfiniteLookbackBuffer.of_list(values) for key, values in outputs.items()}
        )
        self._infos = InfiniteLookbackBuffer.of_list(infos)
        self._made_row = row

    def _write_back(self, field: str, key: str | None = None) -> None:
        """The attached episode's `field` buffer (after a setter) into its rows."""
        source = self._live
        assert source is not None
        first, row = source.live_span(self._live_index)
        columns, index = source.columns, self._live_index
        if field == "observations":
            columns.observations[first : row + 1, index] = np.asarray(self.observations.data)
            return
        if row == first:
            return
        if field == "extra_model_outputs":
            assert key is not None
            target = columns.arrays()["extra:" + key]
            values = self.extra_model_outputs[key].data
        else:
            target = getattr(columns, field)
            values = getattr(self, field).data
        target[first + 1 : row + 1, index] = np.asarray(values)
        if field == "rewards":
            source.rewards_written(index)

    # -- what an attached episode reads from the rows ------------------------------------------
    @property
    def t(self) -> int:
        if self._live is not None:
            first, row = self._live.live_span(self._live_index)
            return self.t_started + row - first
        return _T.__get__(self)

    @t.setter
    def t(self, value: int) -> None:
        _T.__set__(self, value)

    @property
    def is_terminated(self) -> bool:
        if self._live is not None:
            return self._live.live_ended(self._live_index)[0]
        return _IS_TERMINATED.__get__(self)

    @is_terminated.setter
    def is_terminated(self, value: bool) -> None:
        _IS_TERMINATED.__set__(self, value)

    @property
    def is_truncated(self) -> bool:
        if self._live is not None:
            return self._live.live_ended(self._live_index)[1]
        return _IS_TRUNCATED.__get__(self)

    @is_truncated.setter
    def is_truncated(self, value: bool) -> None:
        _IS_TRUNCATED.__set__(self, value)

    @property
    def infos(self) -> InfiniteLookbackBuffer:
        if self._live is not None:
            self._make_lists()
        return _INFOS_PROPERTY.__get__(self)

    @infos.setter
    def infos(self, value: InfiniteLookbackBuffer) -> None:
        self._infos = value

    def nonempty_infos(self) -> list | None:
        if self._live is not None:
            self._make_lists()
        return super().nonempty_infos()

    @property
    def is_numpy(self) -> bool:
        if self._live is not None:
            return False  # as the per-step loop's episode while it runs
        if self._source is not None:
            return True
        return _OBSERVATIONS.__get__(self).finalized

    def _row_of(self, indices: Any, steps: bool) -> int | None:
        """The row of the one item an int index reads while attached (None: read the
        buffers: not attached, not an int, or out of range, which they report)."""
        source = self._live
        if source is None or type(indices) is not int:
            return None
        first, row = source.live_span(self._live_index)
        size = row - first + (0 if steps else 1)
        position = indices if indices >= 0 else size + indices
        if not 0 <= position < size:
            return None
        return first + position + (1 if steps else 0)

    def get_observations(
        self,
        indices: Any = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        row = None if neg_index_as_lookback or one_hot_discrete else self._row_of(indices, False)
        if row is not None:
            assert self._live is not None
            return self._live.columns.observations[row, self._live_index].copy()
        return super().get_observations(
            indices,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
        )

    def get_infos(
        self, indices: Any = None, *, neg_index_as_lookback: bool = False, fill: Any = None
    ) -> Any:
        row = None if neg_index_as_lookback else self._row_of(indices, False)
        if row is not None:
            assert self._live is not None
            first, _ = self._live.live_span(self._live_index)
            if row == first:
                return self._first_info
            return self._live.columns.sub_env_infos(row, self._live_index)
        return super().get_infos(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def _step_value(self, column: np.ndarray, row: int) -> Any:
        """One step's value as the per-step loop records it: a Python scalar, or a row."""
        value = column[row, self._live_index]
        return value.item() if column.ndim == 2 else value.copy()

    def get_actions(
        self,
        indices: Any = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        row = None if neg_index_as_lookback or one_hot_discrete else self._row_of(indices, True)
        if row is not None:
            assert self._live is not None
            return self._step_value(self._live.columns.actions, row)
        return super().get_actions(
            indices,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
        )

    def get_rewards(
        self, indices: Any = None, *, neg_index_as_lookback: bool = False, fill: float | None = None
    ) -> Any:
        row = None if neg_index_as_lookback else self._row_of(indices, True)
        if row is not None:
            assert self._live is not None
            return self._step_value(self._live.columns.rewards, row)
        return super().get_rewards(indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill)

    def get_extra_model_outputs(
        self,
        key: str,
        indices: Any = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
    ) -> Any:
        row = None if neg_index_as_lookback else self._row_of(indices, True)
        if row is not None:
            assert self._live is not None
            column = self._live.columns.arrays().get("extra:" + key)
            if column is not None:
                return self._step_value(column, row)
        return super().get_extra_model_outputs(
            key, indices, neg_index_as_lookback=neg_index_as_lookback, fill=fill
        )

    def get_return(self) -> float:
        if self._live is not None:
            first, row = self._live.live_span(self._live_index)
            return self._live.columns.return_of(self._live_index, first, row)
        if self._source is None:
            return SingleAgentEpisode.get_return(self)
        return super().get_return()

    # -- what an attached episode writes into the rows -----------------------------------------
    def set_observations(
        self, *, new_data: Any, at_indices: Any = None, neg_index_as_lookback: bool = False
    ) -> None:
        super().set_observations(
            new_data=new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )
        if self._live is not None:
            self._write_back("observations")

    def set_actions(
        self, *, new_data: Any, at_indices: Any = None, neg_index_as_lookback: bool = False
    ) -> None:
        super().set_actions(
            new_data=new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )
        if self._live is not None:
            self._write_back("actions")

    def set_rewards(
        self, *, new_data: Any, at_indices: Any = None, neg_index_as_lookback: bool = False
    ) -> None:
        super().set_rewards(
            new_data=new_data, at_indices=at_indices, neg_index_as_lookback=neg_index_as_lookback
        )
        if self._live is not None:
            self._write_back("rewards")

    def set_extra_model_outputs(
        self,
        *,
        key: str,
        new_data: Any,
        at_indices: Any = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        super().set_extra_model_outputs(
            key=key,
            new_data=new_data,
            at_indices=at_indices,
            neg_index_as_lookback=neg_index_as_lookback,
        )
        if self._live is not None:
            self._write_back("extra_model_outputs", key)

    def _cut(self, len_lookback_buffer: int = 0, *, ended: bool = False) -> SingleAgentEpisode:
        if self._live is not None or self._source is None:
            return SingleAgentEpisode._cut(self, len_lookback_buffer, ended=ended)
        return super()._cut(len_lookback_buffer, ended=ended)
