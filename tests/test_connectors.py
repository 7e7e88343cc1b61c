"""Env-to-module connectors (RLlib's `ray.rllib.connectors.env_to_module`): MeanStdFilter's
statistics merged across runners, synced, checkpointed and restored after a restart; the
observation-reshaping pieces; a user's ConnectorV2 piece. Real worker processes and envs."""

import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from callbacks import RLlibCallback
from trainer import ConfigError, SingleAgentEpisode
from trainer.connectors import (
    ConnectorV2,
    FlattenObservations,
    FrameStackingEnvToModule,
    MeanStdFilter,
    PrevActionsPrevRewards,
)
from trainer.connectors.env_to_module import RunningStat

FILTER = "00_MeanStdFilter"


def test_running_stats_merge_exactly():
    data = np.random.default_rng(0).normal(3.0, 2.0, (300, 3))
    parts = []
    for chunk in (data[:40], data[40:41], data[41:]):
        stat = RunningStat((3,))
        for row in chunk:
            stat.push(row)
        parts.append(stat)
    merged = parts[0].merged(parts[1]).merged(parts[2])
    assert merged.n == 300
    np.testing.assert_allclose(merged.mean, data.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(merged.std, data.std(axis=0, ddof=1), rtol=1e-12)


def test_mean_std_filter_divides_by_rllibs_std_below_two_observations():
    """RLlib 2.60's RunningStat has std 0 until it has seen two values: a de-std'ed first
    observation is divided by 1e-8 alone and clipped; from the second on, by the sample std."""
    space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
    piece = MeanStdFilter(
        input_observation_space=space,
        input_action_space=space,
        de_mean_to_zero=False,
        clip_by_value=5.0,
    )
    episode = SingleAgentEpisode()
    outputs = []
    for observation in ([0.5, -2.0], [1.5, 2.0]):
        observation = np.array(observation, np.float32)
        if len(episode.observations) == 0:
            episode.add_env_reset(observation)
        else:
            episode.add_env_step(observation, np.zeros(2, np.float32), 0.0)
        piece(rl_module=None, batch={}, episodes=[episode])
        outputs.append(episode.get_observations(-1))
    np.testing.assert_array_equal(outputs[0], [5.0, -5.0])
    std = np.array([[0.5, -2.0], [1.5, 2.0]]).std(axis=0, ddof=1)
    np.testing.assert_allclose(outputs[1], np.array([1.5, 2.0]) / std, rtol=1e-6)


class RecordObservations(RLlibCallback):
    """Reports the largest absolute observation the module saw (the episodes hold it)."""

    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value(
            "max_abs_obs", float(np.abs(episode.get_observations()).max()), reduce="max"
        )


def _filtered(num_env_runners=2, **kwargs):
    return (
        small_ppo(num_env_runners)
        .environment("Pendulum-v1")
        .env_runners(env_to_module_connector=lambda env: MeanStdFilter(clip_by_value=3.0), **kwargs)
        .training(train_batch_size=400, minibatch_size=100, num_epochs=1)
        .callbacks(RecordObservations)
    )


def _synced(runner_state):
    return runner_state["connector_state"][FILTER]["synced"]


@pytest.mark.slow
def test_mean_std_filter_merges_runner_statistics_and_syncs_them():
    algo = (
        _filtered()
        .evaluation(evaluation_interval=1, evaluation_num_env_runners=1, evaluation_duration=1)
        .build()
    )
    try:
        result = None
        for _ in range(2):
            result = algo.train()
        assert result["env_runners"]["max_abs_obs"] <= 3.0  # episodes hold filtered values
        states = algo.env_runner_group.get_runner_states()
        # 2 iterations x 2 runners x (200 steps + 1 reset observation).
        assert _synced(states[0])["n"] == 804
        for index in (1, 2):
            np.testing.assert_array_equal(
                _synced(states[index])["mean"], _synced(states[0])["mean"]
            )
            assert states[index]["connector_state"][FILTER]["buffer"]["n"] == 0
        eval_n = algo.eval_env_runner_group.foreach_env_runner(
            lambda r: r.get_connector_state()[FILTER]["synced"]["n"], local_env_runner=False
        )
        assert eval_n == [804]
        action = algo.compute_single_action(np.array([1.0, 0.0, 0.5], np.float32), explore=False)
        assert action.shape == (1,)
    finally:
        algo.stop()


@pytest.mark.slow
def test_mean_std_filter_state_in_checkpoints_and_after_a_restart(tmp_path):
    algo = _filtered().fault_tolerance(restart_failed_env_runners=True).build()
    try:
        algo.train()
        expected = _synced(algo.env_runner_group.get_runner_states()[0])
        algo.save_to_path(str(tmp_path / "ckpt"))
        pid = algo.env_runner_group.foreach_env_runner(
            lambda r: os.getpid(), local_env_runner=False
        )[0]
        os.kill(pid, signal.SIGKILL)
        algo.train()  # runner 1 is restarted with the merged statistics, then samples
        states = algo.env_runner_group.get_runner_states()
        assert _synced(states[1])["n"] == _synced(states[0])["n"] > expected["n"]
    finally:
        algo.stop()
    restored = _filtered().build()
    try:
        restored.restore_from_path(str(tmp_path / "ckpt"))
        for state in restored.env_runner_group.get_runner_states().values():
            np.testing.assert_array_equal(_synced(state)["mean"], expected["mean"])
            assert _synced(state)["n"] == expected["n"]
    finally:
        restored.stop()


def test_observation_filter_is_rllib_older_spelling():
    algo = (
        small_ppo(0)
        .env_runners(observation_filter="MeanStdFilter")
        .training(train_batch_size=100, minibatch_size=50, num_epochs=1)
    ).build()
    try:
        algo.train()
        assert algo.env_runner.get_connector_state()[FILTER]["synced"]["n"] > 100
    finally:
        algo.stop()
    with pytest.raises(ConfigError, match="observation_filter"):
        small_ppo(0).env_runners(observation_filter="ZFilter")


class DictObsEnv(gym.Env):
    observation_space = gym.spaces.Dict(
        {"position": gym.spaces.Box(-1, 1, (2,), np.float32), "mode": gym.spaces.Discrete(3)}
    )
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(action), False, self.t >= 10, {}


@pytest.mark.parametrize(
    "env, factory, obs_dim",
    [
        (DictObsEnv, lambda env: FlattenObservations(), 5),
        (
            "CartPole-v1",
            lambda env: [
                PrevActionsPrevRewards(n_prev_actions=2, n_prev_rewards=3),
                FlattenObservations(),
            ],
            4 + 2 * 2 + 3,
        ),
        ("CartPole-v1", lambda env, spaces, device: FrameStackingEnvToModule(num_frames=4), 16),
    ],
)
def test_reshaping_pieces_set_the_module_input(env, factory, obs_dim):
    algo = (
        small_ppo(1)
        .environment(env)
        .env_runners(env_to_module_connector=factory)
        .training(train_batch_size=100, minibatch_size=50, num_epochs=1)
    ).build()
    try:
        assert algo.env_runner_group.spaces.obs_dim == obs_dim
        assert algo.train()["env_runners"]["num_env_steps_sampled"] >= 100
    finally:
        algo.stop()


def test_frame_stacking_and_prev_actions_values():
    from trainer import SingleAgentEpisode

    stack = FrameStackingEnvToModule(
        gym.spaces.Box(-5, 5, (2,)), gym.spaces.Discrete(2), num_frames=3
    )
    prev = PrevActionsPrevRewards(gym.spaces.Box(-5, 5, (2,)), gym.spaces.Discrete(2))
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.array([1.0, 2.0], np.float32))
    stack(rl_module=None, batch={}, episodes=[episode])
    np.testing.assert_array_equal(episode.get_observations(-1), [0, 0, 0, 0, 1, 2])
    episode.add_env_step(np.array([3.0, 4.0], np.float32), 1, 0.5)
    stack(rl_module=None, batch={}, episodes=[episode])
    np.testing.assert_array_equal(episode.get_observations(-1), [0, 0, 1, 2, 3, 4])
    other = SingleAgentEpisode()
    other.add_env_reset(np.zeros(2, np.float32))
    other.add_env_step(np.ones(2, np.float32), 1, 0.5)
    prev(rl_module=None, batch={}, episodes=[other])
    new = other.get_observations(-1)
    np.testing.assert_array_equal(new["prev_n_actions"], [0.0, 1.0])
    np.testing.assert_array_equal(new["prev_n_rewards"], [0.5])


