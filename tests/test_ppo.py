"""PPO: the loss gradient, continuous actions, results, single actions."""

import math

import gymnasium as gym
import numpy as np
import pytest
from helpers import LevelEnv, blas_threads_seen, level_return, small_ppo

from trainer import PPOConfig
from trainer.algorithms.ppo.ppo_learner import PPOLearner
from trainer.core.models import SpaceInfo


def _float64_learner(env_id: str, model_config: dict, **training) -> PPOLearner:
    config = (
        PPOConfig()
        .environment(env_id)
        .rl_module(model_config=model_config)
        .debugging(seed=0)
        .training(entropy_coeff=0.05, vf_clip_param=1e6, clip_param=0.2, **training)
    )
    env = gym.make(env_id)
    learner = PPOLearner(config, SpaceInfo.from_spaces(env.observation_space, env.action_space))
    learner.kl_coeff = 0.3
    module = learner.module
    for net in (module.encoder, module.pi, module.vf):
        if net is not None:
            net.params[:] = [p.astype(np.float64) for p in net.params]
    if module.log_std is not None:
        module.log_std = module.log_std.astype(np.float64)
    return learner


@pytest.mark.parametrize(
    "env_id, model_config",
    [
        ("CartPole-v1", {"fcnet_hiddens": [6], "fcnet_activation": "tanh"}),
        (
            "CartPole-v1",
            {"fcnet_hiddens": [5, 4], "fcnet_activation": "relu", "vf_share_layers": True},
        ),
        ("Pendulum-v1", {"fcnet_hiddens": [6], "fcnet_activation": "swish"}),
        ("Pendulum-v1", {"fcnet_hiddens": [4], "free_log_std": True, "vf_share_layers": True}),
    ],
)
def test_ppo_loss_gradient_matches_finite_differences(env_id, model_config):
    learner = _float64_learner(env_id, model_config)
    module = learner.module
    rng = np.random.default_rng(0)
    n = 12
    obs = rng.standard_normal((n, module.spaces.obs_dim))
    old_inputs = module.dist_inputs(obs) + 0.1 * rng.standard_normal(module.dist_inputs(obs).shape)
    if module.spaces.action_discrete_n:
        actions = rng.integers(0, module.spaces.action_discrete_n, n)
    else:
        actions = rng.standard_normal((n, module.spaces.action_dim))
    batch = {
        "obs": obs,
        "actions": actions,
        "action_logp": module.dist.logp(old_inputs, actions),
        "action_dist_inputs": old_inputs,
        "advantages": rng.standard_normal(n),
        "value_targets": rng.standard_normal(n),
    }
    grads, stats = learner.loss_and_grads(batch)
    params = module.parameters()
    eps = 1e-6
    for param, grad in zip(params, grads, strict=True):
        flat, flat_grad = param.reshape(-1), np.asarray(grad).reshape(-1)
        for j in range(0, flat.size, max(1, flat.size // 7)):
            saved = flat[j]
            flat[j] = saved + eps
            up = learner.loss_and_grads(batch)[1]["total_loss"]
            flat[j] = saved - eps
            down = learner.loss_and_grads(batch)[1]["total_loss"]
            flat[j] = saved
            numeric = (up - down) / (2 * eps)
            assert flat_grad[j] == pytest.approx(numeric, rel=1e-4, abs=1e-7)
    assert math.isfinite(stats["total_loss"])


def test_results_have_rllibs_keys():
    algo = small_ppo(1).build()
    result = algo.train()
    algo.stop()
    env_runners = result["env_runners"]
    for key in (
        "episode_return_mean",
        "episode_return_min",
        "episode_return_max",
        "episode_len_mean",
        "num_episodes",
        "num_env_steps_sampled",
        "num_env_steps_sampled_lifetime",
    ):
        assert key in env_runners
    assert (
        env_runners["episode_return_min"]
        <= env_runners["episode_return_mean"]
        <= (env_runners["episode_return_max"])
    )
    learner = result["learners"]["default_policy"]
    for key in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss", "curr_lr", "curr_kl_coeff"):
        assert math.isfinite(learner[key])
    assert learner["curr_lr"] == pytest.approx(5e-5)
    assert result["num_env_steps_sampled_lifetime"] == env_runners["num_env_steps_sampled"] >= 200
    assert result["training_iteration"] == 1 and result["time_this_iter_s"] > 0
    assert {
        "env_runner_sampling_timer",
        "learner_update_timer",
        "synch_weights",
        "training_iteration",
    } <= set(result["timers"])
    assert result["fault_tolerance"] == {
        "num_healthy_workers": 1,
        "num_remote_worker_restarts": 0,
        "num_env_runners_dropped_lifetime": 0,
        "num_waiting_workers": 0,
        "failures_this_iteration": [],
        "env_runners_restarted": [],
        "num_failures": {"crashed": 0, "timeout": 0, "exception": 0, "callback": 0},
        "num_env_steps_lost": 0,
        "num_sub_environment_restarts": 0,
    }


def test_episode_metrics_are_nan_until_an_episode_ends():
    # LevelEnv's episodes last exactly 10 steps (reward 1 each at level 0): the first 8 steps
    # end none, the next 8 end the first.
    algo = (
        small_ppo(0, env=LevelEnv, train_batch_size=8, minibatch_size=8)
        .env_runners(rollout_fragment_length=8)
        .debugging(seed=1)
        .build()
    )
    try:
        first, second = algo.train(), algo.train()
    finally:
        algo.stop()
    assert first["env_runners"]["num_env_steps_sampled"] == 8
    assert first["env_runners"]["num_episodes"] == 0
    assert math.isnan(first["env_runners"]["episode_return_mean"])
    assert second["env_runners"]["num_episodes"] == 1
    assert second["env_runners"]["episode_return_mean"] == level_return(0)


def test_continuous_actions_train_and_act_within_bounds():
    algo = small_ppo(1, env="Pendulum-v1").build()
    result = algo.train()
    obs, _ = gym.make("Pendulum-v1").reset(seed=0)
    sampled = algo.compute_single_action(obs, explore=True)
    greedy = [algo.compute_single_action(obs, explore=False) for _ in range(2)]
    algo.stop()
    assert math.isfinite(result["learners"]["default_policy"]["policy_loss"])
    assert sampled.shape == (1,) and -2.0 <= sampled[0] <= 2.0
    np.testing.assert_array_equal(greedy[0], greedy[1])


def test_compute_single_action_follows_explore_setting():
    algo = small_ppo(0).env_runners(explore=False).debugging(seed=0).build()
    obs, _ = gym.make("CartPole-v1").reset(seed=0)
    actions = {algo.compute_single_action(obs) for _ in range(20)}
    sampled = {algo.compute_single_action(obs, explore=True) for _ in range(50)}
    algo.stop()
    assert len(actions) == 1 and isinstance(next(iter(actions)), int)
    assert sampled == {0, 1}  # an untrained policy is close to uniform


@pytest.mark.slow
def test_ppo_improves_cartpole_within_a_few_iterations():
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01, train_batch_size=2000)
        .rl_module(
            model_config={
                "fcnet_hiddens": [32],
                "fcnet_activation": "linear",
                "vf_share_layers": True,
            }
        )
        .debugging(seed=0)
        .build()
    )
    returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(12)]
    algo.stop()
    assert returns[-1] > 2 * returns[0] and returns[-1] > 60


