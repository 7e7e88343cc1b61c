"""`AgentColumns`: a new multi-agent episode's reset and steps, recorded by column per agent;
the columns become the episode's agents' buffers as they are.

The MultiAgentEnvRunner records a sub-env's episode into its `MultiAgentEpisode` step by step
only where something reads the episode's data while it runs (an `on_episode_start` or
`on_episode_step` callback). Otherwise a new episode's reset and steps go into its
`AgentColumns`, one list per agent and field, and so do the steps of an episode continued from
an earlier `sample()` call (the chunk `cut()` made, whose agents' buffers already hold their
last observations: `AgentColumns.continuing`):

    observations        per agent: its reset observation (a new episode only), then one per
                        step
    infos               per agent: its reset info (a new episode only), then one per step
                        (`{}` where it got none); until a step brings infos, only the
                        reset's (most envs return none: no work per step)
    actions, rewards    per agent: one per step
    action_logp,        per agent: one per step (the action draw's two model outputs,
                        whatever the algorithm)
    action_dist_inputs
    ends                per agent that is done: its terminated / truncated flags and the
                        time of its last step (the others step to the episode's end)

An agent's steps are rows `0..len(actions)` of its columns. `MultiAgentEpisode.fill_columns`
hands a new episode's lists to the agents' `SingleAgentEpisode`s as their buffers' data (no
copy), `MultiAgentEpisode.extend_columns` appends a continued one's to its agents' buffers,
when the episode ends, when `sample()` returns (a chunk, or the state of a running episode),
or before a step the columns cannot hold; from then on the episode's object records its steps.

The episode object exists from the start, so `on_episode_created`, the policy mapping function
and the runner's own reads of it (`module_for`) see the same object, id and `custom_data`.

The columns hold only plain steps: the sampling loop's common step, which
`MultiAgentEpisode.add_sampled_env_step` records on its fast path. The agents that acted are
exactly those with a next observation, each has a reward, only they (and "__all__") have done
flags, the infos are a dict, and the model outputs are the action draw's two (log-prob and
distribution inputs). In an episode of only such steps every agent observes at the reset and
acts from the first step until its own end (or the episode's). A step that is not plain (an
agent joins, one acts without a next observation, a module returns other outputs, a failed
sub-env's empty step) is not taken: the runner fills the episode first and records that step,
and the rest of the episode, through the episode's own methods.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from trainer.env.multi_agent_episode import ALL_AGENTS, MultiAgentEpisode, plain_layout

#: `AgentColumns.step_done` after a step in which no agent is done (shared, never changed).
_NONE_DONE: frozenset = frozenset()


class AgentColumns:
    """The reset and plain steps of one new episode, by agent and column (see the module
    docstring); what `MultiAgentEpisode.fill_columns` reads."""

    __slots__ = (
        "observations",
        "infos",
        "actions",
        "rewards",
        "action_logp",
        "action_dist_inputs",
        "ends",
        "num_steps",
        "first_actors",
        "is_terminated",
        "is_truncated",
        "start_time",
        "last_step_time",
        "continues",
        "step_done",
        "_running",
        "_infos_seen",
        "_appenders",
    )

    def __init__(self, episode: MultiAgentEpisode, observations: dict, infos: dict | None):
        """The columns of `episode` (new, empty) starting at a reset that returned
        `observations` and `infos`, which are checked as `add_env_reset` checks them."""
        episode.check_reset(observations, infos)
        self._start(observations, continues=False)
        infos = infos or {}
        for agent_id, observation in observations.items():
            self.observations[agent_id].append(observation)
            self.infos[agent_id].append(infos.get(agent_id) or {})

    @classmethod
    def continuing(cls, episode: MultiAgentEpisode, agents: list) -> AgentColumns | None:
        """The columns of `episode`, a chunk continued from an earlier `sample()` call
        (`cut()`, no steps yet), whose `agents` act next; None where its next steps are not
        the columns' to record: something hangs (an action, a reward), an acting agent has
        no running single-agent episode, or an agent's buffers are not plain recording lists
        with the action draw's two model outputs (or none yet)."""
        if not agents or not episode.continues_plainly(agents):
            return None
        columns = cls.__new__(cls)
        columns._start(agents, continues=True)
        return columns

    def _start(self, agents: Iterable, *, continues: bool) -> None:
        """Empty columns for `agents`, before a new episode's reset or a continued one's
        first step."""
        self.observations: dict[Any, list] = {aid: [] for aid in agents}
        self.infos: dict[Any, list] = {aid: [] for aid in agents}
        self.actions: dict[Any, list] = {aid: [] for aid in agents}
        self.rewards: dict[Any, list] = {aid: [] for aid in agents}
        self.action_logp: dict[Any, list] = {aid: [] for aid in agents}
        self.action_dist_inputs: dict[Any, list] = {aid: [] for aid in agents}
        #: Per agent that is done: (terminated, truncated, the time of its last step).
        self.ends: dict[Any, tuple[bool, bool, float]] = {}
        self.num_steps = 0
        #: The agents of the first step, in its order.
        self.first_actors: tuple = ()
        #: The episode's flags and time after the last step.
        self.is_terminated = False
        self.is_truncated = False
        self.start_time = time.perf_counter()
        self.last_step_time: float | None = None
        #: Agents not yet done.
        self._running = len(self.actions)
        #: The agents done in the last step recorded (they act no more).
        self.step_done: set | frozenset = _NONE_DONE
        #: Per agent: the `append` of its observations, actions, rewards, log-probs and
        #: distribution inputs (what `record` writes each step).
        self._appenders = {
            agent_id: (
                self.observations[agent_id].append,
                self.actions[agent_id].append,
                self.rewards[agent_id].append,
                self.action_logp[agent_id].append,
                self.action_dist_inputs[agent_id].append,
            )
            for agent_id in self.actions
        }
        #: Whether a step brought infos (until then the steps' infos are left out: `{}`s).
        self._infos_seen = False
        #: Whether the episode began in an earlier chunk (no reset in the columns).
        self.continues = continues

    def record(
        self,
        observations: dict,
        actions: Any,
        rewards: dict,
        infos: Any,
        terminateds: dict,
        truncateds: dict,
        action_logps: Any,
        action_dist_inputs: Any,
        agents: list | None = None,
    ) -> bool | None:
        """Appends a plain step to its agents' columns and returns whether the episode ended
        with it; returns None (and records nothing) for a step that is not plain.
        `actions`, `action_logps` and `action_dist_inputs` are the acting agents' as dicts by
        agent id, or, given `agents` (the acting agents, distinct), as lists in its order:
        the rows of the runner's forward pass as they come, no dicts made per step."""
        if agents is None:
            if not (action_logps.keys() == actions.keys() == action_dist_inputs.keys()):
                return None  # not the action draw's two outputs for each acting agent
            agents = list(actions)
            actions = list(actions.values())
            action_logps = [action_logps[agent_id] for agent_id in agents]
            action_dist_inputs = [action_dist_inputs[agent_id] for agent_id in agents]
        if type(infos) is not dict or not plain_layout(
            observations, set(agents), rewards, terminateds, truncateds
        ):
            return None
        if infos and not self._infos_seen:
            self._catch_up_infos()
            self._infos_seen = True
        if self._infos_seen:
            columns = self.infos
            for agent_id in observations:
                info = infos.get(agent_id)
                columns[agent_id].append({} if info is None else info)
        # One loop over the step's agents, through each agent's appenders (see `_start`).
        appenders = self._appenders
        for agent_id, action, logp, dist_inputs in zip(
            agents, actions, action_logps, action_dist_inputs, strict=True
        ):
            add_observation, add_action, add_reward, add_logp, add_dist_inputs = appenders[agent_id]
            add_observation(observations[agent_id])
            add_action(action)
            add_reward(rewards[agent_id] or 0.0)  # (a zero reward as step by step: 0.0)
            add_logp(logp)
            add_dist_inputs(dist_inputs)
        self.num_steps += 1
        if self.num_steps == 1:
            self.first_actors = tuple(observations)
        now = self.last_step_time = time.perf_counter()
        # As `MultiAgentEpisode._record_plain_step`: "__all__" ends the episode, and so does
        # every agent being done (then as terminated).
        is_terminated = bool(terminateds.get(ALL_AGENTS, False))
        is_truncated = bool(truncateds.get(ALL_AGENTS, False))
        if any(terminateds.values()) or any(truncateds.values()):
            ending = [
                agent_id
                for agent_id in observations
                if terminateds.get(agent_id, False) or truncateds.get(agent_id, False)
            ]
            self._running -= len(ending)
            if not is_terminated:
                is_terminated = self._running == 0
            for agent_id in ending:
                self.ends[agent_id] = (
                    bool(terminateds.get(agent_id, False)) or is_terminated,
                    bool(truncateds.get(agent_id, False)) or is_truncated,
                    now,
                )
            self.step_done = set(ending)
        else:
            self.step_done = _NONE_DONE
        self.is_terminated = is_terminated
        self.is_truncated = is_truncated
        return is_terminated or is_truncated

    def _catch_up_infos(self) -> None:
        """Gives each agent's infos column a `{}` for each of its steps so far without one
        (until a step brings infos, the infos columns hold only the reset's)."""
        actions = self.actions
        reset = 0 if self.continues else 1
        for agent_id, infos in self.infos.items():
            missing = len(actions[agent_id]) + reset - len(infos)
            if missing:
                infos.extend([{} for _ in range(missing)])

    def fill(self, episode: MultiAgentEpisode) -> dict[Any, int]:
        """Hands the columns to `episode` (the one they were made for); returns each agent's
        steps."""
        if not self._infos_seen:
            self._catch_up_infos()
        if self.continues:
            episode.extend_columns(self)
        else:
            episode.fill_columns(self)
        return {agent_id: len(actions) for agent_id, actions in self.actions.items()}
