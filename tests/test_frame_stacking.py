"""Frame stacking as RLlib's frame-stacking example pipelines it: `FrameStackingEnvToModule` in
the EnvRunners (per agent in multi-agent runs) and `FrameStackingLearner` in the learner
pipeline. With PPO the episodes hold each frame once and the learner stacks them (a chunk
that continues an episode looks back at the frames before it); elsewhere the EnvRunners stack
them into the episodes and the learner's piece checks them."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_same_weights, trained_weights

from trainer import DQNConfig, PPOConfig
from trainer.connectors.env_to_module import FrameStackingEnvToModule, MeanStdFilter
from trainer.connectors.learner import FrameStackingLearner, stacked_frames
from trainer.errors import ConfigError, UnsupportedSetting
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
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
    runner = EnvRunner(config, worker_index=1, num_workers=1)
    restored = EnvRunner(config, worker_index=1, num_workers=1)
    try:
        runner.sample(num_timesteps=60)
        state = runner.get_state()
        expected = runner.sample(num_timesteps=60)
        restored.set_state(state)
        again = restored.sample(num_timesteps=60)
        assert [episode.observations.lookback for episode in again] == [
            episode.observations.lookback for episode in expected
        ]
        for one, other in zip(expected, again, strict=True):
            np.testing.assert_array_equal(one.observations.data, other.observations.data)
            np.testing.assert_array_equal(
                one.get_extra_model_outputs("action_dist_inputs"),
                other.get_extra_model_outputs("action_dist_inputs"),
            )
    finally:
        runner.stop()
        restored.stop()


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