def _train_once(config) -> None:
    algo = config.build()
    try:
        algo.train()
    finally:
        algo.stop()


def _blas_threads_during_updates(monkeypatch, num_epochs: int = 2) -> list[list[int]]:
    """The BLAS pool sizes each minibatch step of one PPO iteration saw (numpy's pools at 2)."""
    config = small_ppo(0, env="Pendulum-v1", num_epochs=num_epochs)
    return blas_threads_seen(monkeypatch, PPOLearner, "loss_and_grads", lambda: _train_once(config))


def test_ppo_update_starts_on_one_blas_thread_and_probes_two(monkeypatch):
    # A pool of one thread per core waits for its descheduled threads after every small
    # product on a busy machine (an update 20x slower); RLlib's learner runs on one thread.
    # The update starts there, and times two threads after MIN_PROBE_INTERVAL steps
    # (tests/test_blas_threads.py has the policy).
    from trainer.core.blas import MIN_PROBE_INTERVAL

    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    seen = _blas_threads_during_updates(monkeypatch, num_epochs=6)
    assert len(seen) == 12
    assert all(threads == [1] * len(threads) for threads in seen[:MIN_PROBE_INTERVAL])
    assert all(threads == [2] * len(threads) for threads in seen[MIN_PROBE_INTERVAL:][:1])


