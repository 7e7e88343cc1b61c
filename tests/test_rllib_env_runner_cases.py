"""What RLlib 2.60's `rllib/env/tests/test_env_runner.py`, `test_multi_agent_env_runner.py` and
`test_multi_agent_episode.py` check of the EnvRunners, checked on this project's own API:

- env-to-module pieces get each `sample()` call's own `explore` flag (single- and multi-agent);
- a user's own ConnectorV2 env-to-module piece runs in a MultiAgentEnvRunner as RLlib runs it:
  over the running episodes after each reset and env step, and once more over the episodes that
  just ended; the runner acts on what the episodes hold after it;
- a MultiAgentEnvRunner's `env` has the spaces attributes of RLlib's vector multi-agent env;
- `check` accepts keys only its second argument has (as RLlib's does);
- `ray.kill` ends a named object (the stand-in's `ray.remote(Class)` actors)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from multi_agent_envs import CartPoles

from trainer import PPOConfig
from trainer.connectors import ConnectorV2
from trainer.connectors.env_to_module import FlattenObservations
from trainer.errors import ConfigError
from trainer.named_objects.server import Registry
from trainer.runners.env_runner import EnvRunner
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner
from trainer.testing import check


class Recorder(ConnectorV2):
    """Records each call: (episode ids, their `is_done`, their env steps, explore, metrics)."""

    calls: list[dict[str, Any]] = []

    def __call__(self, *, rl_module, batch, episodes, explore=None, metrics=None, **kwargs):
        Recorder.calls.append(
            {
                "ids": [episode.id_ for episode in episodes],
                "done": [episode.is_done for episode in episodes],
                "t": [
                    getattr(episode, "env_t", getattr(episode, "t", None)) for episode in episodes
                ],
                "explore": explore,
                "metrics": metrics is not None,
            }
        )
        return batch


class ZeroObservations(ConnectorV2):
    """Rewrites each acting agent's last observation in its episode to zeros."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in episodes:
            for agent in episode.agent_episodes.values():
                if len(agent.observations):
                    agent.set_observations(
                        new_data=np.zeros_like(agent.get_observations(-1)), at_indices=-1
                    )
        return batch


def _multi_agent(factory, num_agents: int = 2, num_envs: int = 1) -> MultiAgentEnvRunner:
    config = (
        PPOConfig()
        .environment(CartPoles, env_config={"num_agents": num_agents})
        .multi_agent(policies={"p0"}, policy_mapping_fn=lambda aid, *a, **kw: "p0")
        .env_runners(num_envs_per_env_runner=num_envs, env_to_module_connector=factory)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )
    return MultiAgentEnvRunner(config)


@pytest.fixture(autouse=True)
def _fresh_recorder():
    Recorder.calls = []
    yield
    Recorder.calls = []


def test_single_agent_env_to_module_pieces_get_the_sample_call_s_explore():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(env_to_module_connector=lambda env, spaces, device: Recorder())
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    runner = EnvRunner(config)
    try:
        runner.sample(num_timesteps=3, random_actions=True)
        assert Recorder.calls and all(call["explore"] for call in Recorder.calls)
        Recorder.calls = []
        runner.sample(num_timesteps=3, random_actions=True, explore=False, force_reset=True)
        assert Recorder.calls and not any(call["explore"] for call in Recorder.calls)
    finally:
        runner.stop()


def test_a_user_piece_runs_in_a_multi_agent_runner_after_reset_steps_and_episode_ends():
    runner = _multi_agent(lambda env, spaces, device: Recorder(), num_agents=1, num_envs=2)
    try:
        episodes = runner.sample(num_episodes=2, random_actions=True, explore=False)
        assert len(episodes) == 2
        first = Recorder.calls[0]
        assert first["t"] == [0, 0] and not any(first["done"]) and first["metrics"]
        ended = [call for call in Recorder.calls if any(call["done"])]
        # one extra call per step in which episodes ended, with just those, without metrics
        assert all(all(call["done"]) and not call["metrics"] for call in ended)
        ended_ids = [i for call in ended for i in call["ids"]]
        assert {episode.id_ for episode in episodes} <= set(ended_ids)
        running = [call for call in Recorder.calls if not any(call["done"])]
        assert len(running) >= 1 + min(len(e) for e in episodes)
        assert not any(call["explore"] for call in Recorder.calls)
    finally:
        runner.stop()


def test_the_multi_agent_runner_acts_on_what_the_user_piece_left_in_the_episodes():
    runner = _multi_agent(lambda env, spaces, device: [Recorder(), ZeroObservations()])
    try:
        runner.sample(num_timesteps=4, random_actions=True)
        for last in runner._last_obs:
            assert last and all(not np.any(obs) for obs in last.values())
    finally:
        runner.stop()


def test_observation_pieces_after_a_user_piece_are_refused_by_name():
    with pytest.raises(ConfigError, match="put them first"):
        _multi_agent(
            lambda env, spaces, device: [Recorder(), FlattenObservations(multi_agent=True)]
        )


def test_the_multi_agent_runner_s_env_has_rllib_s_vector_spaces_attributes():
    runner = _multi_agent(lambda env, spaces, device: Recorder())
    try:
        env = runner.env
        assert env is not None and env.observation_space is None and env.action_space is None
        assert set(env.single_observation_spaces) == {0, 1}
        assert isinstance(env.single_observation_space, gym.spaces.Dict)
        assert isinstance(env.single_action_space, gym.spaces.Dict)
    finally:
        runner.stop()


def test_check_accepts_keys_only_the_expected_value_has():
    check({"a1": [3.0, 2.0]}, {"a0": [], "a1": [3, 2]})
    with pytest.raises(AssertionError):
        check({"a0": [], "a1": [3.0]}, {"a1": [3.0]})


def test_killing_a_named_object_drops_it_and_frees_its_name():
    import cloudpickle

    registry = Registry()
    payload = cloudpickle.dumps((dict, (), {"x": 1}))
    assert registry.create("counter", payload, False)
    assert registry.call("counter", "get", ("x",), {}) == 1
    assert registry.kill("counter") and not registry.kill("counter")
    with pytest.raises(LookupError, match="killed"):
        registry.call("counter", "get", ("x",), {})
    assert registry.create("counter", payload, False) and registry.names() == ["counter"]