class AddOffset(ConnectorV2):
    """A user's piece, written as for RLlib."""

    def __init__(self, *args, offset=100.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.offset = offset

    def __call__(
        self, *, rl_module, batch, episodes, explore=None, shared_data=None, metrics=None, **kwargs
    ):
        for episode in self.single_agent_episode_iterator(episodes, agents_that_stepped_only=True):
            episode.set_observations(
                new_data=episode.get_observations(-1) + self.offset, at_indices=-1
            )
        return batch


class SmallestObservation(RLlibCallback):
    def on_episode_end(self, *, episode, metrics_logger, **kwargs):
        metrics_logger.log_value("min_obs", float(np.min(episode.get_observations())), reduce="min")


def test_user_connector_piece_runs_in_worker_processes():
    algo = (
        small_ppo(2)
        .env_runners(env_to_module_connector=lambda env: AddOffset())
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .callbacks(SmallestObservation)
    ).build()
    try:
        assert algo.train()["env_runners"]["min_obs"] > 90.0
    finally:
        algo.stop()


def test_connector_factory_must_return_pieces():
    config = small_ppo(0).env_runners(env_to_module_connector=lambda env: "not a piece")
    with pytest.raises(TypeError, match="must return a ConnectorV2 piece"):
        config.build()
    with pytest.raises(ConfigError, match="env_to_module_connector"):
        small_ppo(0).env_runners(env_to_module_connector="MeanStdFilter")
