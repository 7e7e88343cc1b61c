"""DQN through the public API, its replay buffers, and the DQN config checks."""

import numpy as np
import ormsgpack
import pytest
from helpers import blas_threads_seen

from trainer import ConfigError, DQNConfig, SingleAgentEpisode
from trainer.algorithms.replay import EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer


def small_dqn(num_env_runners: int = 0, **training) -> DQNConfig:
    settings = {"num_steps_sampled_before_learning_starts": 0, "train_batch_size": 16}
    settings.update(training)
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners)
        .training(**settings)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=0)
    )


def _episode(
    length: int, *, start: float = 0.0, terminated: bool = True, id_: str | None = None
) -> SingleAgentEpisode:
    episode = SingleAgentEpisode(id_)
    episode.add_env_reset(np.full(4, start, np.float32))
    for t in range(length):
        episode.add_env_step(
            np.full(4, start + t + 1, np.float32),
            t % 2,
            1.0,
            terminated=terminated and t == length - 1,
        )
    return episode.to_numpy()


def test_dqn_trains_and_reports_learner_buffer_and_epsilon_results():
    algo = small_dqn(epsilon=[(0, 1.0), (300, 0.1)]).build()
    try:
        results = [algo.train() for _ in range(4)]
    finally:
        algo.stop()
    last = results[-1]
    learner = last["learners"]["default_policy"]
    for key in ("qf_loss", "qf_mean", "td_error_mean"):
        assert np.isfinite(learner[key]), key
    # RLlib's buffer metrics; every sampled step is stored (no eviction below capacity).
    assert last["replay_buffer"]["num_env_steps_added_lifetime"] == 400
    assert last["num_env_steps_sampled_lifetime"] == 400
    assert algo.local_replay_buffer.get_num_timesteps() == 400
    # Epsilon follows the schedule: 1.0 at t=0, 0.1 from t=300 on.
    epsilons = [r["env_runners"]["cur_epsilon"] for r in results]
    assert epsilons[0] == pytest.approx(1.0 - 0.9 * 99 / 300, abs=0.01)
    assert epsilons[-1] == pytest.approx(0.1)
    assert np.isfinite(last["env_runners"]["episode_return_mean"])


@pytest.mark.slow
def test_dqn_with_worker_processes_and_uniform_replay():
    algo = small_dqn(
        num_env_runners=2, replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 150}
    ).build()
    try:
        result = algo.train()
        result = algo.train()
    finally:
        algo.stop()
    buffer = algo.local_replay_buffer
    assert buffer.capacity == 150 and "alpha" not in algo.config.replay_buffer_config
    assert result["num_env_steps_sampled_lifetime"] >= 200
    # Full: the oldest episodes were evicted whole (every stored episode still starts at its
    # reset), down to at most the capacity.
    assert result["replay_buffer"]["num_episodes_evicted_lifetime"] > 0
    assert 0 < buffer.get_num_timesteps() <= 150
    assert buffer.get_num_timesteps() == sum(len(ep) for ep in buffer.episodes)
    assert all(ep.t_started == 0 for ep in buffer.episodes)


@pytest.mark.slow
def test_greedy_actions_with_explore_false():
    algo = small_dqn(num_env_runners=1).env_runners(explore=False).build()
    try:
        episodes, _ = algo.env_runner_group.sample(min_env_steps=50)
        module = algo.learner.module
        for episode in episodes:
            greedy = module.q_values(module.spaces.preprocess(episode.observations[:-1]))
            assert np.array_equal(episode.actions, greedy.argmax(axis=1))
        obs = np.array([0.01, 0.2, -0.03, -0.3], np.float32)
        # Deterministic without exploration; epsilon 1.0 at t=0 explores when asked to.
        assert len({algo.compute_single_action(obs) for _ in range(20)}) == 1
        assert algo.compute_single_action(obs, explore=False) == algo.compute_single_action(obs)
        assert len({algo.compute_single_action(obs, explore=True) for _ in range(40)}) == 2
    finally:
        algo.stop()


def test_replay_buffer_state_round_trips_through_ormsgpack():
    for cls in (EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer):
        buffer = cls(capacity=100, seed=1)
        for i in range(12):
            buffer.add([_episode(10, start=100 * i, terminated=i % 3 != 0)])
        if isinstance(buffer, PrioritizedEpisodeReplayBuffer):
            buffer.sample(8, n_step=1)
            buffer.update_priorities(np.linspace(0.1, 5.0, 8))
        state = buffer.get_state()
        packed = ormsgpack.packb(state, option=ormsgpack.OPT_SERIALIZE_NUMPY)
        restored = cls(capacity=100)
        restored.set_state(ormsgpack.unpackb(packed))
        assert len(restored) == len(buffer) == 100
        # Equal buffers: the same state, and the same samples from here on.
        assert ormsgpack.packb(restored.get_state(), option=ormsgpack.OPT_SERIALIZE_NUMPY) == packed
        a = buffer.sample_transitions(20, n_step=3)
        b = restored.sample_transitions(20, n_step=3)
        for key in a:
            assert np.array_equal(a[key], b[key]), key
        a = buffer.sample(5, n_step=2, sample_episodes=True)
        b = restored.sample(5, n_step=2, sample_episodes=True)
        assert [(ep.t_started, ep.get_return()) for ep in a] == [
            (ep.t_started, ep.get_return()) for ep in b
        ]
    with pytest.raises(ValueError, match="capacity=100"):
        EpisodeReplayBuffer(capacity=50).set_state(state)


