"""`MultiAgentEpisode`: one multi-agent sub-env's trajectory (or a chunk of it), RLlib 2.60's
class with its public API and semantics.

Layout, as in RLlib:

- `agent_episodes[agent_id]` is a `SingleAgentEpisode` per agent holding that agent's own
  observations, actions, rewards, infos and extra model outputs, on the agent's own time scale
  (an agent that does not get an observation at an env step does not step).
- `env_t_to_agent_t[agent_id]` is an `InfiniteLookbackBuffer` with one entry per env step
  (observation time): the agent's timestep at that env step, or `SKIP_ENV_TS_TAG` ("S") where
  the agent got no observation. Its lookback buffer mirrors the episode's.
- "Hanging" values: an agent that acted but has not yet received its next observation keeps its
  action, extra model outputs and the rewards collected since then in `_hanging_actions_end`,
  `_hanging_extra_model_outputs_end` and `_hanging_rewards_end`; they become a step of its
  single-agent episode when its next observation arrives. Rewards an agent receives before its
  first observation of a chunk are kept in `_hanging_rewards_begin`.

The getters (`get_observations`, ...) index by env step (default; negative indices count back
from the last env step, into the lookback buffer) or by each agent's own steps
(`env_steps=False`), and return a dict by agent id (or, with `return_list=True`, a list of such
dicts, one per env step).
"""

from __future__ import annotations

import builtins
import copy
import importlib
import time
from collections import defaultdict
from collections.abc import Callable, Collection
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from trainer.capabilities import OLD_API_STACK
from trainer.checkpoints.codec import is_plain_data
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.spaces import batch, space_from_dict, space_to_dict
from trainer.env.episode import (
    ACTION_DIST_INPUTS,
    ACTION_LOGP,
    SingleAgentEpisode,
    new_episode_id,
)
from trainer.env.lookback_buffer import InfiniteLookbackBuffer
from trainer.errors import MultiAgentEnvError, UnsupportedCall

AgentID = Any
ModuleID = str
MultiAgentDict = dict[Any, Any]
Indices = int | list[int] | slice | None

#: The key of `terminateds` / `truncateds` that ends the episode for every agent.
ALL_AGENTS = "__all__"
#: Columns read at observation time (one more item than steps); the others are read at action
#: time, where an env step's last observation has no action yet.
_OBSERVATION_TIME_COLUMNS = ("observations", "infos")
#: An index past any real data: reading it with `fill` gives one fill item shaped like the
#: column's space (RLlib's way of making a fill item).
_PAST_THE_END = 1_000_000_000_000


def default_agent_to_module_mapping_fn(agent_id: AgentID, episode: MultiAgentEpisode) -> str:
    """RLlib's `AlgorithmConfig.DEFAULT_AGENT_TO_MODULE_MAPPING_FN`: every agent to
    `"default_policy"`."""
    return DEFAULT_MODULE_ID


#: The model outputs of the EnvRunners' action draw, whatever the algorithm: its log-probs
#: and distribution inputs (`SingleAgentEpisode.record_sampled_step`).
_SAMPLED_OUTPUTS = {ACTION_LOGP, ACTION_DIST_INPUTS}


#: The done-flag keys a plain step may have besides its acting agents.
_ALL_ONLY = frozenset({ALL_AGENTS})


def plain_step_layout(
    observations: MultiAgentDict,
    actions: MultiAgentDict,
    rewards: MultiAgentDict,
    terminateds: MultiAgentDict,
    truncateds: MultiAgentDict,
) -> bool:
    """Whether a step's dicts have a sampling loop's common layout: the agents that acted are
    exactly those with a next observation (at least one), each has its reward, and only they
    have done flags besides `"__all__"` (the part of a plain step that its dicts alone tell;
    `MultiAgentEpisode._is_plain_step` adds the episode's side)."""
    return plain_layout(observations, actions.keys(), rewards, terminateds, truncateds)


def plain_layout(
    observations: MultiAgentDict,
    acted: AbstractSet[AgentID],
    rewards: MultiAgentDict,
    terminateds: MultiAgentDict,
    truncateds: MultiAgentDict,
) -> bool:
    """`plain_step_layout` with the agents that acted given as a set (or a dict's keys): for
    a sampling loop that holds the acting agents' actions in a list, not a dict."""
    if not (
        observations and observations.keys() == acted and rewards.keys() == observations.keys()
    ):
        return False
    for flags in (terminateds, truncateds):
        keys = flags.keys()
        if len(keys) == len(observations) + 1 and ALL_AGENTS in keys:
            if not keys >= observations.keys():  # the usual: every acting agent and "__all__"
                return False
        elif not keys - observations.keys() <= _ALL_ONLY:
            return False
    return True


class RecordedColumns(Protocol):
    """An episode's plain steps by agent and column, as the EnvRunner records them
    (`trainer.runners.multi_agent_columns.AgentColumns`): a new episode's reset and steps,
    which `fill_columns` takes (per agent id a list of observations and infos, one more than
    its steps), or a continued chunk's steps, which `extend_columns` takes (one per step);
    and per agent id lists of actions, rewards, log-probs and distribution inputs (one per
    step)."""

    observations: dict[AgentID, list]
    infos: dict[AgentID, list]
    actions: dict[AgentID, list]
    rewards: dict[AgentID, list]
    action_logp: dict[AgentID, list]
    action_dist_inputs: dict[AgentID, list]
    #: Per agent that is done: its terminated and truncated flags and its last step's time.
    ends: dict[AgentID, tuple[bool, bool, float]]
    num_steps: int
    #: The agents of the first step, in its order.
    first_actors: tuple
    #: The episode's flags after the last step, its reset's time and its last step's.
    is_terminated: bool
    is_truncated: bool
    start_time: float
    last_step_time: float | None


def _end_from_columns(episode: SingleAgentEpisode, columns: RecordedColumns, agent_id: Any) -> None:
    """Ends agent `agent_id`'s `episode` (it stepped in `columns`) where the columns say: at its
    own end (`columns.ends`), else with the episode's flags after the last step."""
    ended = columns.ends.get(agent_id)
    terminated, truncated, last_step_time = (
        ended
        if ended is not None
        else (columns.is_terminated, columns.is_truncated, columns.last_step_time)
    )
    if terminated or truncated:
        episode.is_terminated, episode.is_truncated = terminated, truncated
        episode._last_step_time = last_step_time
        if episode._start_time is None:
            episode._start_time = last_step_time


