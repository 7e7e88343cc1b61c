"""Frame stacking as RLlib's frame-stacking example pipelines it: `FrameStackingEnvToModule` in
the EnvRunners (per agent in multi-agent runs) and `FrameStackingLearner` in the learner
pipeline. With PPO the episodes hold each frame once and the learner stacks them (a chunk
that continues an episode looks back at the frames before it); elsewhere the EnvRunners stack
them into the episodes and the learner's piece checks them."""

from __future__ import annotations

import random

import numpy as np
import pytest
from helpers import assert_same_weights, continued_after_restore, trained_weights

from trainer import DQNConfig, PPOConfig
from trainer.connectors.env_to_module import FrameStackingEnvToModule, MeanStdFilter
from trainer.connectors.learner import FrameStackingLearner, stacked_frames
from trainer.errors import ConfigError, UnsupportedSetting
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
from trainer.examples.envs.classes.multi_agent.tic_tac_toe import TicTacToe
from trainer.runners.env_runner import EnvRunner
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner

FRAMES = 3


def stacked(observations: np.ndarray, frames: int) -> np.ndarray:
    """What stacking `frames` frames gives at each step of an episode's observations."""
    width = observations.shape[-1]
    padded = np.concatenate([np.zeros(((frames - 1), width), np.float32), observations])
    return np.stack([padded[t : t + frames].reshape(-1) for t in range(len(observations))]).astype(
        np.float32
    )


def test_each_agent_stacks_its_own_frames_in_a_multi_agent_run():
    config = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .env_runners(
            env_to_module_connector=lambda env, spaces=None, device=None: FrameStackingEnvToModule(
                num_frames=FRAMES, multi_agent=True
            )
        )
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
        .debugging(seed=4)
    )
    raw = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
        .debugging(seed=4)
    )
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    plain = MultiAgentEnvRunner(raw, worker_index=1, num_workers=1)
    try:
        assert runner.spaces["p0"][0].shape == (4 * FRAMES,)
        (episode,) = runner.sample(num_episodes=1, explore=False)
        (episode_again,) = runner.sample(num_episodes=1, explore=False)
        (raw_episode,) = plain.sample(num_episodes=1, explore=False)
    finally:
        runner.stop()
        plain.stop()
    for agent in episode.agent_episodes.values():
        observations = np.asarray(agent.get_observations())
        assert observations.shape[1] == 4 * FRAMES
        # The newest frame is the env's, the older ones the agent's own earlier frames.
        newest = observations[:, -4:]
        np.testing.assert_array_equal(stacked(newest, FRAMES), observations)
    # A new episode starts from zeros again.
    first = np.asarray(episode_again.agent_episodes[0].get_observations())[0]
    assert not first[: 4 * (FRAMES - 1)].any()
    assert raw_episode.agent_episodes[0].get_observations()[0].shape == (4,)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_frame_stacking_learner_trains_on_the_stacked_episodes():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=1,
            env_to_module_connector=lambda env: [
                FrameStackingEnvToModule(num_frames=FRAMES),
                MeanStdFilter(),
            ],
        )
        .training(
            learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=FRAMES),
            train_batch_size=400,
            minibatch_size=100,
            num_epochs=2,
        )
        .debugging(seed=5)
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["learners"]["default_policy"]["num_env_steps_trained"] >= 400
    finally:
        algo.stop()


def test_frame_stacking_learner_without_the_env_to_module_piece_is_refused_naming_it():
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(
            learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=FRAMES),
            train_batch_size=200,
            minibatch_size=100,
            num_epochs=1,
        )
    )
    algo = config.build()
    try:
        with pytest.raises(
            ConfigError, match=r"stack the frames with FrameStackingEnvToModule\(num_frames=3\)"
        ):
            algo.train()
    finally:
        algo.stop()


def test_other_algorithms_and_multi_agent_configs_take_the_frame_stacking_learner_only():
    stacking = (
        DQNConfig()
        .environment("CartPole-v1")
        .training(learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=2))
    )
    stacking.validate()
    multi_agent = (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **k: f"p{aid}")
        .training(learner_connector=lambda *spaces: FrameStackingLearner(num_frames=2))
    )
    multi_agent.validate()
    other = (
        DQNConfig()
        .environment("CartPole-v1")
        .training(learner_connector=lambda obs_space, act_space: MeanStdFilter())
    )
    with pytest.raises(UnsupportedSetting, match="FrameStackingLearner"):
        other.validate()
    with pytest.raises(ValueError, match="num_frames=0"):
        FrameStackingLearner(num_frames=0)


