"""MultiAgentEpisode records a sampling loop's common steps on a fast path (`add_sampled_env_step`
and `add_env_step` for steps whose acting agents are exactly those observed, agents ending in
them included), and the MultiAgentEnvRunner records a new episode's plain steps by agent and
column and fills the episode from them (`AgentColumns`, when no callback reads episodes while
they run). Each must record what the general path records: seeded runners over envs of every shape (agents dropping out,
agents in turns, late joins, "__all__" truncations, steps with no agent) give the same
episodes, state for state, logged, recorded step by step on the fast path, and on the general
path."""

from __future__ import annotations

import random
from typing import Any

import pytest
from helpers import assert_same_objects
from multi_agent_mock_envs import (
    BasicMultiAgent,
    EarlyDoneMultiAgent,
    FlexAgentsMultiAgent,
    RoundRobinMultiAgent,
    SometimesZeroAgentsMultiAgent,
)

from trainer import PPOConfig
from trainer.env.multi_agent_episode import MultiAgentEpisode
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.examples.envs.classes.multi_agent.rock_paper_scissors import RockPaperScissors
from trainer.examples.envs.classes.multi_agent.tic_tac_toe import TicTacToe
from trainer.runners.multi_agent_columns import AgentColumns
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


class CartPolesWithoutAllFlag(MultiAgentCartPole):
    """MultiAgentCartPole that never sets `"__all__"`: its episodes end because every agent
    is done."""

    def step(self, action_dict):  # type: ignore[no-untyped-def]
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        terminateds["__all__"] = truncateds["__all__"] = False
        return obs, rewards, terminateds, truncateds, infos


class RefillsItsDicts(MultiAgentCartPole):
    """MultiAgentCartPole that returns the same dicts every step, refilled in place."""

    def __init__(self, config: dict | None = None) -> None:
        super().__init__(config)
        self._dicts: list[dict] = [{} for _ in range(5)]

    def _refilled(self, *results: dict) -> tuple:
        for kept, result in zip(self._dicts, results, strict=False):
            kept.clear()
            kept.update(result)
        return tuple(self._dicts[: len(results)])

    def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
        return self._refilled(*super().reset(seed=seed, options=options))

    def step(self, action_dict):  # type: ignore[no-untyped-def]
        return self._refilled(*super().step(action_dict))


#: name: (env, env_config, whether some of its steps take the fast path). Envs whose agents
#: act in turns (observed agents are not the ones that acted) always take the general path.
ENVS: dict[str, tuple[Any, dict, bool]] = {
    "agents drop out": (MultiAgentCartPole, {"num_agents": 3}, True),
    "all agents done, no __all__": (CartPolesWithoutAllFlag, {"num_agents": 2}, True),
    "simultaneous": (RockPaperScissors, {}, True),
    "all end together": (lambda config: BasicMultiAgent(3), {}, True),
    # (its episodes here spawn agents 0-7; an episode's state holds every possible agent's
    # spaces: with 10000 possible agents this case took 7 s, the others 0.1-0.2 s each)
    "agents join and leave": (FlexAgentsMultiAgent, {"max_agents": 100}, True),
    "agents in turns": (TicTacToe, {}, False),
    "round robin": (lambda config: RoundRobinMultiAgent(3), {}, False),
    "one agent ends early": (lambda config: EarlyDoneMultiAgent(), {}, False),
    "steps with no agent": (lambda config: SometimesZeroAgentsMultiAgent(3), {}, False),
}

#: State entries that differ between any two runs (ids, clock readings).
_RUN_SPECIFIC = (
    "id_",
    "multi_agent_episode_id",
    "_start_time",
    "_last_step_time",
    "start_time",
    "last_step_time",
)


def _step_by_step(**kwargs: Any) -> None:
    """An `on_episode_step` callback: the runner records every step into the episode object."""