class MultiAgentEpisode:
    """Stores one multi-agent episode (chunk): a `SingleAgentEpisode` per agent, tied to the
    env's time scale by `env_t_to_agent_t` (see the module docstring)."""

    __slots__ = (
        "id_",
        "agent_to_module_mapping_fn",
        "_agent_to_module_mapping",
        "observation_space",
        "action_space",
        "env_t_started",
        "env_t",
        "agent_t_started",
        "env_t_to_agent_t",
        "_hanging_actions_end",
        "_hanging_extra_model_outputs_end",
        "_hanging_rewards_end",
        "_hanging_rewards_begin",
        "is_terminated",
        "is_truncated",
        "agent_episodes",
        "_last_step_time",
        "_len_lookback_buffers",
        "_start_time",
        "_custom_data",
    )

    #: The `env_t_to_agent_t` entry of an env step at which an agent got no observation.
    SKIP_ENV_TS_TAG = "S"

    def __init__(
        self,
        id_: str | None = None,
        *,
        observations: list[MultiAgentDict] | None = None,
        observation_space: gym.Space | dict | None = None,
        infos: list[MultiAgentDict] | None = None,
        actions: list[MultiAgentDict] | None = None,
        action_space: gym.Space | dict | None = None,
        rewards: list[MultiAgentDict] | None = None,
        terminateds: MultiAgentDict | bool = False,
        truncateds: MultiAgentDict | bool = False,
        extra_model_outputs: list[MultiAgentDict] | None = None,
        env_t_started: int | None = None,
        agent_t_started: dict[AgentID, int] | None = None,
        len_lookback_buffer: int | str = "auto",
        agent_episode_ids: dict[AgentID, str] | None = None,
        agent_module_ids: dict[AgentID, ModuleID | None] | None = None,
        agent_to_module_mapping_fn: Callable[[AgentID, MultiAgentEpisode], ModuleID] | None = None,
    ):
        """An empty episode (to record into with `add_env_reset` / `add_env_step`), or one made
        from data: per env step, dicts by agent id of observations and infos (one more than
        steps), and of actions, rewards and extra model outputs (`{agent: {key: value}}`). The
        first `len_lookback_buffer` env steps are the lookback buffer ("auto", the default:
        all steps given, which leaves a chunk of length 0 that can look back at them).
        `terminateds` / `truncateds` are dicts by agent id (with "__all__") or one bool.
        `env_t_started` is the env step the chunk starts at, `agent_t_started` each agent's
        own step; `agent_episode_ids` / `agent_module_ids` give agents their single-agent
        episode ids and module ids (else new ids, and the module from
        `agent_to_module_mapping_fn(agent_id, episode)`)."""
        # (32 random hex digits, as uuid.uuid4().hex, read from the OS in batches.)
        self.id_: str = id_ or new_episode_id()
        self.agent_to_module_mapping_fn = (
            agent_to_module_mapping_fn or default_agent_to_module_mapping_fn
        )
        self._agent_to_module_mapping: dict[AgentID, ModuleID | None] = dict(agent_module_ids or {})
        self._len_lookback_buffers = _lookback_length(len_lookback_buffer, rewards)
        #: Spaces per agent: a dict by agent id or a `gym.spaces.Dict` ({} when not given).
        self.observation_space = observation_space or {}
        self.action_space = action_space or {}
        self.env_t_started: int = env_t_started or 0
        #: The env step this chunk has reached (`len(self) == env_t - env_t_started`).
        self.env_t: int = len(rewards or []) - self._len_lookback_buffers + self.env_t_started
        self.agent_t_started: defaultdict[AgentID, int] = defaultdict(int, agent_t_started or {})
        self.env_t_to_agent_t: defaultdict[AgentID, InfiniteLookbackBuffer] = defaultdict(
            InfiniteLookbackBuffer
        )
        self._hanging_actions_end: dict[AgentID, Any] = {}
        self._hanging_extra_model_outputs_end: defaultdict[AgentID, Any] = defaultdict(dict)
        self._hanging_rewards_end: defaultdict[AgentID, float] = defaultdict(float)
        self._hanging_rewards_begin: defaultdict[AgentID, float] = defaultdict(float)
        self.is_terminated: bool = _episode_flag(terminateds)
        self.is_truncated: bool = _episode_flag(truncateds)
        self.agent_episodes: dict[AgentID, SingleAgentEpisode] = {}
        if observations is not None:
            _EpisodeFromData(self).build(
                observations=observations,
                infos=infos,
                actions=actions,
                rewards=rewards,
                extra_model_outputs=extra_model_outputs,
                terminateds=_agent_flags(terminateds),
                truncateds=_agent_flags(truncateds),
                agent_episode_ids=agent_episode_ids,
                agent_module_ids=agent_module_ids or {},
            )
        self._custom_data: dict = {}
        self._start_time: float | None = None
        self._last_step_time: float | None = None
        self.validate()

    # -- recording ---------------------------------------------------------------------------
    def add_env_reset(
        self, *, observations: MultiAgentDict, infos: MultiAgentDict | None = None
    ) -> None:
        """Logs the env's reset: the first observations (and infos) of the agents that act
        first. Agents without a reset observation join when they first get one."""
        assert not self.is_done, "add_env_reset() on a finished episode"
        assert self.env_t == self.env_t_started == 0, (
            "add_env_reset() on an episode that already has steps "
            f"(env_t={self.env_t}, env_t_started={self.env_t_started})"
        )
        infos = infos or {}
        for agent_id, observation in observations.items():
            self.env_t_to_agent_t[agent_id].append(0)
            if agent_id not in self.agent_episodes:
                self.agent_episodes[agent_id] = self._new_agent_episode(agent_id)
            self.agent_episodes[agent_id].add_env_reset(
                observation=observation, infos=infos.get(agent_id)
            )
        self.validate()
        self._start_time = time.perf_counter()

    def check_reset(self, observations: MultiAgentDict, infos: MultiAgentDict | None) -> None:
        """The checks `add_env_reset` makes of a reset (the episode is new; each observation
        is in its agent's observation space; `infos` is a dict by agent id), without logging
        it: for a reset the EnvRunner keeps and records later (`fill_columns`)."""
        assert not self.is_done, "add_env_reset() on a finished episode"
        assert self.env_t == self.env_t_started == 0 and not self.agent_episodes, (
            "add_env_reset() on an episode that already has steps "
            f"(env_t={self.env_t}, env_t_started={self.env_t_started})"
        )
        infos = infos or {}
        for agent_id in observations:
            infos.get(agent_id)
        if _all_in_boxes(self.observation_space, observations):
            return
        for agent_id, observation in observations.items():
            SingleAgentEpisode._check_space(
                _space_of(self.observation_space, agent_id), observation, "observation"
            )

    def fill_columns(self, columns: RecordedColumns) -> None:
        """Records a reset and the plain steps after it, as `add_env_reset` and
        `add_sampled_env_step` record them, from `columns` (the runner's
        `trainer.runners.multi_agent_columns.AgentColumns`): each agent's lists become its
        single-agent episode's buffers as they are. Every agent of the reset acts from the
        first step until its own end (`columns.ends`) or the last step."""
        assert not self.is_done and self.env_t == 0 and not self.agent_episodes, (
            "fill_columns() on an episode that already has data"
        )
        num_steps = columns.num_steps
        mappings = self.env_t_to_agent_t
        agent_episodes = self.agent_episodes
        observation_space, action_space = self.observation_space, self.action_space
        start_time = columns.start_time
        actions_of, infos_of = columns.actions, columns.infos
        logp_of, dist_inputs_of = columns.action_logp, columns.action_dist_inputs
        rewards_of = columns.rewards
        for agent_id, observations in columns.observations.items():
            actions = actions_of[agent_id]
            t = len(actions)
            episode = agent_episodes[agent_id] = SingleAgentEpisode._recorded(
                agent_id=agent_id,
                module_id=self.module_for(agent_id),
                multi_agent_episode_id=self.id_,
                observation_space=_space_of(observation_space, agent_id),
                action_space=_space_of(action_space, agent_id),
                observations=observations,
                infos=infos_of[agent_id],
                actions=actions,
                rewards=rewards_of[agent_id],
                extra_model_outputs=(
                    {ACTION_LOGP: logp_of[agent_id], ACTION_DIST_INPUTS: dist_inputs_of[agent_id]}
                    if t
                    else {}
                ),
                start_time=start_time,
            )
            if t:
                _end_from_columns(episode, columns, agent_id)
            mappings[agent_id] = InfiniteLookbackBuffer.of_list(
                [*range(t + 1), *[self.SKIP_ENV_TS_TAG] * (num_steps - t)]
            )
        self._start_time = start_time
        if num_steps:
            for agent_id in columns.first_actors:
                self.agent_t_started.setdefault(agent_id, 0)
            self.env_t = num_steps
            self.is_terminated = columns.is_terminated
            self.is_truncated = columns.is_truncated
            self._last_step_time = columns.last_step_time

    def continues_plainly(self, agents: Collection[AgentID]) -> bool:
        """Whether the steps after this chunk's start, with `agents` acting, can be recorded
        by column and appended at once (`extend_columns`): the chunk has no steps, nothing
        hangs, the running single-agent episodes are exactly `agents`' and each records into
        plain lists with the action draw's two model outputs (or none yet)."""
        if (
            self.is_done
            or self.env_t != self.env_t_started
            or self._hanging_actions_end
            or self._hanging_rewards_end
            or self._hanging_rewards_begin
        ):
            return False
        running = 0
        for agent_id, episode in self.agent_episodes.items():
            if episode.is_terminated or episode.is_truncated:
                continue
            running += 1
            if agent_id not in agents or not episode.records_plainly():
                return False
        return running == len(agents)

    def extend_columns(self, columns: RecordedColumns) -> None:
        """Appends the plain steps in `columns` to this chunk (see `continues_plainly`), as
        `add_sampled_env_step` would have recorded them one by one: each agent's lists go
        onto the end of its single-agent episode's buffers, and each agent's env-to-agent
        time mapping grows by the steps (a skip where an agent was done)."""
        assert not self.is_done and self.env_t == self.env_t_started, (
            "extend_columns() on a chunk that already has steps"
        )
        num_steps = columns.num_steps
        skip = self.SKIP_ENV_TS_TAG
        agent_episodes, mappings = self.agent_episodes, self.env_t_to_agent_t
        agent_t_started = self.agent_t_started
        actions_of, infos_of = columns.actions, columns.infos
        logp_of, dist_inputs_of = columns.action_logp, columns.action_dist_inputs
        observations_of, rewards_of = columns.observations, columns.rewards
        for agent_id, mapping in mappings.items():
            actions = actions_of.get(agent_id)
            if actions is None:  # done before this chunk: no steps here
                mapping.data.extend([skip] * num_steps)
                continue
            t = len(actions)
            if not t:
                mapping.data.extend([skip] * num_steps)
                continue
            episode = agent_episodes[agent_id]
            first = episode.t - episode.t_started + agent_t_started[agent_id] + 1
            episode.extend_sampled_steps(
                observations_of[agent_id],
                actions,
                rewards_of[agent_id],
                infos_of[agent_id],
                logp_of[agent_id],
                dist_inputs_of[agent_id],
            )
            mapping.data.extend([*range(first, first + t), *[skip] * (num_steps - t)])
            _end_from_columns(episode, columns, agent_id)
        if num_steps:
            self.env_t += num_steps
            self.is_terminated = columns.is_terminated
            self.is_truncated = columns.is_truncated
            self._last_step_time = columns.last_step_time
            if self._start_time is None:
                self._start_time = self._last_step_time

    def add_env_step(
        self,
        observations: MultiAgentDict,
        actions: MultiAgentDict,
        rewards: MultiAgentDict,
        infos: MultiAgentDict | None = None,
        *,
        terminateds: MultiAgentDict | None = None,
        truncateds: MultiAgentDict | None = None,
        extra_model_outputs: MultiAgentDict | None = None,
    ) -> None:
        """Logs one env step: the actions the acting agents took and what the env returned
        (dicts by agent id). Only agents with an observation act next. An agent that acted
        but got no observation keeps its action (and the rewards that follow) until its next
        observation; rewards of agents that did not act are carried to their next step.
        `terminateds`/`truncateds["__all__"]` end the episode for every agent; the episode
        also ends once every agent is done."""
        if self.is_done:
            raise MultiAgentEnvError(
                "Cannot call `add_env_step` on a MultiAgentEpisode that is already done!"
            )
        infos = infos or {}
        terminateds = terminateds or {}
        truncateds = truncateds or {}
        extra_model_outputs = extra_model_outputs or {}
        if self._is_plain_step(observations, actions, rewards, terminateds, truncateds):
            self._record_plain_step(
                observations,
                actions,
                rewards,
                infos,
                terminateds,
                truncateds,
                None,
                None,
                extra_model_outputs,
            )
            return
        self.env_t += 1
        self.is_terminated = bool(terminateds.get(ALL_AGENTS, False))
        self.is_truncated = bool(truncateds.get(ALL_AGENTS, False))
        agents_done = {aid for aid, episode in self.agent_episodes.items() if episode.is_done}
        agents_done |= {aid for aid, done in terminateds.items() if done}
        agents_done |= {aid for aid, done in truncateds.items() if done}
        if all(aid in agents_done for aid in self.agent_ids):
            self.is_terminated = True

        for agent_id, mapping in self.env_t_to_agent_t.items():
            if agent_id not in observations:
                mapping.append(self.SKIP_ENV_TS_TAG)

        # In a fixed order (the observations' first): a set's order of string ids changes
        # from process to process, and the episode's state would with it.
        agents_with_data = dict.fromkeys(observations)
        for agents in (actions, rewards, terminateds, truncateds):
            agents_with_data.update(dict.fromkeys(agents))
        if terminateds.get(ALL_AGENTS) or truncateds.get(ALL_AGENTS):
            agents_with_data.update(dict.fromkeys(self.agent_episodes))
        agents_with_data.pop(ALL_AGENTS, None)
        for agent_id in agents_with_data:
            self._record_agent_step(
                agent_id,
                observations,
                actions,
                rewards,
                infos,
                terminated=bool(terminateds.get(agent_id, False)) or self.is_terminated,
                truncated=bool(truncateds.get(agent_id, False)) or self.is_truncated,
                extra_model_outputs=extra_model_outputs.get(agent_id),
            )
        # The agents recorded in this step are the ones whose episodes changed (validating
        # every agent's each step was a seventh of a multi-agent runner's time).
        agent_episodes = self.agent_episodes
        for agent_id in agents_with_data:
            agent_episode = agent_episodes.get(agent_id)
            if agent_episode is not None:
                agent_episode.validate()
        self._last_step_time = time.perf_counter()
        if self._start_time is None:
            self._start_time = self._last_step_time

    def add_sampled_env_step(
        self,
        observations: MultiAgentDict,
        actions: MultiAgentDict,
        rewards: MultiAgentDict,
        infos: MultiAgentDict,
        terminateds: MultiAgentDict,
        truncateds: MultiAgentDict,
        action_logps: MultiAgentDict,
        action_dist_inputs: MultiAgentDict,
    ) -> None:
        """`add_env_step` for the EnvRunner's sampling loop: the same record, with the action
        draw's two model outputs given per agent (`action_logps`, `action_dist_inputs`: the
        same agents as `actions`) instead of a dict per agent and step."""
        if not self.is_done and self._is_plain_step(
            observations, actions, rewards, terminateds, truncateds
        ):
            self._record_plain_step(
                observations,
                actions,
                rewards,
                infos,
                terminateds,
                truncateds,
                action_logps,
                action_dist_inputs,
            )
            return
        self.add_env_step(
            observations,
            actions,
            rewards,
            infos,
            terminateds=terminateds,
            truncateds=truncateds,
            extra_model_outputs={
                agent_id: {ACTION_LOGP: logp, ACTION_DIST_INPUTS: action_dist_inputs[agent_id]}
                for agent_id, logp in action_logps.items()
            },
        )

    def _is_plain_step(
        self,
        observations: MultiAgentDict,
        actions: MultiAgentDict,
        rewards: MultiAgentDict,
        terminateds: MultiAgentDict,
        truncateds: MultiAgentDict,
    ) -> bool:
        """Whether a step is the common one of a sampling loop, which `_record_plain_step`
        records as the general path would: the agents that acted are exactly those with a
        next observation, each has its reward and its running single-agent episode, only they
        have done flags (besides `"__all__"`) and nothing hangs."""
        if (
            self._hanging_actions_end
            or self._hanging_rewards_end
            or self._hanging_rewards_begin
            or not plain_step_layout(observations, actions, rewards, terminateds, truncateds)
        ):
            return False
        agent_episodes = self.agent_episodes
        for agent_id in observations:
            episode = agent_episodes.get(agent_id)
            if episode is None or episode.is_terminated or episode.is_truncated:
                return False
        return True

    def _record_plain_step(
        self,
        observations: MultiAgentDict,
        actions: MultiAgentDict,
        rewards: MultiAgentDict,
        infos: MultiAgentDict,
        terminateds: MultiAgentDict,
        truncateds: MultiAgentDict,
        action_logps: MultiAgentDict | None,
        action_dist_inputs: MultiAgentDict | None,
        extra_model_outputs: MultiAgentDict | None = None,
    ) -> None:
        """Records a step `_is_plain_step` accepted: each agent's model outputs are its
        `action_logps` and `action_dist_inputs` entries or, without those, its
        `extra_model_outputs` dict.

        Per step: the episode's flags (`_all_done` where an agent is done); a skip in the time
        mapping of each agent without an observation; per agent of the step, one
        `record_sampled_step` of its single-agent episode (the sampling's two model outputs,
        one append per column) or, for other outputs, `_record_other_outputs`."""
        self.env_t += 1
        agent_episodes = self.agent_episodes
        # As the general path: "__all__" ends the episode, and so does every agent being done
        # (then each agent of this step ends as terminated).
        all_terminated = bool(terminateds.get(ALL_AGENTS, False))
        all_truncated = bool(truncateds.get(ALL_AGENTS, False))
        ending = any(terminateds.values()) or any(truncateds.values())
        if ending and not all_terminated:
            all_terminated = self._all_done(terminateds, truncateds)
        self.is_terminated = all_terminated
        self.is_truncated = all_truncated
        mappings = self.env_t_to_agent_t
        if len(mappings) != len(observations):
            for agent_id, mapping in mappings.items():
                if agent_id not in observations:
                    mapping.append(self.SKIP_ENV_TS_TAG)
        agent_t_started = self.agent_t_started
        terminated = truncated = False
        for agent_id, observation in observations.items():
            episode = agent_episodes[agent_id]
            info = infos.get(agent_id)
            if ending:
                terminated = bool(terminateds.get(agent_id, False)) or all_terminated
                truncated = bool(truncateds.get(agent_id, False)) or all_truncated
            if action_logps is not None and action_dist_inputs is not None:
                logp, dist_inputs = action_logps[agent_id], action_dist_inputs[agent_id]
            else:
                outputs = None if extra_model_outputs is None else extra_model_outputs.get(agent_id)
                if outputs is None or outputs.keys() != _SAMPLED_OUTPUTS:
                    step = (observation, actions[agent_id], rewards[agent_id], info)
                    self._record_other_outputs(agent_id, step, terminated, truncated, outputs)
                    continue
                logp, dist_inputs = outputs[ACTION_LOGP], outputs[ACTION_DIST_INPUTS]
            # The action draw's two model outputs: the single-agent episode's
            # own fast path (one append per column, the same record).
            episode.record_sampled_step(
                observation,
                actions[agent_id],
                rewards[agent_id] or 0.0,  # (a zero reward as the general path records it)
                {} if info is None else info,
                terminated,
                truncated,
                logp,
                dist_inputs,
            )
            # One item appended to each column: the episode stays valid (no validate() here).
            mappings[agent_id].append(episode.t - episode.t_started + agent_t_started[agent_id])
        self._last_step_time = time.perf_counter()
        if self._start_time is None:
            self._start_time = self._last_step_time

    def _all_done(self, terminateds: MultiAgentDict, truncateds: MultiAgentDict) -> bool:
        """Whether every agent of the episode is done after a plain step with these flags
        (ended before it, or in it)."""
        return all(
            episode.is_terminated
            or episode.is_truncated
            or terminateds.get(agent_id, False)
            or truncateds.get(agent_id, False)
            for agent_id, episode in self.agent_episodes.items()
        )

    def _record_other_outputs(
        self,
        agent_id: AgentID,
        step: tuple[Any, Any, Any, Any],
        terminated: bool,
        truncated: bool,
        outputs: dict | None,
    ) -> None:
        """`_record_plain_step`'s part for agent `agent_id` whose model outputs are not the
        sampling's two (none, or other keys): its (observation, action, reward, info) `step`
        through its single-agent episode's `add_env_step`, with `outputs` as they are."""
        observation, action, reward, info = step
        episode = self.agent_episodes[agent_id]
        episode.add_env_step(
            observation=observation,
            action=action,
            reward=reward or 0.0,
            infos=info,
            terminated=terminated,
            truncated=truncated,
            extra_model_outputs=outputs,
        )
        self.env_t_to_agent_t[agent_id].append(
            episode.t - episode.t_started + self.agent_t_started[agent_id]
        )

    def _record_agent_step(
        self,
        agent_id: AgentID,
        observations: MultiAgentDict,
        actions: MultiAgentDict,
        rewards: MultiAgentDict,
        infos: MultiAgentDict,
        *,
        terminated: bool,
        truncated: bool,
        extra_model_outputs: Any,
    ) -> None:
        """One agent's part of an env step: a completed step of its single-agent episode, its
        first observation (a late join), or values that hang until its next observation.

        By what the env step brought the agent:

            observation, action     a completed step (the agent must have a reward)
            observation only        `_observed_without_action`: the step of its hanging
                                    action completes, or the agent joins
            action only             `_acted_without_observation`: the action hangs until
                                    the agent's next observation
            neither                 `_carried_reward`: a reward (or done flag) carried to
                                    the agent's next step

        Each gives the completed step (observation, action, reward, info, model outputs),
        or None where nothing more is recorded; the step goes into the agent's single-agent
        episode, and a done agent's hanging values are dropped."""
        episode = self.agent_episodes.get(agent_id)
        if episode is None:  # (not `or`: an episode of length 0 is falsy)
            episode = self._new_agent_episode(agent_id)
        observation = observations.get(agent_id)
        action = actions.get(agent_id)
        reward = rewards.get(agent_id)
        info = infos.get(agent_id)
        received = (observation, action, reward, info, extra_model_outputs)
        if episode.is_done and any(value is not None for value in received):
            raise _data_after_done(agent_id, *received)
        reward = reward or 0.0
        done = terminated or truncated
        step: tuple[Any, Any, float, Any, Any] | None
        if observation is not None and action is not None:
            if agent_id not in rewards:
                raise MultiAgentEnvError(
                    f"Agent {agent_id} acted (and received next obs), but did NOT receive any "
                    "reward from the env!"
                )
            step = (observation, action, reward, info, extra_model_outputs)
        elif observation is not None:
            step = self._observed_without_action(agent_id, episode, observation, info, reward, done)
        elif action is not None:
            step = self._acted_without_observation(
                agent_id, episode, action, reward, terminated, truncated, extra_model_outputs
            )
        else:
            step = self._carried_reward(agent_id, episode, reward, terminated, truncated)
        if step is None:
            return
        observation, action, reward, info, extra_model_outputs = step
        if observation is not None:
            episode.add_env_step(
                observation=observation,
                action=action,
                reward=reward,
                infos=info,
                terminated=terminated,
                truncated=truncated,
                extra_model_outputs=extra_model_outputs,
            )
            self.env_t_to_agent_t[agent_id].append(len(episode) + self.agent_t_started[agent_id])
        if done:
            self._drop_hanging(agent_id)

    def _observed_without_action(
        self,
        agent_id: AgentID,
        episode: SingleAgentEpisode,
        observation: Any,
        info: Any,
        reward: float,
        done: bool,
    ) -> tuple[Any, Any, float, Any, Any] | None:
        """`_record_agent_step` for an agent with an observation and no action in this env
        step: the step that began with its hanging action ends here (that step returned), or,
        without one, the agent's first observation (it joins; None), or, done, its end (its
        hanging values dropped; None)."""
        action = self._hanging_actions_end.pop(agent_id, None)
        if action is not None:
            extra_model_outputs = self._hanging_extra_model_outputs_end.pop(agent_id, None)
            reward = self._hanging_rewards_end.pop(agent_id, 0.0) + reward
            return observation, action, reward, info, extra_model_outputs
        if done:
            self._drop_hanging(agent_id)
        else:
            self._join(agent_id, episode, observation, info, reward)
        return None

    def _acted_without_observation(
        self,
        agent_id: AgentID,
        episode: SingleAgentEpisode,
        action: Any,
        reward: float,
        terminated: bool,
        truncated: bool,
        extra_model_outputs: Any,
    ) -> tuple[Any, Any, float, Any, Any] | None:
        """`_record_agent_step` for an agent that acted and got no observation: its action
        hangs until the next one (None); a terminated agent ends on its last observation
        instead (that step returned), a truncated one has no final observation (an error)."""
        if truncated:
            raise MultiAgentEnvError(self._no_final_observation(agent_id))
        if terminated:
            observation, info = episode.get_observations(-1), episode.get_infos(-1)
            return observation, action, reward, info, extra_model_outputs
        assert agent_id not in self._hanging_actions_end, (
            f"agent {agent_id} acted twice without an observation in between"
        )
        self._hanging_actions_end[agent_id] = action
        self._hanging_rewards_end[agent_id] = reward
        self._hanging_extra_model_outputs_end[agent_id] = extra_model_outputs
        return None

    def _carried_reward(
        self,
        agent_id: AgentID,
        episode: SingleAgentEpisode,
        reward: float,
        terminated: bool,
        truncated: bool,
    ) -> tuple[Any, Any, float, Any, Any] | None:
        """`_record_agent_step` for an agent with neither observation nor action: its reward
        waits for its next step (None). Done, its hanging action's step ends on its last
        observation (that step returned; truncated: an error, there is no final observation),
        or, without a hanging action, its hanging values are dropped (None)."""
        if not (terminated or truncated):
            if agent_id not in self.agent_episodes:
                self._hanging_rewards_begin[agent_id] += reward
            else:
                self._hanging_rewards_end[agent_id] += reward
            return None
        action = self._hanging_actions_end.get(agent_id)
        if action is None:
            self._drop_hanging(agent_id)
            return None
        if truncated:
            raise MultiAgentEnvError(self._no_final_observation(agent_id))
        observation, info = episode.get_observations(-1), episode.get_infos(-1)
        extra_model_outputs = self._hanging_extra_model_outputs_end.pop(agent_id, None)
        reward = self._hanging_rewards_end.pop(agent_id, 0.0) + reward
        return observation, action, reward, info, extra_model_outputs

    def _join(
        self,
        agent_id: AgentID,
        episode: SingleAgentEpisode,
        observation: Any,
        info: Any,
        reward: float,
    ) -> None:
        """An agent's first observation in this chunk after env step 0: its single-agent
        episode starts (as after a reset), skipped at every earlier env step."""
        assert agent_id not in self.env_t_to_agent_t, (
            f"agent {agent_id} joins, but already has env steps"
        )
        mapping = self.env_t_to_agent_t[agent_id]
        mapping.extend([self.SKIP_ENV_TS_TAG] * self.env_t + [0])
        mapping.lookback = self._len_lookback_buffers
        episode.add_env_reset(observation=observation, infos=info)
        self._hanging_rewards_begin[agent_id] += reward
        self.agent_episodes[agent_id] = episode

    def _drop_hanging(self, agent_id: AgentID) -> None:
        """Forgets the agent's hanging values (it is done)."""
        for store in (
            self._hanging_rewards_begin,
            self._hanging_actions_end,
            self._hanging_extra_model_outputs_end,
            self._hanging_rewards_end,
        ):
            store.pop(agent_id, None)

    @staticmethod
    def _no_final_observation(agent_id: AgentID) -> str:
        return (
            f"Agent {agent_id} acted and then got truncated, but did NOT receive a last "
            "(truncation) observation, required for e.g. value function bootstrapping!"
        )

    def _new_agent_episode(self, agent_id: AgentID) -> SingleAgentEpisode:
        return SingleAgentEpisode(
            agent_id=agent_id,
            module_id=self.module_for(agent_id),
            multi_agent_episode_id=self.id_,
            observation_space=_space_of(self.observation_space, agent_id),
            action_space=_space_of(self.action_space, agent_id),
        )

    def validate(self) -> None:
        """Asserts that each agent's single-agent episode is consistent."""
        for episode in self.agent_episodes.values():
            episode.validate()

    # -- state of the episode ----------------------------------------------------------------
    @property
    def custom_data(self) -> dict:
        """Free-form per-episode data for callbacks and connectors (copied to the successor
        chunk by `cut()`)."""
        return self._custom_data

    @property
    def is_reset(self) -> bool:
        """Whether the reset observations were added."""
        return any(len(episode.observations) > 0 for episode in self.agent_episodes.values())

    @property
    def is_numpy(self) -> bool:
        """Whether `to_numpy()` turned the agents' columns into arrays."""
        flags = {episode.is_numpy for episode in self.agent_episodes.values()}
        if len(flags) > 1:
            raise RuntimeError(
                f"Only some SingleAgentEpisode objects in {self} are converted to numpy, "
                "others are not!"
            )
        return flags.pop() if flags else False

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    @property
    def agent_ids(self) -> set[AgentID]:
        """The agents that have a single-agent episode in this chunk."""
        return set(self.agent_episodes)

    @property
    def agent_episode_ids(self) -> MultiAgentDict:
        """Each agent's single-agent episode id."""
        return {agent_id: episode.id_ for agent_id, episode in self.agent_episodes.items()}

    def module_for(self, agent_id: AgentID) -> ModuleID | None:
        """The module `agent_id` maps to (asked of `agent_to_module_mapping_fn` once per agent
        and episode, then remembered)."""
        if agent_id not in self._agent_to_module_mapping:
            self._agent_to_module_mapping[agent_id] = self.agent_to_module_mapping_fn(
                agent_id, self
            )
        return self._agent_to_module_mapping[agent_id]

    def get_terminateds(self) -> MultiAgentDict:
        """Each agent's terminated flag, and "__all__"."""
        flags = {aid: self.agent_episodes[aid].is_terminated for aid in self.agent_ids}
        flags[ALL_AGENTS] = self.is_terminated
        return flags

    def get_truncateds(self) -> MultiAgentDict:
        """Each agent's truncated flag, and "__all__"."""
        flags = {aid: self.agent_episodes[aid].is_truncated for aid in self.agent_ids}
        flags[ALL_AGENTS] = self.is_truncated
        return flags

    def get_agents_to_act(self) -> set[AgentID]:
        """The agents that got an observation at the last env step and are not done: those
        that act next."""
        return {aid for aid in self.get_observations(-1) if not self.agent_episodes[aid].is_done}

    def get_agents_that_stepped(self) -> set[AgentID]:
        """The agents that got an observation at the last env step."""
        return set(self.get_observations(-1))

    def __len__(self) -> int:
        """Env steps in this chunk (its lookback buffer not counted)."""
        return self.env_t - self.env_t_started

    def env_steps(self) -> int:
        """Env steps in this chunk."""
        return len(self)

    def agent_steps(self) -> int:
        """Steps of all agents in this chunk (the sum of the single-agent episodes' lengths)."""
        return sum(len(episode) for episode in self.agent_episodes.values())

    def get_return(self, include_hanging_rewards: bool = False) -> float:
        """The sum of all agents' rewards in this chunk; with `include_hanging_rewards`, also
        the rewards not yet assigned to a step (before an agent's first and after its last
        observation)."""
        total = sum(episode.get_return() for episode in self.agent_episodes.values())
        if include_hanging_rewards:
            total += sum(self._hanging_rewards_begin.values())
            total += sum(self._hanging_rewards_end.values())
        return total

    def get_duration_s(self) -> float:
        """Wall seconds from the reset to the last logged step (0 before the first step)."""
        if self._last_step_time is None or self._start_time is None:
            return 0.0
        return self._last_step_time - self._start_time

    # -- chunks ------------------------------------------------------------------------------
    def cut(self, len_lookback_buffer: int = 0) -> MultiAgentEpisode:
        """The successor chunk of this ongoing episode: same `id_` (and single-agent episode
        ids), starting at this chunk's `env_t` with its last observations, and the last
        `len_lookback_buffer` env steps as lookback (more where an agent's hanging action
        needs its last observation). Rewards still hanging become the successor's
        `_hanging_rewards_begin`; `custom_data` is copied."""
        assert len_lookback_buffer >= 0, f"cut(len_lookback_buffer={len_lookback_buffer})"
        if self.is_done:
            raise RuntimeError(
                "Can't call `MultiAgentEpisode.cut()` when the episode is already done!"
            )
        lookback = self._lookback_for_hanging_actions(len_lookback_buffer)
        obs_steps = slice(-lookback - 1, None)
        action_steps = slice(-lookback, None) if lookback > 0 else slice(None, 0)
        successor = MultiAgentEpisode(
            id_=self.id_,
            observations=_steps(self.get_observations(indices=obs_steps, return_list=True)),
            observation_space=self.observation_space,
            infos=_steps(self.get_infos(indices=obs_steps, return_list=True)),
            actions=_steps(self.get_actions(indices=action_steps, return_list=True)),
            action_space=self.action_space,
            rewards=_steps(self.get_rewards(indices=action_steps, return_list=True)),
            extra_model_outputs=_steps(
                self.get_extra_model_outputs(key=None, indices=action_steps, return_list=True)
            ),
            terminateds=self.get_terminateds(),
            truncateds=self.get_truncateds(),
            env_t_started=self.env_t,
            agent_t_started={
                aid: episode.t
                for aid, episode in self.agent_episodes.items()
                if not episode.is_done
            },
            agent_episode_ids=self.agent_episode_ids,
            agent_module_ids={aid: ep.module_id for aid, ep in self.agent_episodes.items()},
            agent_to_module_mapping_fn=self.agent_to_module_mapping_fn,
            len_lookback_buffer="auto",
        )
        successor._hanging_rewards_begin = self._hanging_rewards_end.copy()
        successor._custom_data = copy.deepcopy(self.custom_data)
        return successor

    def _lookback_for_hanging_actions(self, len_lookback_buffer: int) -> int:
        """`len_lookback_buffer`, grown so that the successor reaches back to the last
        observation of each agent whose action still hangs. As RLlib 2.60, the search starts
        `len_lookback_buffer` steps back from the end, where 0 stands for the chunk's first
        env step (`get(-0)`)."""
        lookback = len_lookback_buffer
        for agent_id in self._hanging_actions_end:
            mapping = self.env_t_to_agent_t[agent_id]
            assert mapping.get(-1) == self.SKIP_ENV_TS_TAG, (
                f"agent {agent_id} has a hanging action but an observation at the last step"
            )
            for distance in range(len_lookback_buffer, len(mapping.data) + 1):
                if mapping.get(-distance) != self.SKIP_ENV_TS_TAG:
                    lookback = max(lookback, distance - 1)
                    break
        return lookback

    def slice(
        self, slice_: builtins.slice, *, len_lookback_buffer: int | None = None
    ) -> MultiAgentEpisode:
        """A new episode holding the env steps `slice_` selects (step 1 only; indices as for
        lists, clipped to the chunk), with a lookback buffer of `len_lookback_buffer` env
        steps (default: this episode's) as far as the data reaches back. `episode[a:b]` is the
        same. Every lookback buffer of this episode must have the same size."""
        if slice_.step not in (None, 1):
            raise NotImplementedError(
                f"Slicing MultiAgentEnv with a step other than 1 (you used {slice_.step}) is "
                "not supported!"
            )
        length = len(self)
        start = _clip_bound(slice_.start, length, default=0)
        stop = _clip_bound(slice_.stop, length, default=length)
        own_lookback = self._common_lookback()

        terminateds: dict[AgentID, bool] = {}
        truncateds: dict[AgentID, bool] = {}
        agent_t_started: dict[AgentID, int] = {}
        for agent_id, episode in self.agent_episodes.items():
            mapping = self.env_t_to_agent_t[agent_id]
            # The agent's done flags go along when the slice ends on its final observation.
            if (
                stop < len(mapping)
                and mapping[stop] != self.SKIP_ENV_TS_TAG
                and len(episode) == mapping[stop]
            ):
                terminateds[agent_id] = episode.is_terminated
                truncateds[agent_id] = episode.is_truncated
            for i in range(start, len(mapping)):
                if mapping[i] != self.SKIP_ENV_TS_TAG:
                    agent_t_started[agent_id] = mapping[i]
                    break
        terminateds[ALL_AGENTS] = all(terminateds.get(aid) for aid in self.agent_episodes)
        truncateds[ALL_AGENTS] = all(truncateds.get(aid) for aid in self.agent_episodes)

        lookback = len_lookback_buffer if len_lookback_buffer is not None else own_lookback
        if start - lookback < 0 and own_lookback < lookback - start:
            lookback = own_lookback + start  # as far back as the data goes
        obs_steps = slice(start - lookback, stop + 1)
        action_steps = slice(start - lookback, stop)
        sliced = MultiAgentEpisode(
            id_=self.id_,
            observations=_steps(
                self.get_observations(obs_steps, neg_index_as_lookback=True, return_list=True)
            ),
            observation_space=self.observation_space,
            actions=_steps(
                self.get_actions(action_steps, neg_index_as_lookback=True, return_list=True)
            ),
            action_space=self.action_space,
            rewards=_steps(
                self.get_rewards(action_steps, neg_index_as_lookback=True, return_list=True)
            ),
            extra_model_outputs=_steps(
                self.get_extra_model_outputs(
                    indices=action_steps, neg_index_as_lookback=True, return_list=True
                )
            ),
            terminateds=terminateds,
            truncateds=truncateds,
            len_lookback_buffer=lookback,
            env_t_started=self.env_t_started + start,
            agent_episode_ids=self.agent_episode_ids,
            agent_t_started=agent_t_started,
            agent_module_ids=self._agent_to_module_mapping,
            agent_to_module_mapping_fn=self.agent_to_module_mapping_fn,
        )
        if self.is_numpy:
            sliced.to_numpy()
        return sliced

    def _common_lookback(self) -> int:
        sizes = {
            buffer.lookback
            for episode in self.agent_episodes.values()
            for buffer in (
                episode.observations,
                episode.actions,
                episode.rewards,
                *episode.extra_model_outputs.values(),
            )
        }
        if len(sizes) > 1:
            raise ValueError(
                "Can only slice a MultiAgentEpisode if all lookback buffers in this episode "
                f"have the exact same size! (sizes: {sorted(sizes)})"
            )
        return sizes.pop() if sizes else 0

    def __getitem__(self, item: builtins.slice) -> MultiAgentEpisode:
        if isinstance(item, slice):
            return self.slice(slice_=item)
        raise NotImplementedError(
            f"MultiAgentEpisode does not support getting item '{item}'! Only slice objects "
            "allowed with the syntax: `episode[a:b]`."
        )

    def concat_episode(self, other: MultiAgentEpisode) -> None:
        """Appends `other`, this episode's successor chunk, in place: same `id_`, starting at
        this chunk's `env_t`. Each agent's single-agent episodes are concatenated; an agent
        whose action hangs at the boundary completes that step with its first observation in
        `other`."""
        assert other.id_ == self.id_, f"concat_episode(): ids differ ({self.id_} vs {other.id_})"
        assert not self.is_done, "concat_episode() onto a finished episode"
        assert self.env_t == other.env_t_started, (
            f"concat_episode(): this chunk ends at env_t={self.env_t}, the other starts at "
            f"env_t_started={other.env_t_started}"
        )
        other.validate()
        for agent_id in self.agent_ids | other.agent_ids:
            episode = self.agent_episodes.get(agent_id)
            if episode is None:
                self._take_agent(agent_id, other)
            elif episode.is_done:
                continue  # `other` holds no data of an agent done in `self`
            elif agent_id in other.agent_episodes:
                self._concat_agent(agent_id, episode, other)
            else:
                self._carry_rewards(agent_id, other)
        self.env_t = other.env_t
        if other.is_terminated:
            self.is_terminated = True
        elif other.is_truncated:
            self.is_truncated = True
        # `other` follows `self`, so its custom data is the more complete one.
        self.custom_data.update(other.custom_data)
        self.validate()

    def _take_agent(self, agent_id: AgentID, other: MultiAgentEpisode) -> None:
        """An agent that first appears in `other`: its episode and mapping move over."""
        self.agent_episodes[agent_id] = other.agent_episodes[agent_id]
        self.agent_t_started[agent_id] = other.agent_t_started[agent_id]
        if agent_id not in self.env_t_to_agent_t:
            self.env_t_to_agent_t[agent_id] = other.env_t_to_agent_t[agent_id]
        else:
            # A successor's first entry repeats this chunk's last one.
            for value in other.env_t_to_agent_t[agent_id][1:]:
                self.env_t_to_agent_t[agent_id].append(value)
        if agent_id in other._hanging_rewards_begin:
            self._hanging_rewards_begin[agent_id] = other._hanging_rewards_begin[agent_id]
        self._copy_hanging_end(agent_id, other)

    def _carry_rewards(self, agent_id: AgentID, other: MultiAgentEpisode) -> None:
        """An agent of `self` without an observation in `other`: the rewards it got during
        `other` add to its hanging rewards (a `cut()` successor collects them on top of a
        copy of this chunk's, a slice on its own)."""
        if agent_id in other._hanging_rewards_begin:
            self._hanging_rewards_end[agent_id] = other._hanging_rewards_begin[agent_id]
        if agent_id in other._hanging_rewards_end:
            self._hanging_rewards_end[agent_id] += other._hanging_rewards_end[agent_id]

    def _concat_agent(
        self, agent_id: AgentID, episode: SingleAgentEpisode, other: MultiAgentEpisode
    ) -> None:
        other_episode = other.agent_episodes[agent_id]
        if agent_id in self._hanging_actions_end and other_episode.t_started == episode.t + 1:
            # The agent acted before the boundary and observed again only in `other`: that
            # observation completes the hanging step.
            episode.add_env_step(
                observation=other_episode.get_observations(0),
                action=self._hanging_actions_end.pop(agent_id),
                reward=self._hanging_rewards_end.pop(agent_id, 0.0)
                + other._hanging_rewards_begin.get(agent_id, 0.0),
                infos=other_episode.get_infos(0),
                extra_model_outputs=self._hanging_extra_model_outputs_end.pop(agent_id, None)
                or None,
            )
        if episode.actions.len_incl_lookback() == 0:
            # No step yet, so no model output keys yet either: take `other`'s (empty).
            for key in other_episode.extra_model_outputs:
                episode.extra_model_outputs.setdefault(key, InfiniteLookbackBuffer.of_list([]))
        episode.concat_episode(other_episode)
        # What hangs at the end of the concatenation is what hangs at `other`'s end.
        self._copy_hanging_end(agent_id, other)
        for value in other.env_t_to_agent_t[agent_id][1:]:
            self.env_t_to_agent_t[agent_id].append(value)

    def _copy_hanging_end(self, agent_id: AgentID, other: MultiAgentEpisode) -> None:
        """The agent's hanging action, model outputs and rewards become `other`'s (removed
        where `other` has none)."""
        for mine, theirs in (
            (self._hanging_actions_end, other._hanging_actions_end),
            (self._hanging_extra_model_outputs_end, other._hanging_extra_model_outputs_end),
            (self._hanging_rewards_end, other._hanging_rewards_end),
        ):
            if agent_id in theirs:
                mine[agent_id] = copy.deepcopy(theirs[agent_id])
            else:
                mine.pop(agent_id, None)

    # -- reading -----------------------------------------------------------------------------
    def get_observations(
        self,
        indices: Indices = None,
        agent_ids: Collection[AgentID] | AgentID | None = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
        return_list: bool = False,
    ) -> MultiAgentDict | list[MultiAgentDict]:
        """Observations at `indices`, by agent id. `indices`: an int (one env step; -1 the
        last), a list of ints or a slice (several), None (all of this chunk's). With
        `env_steps=True` (default) they count env steps, and agents without an observation
        at a step are left out (or get `fill`); with `env_steps=False` each agent's own
        steps. `agent_ids` restricts the agents; `neg_index_as_lookback` reads negative
        indices as steps before the chunk's start; `return_list=True` gives one dict per env
        step instead of lists per agent."""
        return self._get(
            "observations",
            indices,
            agent_ids,
            env_steps=env_steps,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
            return_list=return_list,
        )

    def get_infos(
        self,
        indices: Indices = None,
        agent_ids: Collection[AgentID] | AgentID | None = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> MultiAgentDict | list[MultiAgentDict]:
        """Infos at `indices` (see `get_observations`)."""
        return self._get(
            "infos",
            indices,
            agent_ids,
            env_steps=env_steps,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            return_list=return_list,
        )

    def get_actions(
        self,
        indices: Indices = None,
        agent_ids: Collection[AgentID] | AgentID | None = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
        return_list: bool = False,
    ) -> MultiAgentDict | list[MultiAgentDict]:
        """Actions at `indices` (see `get_observations`): the action each agent took at an
        env step, including actions that still wait for the agent's next observation."""
        return self._get(
            "actions",
            indices,
            agent_ids,
            env_steps=env_steps,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
            return_list=return_list,
        )

    def get_rewards(
        self,
        indices: Indices = None,
        agent_ids: Collection[AgentID] | AgentID | None = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: float | None = None,
        return_list: bool = False,
    ) -> MultiAgentDict | list[MultiAgentDict]:
        """Rewards at `indices` (see `get_actions`): per agent step, the rewards collected from
        its action to its next observation."""
        return self._get(
            "rewards",
            indices,
            agent_ids,
            env_steps=env_steps,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            return_list=return_list,
        )

    def get_extra_model_outputs(
        self,
        key: str | None = None,
        indices: Indices = None,
        agent_ids: Collection[AgentID] | AgentID | None = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> MultiAgentDict | list[MultiAgentDict]:
        """Extra model outputs under `key` at `indices` (see `get_actions`); with `key=None`
        every key's, as a dict per agent (and step)."""
        return self._get(
            "extra_model_outputs",
            indices,
            agent_ids,
            env_steps=env_steps,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=fill,
            return_list=return_list,
            key=key,
        )

    def _get(
        self,
        column: str,
        indices: Indices,
        agent_ids: Collection[AgentID] | AgentID | None,
        *,
        env_steps: bool,
        neg_index_as_lookback: bool,
        fill: Any,
        return_list: bool,
        one_hot_discrete: bool = False,
        key: str | None = None,
    ) -> MultiAgentDict | list[MultiAgentDict]:
        reader = _ColumnReader(
            self,
            column,
            key,
            agents=_agent_set(agent_ids) or self.agent_ids,
            fill=fill,
            one_hot_discrete=one_hot_discrete,
        )
        if not env_steps:
            if return_list:
                raise ValueError(
                    f"`MultiAgentEpisode.get_{column}()` can't be called with both "
                    "`env_steps=False` and `return_list=True`!"
                )
            return reader.by_agent_steps(indices, neg_index_as_lookback)
        if return_list:
            return reader.by_env_steps_as_list(indices, neg_index_as_lookback)
        return reader.by_env_steps(indices, neg_index_as_lookback)

    def _hanging_value(self, column: str, agent_id: AgentID) -> Any:
        """The value an agent's `column` has past its recorded steps (None if none)."""
        if column == "actions":
            return self._hanging_actions_end.get(agent_id)
        if column == "extra_model_outputs":
            return self._hanging_extra_model_outputs_end.get(agent_id)
        if column == "rewards":
            return self._hanging_rewards_end.get(agent_id)
        return None

    # -- writing -----------------------------------------------------------------------------
    def set_observations(
        self,
        *,
        new_data: MultiAgentDict,
        at_indices: Indices = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites observations of the agents in `new_data` (a dict by agent id) at
        `at_indices`, counted in each agent's own steps (as `SingleAgentEpisode`'s setter)."""
        self._set("observations", new_data, at_indices, neg_index_as_lookback)

    def set_actions(
        self,
        *,
        new_data: MultiAgentDict,
        at_indices: Indices = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites actions (see `set_observations`)."""
        self._set("actions", new_data, at_indices, neg_index_as_lookback)

    def set_rewards(
        self,
        *,
        new_data: MultiAgentDict,
        at_indices: Indices = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites rewards (see `set_observations`)."""
        self._set("rewards", new_data, at_indices, neg_index_as_lookback)

    def set_extra_model_outputs(
        self,
        *,
        key: str,
        new_data: MultiAgentDict,
        at_indices: Indices = None,
        neg_index_as_lookback: bool = False,
    ) -> None:
        """Overwrites the extra model outputs under `key` (see `set_observations`)."""
        self._set("extra_model_outputs", new_data, at_indices, neg_index_as_lookback, key=key)

    def _set(
        self,
        column: str,
        new_data: MultiAgentDict,
        at_indices: Indices,
        neg_index_as_lookback: bool,
        key: str | None = None,
    ) -> None:
        for agent_id, agent_data in new_data.items():
            episode = self.agent_episodes.get(agent_id)
            if episode is None:
                raise KeyError(f"AgentID '{agent_id}' not found in this episode.")
            if column == "extra_model_outputs":
                assert key is not None
                episode.set_extra_model_outputs(
                    key=key,
                    new_data=agent_data,
                    at_indices=at_indices,
                    neg_index_as_lookback=neg_index_as_lookback,
                )
            else:
                setter = getattr(episode, f"set_{column}")
                setter(
                    new_data=agent_data,
                    at_indices=at_indices,
                    neg_index_as_lookback=neg_index_as_lookback,
                )

    # -- conversion and state ----------------------------------------------------------------
    def to_numpy(self) -> MultiAgentEpisode:
        """Turns every agent's columns into numpy arrays (in place) and returns the episode."""
        for episode in self.agent_episodes.values():
            episode.to_numpy()
        return self

    def get_state(self) -> dict[str, Any]:
        """The episode as plain data (msgpack-able, as checkpoints store it). Maps keyed by
        agent id are lists of `[agent_id, value]` pairs (agent ids need not be strings). The
        mapping function is stored by its import path (left out, and the default used on
        restore, when it has none, e.g. a lambda); spaces without a plain-data form and
        `custom_data` that is not plain data are left out."""
        return {
            "id_": self.id_,
            "agent_to_module_mapping_fn": _function_path(self.agent_to_module_mapping_fn),
            "_agent_to_module_mapping": _pairs(self._agent_to_module_mapping),
            "observation_space": _spaces_state(self.observation_space),
            "action_space": _spaces_state(self.action_space),
            "env_t_started": self.env_t_started,
            "env_t": self.env_t,
            "len_lookback_buffers": self._len_lookback_buffers,
            "agent_t_started": _pairs(self.agent_t_started),
            "env_t_to_agent_t": [
                [aid, {"data": list(mapping.data), "lookback": mapping.lookback}]
                for aid, mapping in self.env_t_to_agent_t.items()
            ],
            "_hanging_actions_end": _pairs(self._hanging_actions_end),
            "_hanging_extra_model_outputs_end": _pairs(self._hanging_extra_model_outputs_end),
            "_hanging_rewards_end": _pairs(self._hanging_rewards_end),
            "_hanging_rewards_begin": _pairs(self._hanging_rewards_begin),
            "is_terminated": self.is_terminated,
            "is_truncated": self.is_truncated,
            "agent_episodes": [
                [aid, episode.get_state()] for aid, episode in self.agent_episodes.items()
            ],
            "_start_time": self._start_time,
            "_last_step_time": self._last_step_time,
            "custom_data": self.custom_data if is_plain_data(self.custom_data) else {},
        }

    @staticmethod
    def from_state(state: dict[str, Any]) -> MultiAgentEpisode:
        """The episode `get_state()` described."""
        episode = MultiAgentEpisode(id_=state["id_"])
        episode.agent_to_module_mapping_fn = _function_from_path(
            state["agent_to_module_mapping_fn"]
        )
        episode._agent_to_module_mapping = dict(state["_agent_to_module_mapping"])
        episode.observation_space = _spaces_from_state(state["observation_space"])
        episode.action_space = _spaces_from_state(state["action_space"])
        episode.env_t_started = state["env_t_started"]
        episode.env_t = state["env_t"]
        episode._len_lookback_buffers = state.get("len_lookback_buffers", 0)
        episode.agent_t_started = defaultdict(int, dict(state["agent_t_started"]))
        episode.env_t_to_agent_t = defaultdict(InfiniteLookbackBuffer)
        for agent_id, mapping_state in state["env_t_to_agent_t"]:
            mapping = InfiniteLookbackBuffer(list(mapping_state["data"]))
            mapping.lookback = mapping_state["lookback"]
            episode.env_t_to_agent_t[agent_id] = mapping
        episode._hanging_actions_end = dict(state["_hanging_actions_end"])
        episode._hanging_extra_model_outputs_end = defaultdict(
            dict, dict(state["_hanging_extra_model_outputs_end"])
        )
        episode._hanging_rewards_end = defaultdict(float, dict(state["_hanging_rewards_end"]))
        episode._hanging_rewards_begin = defaultdict(float, dict(state["_hanging_rewards_begin"]))
        episode.is_terminated = state["is_terminated"]
        episode.is_truncated = state["is_truncated"]
        episode.agent_episodes = {
            agent_id: SingleAgentEpisode.from_state(agent_state)
            for agent_id, agent_state in state["agent_episodes"]
        }
        episode._start_time = state["_start_time"]
        episode._last_step_time = state["_last_step_time"]
        episode._custom_data = dict(state.get("custom_data") or {})
        episode.validate()
        return episode

    def get_sample_batch(self) -> Any:
        """RLlib's conversion to its old API stack's `MultiAgentBatch`, which this project does
        not have."""
        raise UnsupportedCall(
            "MultiAgentEpisode.get_sample_batch(): RLlib's old API stack's MultiAgentBatch "
            "does not exist here; read the agents' data with the getters or "
            "`agent_episodes[agent_id]`",
            OLD_API_STACK,
        )

    def add_temporary_timestep_data(self, key: str, data: Any) -> None:
        """Removed in RLlib 2.60 (it raises there too): use `custom_data`."""
        raise NotImplementedError(
            "MultiAgentEpisode.add_temporary_timestep_data() was removed in RLlib; use "
            "`episode.custom_data[some_key] = ...` instead"
        )

    def get_temporary_timestep_data(self, key: str) -> list:
        """Removed in RLlib 2.60 (it raises there too): use `custom_data`."""
        raise NotImplementedError(
            "MultiAgentEpisode.get_temporary_timestep_data() was removed in RLlib; use "
            "`episode.custom_data[some_key]` instead"
        )

    # -- display -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        returns = {aid: episode.get_return() for aid, episode in self.agent_episodes.items()}
        return f"MAEps(len={len(self)} done={self.is_done} Rs={returns} id_={self.id_})"

    def print(self) -> None:
        """Prints which agent stepped at which env step (an "x"), lookback steps numbered
        negative."""
        if not self.env_t_to_agent_t:
            print("ts")
            return
        width = max(mapping.len_incl_lookback() for mapping in self.env_t_to_agent_t.values())
        lookback = next(iter(self.env_t_to_agent_t.values())).lookback
        name_width = max(len(str(aid)) for aid in self.env_t_to_agent_t)
        header = (
            "ts" + " " * name_width + "   ".join(str(t) for t in range(-lookback, width - lookback))
        )
        rows = []
        for agent_id, mapping in self.env_t_to_agent_t.items():
            row = f"{agent_id}  " + " " * (name_width - len(str(agent_id)))
            row += "".join("    " if t == self.SKIP_ENV_TS_TAG else " x  " for t in mapping.data)
            rows.append(row.rstrip())
        print(header + "\n" + "\n".join(rows))


class _EpisodeFromData:
    """Fills a new `MultiAgentEpisode` from per-env-step lists of dicts (the constructor's
    data): splits them into each agent's single-agent data, builds `env_t_to_agent_t` and the
    hanging values, and creates the single-agent episodes."""

    def __init__(self, episode: MultiAgentEpisode):
        self.episode = episode
        self.observations: defaultdict[AgentID, list] = defaultdict(list)
        self.infos: defaultdict[AgentID, list] = defaultdict(list)
        self.actions: defaultdict[AgentID, list] = defaultdict(list)
        self.rewards: defaultdict[AgentID, list] = defaultdict(list)
        self.extra_model_outputs: defaultdict[AgentID, list] = defaultdict(list)
        self.done: defaultdict[AgentID, bool] = defaultdict(bool)
        lookback = episode._len_lookback_buffers
        self.lookback_per_agent: defaultdict[AgentID, int] = defaultdict(lambda: lookback)

    def build(
        self,
        *,
        observations: list[MultiAgentDict],
        infos: list[MultiAgentDict] | None,
        actions: list[MultiAgentDict] | None,
        rewards: list[MultiAgentDict] | None,
        extra_model_outputs: list[MultiAgentDict] | None,
        terminateds: dict,
        truncateds: dict,
        agent_episode_ids: dict[AgentID, str] | None,
        agent_module_ids: dict[AgentID, ModuleID | None],
    ) -> None:
        if actions is None:
            assert not rewards and not extra_model_outputs, (
                "MultiAgentEpisode(): rewards or extra_model_outputs given without actions"
            )
            actions, rewards, extra_model_outputs = [], [], []
        rewards = rewards or []
        if infos is None:
            infos = [{} for _ in observations]
        if extra_model_outputs is None:
            extra_model_outputs = [{} for _ in actions]
        self._split_steps(
            observations,
            infos,
            actions,
            rewards,
            extra_model_outputs,
            terminateds,
            truncateds,
            known_agents=set(agent_episode_ids or ()),
        )
        self._finish_mappings()
        self._make_agent_episodes(terminateds, truncateds, agent_episode_ids, agent_module_ids)

    def _first_agent_steps(self, observations: list[MultiAgentDict]) -> dict[AgentID, int]:
        """The agent timestep of each agent's first observation in the lookback buffer
        (RLlib 2.60): agent timesteps count up to `agent_t_started`, which is the agent's
        first observation after the lookback, or its last one when its action still hangs."""
        episode = self.episode
        in_lookback: defaultdict[AgentID, int] = defaultdict(int)
        total: defaultdict[AgentID, int] = defaultdict(int)
        for step, obs in enumerate(observations):
            for agent_id in obs:
                total[agent_id] += 1
                if step < episode._len_lookback_buffers:
                    in_lookback[agent_id] += 1
        first = {}
        for agent_id, count in in_lookback.items():
            after_lookback = total[agent_id] - count
            first[agent_id] = (
                episode.agent_t_started[agent_id] - count + (0 if after_lookback > 0 else 1)
            )
        return first

    def _split_steps(
        self,
        observations: list[MultiAgentDict],
        infos: list[MultiAgentDict],
        actions: list[MultiAgentDict],
        rewards: list[MultiAgentDict],
        extra_model_outputs: list[MultiAgentDict],
        terminateds: dict,
        truncateds: dict,
        known_agents: set[AgentID],
    ) -> None:
        episode = self.episode
        skip = episode.SKIP_ENV_TS_TAG
        agent_t = self._first_agent_steps(observations)
        all_agents = set(known_agents)
        for step, (obs, info) in enumerate(zip(observations, infos, strict=False)):
            # Data of the step's last observation (actions without a next observation) hang.
            step_actions = actions[step] if step < len(actions) else {}
            step_outputs = extra_model_outputs[step] if step < len(extra_model_outputs) else {}
            step_rewards = rewards[step] if step < len(rewards) else {}
            for agent_id, agent_obs in obs.items():
                all_agents.add(agent_id)
                self.observations[agent_id].append(agent_obs)
                self.infos[agent_id].append(info.get(agent_id, {}))
                if len(self.observations[agent_id]) > 1:
                    # This observation completes the step begun by the hanging action.
                    self.actions[agent_id].append(episode._hanging_actions_end.pop(agent_id))
                    self.extra_model_outputs[agent_id].append(
                        episode._hanging_extra_model_outputs_end.pop(agent_id)
                    )
                    self.rewards[agent_id].append(episode._hanging_rewards_end.pop(agent_id))
                elif agent_id not in episode.env_t_to_agent_t:
                    episode.env_t_to_agent_t[agent_id].extend([skip] * step)
                    self.lookback_per_agent[agent_id] -= step
                if agent_id in step_actions:
                    episode._hanging_actions_end[agent_id] = step_actions[agent_id]
                    episode._hanging_extra_model_outputs_end[agent_id] = step_outputs.get(
                        agent_id, {}
                    )
                    episode._hanging_rewards_end[agent_id] += step_rewards.get(agent_id, 0.0)
                elif terminateds.get(agent_id) or truncateds.get(agent_id):
                    self.done[agent_id] = True
                elif step < len(observations) - 1:
                    # No action on an observation before the last: the agent ended here.
                    self.done[agent_id] = terminateds[agent_id] = True
                if agent_id not in agent_t:
                    agent_t[agent_id] = episode.agent_t_started.get(agent_id, 0)
                episode.env_t_to_agent_t[agent_id].append(agent_t[agent_id])
                agent_t[agent_id] += 1
            for agent_id in all_agents:
                if agent_id not in obs and agent_id not in self.done:
                    episode.env_t_to_agent_t[agent_id].append(skip)
                    if len(episode.env_t_to_agent_t[agent_id]) - episode._len_lookback_buffers <= 0:
                        self.lookback_per_agent[agent_id] -= 1
                    episode._hanging_rewards_end[agent_id] += step_rewards.get(agent_id, 0.0)

    def _finish_mappings(self) -> None:
        episode = self.episode
        for agent_id in list(episode.env_t_to_agent_t):
            if agent_id not in self.observations:
                del episode.env_t_to_agent_t[agent_id]
                continue
            assert (
                len(self.observations[agent_id])
                == len(self.infos[agent_id])
                == len(self.actions[agent_id]) + 1
                == len(self.extra_model_outputs[agent_id]) + 1
                == len(self.rewards[agent_id]) + 1
            ), f"MultiAgentEpisode(): agent {agent_id}'s data does not fit together"
            episode.env_t_to_agent_t[agent_id].lookback = episode._len_lookback_buffers

    def _make_agent_episodes(
        self,
        terminateds: dict,
        truncateds: dict,
        agent_episode_ids: dict[AgentID, str] | None,
        agent_module_ids: dict[AgentID, ModuleID | None],
    ) -> None:
        episode = self.episode
        for agent_id, agent_observations in self.observations.items():
            if len(agent_observations) == 1 and self.done.get(agent_id):
                # Only a final observation: nothing to record for this agent.
                _forget_agent(episode, agent_id)
                continue
            outputs = self.extra_model_outputs[agent_id]
            episode.agent_episodes[agent_id] = SingleAgentEpisode(
                (agent_episode_ids or {}).get(agent_id),
                agent_id=agent_id,
                module_id=agent_module_ids.get(
                    agent_id, episode.agent_to_module_mapping_fn(agent_id, episode)
                ),
                multi_agent_episode_id=episode.id_,
                observations=agent_observations,
                observation_space=_space_of(episode.observation_space, agent_id),
                infos=self.infos[agent_id],
                actions=self.actions[agent_id],
                action_space=_space_of(episode.action_space, agent_id),
                rewards=self.rewards[agent_id],
                extra_model_outputs=(
                    {key: [step[key] for step in outputs] for key in outputs[0]}
                    if outputs
                    else None
                ),
                terminated=bool(terminateds.get(agent_id, False)),
                truncated=bool(truncateds.get(agent_id, False)),
                t_started=episode.agent_t_started[agent_id],
                len_lookback_buffer=max(self.lookback_per_agent[agent_id], 0),
            )


class _ColumnReader:
    """Reads one column (`observations`, `infos`, `actions`, `rewards` or
    `extra_model_outputs`, optionally one key of it) of a `MultiAgentEpisode` for a set of
    agents, by env steps or by agent steps (the getters' common work)."""

    def __init__(
        self,
        episode: MultiAgentEpisode,
        column: str,
        key: str | None,
        *,
        agents: set[AgentID],
        fill: Any,
        one_hot_discrete: bool,
    ):
        self.episode = episode
        self.column = column
        self.key = key
        self.agents = agents
        self.fill = fill
        self.one_hot = {"one_hot_discrete": True} if one_hot_discrete else {}
        # Actions, rewards and model outputs exist for all but an agent's latest observation.
        self.ignore_last = column not in _OBSERVATION_TIME_COLUMNS

    def _selected(self) -> list[tuple[AgentID, SingleAgentEpisode]]:
        return [(aid, ep) for aid, ep in self.episode.agent_episodes.items() if aid in self.agents]

    # -- by agent steps ----------------------------------------------------------------------
    def by_agent_steps(self, indices: Indices, neg_index_as_lookback: bool) -> MultiAgentDict:
        result = {}
        for agent_id, agent_episode in self._selected():
            hanging = self.episode._hanging_value(self.column, agent_id)
            column = getattr(agent_episode, self.column)
            if self.column == "extra_model_outputs" and self.key is None:
                value: Any = {
                    key: buffer.get(
                        indices,
                        neg_index_as_lookback=neg_index_as_lookback,
                        fill=self.fill,
                        _add_last_ts_value=None if hanging is None else hanging.get(key),
                    )
                    for key, buffer in column.items()
                }
            else:
                if self.key is not None:
                    column = column[self.key]
                    hanging = None if hanging is None else hanging.get(self.key)
                value = column.get(
                    indices,
                    neg_index_as_lookback=neg_index_as_lookback,
                    fill=self.fill,
                    _add_last_ts_value=hanging,
                    **self.one_hot,
                )
            if value is None or (isinstance(value, (list, dict)) and not value):
                continue
            result[agent_id] = value
        return result

    # -- by env steps ------------------------------------------------------------------------
    def _positions(
        self, agent_id: AgentID, indices: Indices, neg_index_as_lookback: bool, fill_skips: bool
    ) -> Any:
        """The agent's data positions (into its buffers, lookback included) at the env steps
        `indices` selects: an int, or a list for list/slice/None indices; "S" where the agent
        has no data at that step. Raises IndexError for an int index outside the env steps
        unless `fill_skips`."""
        skip = self.episode.SKIP_ENV_TS_TAG
        agent_steps = self.episode.env_t_to_agent_t[agent_id].get(
            indices,
            neg_index_as_lookback=neg_index_as_lookback,
            fill=skip if fill_skips else None,
            _ignore_last_ts=self.ignore_last,
        )
        agent_episode = self.episode.agent_episodes[agent_id]
        offset = agent_episode.observations.lookback - self.episode.agent_t_started.get(agent_id, 0)
        # One position past the agent's data (plus a hanging value) is its latest observation,
        # which has no action yet.
        end = self._data_end(agent_id)

        def position(agent_step: Any) -> Any:
            if agent_step == skip:
                return skip
            pos = agent_step + offset
            return skip if self.ignore_last and pos == end else pos

        if isinstance(agent_steps, list):
            return [position(step) for step in agent_steps]
        return position(agent_steps)

    def _data_end(self, agent_id: AgentID) -> int | None:
        """The number of items (lookback and hanging value included) in the agent's column:
        the first position without data. None when the column has no buffer."""
        column = getattr(self.episode.agent_episodes[agent_id], self.column)
        key = self.key
        if isinstance(column, dict) and key is None:
            if not column:
                return None
            key = next(iter(column))
        buffer, hanging = self._buffer_and_hanging(agent_id, key)
        return buffer.len_incl_lookback() + (hanging is not None)

    def by_env_steps(self, indices: Indices, neg_index_as_lookback: bool) -> MultiAgentDict:
        result = {}
        for agent_id, _ in self._selected():
            positions = self._positions(
                agent_id, indices, neg_index_as_lookback, fill_skips=self.fill is not None
            )
            if isinstance(positions, list):
                values = self._values_at(agent_id, positions)
                if len(values) > 0:
                    result[agent_id] = values
            else:
                value = self._value_at(agent_id, positions)
                if value is not None:
                    result[agent_id] = value
        return result

    def by_env_steps_as_list(
        self, indices: Indices, neg_index_as_lookback: bool
    ) -> list[MultiAgentDict]:
        positions_per_agent = {
            agent_id: self._positions(agent_id, indices, neg_index_as_lookback, fill_skips=True)
            for agent_id, _ in self._selected()
        }
        if not positions_per_agent:
            return []
        num_steps = len(next(iter(positions_per_agent.values())))
        steps: list[MultiAgentDict] = []
        for i in range(num_steps):
            step = {}
            for agent_id, positions in positions_per_agent.items():
                if (
                    self.column == "extra_model_outputs"
                    and not self.episode.agent_episodes[agent_id].extra_model_outputs
                    and not self.episode._hanging_value(self.column, agent_id)
                ):
                    continue
                value = self._value_at(agent_id, positions[i])
                if value is not None:
                    step[agent_id] = value
            steps.append(step)
        return steps

    def _buffer_and_hanging(
        self, agent_id: AgentID, key: str | None
    ) -> tuple[InfiniteLookbackBuffer, Any]:
        column = getattr(self.episode.agent_episodes[agent_id], self.column)
        hanging = self.episode._hanging_value(self.column, agent_id)
        if key is not None:
            hanging = None if hanging is None else hanging.get(key)
            return column.get(key, InfiniteLookbackBuffer()), hanging
        return column, hanging

    def _value_at(self, agent_id: AgentID, position: Any) -> Any:
        """The agent's value at one data position; `fill` (or None) at "S"."""
        agent_episode = self.episode.agent_episodes[agent_id]
        if position == self.episode.SKIP_ENV_TS_TAG:
            if self.fill is None:
                return None
            return self._fill_item(agent_episode)
        if self.column == "extra_model_outputs" and self.key is None:
            hanging = self.episode._hanging_value(self.column, agent_id) or {}
            keys = agent_episode.extra_model_outputs or hanging
            return {key: self._read(agent_id, key, position) for key in keys}
        return self._read(agent_id, self.key, position)

    def _read(self, agent_id: AgentID, key: str | None, position: int) -> Any:
        buffer, hanging = self._buffer_and_hanging(agent_id, key)
        return buffer.get(
            position - buffer.lookback,
            neg_index_as_lookback=True,
            fill=self.fill,
            _add_last_ts_value=hanging,
            **self.one_hot,
        )

    def _fill_item(self, agent_episode: SingleAgentEpisode) -> Any:
        """One `fill` item shaped like the column's space (for observations and actions)."""
        if self.column in ("observations", "actions"):
            return getattr(agent_episode, self.column).get(
                _PAST_THE_END, fill=self.fill, **self.one_hot
            )
        return self.fill

    def _values_at(self, agent_id: AgentID, positions: list) -> Any:
        """The agent's values at several positions: a list (a batch once numpy'ized); "S"
        positions are left out, or filled when `fill` is given."""
        if self.column == "extra_model_outputs" and self.key is None:
            hanging = self.episode._hanging_value(self.column, agent_id) or {}
            keys = self.episode.agent_episodes[agent_id].extra_model_outputs or hanging
            per_key = {key: self._values_of_key(agent_id, key, positions) for key in keys}
            return per_key if any(len(v) for v in per_key.values()) else []
        return self._values_of_key(agent_id, self.key, positions)

    def _values_of_key(self, agent_id: AgentID, key: str | None, positions: list) -> Any:
        skip = self.episode.SKIP_ENV_TS_TAG
        buffer, hanging = self._buffer_and_hanging(agent_id, key)
        if skip in positions and self.fill is not None:
            fill_item = self._fill_item(self.episode.agent_episodes[agent_id])
            values = [
                fill_item
                if pos == skip
                else buffer.get(
                    pos - buffer.lookback,
                    neg_index_as_lookback=True,
                    fill=self.fill,
                    _add_last_ts_value=hanging,
                    **self.one_hot,
                )
                for pos in positions
            ]
            return batch(values) if self.episode.is_numpy else values
        relative = [pos - buffer.lookback for pos in positions if pos != skip]
        if not relative:
            return []
        return buffer.get(
            relative,
            neg_index_as_lookback=True,
            fill=self.fill,
            _add_last_ts_value=hanging,
            **self.one_hot,
        )


# -- helpers -------------------------------------------------------------------------------------
def _data_after_done(
    agent_id: AgentID, observation: Any, action: Any, reward: Any, info: Any, outputs: Any
) -> MultiAgentEnvError:
    """The error of an env step that gave a done agent data (RLlib's message)."""
    return MultiAgentEnvError(
        f"Agent {agent_id} already had its `SingleAgentEpisode.is_done` set to True, "
        f"but still received data in a following step! obs={observation} "
        f"act={action} rew={reward} info={info} "
        f"extra_model_outputs={outputs}."
    )


def _lookback_length(len_lookback_buffer: int | str, rewards: list | None) -> int:
    """`MultiAgentEpisode(len_lookback_buffer=...)` as a number of env steps: "auto" is every
    step given (`rewards`); anything but "auto" or an int >= 0 is refused."""
    if len_lookback_buffer == "auto":
        len_lookback_buffer = len(rewards or [])
    if not isinstance(len_lookback_buffer, int) or len_lookback_buffer < 0:
        raise ValueError(
            f"MultiAgentEpisode(len_lookback_buffer={len_lookback_buffer!r}): must be "
            "'auto' or an int >= 0"
        )
    return len_lookback_buffer


def _episode_flag(flags: MultiAgentDict | bool | None) -> bool:
    """The episode's terminated (or truncated) flag from `MultiAgentEpisode(terminateds=...)`:
    the bool as given, else the dict's `"__all__"` (False where it has none)."""
    if isinstance(flags, bool):
        return flags
    return bool((flags or {}).get(ALL_AGENTS, False))


def _agent_flags(flags: MultiAgentDict | bool | None) -> MultiAgentDict:
    """The per-agent flags of `MultiAgentEpisode(terminateds=...)`: a copy of the dict given,
    none for a bool."""
    return {} if isinstance(flags, bool) else dict(flags or {})


def _agent_set(agent_ids: Collection[AgentID] | AgentID | None) -> set[AgentID]:
    """`agent_ids` as a set: None gives an empty set, one id (a string or any non-collection)
    a set of it."""
    if agent_ids is None:
        return set()
    if isinstance(agent_ids, (list, tuple, set, frozenset)):
        return set(agent_ids)
    return {agent_ids}


def _all_in_boxes(spaces: gym.Space | dict, observations: MultiAgentDict) -> bool:
    """Whether each observation is in its agent's space, as `Box.contains` says, told at once
    where every agent's space is a `Box` of one shape and dtype and each observation an array
    of that shape and dtype (a new episode's reset: four array operations in all, not four
    per agent). False where that does not hold or some observation is out of its bounds: then
    each is checked on its own (and the first that does not fit raises)."""
    rows, lows, highs = [], [], []
    shape = dtype = None
    for agent_id, observation in observations.items():
        space = _space_of(spaces, agent_id)
        if (
            type(space) is not gym.spaces.Box
            or type(observation) is not np.ndarray
            or observation.dtype != space.dtype
            or observation.shape != space.shape
            or (shape is not None and (space.shape != shape or space.dtype != dtype))
        ):
            return False
        shape, dtype = space.shape, space.dtype
        rows.append(observation)
        lows.append(space.low)
        highs.append(space.high)
    if not rows:
        return True
    stacked = np.array(rows)
    return bool((stacked >= np.array(lows)).all() and (stacked <= np.array(highs)).all())


def _space_of(spaces: gym.Space | dict, agent_id: AgentID) -> gym.Space | None:
    """An agent's space from a dict of spaces or a `gym.spaces.Dict` (None if absent)."""
    if type(spaces) is dict:  # the EnvRunner's episodes (no ABC check: a Dict is a Mapping)
        return spaces.get(agent_id)
    if isinstance(spaces, gym.spaces.Dict):
        return spaces.spaces.get(agent_id)
    if isinstance(spaces, dict):
        return spaces.get(agent_id)
    return None


def _clip_bound(bound: int | None, length: int, *, default: int) -> int:
    """A slice bound as a position in 0..length (negative: from the end)."""
    if bound is None:
        return default
    if bound < 0:
        return max(length + bound, 0)
    return min(bound, length)


def _forget_agent(episode: MultiAgentEpisode, agent_id: AgentID) -> None:
    """Removes every trace of `agent_id` from `episode`."""
    for store in (
        episode._hanging_rewards_begin,
        episode._hanging_actions_end,
        episode._hanging_extra_model_outputs_end,
        episode._hanging_rewards_end,
        episode.agent_episodes,
        episode.env_t_to_agent_t,
        episode._agent_to_module_mapping,
        episode.agent_t_started,
    ):
        store.pop(agent_id, None)


def _steps(values: MultiAgentDict | list[MultiAgentDict]) -> list[MultiAgentDict]:
    """A getter's `return_list=True` result, typed as the list it is."""
    assert isinstance(values, list)
    return values


def _pairs(mapping: dict) -> list[list]:
    return [[key, value] for key, value in mapping.items()]


def _spaces_state(spaces: gym.Space | dict) -> dict | None:
    """Spaces as plain data: one space (a `gym.spaces.Dict` by agent), or per-agent pairs."""
    try:
        if isinstance(spaces, gym.Space):
            return {"space": space_to_dict(spaces)}
        return {"per_agent": [[aid, space_to_dict(space)] for aid, space in spaces.items()]}
    except TypeError:
        return None  # a space without a plain-data form is left out of the state


def _spaces_from_state(state: dict | None) -> gym.Space | dict:
    if not state:
        return {}
    if "space" in state:
        return space_from_dict(state["space"]) or {}
    return {aid: space_from_dict(space) for aid, space in state["per_agent"]}


def _function_path(function: Callable) -> str | None:
    """`module:qualname` of a function importable by that path (None otherwise)."""
    module, qualname = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    if not module or "<" in qualname:
        return None
    try:
        return (
            f"{module}:{qualname}"
            if _function_from_path(f"{module}:{qualname}") is function
            else None
        )
    except (ImportError, AttributeError):
        return None


def _function_from_path(path: str | None) -> Callable:
    if path is None:
        return default_agent_to_module_mapping_fn
    module_name, qualname = path.split(":", 1)
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target
