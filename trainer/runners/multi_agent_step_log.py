"""`StepLog`: a new multi-agent episode's reset and steps, kept as the env returned them until
the episode's object is filled in one go.

The MultiAgentEnvRunner records a sub-env's episode into its `MultiAgentEpisode` step by step
only where something reads the episode's data while it runs (an `on_episode_start` or
`on_episode_step` callback). Otherwise a new episode's reset and steps go into a `StepLog`:

    reset           the observation and info dicts, checked as `add_env_reset` checks them
    each env step   one tuple: the dicts the env returned, the runner's action and model
                    output dicts, the episode's done flags after the step and the time
                    (no work per agent)
    filled          `MultiAgentEpisode.fill_plain_steps` writes each agent's columns as one
                    list each, when the episode ends, when `sample()` returns (a chunk, or
                    the state of a running episode), or before a step the log cannot hold

The episode object exists from the start, so `on_episode_created`, the policy mapping function
and the runner's own reads of it (`module_for`) see the same object, id and `custom_data`.

A log holds only plain steps: the sampling loop's common step, which
`MultiAgentEpisode.add_sampled_env_step` records on its fast path. The agents that acted are
exactly those with a next observation, each has a reward, only they (and "__all__") have done
flags, the infos are a dict, and the model outputs are PPO's and DQN's two (log-prob and
distribution inputs). The log keeps copies of the env's dicts (not their values, which
the episode keeps as they are, as it does when it records step by step). In an episode of
only such steps every agent observes at the reset and
acts from the first step until its own end (or the episode's): its steps are a prefix of the
episode's. A step that is not plain (an agent joins, one acts without a next observation, a
module returns other outputs, a failed sub-env's empty step) is not logged: the runner fills
the episode first and records that step, and the rest of the episode, through the episode's
own methods.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from trainer.env.multi_agent_episode import ALL_AGENTS, MultiAgentEpisode, plain_step_layout


class PlainStep(NamedTuple):
    """One logged env step (what `MultiAgentEpisode.add_sampled_env_step` takes, plus the
    episode's done flags after it and when it was taken)."""

    observations: dict
    actions: dict
    rewards: dict
    infos: dict
    terminateds: dict
    truncateds: dict
    action_logps: dict
    action_dist_inputs: dict
    is_terminated: bool
    is_truncated: bool
    time: float


class StepLog:
    """The reset and plain steps of one new episode (see the module docstring)."""

    __slots__ = ("observations", "infos", "reset_time", "steps", "ended_at")

    def __init__(self, episode: MultiAgentEpisode, observations: dict, infos: dict | None):
        """The log of `episode` (new, empty) starting at a reset that returned `observations`
        and `infos`, which are checked as `add_env_reset` checks them."""
        episode.check_reset(observations, infos)
        self.observations = dict(observations)
        self.infos = dict(infos or {})
        self.reset_time = time.perf_counter()
        self.steps: list[PlainStep] = []
        #: The agents that are done: after how many steps (the others step to the end; the
        #: episode also ends once every agent is done).
        self.ended_at: dict[Any, int] = {}

    def record(
        self,
        observations: dict,
        actions: dict,
        rewards: dict,
        infos: Any,
        terminateds: dict,
        truncateds: dict,
        action_logps: dict,
        action_dist_inputs: dict,
    ) -> bool | None:
        """Logs a plain step and returns whether the episode ended with it; returns None (and
        logs nothing) for a step that is not plain."""
        if type(infos) is not dict or not plain_step_layout(
            observations, actions, rewards, terminateds, truncateds
        ):
            return None
        # As `MultiAgentEpisode._record_plain_step`: "__all__" ends the episode, and so does
        # every agent being done (then as terminated).
        is_terminated = bool(terminateds.get(ALL_AGENTS, False))
        is_truncated = bool(truncateds.get(ALL_AGENTS, False))
        if any(terminateds.values()) or any(truncateds.values()):
            ended_at = self.ended_at
            for agent_id in observations:
                if terminateds.get(agent_id, False) or truncateds.get(agent_id, False):
                    ended_at[agent_id] = len(self.steps) + 1
            if not is_terminated:
                is_terminated = len(ended_at) == len(self.observations)
        # Copies of the env's dicts (an env may refill the same ones at its next step).
        self.steps.append(
            PlainStep(
                dict(observations),
                actions,
                dict(rewards),
                dict(infos),
                dict(terminateds),
                dict(truncateds),
                action_logps,
                action_dist_inputs,
                is_terminated,
                is_truncated,
                time.perf_counter(),
            )
        )
        return is_terminated or is_truncated

    def agent_steps(self) -> dict[Any, int]:
        """Each agent's steps in the log."""
        num_steps = len(self.steps)
        ended_at = self.ended_at
        return {agent_id: ended_at.get(agent_id, num_steps) for agent_id in self.observations}

    def fill(self, episode: MultiAgentEpisode) -> dict[Any, int]:
        """Records the reset and the steps into `episode` (the one the log was made for);
        returns each agent's steps."""
        agent_steps = self.agent_steps()
        episode.fill_plain_steps(
            self.observations, self.infos, self.reset_time, self.steps, agent_steps
        )
        return agent_steps
