"""`MultiAgentRecorder`: one `sample()` call of a `MultiAgentEnvRunner`, driven by the rollout
loop (`trainer.runners.rollout_loop.collect_rollout`) through the recorder interface the
single-agent `ColumnRecorder` implements too (`trainer.runners.rollout_loop.Recorder`).

The runner keeps what lasts from call to call (each sub-env's episode, its `AgentColumns`,
its agents' last observations, the episode's earlier chunks, the ended episodes' metrics);
the recorder keeps the call's own: the episodes ended in it, its step counts, and the
sub-envs still stepping once it lets the running episodes play out. One step:

    act         the agents to act in each stepping sub-env (`agents_to_act`) and their
                actions and model outputs (`MultiAgentEnvRunner._random_actions` /
                `_module_actions_of`): a `StepActions`
    step        the sub-envs' results, taken lazily: each sub-env steps as `record` takes its
                result (one after the other, RLlib's "sync" for multi-agent envs), so a
                sub-env whose episode ended is reset before the next one steps
    record      each result goes into its episode (where the learner stacks the frames,
                each agent's newest frame: `trainer.runners.module_frames`): a new
                episode's plain step into its
                `AgentColumns`, any other through the episode object
                (`_add_step_to_episode`); `on_episode_step` fires; an episode that ended
                ships (`_end_episode`; with episode pieces after their last run over it,
                `_ship_with_episode_pieces`) and its sub-env is reset into a new one (or
                idles, once draining)
    recover     (restart_failed_sub_environments) the sub-envs that raised are re-created
                (`MultiAgentEnvRunner._recover_sub_envs`); a failed step counts as no env
                step of the call
    finish      the columns into the episode objects, the call's metrics, and, for a count of
                steps, each running episode cut: its chunk goes out, its successor continues
                (looking back at its agents' earlier frames where the learner stacks them)

What the recorder reads, sets and calls of the runner is `MultiAgentRecorderRunner` (the
MultiAgentEnvRunner imports this module, so it is not named here).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, NamedTuple, Protocol

from trainer.callbacks import CallbackChain
from trainer.connectors.connector_v2 import ConnectorPipelineV2
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.env.multi_agent_episode_list import MultiAgentEpisodeList
from trainer.errors import EnvDataError
from trainer.runners.module_frames import with_agent_frame_lookback
from trainer.runners.multi_agent_columns import AgentColumns

#: A sub-env's done agents when none is (shared, never changed).
_NONE_DONE: frozenset = frozenset()


class StepActions(NamedTuple):
    """One step's actions and model outputs, by sub-env index: each sub-env's acting agents
    and, in their order, their actions and the action draw's two model outputs (the lists a
    forward pass gives; `AgentColumns.record` takes them as they are)."""

    #: Each sub-env's acting agents, in the order of the lists below.
    agents: dict[int, list]
    #: The actions as the episodes record them ...
    actions: dict[int, list]
    #: ... and as the envs take them, by agent id (the sub-envs that step, in their order).
    env_actions: dict[int, dict]
    #: Each acting agent's log-prob and distribution inputs, or None where `outputs`
    #: holds the model outputs ...
    logps: dict[int, list] | None
    dist_inputs: dict[int, list] | None
    #: ... every acting agent's outputs as one dict, by agent id, once a module returns
    #: other than those two (None: the two above are all).
    outputs: dict[int, dict] | None

    def by_agent(self, index: int) -> tuple[dict, dict, dict]:
        """Sub-env `index`'s actions, log-probs and distribution inputs as dicts by agent id
        (as `MultiAgentEpisode.add_sampled_env_step` takes them)."""
        agents = self.agents[index]
        logps = {} if self.logps is None else dict(zip(agents, self.logps[index], strict=True))
        dist_inputs = (
            {}
            if self.dist_inputs is None
            else dict(zip(agents, self.dist_inputs[index], strict=True))
        )
        return dict(zip(agents, self.actions[index], strict=True)), logps, dist_inputs


class SubEnvs(Protocol):
    """What the recorder reads of the runner's sub-envs: the MultiAgentEnvs, stepped one by
    one."""

    @property
    def envs(self) -> list[Any]: ...


class MultiAgentRecorderRunner(Protocol):
    """What a `MultiAgentRecorder` reads, sets and calls of its MultiAgentEnvRunner: its
    settings and sub-envs, its per-sub-env lists (changed in place), the step's actions, the
    episodes' start and end, the episode pieces, recovery and the metrics of the call."""

    #: The next `sample()` starts fresh episodes.
    _needs_reset: bool

    @property
    def config(self) -> Any: ...

    @property
    def num_envs(self) -> int: ...

    @property
    def env(self) -> SubEnvs | None: ...

    @property
    def _callbacks(self) -> CallbackChain: ...

    @property
    def _restart_sub_envs(self) -> bool: ...

    @property
    def _episode_pieces(self) -> ConnectorPipelineV2 | None: ...

    @property
    def _learner_frames(self) -> int | None: ...

    @property
    def _episodes(self) -> list[MultiAgentEpisode | None]: ...

    @property
    def _columns(self) -> list[AgentColumns | None]: ...

    @property
    def _last_obs(self) -> list[dict]: ...

    @property
    def _last_done(self) -> list[set | frozenset]: ...

    @property
    def _prev_chunks(self) -> list[list[MultiAgentEpisode]]: ...

    @property
    def _ended(self) -> list[tuple[MultiAgentEpisode, list[MultiAgentEpisode]]]: ...

    def _random_actions(self, acting: dict[int, list[Any]]) -> StepActions: ...

    def _module_actions_of(self, acting: dict[int, list[Any]], explore: bool) -> StepActions: ...

    def _explained(self, index: int, result: Any, method: str) -> EnvDataError | None: ...

    def _event_kwargs(self, index: int) -> dict[str, Any]: ...

    def _fill(self, index: int) -> None: ...

    def _fill_all(self) -> None: ...

    def _count_agent_steps(self, index: int, obs: dict) -> None: ...

    def _finish_episode(self, index: int) -> None: ...

    def _new_episode(self, index: int) -> None: ...

    def _start_episode(self, index: int) -> None: ...

    def _run_episode_pieces(self, episodes: list[MultiAgentEpisode]) -> None: ...

    def _run_pieces_over_running_episodes(self) -> None: ...

    def _recover_sub_envs(self, draining: set[int] | None = None) -> int: ...

    def _records_by_column(self) -> bool: ...

    def recorded_observations(self, observations: dict) -> dict: ...

    def _log_sample_metrics(self, env_steps: int, episodes: int) -> None: ...