def test_n_step_returns_follow_episodes_across_chunks():
    buffer = EpisodeReplayBuffer(capacity=1000, seed=0)
    first = _episode(3, terminated=False, id_="ep")
    buffer.add(first)
    second = first.cut()  # the successor chunk: same id, starting at t=3
    for t in range(2):
        second.add_env_step(np.full(4, 4 + t, np.float32), 0, 1.0, terminated=t == 1)
    buffer.add([second.to_numpy()])
    assert buffer.get_num_episodes() == 1 and len(buffer.episodes[0]) == 5
    batch = buffer.sample_transitions(200, n_step=3, gamma=0.5)
    for start, next_obs, ret, taken, n, terminated in zip(
        batch["obs"][:, 0],
        batch["new_obs"][:, 0],
        batch["rewards"],
        batch["n_steps_taken"],
        batch["n_step"],
        batch["terminateds"],
        strict=True,
    ):
        steps = min(3, 5 - int(start))  # the episode has 5 steps; it ends at observation 5
        assert next_obs == start + steps and taken == steps and n == 3
        assert ret == pytest.approx(sum(0.5**k for k in range(steps)))
        assert terminated == (start + steps == 5)
    # RLlib's episode list holds the same transitions.
    for episode in buffer.sample(100, n_step=3, gamma=0.5, sample_episodes=True):
        start = episode.t_started
        steps = min(3, 5 - start)
        assert episode.get_observations(-1)[0] == start + steps
        assert episode.get_rewards(0) == pytest.approx(sum(0.5**k for k in range(steps)))
        assert episode.is_terminated == (start + steps == 5)
        assert episode.get_extra_model_outputs("n_step", 0) == 3


def test_prioritized_replay_prefers_high_td_errors():
    buffer = PrioritizedEpisodeReplayBuffer(capacity=1000, alpha=1.0, seed=0)
    buffer.add([_episode(100)])
    # Priority 99 for the step at t=7 (drawn among 2000 draws), 1 for all others.
    starts = [ep.t_started for ep in buffer.sample(2000, n_step=1)]
    assert 7 in starts
    buffer.update_priorities(np.where(np.array(starts) == 7, 99.0, 1.0))
    episodes = buffer.sample(1000, n_step=1, beta=1.0)
    starts = np.array([ep.t_started for ep in episodes])
    weights = np.array([ep.get_extra_model_outputs("weights", 0) for ep in episodes])
    assert 0.4 < np.mean(starts == 7) < 0.6  # priority 99 of a total 198
    # Importance weights: 1 for the least likely steps, (p_min / p_max) for the favoured one.
    assert weights.max() == pytest.approx(1.0)
    assert weights[starts == 7] == pytest.approx(1.0 / 99.0, rel=1e-4)
    # The arrays DQN trains on are drawn the same way.
    transitions = buffer.sample_transitions(1000, n_step=1, beta=1.0)
    assert 0.4 < np.mean(transitions["obs"][:, 0] == 7) < 0.6


@pytest.mark.parametrize(
    "setting, message",
    [
        ({"replay_buffer_config": {"type": "FancyBuffer"}}, "'type' is one of"),
        ({"replay_buffer_config": {"capacity": 0}}, "'capacity' is an int >= 1"),
        ({"replay_buffer_config": {"alpha": -1}}, "'alpha' is a number >= 0"),
        ({"replay_buffer_config": {"size": 10}}, "keys from"),
        ({"replay_buffer_config": {"type": "EpisodeReplayBuffer", "beta": 0.4}}, "keys from"),
        ({"epsilon": 1.5}, r"epsilon=1\.5"),
        ({"epsilon": [(100, 1.0), (200, 0.1)]}, "must start at timestep 0"),
        ({"epsilon": [(0, 1.0), (0, 0.1)]}, "timesteps must increase"),
        ({"epsilon": [(0, 1.0), (10, "low")]}, "values must be numbers"),
        ({"n_step": 0}, "n_step must be"),
        ({"n_step": (3, 3)}, "low < high"),
        ({"td_error_loss_fn": "l1"}, r"one of \['huber', 'mse'\]"),
    ],
)
def test_bad_dqn_settings_are_rejected_at_the_call(setting, message):
    with pytest.raises(ConfigError, match=message) as error:
        DQNConfig().training(**setting)
    assert f"{next(iter(setting))}=" in str(error.value)


def test_fragment_shorter_than_n_step_and_box_actions_fail_at_build():
    with pytest.raises(ConfigError, match="smaller than n_step"):
        DQNConfig().environment("CartPole-v1").env_runners(rollout_fragment_length=2).training(
            n_step=3
        ).validate()
    with pytest.raises(ValueError, match="DQN needs a Discrete action space"):
        DQNConfig().environment("Pendulum-v1").build()


def _blas_threads_during_dqn_updates(monkeypatch) -> list[list[int]]:
    """The BLAS pool sizes each update of one DQN iteration saw (numpy's pools at 2)."""
    from trainer.algorithms.dqn.dqn_learner import DQNLearner

    def train_once() -> None:
        with small_dqn().training(training_intensity=None).build() as algo:
            algo.train()

    return blas_threads_seen(monkeypatch, DQNLearner, "update", train_once)


@pytest.mark.slow
def test_dqn_updates_run_on_one_blas_thread(monkeypatch):
    # As PPO's (see BlasThreads): numpy's pool of one thread per core stalls on a busy machine.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    seen = _blas_threads_during_dqn_updates(monkeypatch)
    assert seen and all(threads == [1] * len(threads) for threads in seen)


@pytest.mark.slow
def test_dqn_updates_keep_a_blas_pool_the_user_sized(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    seen = _blas_threads_during_dqn_updates(monkeypatch)
    assert seen and all(threads == [2] * len(threads) for threads in seen)