def test_ppo_update_keeps_a_blas_pool_the_user_sized(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    seen = _blas_threads_during_updates(monkeypatch)
    assert seen and all(threads == [2] * len(threads) for threads in seen)


def _pendulum_episodes(num_episodes: int = 4, length: int = 30) -> list:
    from trainer import SingleAgentEpisode

    rng = np.random.default_rng(0)
    episodes = []
    for _ in range(num_episodes):
        episode = SingleAgentEpisode()
        episode.add_env_reset(rng.standard_normal(3).astype(np.float32))
        for _ in range(length):
            episode.add_env_step(
                rng.standard_normal(3).astype(np.float32),
                rng.standard_normal(1).astype(np.float32),
                float(rng.normal(-5.0, 2.0)),
                extra_model_outputs={
                    "action_logp": -1.0,
                    "action_dist_inputs": np.array([0.0, -0.5], np.float32),
                },
            )
        episodes.append(episode.to_numpy())
    return episodes


def _recorded_update(kl_target: float) -> tuple[PPOLearner, dict, list[dict]]:
    """A seeded learner's update (4 epochs of 3 minibatches) and each minibatch's stats."""
    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .debugging(seed=3)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .training(num_epochs=4, minibatch_size=40, lr=3e-3, kl_target=kl_target)
    )
    env = gym.make("Pendulum-v1")
    learner = PPOLearner(config, SpaceInfo.from_spaces(env.observation_space, env.action_space))
    seen = []
    original = learner._minibatch_step

    def recording(minibatch):  # each step's statistics (a seeded run's thread check aside)
        stats = original(minibatch)
        seen.append(dict(stats))
        return stats

    learner._minibatch_step = recording
    return learner, learner.update(_pendulum_episodes()), seen


def test_ppo_reports_the_last_minibatch_and_adapts_kl_on_it():
    """As RLlib 2.60's learner: loss statistics are logged per minibatch with window=1 (the
    last one is reported), `after_gradient_based_update` adapts the KL coefficient on that
    last KL, and `curr_kl_coeff` is the adapted value."""
    _, results, seen = _recorded_update(kl_target=0.01)
    assert len(seen) == 12
    for key in ("policy_loss", "vf_loss", "entropy", "mean_kl_loss", "total_loss"):
        assert results[key] == seen[-1][key]
    # A target between the rules' outcomes for the last and for the mean KL tells them apart
    # (the loss does not depend on kl_target, so the same seed gives the same minibatches).
    last = seen[-1]["mean_kl_loss"]
    mean = sum(stats["mean_kl_loss"] for stats in seen) / len(seen)
    assert last != mean
    target = (mean + last) / 4 if last > mean else last + mean
    learner, results, again = _recorded_update(kl_target=target)
    assert [s["mean_kl_loss"] for s in again] == [s["mean_kl_loss"] for s in seen]
    expected = 0.2 * (1.5 if last > mean else 0.5)
    assert learner.kl_coeff == pytest.approx(expected)
    assert results["curr_kl_coeff"] == learner.kl_coeff


def test_module_weights_are_initialised_on_one_blas_thread(monkeypatch):
    # Each layer's orthogonal initialisation is a QR decomposition: with numpy's pool of one
    # thread per core on a busy machine, a build took 0.2-0.4 s instead of a few ms.
    from trainer.core import nn
    from trainer.core.blas import BlasThreads

    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(nn, "_INIT_THREADS", BlasThreads())
    seen = blas_threads_seen(monkeypatch, nn, "orthogonal", lambda: small_ppo(0).build().stop())
    assert seen and all(threads == [1] * len(threads) for threads in seen)
