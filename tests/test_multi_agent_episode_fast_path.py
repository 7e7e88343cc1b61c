"""MultiAgentEpisode records a sampling loop's common steps on a fast path (`add_sampled_env_step`
and `add_env_step` for steps whose acting agents are exactly those observed, agents ending in
them included). The fast path must record what the general path records: seeded runners over
envs of every shape (agents dropping out, agents in turns, late joins, "__all__" truncations,
steps with no agent) give the same episodes, state for state, with and without it."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
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
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner


class CartPolesWithoutAllFlag(MultiAgentCartPole):
    """MultiAgentCartPole that never sets `"__all__"`: its episodes end because every agent
    is done."""

    def step(self, action_dict):  # type: ignore[no-untyped-def]
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        terminateds["__all__"] = truncateds["__all__"] = False
        return obs, rewards, terminateds, truncateds, infos


#: name: (env, env_config, whether some of its steps take the fast path). Envs whose agents
#: act in turns (observed agents are not the ones that acted) always take the general path.
ENVS: dict[str, tuple[Any, dict, bool]] = {
    "agents drop out": (MultiAgentCartPole, {"num_agents": 3}, True),
    "all agents done, no __all__": (CartPolesWithoutAllFlag, {"num_agents": 2}, True),
    "simultaneous": (RockPaperScissors, {}, True),
    "all end together": (lambda config: BasicMultiAgent(3), {}, True),
    "agents join and leave": (FlexAgentsMultiAgent, {}, True),
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


def _episodes(env: Any, env_config: dict, weights: dict, *, num_envs: int = 2) -> list[dict]:
    """The states of a seeded runner's episodes; its module's weights are `weights` (a runner
    takes them from the learner), or kept in `weights` for the next run when it is empty."""
    random.seed(0)  # TicTacToe draws its first player from Python's `random`, as RLlib's
    runner = MultiAgentEnvRunner(
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(num_envs_per_env_runner=num_envs)
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda agent_id, *a, **kw: "p0")
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3),
        worker_index=1,
        num_workers=1,
    )
    try:
        if weights:
            runner.module.set_state(weights)
        else:
            weights.update(runner.module.get_state())
        episodes = runner.sample(num_timesteps=90) + runner.sample(num_timesteps=50)
        episodes += runner.sample(num_episodes=2)
        return [_without_run_specific(episode.get_state()) for episode in episodes]
    finally:
        runner.stop()


def _without_run_specific(state: Any) -> Any:
    if isinstance(state, dict):
        return {k: _without_run_specific(v) for k, v in state.items() if k not in _RUN_SPECIFIC}
    if isinstance(state, list):
        return [_without_run_specific(v) for v in state]
    return state


def _same(a: Any, b: Any, where: str = "state") -> None:
    """Exact equality of two nested states (arrays by dtype and value, floats bit for bit)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(map(str, a))} vs {sorted(map(str, b))}"
        for key in a:
            _same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, (
            f"{where}: {a.dtype}{a.shape} vs {b.shape}"
        )
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{where}: {a} vs {b}"
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), f"{where}: nan vs {b}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


@pytest.mark.parametrize("name", list(ENVS))
def test_the_fast_path_records_what_the_general_path_records(name, monkeypatch):
    env, env_config, takes_fast_path = ENVS[name]
    weights: dict = {}
    fast = _episodes(env, env_config, weights)
    assert fast, "the runner returned episodes"
    taken: list[bool] = []
    original = MultiAgentEpisode._is_plain_step

    def general_path_only(self, *args):
        taken.append(original(self, *args))
        return False

    monkeypatch.setattr(MultiAgentEpisode, "_is_plain_step", general_path_only)
    general = _episodes(env, env_config, weights)
    assert any(taken) == takes_fast_path
    assert len(fast) == len(general)
    for i, (a, b) in enumerate(zip(fast, general, strict=True)):
        _same(a, b, f"{name}: episode {i}")