def _episodes(
    env: Any, env_config: dict, weights: dict, *, num_envs: int = 2, logged: bool = True
) -> list[dict]:
    """The states of a seeded runner's episodes; its module's weights are `weights` (a runner
    takes them from the learner), or kept in `weights` for the next run when it is empty.
    `logged=False` sets an `on_episode_step` callback, which makes the runner record each step
    into the episode object."""
    random.seed(0)  # TicTacToe draws its first player from Python's `random`, as RLlib's
    config = (
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(num_envs_per_env_runner=num_envs)
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, *a, **kw: "p0")
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )
    if not logged:
        config.callbacks(on_episode_step=_step_by_step)
    runner = MultiAgentEnvRunner(
        config,
        worker_index=1,
        num_workers=1,
    )
    try:
        if weights:
            runner.module.set_state(weights)
        else:
            weights.update(runner.module.get_state())
        states = []
        for request in ({"num_timesteps": 90}, {"num_timesteps": 50}, {"num_episodes": 2}):
            states += [episode.get_state() for episode in runner.sample(**request)]
            # The sample's metrics: agent and module steps, returns, lengths (not durations).
            states.append(
                {
                    key: value
                    for key, value in runner.metrics.peek().items()
                    if key != "episode_duration_sec_mean"
                }
            )
            runner.get_metrics()
        return [_without_run_specific(state) for state in states]
    finally:
        runner.stop()


def _without_run_specific(state: Any) -> Any:
    if isinstance(state, dict):
        return {k: _without_run_specific(v) for k, v in state.items() if k not in _RUN_SPECIFIC}
    if isinstance(state, list):
        return [_without_run_specific(v) for v in state]
    return state


def _logged_steps(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """From now on, per step a runner offers its columns: whether they took it."""
    logged_steps: list[bool] = []
    record = AgentColumns.record

    def counted_record(self, *args):
        result = record(self, *args)
        logged_steps.append(result is not None)
        return result

    monkeypatch.setattr(AgentColumns, "record", counted_record)
    return logged_steps


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ENVS))
def test_the_fast_path_records_what_the_general_path_records(name, monkeypatch):
    env, env_config, takes_fast_path = ENVS[name]
    weights: dict = {}
    logged_steps = _logged_steps(monkeypatch)
    logged = _episodes(env, env_config, weights)
    assert logged, "the runner returned episodes"
    assert any(logged_steps) == takes_fast_path
    fast = _episodes(env, env_config, weights, logged=False)
    taken: list[bool] = []
    original = MultiAgentEpisode._is_plain_step

    def general_path_only(self, *args):
        taken.append(original(self, *args))
        return False

    monkeypatch.setattr(MultiAgentEpisode, "_is_plain_step", general_path_only)
    general = _episodes(env, env_config, weights, logged=False)
    assert any(taken) == takes_fast_path
    assert len(logged) == len(fast) == len(general)
    for i, (a, b, c) in enumerate(zip(logged, fast, general, strict=True)):
        assert_same_objects(a, c, f"{name}: episode {i}, logged vs general path")
        assert_same_objects(b, c, f"{name}: episode {i}, fast vs general path")


def test_an_env_that_refills_its_dicts_keeps_every_step(monkeypatch):
    """The runner's columns keep the values of the dicts an env returns, not the dicts: an env
    that returns the same dicts, refilled, every step gives the episodes of one that returns
    new ones."""
    weights: dict = {}
    logged_steps = _logged_steps(monkeypatch)
    refilled = _episodes(RefillsItsDicts, {"num_agents": 3}, weights)
    assert any(logged_steps)
    fresh = _episodes(MultiAgentCartPole, {"num_agents": 3}, weights)
    assert len(refilled) == len(fresh)
    for i, (a, b) in enumerate(zip(refilled, fresh, strict=True)):
        assert_same_objects(a, b, f"episode {i}")


@pytest.mark.parametrize("logged", [True, False])
def test_the_mapping_function_sees_the_episode_as_documented(logged):
    """At a reset, the policy mapping function of a logged episode sees it before its reset is
    recorded (no agents yet); recorded step by step, it sees the agents added before the one
    it maps, as in RLlib 2.60 (the deliberate differences table)."""
    seen: list[tuple[Any, list]] = []

    def mapping(agent_id, episode, **kwargs):
        seen.append((agent_id, sorted(episode.agent_episodes)))
        return "p0"

    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 3})
        .multi_agent(policies={"p0"}, policy_mapping_fn=mapping)
        .debugging(seed=0)
    )
    if not logged:
        config.callbacks(on_episode_step=_step_by_step)
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    try:
        episodes = runner.sample(num_episodes=1)
    finally:
        runner.stop()
    assert seen[:3] == ([(0, []), (1, []), (2, [])] if logged else [(0, []), (1, [0]), (2, [0, 1])])
    assert sorted(episodes[0].agent_episodes) == [0, 1, 2]
    assert {ep.module_id for ep in episodes[0].agent_episodes.values()} == {"p0"}