def cartpole_stacking(*, in_learner: bool, num_env_runners: int = 0) -> PPOConfig:
    """PPO on CartPole with 3 frames stacked: by the learner's piece, or (without it) by the
    EnvRunners into the episodes. Chunks of 30 steps per sub-env, so episodes go on across
    `sample()` calls."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=2,
            rollout_fragment_length=30,
            env_to_module_connector=lambda env, spaces=None, device=None: FrameStackingEnvToModule(
                num_frames=FRAMES
            ),
        )
        .training(train_batch_size=120, minibatch_size=60, num_epochs=2)
        .debugging(seed=3)
    )
    if in_learner:
        config = config.training(
            learner_connector=lambda obs_space, act_space: FrameStackingLearner(num_frames=FRAMES)
        )
    return config


def _sampled_alike(stacked: list, frames: list) -> None:
    """`frames` (episodes of frames, stacked here as the learner does) are the episodes
    `stacked` (stacked by the EnvRunner), step for step."""
    assert len(frames) == len(stacked)
    for by_runner, by_learner in zip(stacked, frames, strict=True):
        assert (by_learner.t_started, len(by_learner)) == (by_runner.t_started, len(by_runner))
        assert np.shape(by_learner.get_observations(0)) == (4,)
        # A chunk that continues an episode looks back at the frames before it.
        lookback = FRAMES - 1 if by_learner.t_started else 0
        assert by_learner.observations.lookback == lookback
        np.testing.assert_array_equal(
            stacked_frames(by_learner.observations, FRAMES), by_runner.get_observations()
        )
        np.testing.assert_array_equal(by_learner.get_actions(), by_runner.get_actions())


def test_with_the_learner_piece_the_episodes_hold_each_frame_once():
    by_runner = EnvRunner(cartpole_stacking(in_learner=False), worker_index=1, num_workers=1)
    by_learner = EnvRunner(cartpole_stacking(in_learner=True), worker_index=1, num_workers=1)
    try:
        assert by_learner.spaces.observation_space().shape == (4 * FRAMES,)
        continued = 0
        for _ in range(4):
            frames = by_learner.sample(num_timesteps=60)
            _sampled_alike(by_runner.sample(num_timesteps=60), frames)
            continued += sum(1 for episode in frames if episode.t_started)
        assert continued >= 4
    finally:
        by_runner.stop()
        by_learner.stop()


def test_a_restored_runner_stacks_and_looks_back_as_the_one_it_was_taken_from():
    config = cartpole_stacking(in_learner=True)
    expected, again = continued_after_restore(
        lambda: EnvRunner(config, worker_index=1, num_workers=1), 60, 60
    )
    for one, other in zip(expected, again, strict=True):
        _same_chunk(one, other)


def _same_chunk(one, other) -> None:
    """Two (single-agent) episode chunks with the same observations, lookback included, and
    the same distribution inputs."""
    assert other.observations.lookback == one.observations.lookback
    np.testing.assert_array_equal(
        np.asarray(other.observations.data), np.asarray(one.observations.data)
    )
    np.testing.assert_array_equal(
        other.get_extra_model_outputs("action_dist_inputs"),
        one.get_extra_model_outputs("action_dist_inputs"),
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("num_learners", [0, 2])
def test_ppo_trains_alike_whether_the_runners_or_the_learner_stack_the_frames(num_learners):
    """An EnvRunner process; with 2 data-parallel learners too (the episodes are stacked
    before they are sharded)."""
    stacked_by_runner, stacked_by_learner = (
        trained_weights(
            cartpole_stacking(in_learner=in_learner, num_env_runners=1).learners(
                num_learners=num_learners
            ),
            3,
        )
        for in_learner in (False, True)
    )
    assert_same_weights(stacked_by_runner, stacked_by_learner)


def multi_agent_stacking(env: type, *, in_learner: bool, num_env_runners: int = 0) -> PPOConfig:
    """PPO on a multi-agent env (one policy per agent of MultiAgentCartPole, where both act at
    each step; one shared by TicTacToe's two players, who take turns), each agent's 3 frames
    stacked per agent: by the learner's piece, or (without it) by the EnvRunners into the
    episodes. Chunks of 7 env steps per sub-env."""
    if env is TicTacToe:
        env_config, policies, mapping = {}, {"p"}, lambda aid, *a, **k: "p"
    else:
        env_config, policies, mapping = (
            {"num_agents": 2},
            {"p0", "p1"},
            lambda aid, *a, **k: f"p{aid}",
        )
    config = (
        PPOConfig()
        .environment(env, env_config=env_config)
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=2,
            rollout_fragment_length=7,
            env_to_module_connector=lambda env, spaces=None, device=None: FrameStackingEnvToModule(
                num_frames=FRAMES, multi_agent=True
            ),
        )
        .multi_agent(policies=policies, policy_mapping_fn=mapping)
        .training(train_batch_size=56, minibatch_size=28, num_epochs=2)
        .debugging(seed=4)
    )
    if in_learner:
        config = config.training(
            learner_connector=lambda *spaces: FrameStackingLearner(
                num_frames=FRAMES, multi_agent=True
            )
        )
    return config


@pytest.mark.parametrize("env", [MultiAgentCartPole, TicTacToe])
def test_with_the_learner_piece_multi_agent_episodes_hold_each_agents_frames_once(env):
    """Agents acting together and in turns: each agent's frames, stacked as the learner
    does, are the runner-stacked episodes' observations, chunk starts included (a continuing
    chunk looks back at the agent's own frames before it, with each of its columns)."""
    sampled = {}
    for in_learner in (False, True):
        random.seed(0)  # (TicTacToe's first player comes from Python's `random`, as RLlib's)
        runner = MultiAgentEnvRunner(
            multi_agent_stacking(env, in_learner=in_learner), worker_index=1, num_workers=1
        )
        try:
            sampled[in_learner] = [runner.sample(num_timesteps=14) for _ in range(6)]
        finally:
            runner.stop()
    continued = 0
    for stacked_calls, frame_calls in zip(sampled[False], sampled[True], strict=True):
        assert len(frame_calls) == len(stacked_calls)
        for by_runner, by_learner in zip(stacked_calls, frame_calls, strict=True):
            assert by_learner.agent_episodes.keys() == by_runner.agent_episodes.keys()
            for agent_id, frames in by_learner.agent_episodes.items():
                stacked = by_runner.agent_episodes[agent_id]
                assert np.shape(frames.get_observations(0)) == np.shape(
                    stacked.get_observations(0)
                )[:-1] + (np.shape(stacked.get_observations(0))[-1] // FRAMES,)
                np.testing.assert_array_equal(
                    stacked_frames(frames.observations, FRAMES), stacked.get_observations()
                )
                np.testing.assert_array_equal(frames.get_actions(), stacked.get_actions())
                if by_learner.env_t_started and frames.t_started:
                    continued += 1
                    # (As far back as the agent's episode goes.)
                    assert frames.observations.lookback == min(FRAMES - 1, frames.t_started)
                    assert frames.actions.lookback == frames.observations.lookback
    assert continued >= 4


@pytest.mark.timeout(120)
def test_multi_agent_ppo_trains_alike_whether_the_runners_or_the_learner_stack_the_frames():
    """An EnvRunner process, two policies."""
    by_runner, by_learner = (
        trained_weights(
            multi_agent_stacking(MultiAgentCartPole, in_learner=in_learner, num_env_runners=1), 3
        )
        for in_learner in (False, True)
    )
    assert by_runner.keys() == by_learner.keys() == {"p0", "p1"}
    for module_id, weights in by_runner.items():
        assert_same_weights(weights, by_learner[module_id])


@pytest.mark.parametrize("in_learner", [False, True])
def test_a_restored_multi_agent_runner_stacks_each_agents_frames_as_the_one_it_was_taken_from(
    in_learner,
):
    """The sub-envs' per-agent stacks travel with the runner's state (not just the env's):
    the restored runner's chunks, lookback included, equal the original's."""
    config = multi_agent_stacking(MultiAgentCartPole, in_learner=in_learner)
    expected, again = continued_after_restore(
        lambda: MultiAgentEnvRunner(config, worker_index=1, num_workers=1), 14, 14
    )
    assert any(episode.env_t_started for episode in expected)
    for one, other in zip(expected, again, strict=True):
        assert one.agent_episodes.keys() == other.agent_episodes.keys()
        for agent_id, agent in one.agent_episodes.items():
            _same_chunk(agent, other.agent_episodes[agent_id])
