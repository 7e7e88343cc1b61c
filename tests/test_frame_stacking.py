"""Frame stacking as RLlib's frame-stacking example pipelines it: `FrameStackingEnvToModule` in
the EnvRunners (per agent in multi-agent runs) and `FrameStackingLearner` in the learner
pipeline, which here finds the stacked frames in the episodes and checks them."""

from __future__ import annotations

import numpy as np
import pytest

from trainer import DQNConfig, PPOConfig
from trainer.connectors.env_to_module import FrameStackingEnvToModule, MeanStdFilter
from trainer.connectors.learner import FrameStackingLearner
from trainer.errors import ConfigError, UnsupportedSetting
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole
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
        with pytest.raises(ConfigError, match=r"add FrameStackingEnvToModule\(num_frames=3\)"):
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
