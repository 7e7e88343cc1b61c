"""Env-to-module connectors (RLlib's `ray.rllib.connectors.env_to_module`): MeanStdFilter's
statistics merged across runners, synced, checkpointed and restored after a restart (per agent
in multi-agent runs); the
observation-reshaping pieces; a user's ConnectorV2 piece. Real worker processes and envs."""

import os
import signal

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from callbacks import RLlibCallback
from trainer import Algorithm, ConfigError, PPOConfig, SingleAgentEpisode
from trainer.checkpoints.codec import find_problem
from trainer.connectors import (
    ConnectorV2,
    FlattenObservations,
    FrameStackingEnvToModule,
    MeanStdFilter,
    PrevActionsPrevRewards,
)
from trainer.connectors.env_to_module import RunningStat
from trainer.examples.envs.classes.multi_agent import MultiAgentPendulum

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
    observation is divided by RLlib's SMALL_NUMBER (1e-6) alone and clipped; from the second on, by the sample std."""
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
    np.testing.assert_allclose(outputs[1], np.array([1.5, 2.0]) / (std + 1e-6), rtol=1e-6)


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


# -- MeanStdFilter(multi_agent=True): statistics per agent -----------------------------------
def test_multi_agent_mean_std_filter_keeps_each_agents_statistics_and_merges_them():
    """Each agent's observations are filtered by statistics of their own; two runners' states
    merge agent by agent into the statistics of every observation; a state is plain data
    (agent ids of any type) that another piece takes back exactly."""
    space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    rng = np.random.default_rng(0)
    runners = [MeanStdFilter(multi_agent=True) for _ in range(2)]
    seen: dict = {0: [], "b": []}
    for runner in runners:
        for agent_id, center in ((0, 100.0), ("b", -5.0)):
            assert runner.agent_observation_space(agent_id, space).shape == (2,)
            for _ in range(50):
                obs = rng.normal(center, 2.0, 2)
                seen[agent_id].append(obs)
                filtered = runner.transform_agent_observation(agent_id, space, obs)
            assert np.all(np.abs(filtered) < 4.0), (agent_id, filtered)  # its own statistics
    states = [runner.get_state() for runner in runners]
    assert find_problem(states[0], "state") is None
    driver = MeanStdFilter(multi_agent=True)  # the driver's piece has seen no observation
    merged = driver.merge_states(states)
    for agent_id, agent_state in merged["agents"]:
        values = np.array(seen[agent_id])
        assert agent_state["synced"]["n"] == len(values) == 100
        np.testing.assert_allclose(agent_state["synced"]["mean"], values.mean(axis=0))
    again = MeanStdFilter(multi_agent=True)
    again.set_state(merged)
    runners[0].set_state(merged)
    probe = np.array([101.0, 99.0])
    np.testing.assert_array_equal(
        again._agent_filter(0, space).normalize(probe, update=False),
        runners[0]._agent_filter(0, space).normalize(probe, update=False),
    )


@pytest.mark.slow
def test_multi_agent_mean_std_filter_syncs_across_runners_and_checkpoints(tmp_path):
    def config():
        return (
            PPOConfig()
            .environment(MultiAgentPendulum, env_config={"num_agents": 2})
            .env_runners(
                num_env_runners=2,
                env_to_module_connector=lambda env, spaces, device: MeanStdFilter(multi_agent=True),
            )
            .multi_agent(
                policies={"p0", "p1"},
                policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}",
            )
            .training(train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
            .debugging(seed=0)
        )

    def synced(state):
        agents = state["connector_state"]["00_MeanStdFilter"]["agents"]
        return {agent_id: agent["synced"] for agent_id, agent in agents}

    algo = config().build()
    try:
        algo.train()
        states = algo.env_runner_group.get_runner_states()
        local = synced(states[0])
        assert set(local) == {0, 1} and local[0]["n"] == local[1]["n"] >= 400
        for index in (1, 2):
            for agent_id, stats in synced(states[index]).items():
                np.testing.assert_array_equal(stats["mean"], local[agent_id]["mean"])
        path = algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    again = Algorithm.from_checkpoint(path)
    try:
        restored = synced(again.env_runner_group.get_runner_states()[1])
        for agent_id, stats in local.items():
            np.testing.assert_array_equal(restored[agent_id]["mean"], stats["mean"])
        again.train()
    finally:
        again.stop()


# -- learner connectors: pieces over the train batch's episodes -------------------------------
class NegateRewards(ConnectorV2):
    """A learner piece that flips the sign of every reward in the episodes it gets."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in self.single_agent_episode_iterator(episodes):
            episode.set_rewards(new_data=-np.asarray(episode.get_rewards()))
        return batch


class WritesABatchColumn(ConnectorV2):
    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        batch["intrinsic"] = np.zeros(3)
        return batch


@pytest.mark.slow
def test_ppo_learns_from_the_episodes_its_learner_connector_rewrote():
    """A learner piece that negates CartPole's rewards (RLlib's learner pipeline, called as
    `learner_connector(observation_space, action_space)`) makes PPO learn to fall as fast as
    it can: the sampled return drops well below a random policy's (~22). A piece that writes
    batch columns is refused, naming them."""
    config = small_ppo(num_env_runners=1, lr=0.01, num_epochs=4, train_batch_size=1000)
    seen_spaces = []

    def factory(observation_space, action_space):
        seen_spaces.append((observation_space.shape, action_space))
        return [NegateRewards()]

    algo = config.training(learner_connector=factory).debugging(seed=0).build()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(12)]
    finally:
        algo.stop()
    assert seen_spaces == [((4,), gym.spaces.Discrete(2))]
    assert min(returns[-3:]) < 13, returns
    algo = config.learners(learner_connector=lambda *spaces: WritesABatchColumn()).build()
    try:
        with pytest.raises(ConfigError, match=r"wrote the batch columns \['intrinsic'\]"):
            algo.train()
    finally:
        algo.stop()