def shippable(episode: MultiAgentEpisode) -> MultiAgentEpisode:
    """A finished or cut episode as it leaves the runner: numpy'ized, without the agents that
    have not acted in it (RLlib's `_prune_zero_len_sa_episodes`: an agent that only observed
    in a chunk acts in the next one), and without the policy_mapping_fn (its agents' modules
    are known; the function, often a lambda of the user's script, need not travel)."""
    agent_episodes = episode.agent_episodes
    for agent_id in [aid for aid, agent in agent_episodes.items() if len(agent) == 0]:
        del agent_episodes[agent_id]
    episode.agent_to_module_mapping_fn = None  # type: ignore[assignment]
    return episode.to_numpy()


def _done_agents(obs: dict, terminateds: dict, truncateds: dict) -> set | frozenset:
    """The agents of a step's result that are done (they act no more)."""
    if not (any(terminateds.values()) or any(truncateds.values())):
        return _NONE_DONE
    return {
        agent_id
        for agent_id in obs
        if terminateds.get(agent_id, False) or truncateds.get(agent_id, False)
    }


class MultiAgentRecorder:
    """Records one `sample()` call of `runner` (see the module docstring)."""

    def __init__(self, runner: MultiAgentRecorderRunner) -> None:
        self.runner = runner
        self.num_envs = runner.num_envs
        #: The episodes ended in this call, shippable, in the order they ended.
        self.episodes: list[MultiAgentEpisode] = []
        #: Env steps of this call (a failed sub-env's step not counted) ...
        self.steps = 0
        #: ... and what `num_timesteps` counts: those, or agent steps (`count_steps_by`).
        self.timesteps = 0
        self._by_agents = runner.config.count_steps_by == "agent_steps"
        #: restart_failed_sub_environments: after each step, `recover` re-creates the
        #: sub-envs that raised.
        self.failed = runner._restart_sub_envs
        #: Once the call lets the running episodes play out (`drain`): the sub-envs still
        #: stepping (one leaves it as its episode ends); None before.
        self.draining: set[int] | None = None
        # The runner's per-sub-env lists (made once, changed in place).
        self._episodes = runner._episodes
        self._columns = runner._columns
        self._last_obs = runner._last_obs
        self._last_done = runner._last_done

    def agents_to_act(self, index: int) -> list[Any]:
        """The agents of sub-env `index` that act next: those with an observation in its last
        result that are not done (`MultiAgentEpisode.get_agents_to_act()`, kept by the runner
        as the results come instead of read back from the episode each step)."""
        done = self._last_done[index]
        if not done:  # (most steps: every agent of the last result acts)
            return list(self._last_obs[index])
        return [agent_id for agent_id in self._last_obs[index] if agent_id not in done]

    def act(self, explore: bool, random_actions: bool) -> StepActions:
        """The actions of the acting agents of every sub-env (of those still stepping, once
        draining) and their model outputs: drawn from their action spaces
        (`MultiAgentEnvRunner._random_actions`), else from their modules
        (`MultiAgentEnvRunner._module_actions_of`)."""
        draining = self.draining
        indices = range(self.num_envs) if draining is None else sorted(draining)
        agents_to_act = self.agents_to_act
        acting = {index: agents_to_act(index) for index in indices}
        runner = self.runner
        if random_actions:
            return runner._random_actions(acting)
        return runner._module_actions_of(acting, explore)

    def step(self, actions: StepActions) -> Iterator[tuple[int, tuple]]:
        """(sub-env index, its step's result) of each sub-env in `actions`, each sub-env
        stepped with its agents' actions as its result is taken."""
        env = self.runner.env
        assert env is not None, "sampling needs the sub-envs"
        envs = env.envs
        return (
            (index, envs[index].step(action_dict))
            for index, action_dict in actions.env_actions.items()
        )

    def record(self, results: Iterator[tuple[int, tuple]], actions: StepActions) -> int:
        """Each sub-env's result into its episode, in turn (see the module docstring).
        Returns the env steps taken."""
        runner = self.runner
        agents, acted, _, logps, dist_inputs, _ = actions
        env_steps = agent_steps = 0
        fire_step = runner._callbacks.has("on_episode_step")
        by_column = self._columns
        pieces = runner._episode_pieces
        #: With episode pieces: the episodes that ended in this step, shipped after the
        #: pieces' last run over them.
        ended_here: list[MultiAgentEpisode] = []
        for index, result in results:
            episode = self._episodes[index]
            assert episode is not None
            try:
                obs, rewards, terminateds, truncateds, infos = result
                # A reward that is not one number (a string, None, an array) fails here, in
                # one C loop, not later in the metrics or the learner.
                math.fsum(rewards.values())
                recorded = runner.recorded_observations(obs)
                # A new episode's plain step goes into its columns (None: not taken).
                columns = by_column[index]
                ended = (
                    None
                    if columns is None or logps is None or dist_inputs is None
                    else columns.record(
                        recorded,
                        acted[index],
                        rewards,
                        infos,
                        terminateds,
                        truncateds,
                        logps[index],
                        dist_inputs[index],
                        agents[index],
                    )
                )
                if ended is None:  # not taken: the episode object records the step
                    ended = self._add_step_to_episode(
                        index, episode, (recorded, rewards, terminateds, truncateds, infos), actions
                    )
                    done_agents = _done_agents(obs, terminateds, truncateds)
                else:  # (the columns noted the agents done)
                    assert columns is not None
                    done_agents = columns.step_done
                self._last_obs[index] = obs
                self._last_done[index] = done_agents
                agent_steps += len(obs)
            except Exception as error:
                explained = runner._explained(index, result, "step()")
                if explained is None:
                    raise
                raise explained from error
            env_steps += 1
            if fire_step:
                runner._callbacks.fire_with("on_episode_step", runner._event_kwargs(index))
            # RLlib ends an episode when the episode says it is done: `"__all__"`, or every
            # agent it has seen is done (e.g. the last one was removed as a new one joined).
            if ended:
                self._end_episode(index, episode, self.episodes if pieces is None else ended_here)
        if pieces is not None:
            self._ship_with_episode_pieces(ended_here)
        self.steps += env_steps
        self.timesteps += agent_steps if self._by_agents else env_steps
        return env_steps

    def _add_step_to_episode(
        self, index: int, episode: MultiAgentEpisode, result: tuple, step: StepActions
    ) -> bool:
        """Records sub-env `index`'s step `result` (taken with `step`'s actions) through its
        episode object (its columns, if any, filled in first). Returns whether the episode
        is done."""
        obs, rewards, terminateds, truncateds, infos = result
        runner = self.runner
        runner._fill(index)
        actions, logps, dist_inputs = step.by_agent(index)
        if step.outputs is None:  # the action draw's two model outputs
            episode.add_sampled_env_step(
                obs, actions, rewards, infos, terminateds, truncateds, logps, dist_inputs
            )
        else:
            episode.add_env_step(
                observations=obs,
                actions=actions,
                rewards=rewards,
                infos=infos,
                terminateds=terminateds,
                truncateds=truncateds,
                extra_model_outputs=step.outputs[index],
            )
        runner._count_agent_steps(index, obs)
        return episode.is_done

    def _end_episode(
        self, index: int, episode: MultiAgentEpisode, ended: list[MultiAgentEpisode]
    ) -> None:
        """Sub-env `index`'s `episode` ended in this step: filled from its columns, finished
        (`on_episode_end`, its metrics) and appended to `ended` (shippable, or as it is where
        the episode pieces still run over it: `_ship_with_episode_pieces`); the sub-env then
        leaves `draining` (once draining) or starts a new episode."""
        runner = self.runner
        runner._fill(index)
        runner._finish_episode(index)
        ended.append(shippable(episode) if runner._episode_pieces is None else episode)
        if self.draining is not None:
            self.draining.discard(index)
        else:
            runner._new_episode(index)
            runner._start_episode(index)

    def _ship_with_episode_pieces(self, ended_here: list[MultiAgentEpisode]) -> None:
        """After a step, with episode pieces: their last run over the episodes that ended in
        it (`ended_here`), which then go into `episodes`, and their run over the episodes
        still running."""
        runner = self.runner
        runner._run_episode_pieces(ended_here)
        self.episodes.extend(shippable(episode) for episode in ended_here)
        runner._run_pieces_over_running_episodes()

    def recover(self) -> None:
        """Re-creates the sub-envs that raised in the last step (their episodes dropped; once
        draining, such a sub-env idles); their failed steps are taken back from the call's
        env steps (RLlib counts none for them)."""
        failed_steps = self.runner._recover_sub_envs(self.draining)
        self.steps -= failed_steps
        if not self._by_agents:
            self.timesteps -= failed_steps

    def drain(self) -> None:
        if self.draining is None:
            self.draining = set(range(self.num_envs))

    def all_idle(self) -> bool:
        return self.draining is not None and not self.draining

    def finish(self, *, num_episodes: int | None, cut: bool) -> MultiAgentEpisodeList:
        """The call's episodes (see `Recorder.finish`), after the columns went into the
        episode objects and the metrics were logged. With `num_episodes`, episodes that ended
        in the same step as the last one wanted count in neither the metrics nor the result
        (RLlib stops at that episode)."""
        runner, done = self.runner, self.episodes
        if num_episodes is not None:
            del runner._ended[num_episodes:]
        runner._fill_all()  # (the agent steps of the episodes still running count)
        ended = len(done) if num_episodes is None else min(len(done), num_episodes)
        runner._log_sample_metrics(self.steps, ended)
        if num_episodes is not None or not cut:
            runner._needs_reset = True
            # (A list that pickles by column when it goes back to the main process.)
            return MultiAgentEpisodeList(done[:num_episodes])
        return MultiAgentEpisodeList(done + self._cut_chunks())

    def _cut_chunks(self) -> list[MultiAgentEpisode]:
        """Each running episode with steps is cut: its chunk so far goes out (returned), its
        successor continues in the next call (by column where the runner records so)."""
        runner = self.runner
        episodes = self._episodes
        by_column = runner._records_by_column()
        lookback = runner.config.episode_lookback_horizon
        chunks = []
        for index, episode in enumerate(episodes):
            assert episode is not None, "every sub-env has an episode while sampling"
            if episode.env_steps() == 0:
                continue
            successor = episode.cut(len_lookback_buffer=lookback)
            if runner._learner_frames is not None:
                with_agent_frame_lookback(successor, episode, runner._learner_frames)
            runner._prev_chunks[index].append(episode)
            episodes[index] = successor
            if by_column:  # its next steps by column, as a new episode's
                self._columns[index] = AgentColumns.continuing(successor, self.agents_to_act(index))
            chunks.append(shippable(episode))
        return chunks
