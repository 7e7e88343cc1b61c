"""RLlib's older API forms keep working, each with exactly one deprecation warning naming its
replacement (also when the form is used in several EnvRunner processes)."""

import logging

import numpy as np
import pytest
from helpers import LevelEnv, small_ppo

from callbacks import RLlibCallback, old_api
from trainer import PPO, AlgorithmConfig, PPOConfig


@pytest.fixture
def warnings_seen(caplog):
    """Clears the once-per-process memory; returns a function listing the deprecation lines."""
    old_api._warned.clear()
    caplog.set_level(logging.WARNING, logger="trainer")

    def lines():
        return [r.getMessage() for r in caplog.records if "DeprecationWarning" in r.getMessage()]

    return lines


def assert_warned_once(lines, form, replacement):
    matching = [line for line in lines if form in line]
    assert len(matching) == 1, f"{form!r}: {matching}"
    assert replacement in matching[0]


@pytest.mark.slow
def test_dict_config_with_old_keys_and_env_argument(warnings_seen):
    algo = PPO(
        config={
            "num_workers": 1,
            "num_envs_per_worker": 2,
            "num_sgd_iter": 2,
            "sgd_minibatch_size": 50,
            "train_batch_size": 200,
            "lambda": 0.9,
            "framework": "torch",
            "num_cpus_per_worker": 1,
            "model": {"fcnet_hiddens": [8]},
        },
        env="CartPole-v1",
    )
    try:
        config = algo.config
        assert (
            config.num_env_runners,
            config.num_envs_per_env_runner,
            config.num_epochs,
            config.minibatch_size,
            config.lambda_,
            config.env,
        ) == (1, 2, 2, 50, 0.9, "CartPole-v1")
        result = algo.train()
        assert result["episode_reward_mean"] == result["env_runners"]["episode_return_mean"]
        assert result["episode_reward_mean"] == result.get("episode_reward_mean")
        assert "episode_reward_mean" in result and "episode_reward_mean" not in dict(result)
        assert result["timesteps_total"] == result["num_env_steps_sampled_lifetime"]
        assert (
            result["env_runners"]["episode_reward_max"]
            == (result["env_runners"]["episode_return_max"])
        )
    finally:
        algo.stop()
    lines = warnings_seen()
    assert_warned_once(lines, "PPO(config={...})", "PPOConfig()")
    assert_warned_once(lines, '"num_workers"', '"num_env_runners"')
    assert_warned_once(lines, '"num_envs_per_worker"', '"num_envs_per_env_runner"')
    assert_warned_once(lines, '"num_sgd_iter"', '"num_epochs"')
    assert_warned_once(lines, '"sgd_minibatch_size"', '"minibatch_size"')
    assert_warned_once(lines, '"num_cpus_per_worker"', "ignored")
    assert_warned_once(
        lines, 'result["episode_reward_mean"]', 'result["env_runners"]["episode_return_mean"]'
    )
    assert_warned_once(
        lines, 'result["timesteps_total"]', 'result["num_env_steps_sampled_lifetime"]'
    )
    assert not any('"lambda"' in line or '"framework"' in line for line in lines)


def test_from_dict_and_rollouts_with_old_names(warnings_seen):
    config = PPOConfig.from_dict(
        {
            "num_rollout_workers": 3,
            "evaluation_num_workers": 1,
            "metrics_smoothing_episodes": 7,
            "recreate_failed_workers": False,
        }
    )
    assert (
        config.num_env_runners,
        config.evaluation_num_env_runners,
        config.metrics_num_episodes_for_smoothing,
        config.restart_failed_env_runners,
    ) == (3, 1, 7, False)
    config = AlgorithmConfig().rollouts(num_rollout_workers=2, num_envs_per_worker=3)
    assert (config.num_env_runners, config.num_envs_per_env_runner) == (2, 3)
    config.training(num_sgd_iter=4).evaluation(evaluation_num_workers=2)
    assert (config.num_epochs, config.evaluation_num_env_runners) == (4, 2)
    lines = warnings_seen()
    assert_warned_once(lines, "config.rollouts(...)", "config.env_runners(...)")
    assert_warned_once(lines, "env_runners(num_rollout_workers=...)", "num_env_runners")
    assert_warned_once(lines, "training(num_sgd_iter=...)", "training(num_epochs=...)")
    with pytest.raises(ValueError, match="unknown setting num_workerz"):
        PPOConfig.from_dict({"num_workerz": 2})


class OldStyleCallbacks(RLlibCallback):
    """The old stack's example callbacks: old argument names, user_data, custom_metrics,
    hist_data, and old episode attributes."""

    def on_sub_environment_created(
        self, *, worker, sub_environment, env_context, env_index, **kwargs
    ):
        sub_environment.created_by = (worker.worker_index, env_index)

    def on_episode_start(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        assert episode.length == -1  # as RLlib's old episodes before their first step
        assert base_env.get_sub_environments()[env_index].created_by == (
            worker.worker_index,
            env_index,
        )
        assert policies["default_policy"] is worker.module
        episode.user_data["positions"] = []
        episode.hist_data["positions"] = []

    def on_episode_step(self, *, worker, base_env, episode, env_index, **kwargs):
        episode.user_data["positions"].append(float(episode.last_observation_for()[0]))

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        positions = episode.user_data["positions"]
        # user_data spans the whole episode, across the chunks of several sample() calls.
        assert len(positions) == episode.length == 10
        assert episode.total_reward == pytest.approx(10.0)
        episode.custom_metrics["last_position"] = positions[-1]
        episode.custom_metrics["worker"] = worker.worker_index
        episode.hist_data["positions"] = positions

    def on_sample_end(self, *, worker, samples, **kwargs):
        assert worker.worker_index in (1, 2)

    def on_learn_on_batch(self, *, policy, train_batch, result, **kwargs):
        raise AssertionError("never called here")


def test_old_callback_signatures_and_episode_attributes_in_two_runners(warnings_seen):
    # 7 steps per sample() and 10-step episodes: every episode spans two or more chunks.
    config = (
        small_ppo(2, train_batch_size=140)
        .environment(LevelEnv)
        .env_runners(rollout_fragment_length=7)
        .callbacks(OldStyleCallbacks)
    )
    with config.build() as algo:
        result = algo.train()
        result = algo.train()
    custom = result["env_runners"]["custom_metrics"]
    assert custom["last_position_mean"] == pytest.approx(1.0)
    assert custom["last_position_min"] == custom["last_position_max"] == pytest.approx(1.0)
    assert (custom["worker_min"], custom["worker_max"]) == (1, 2)
    assert 1.0 < custom["worker_mean"] < 2.0
    positions = result["env_runners"]["hist_stats"]["positions"]
    assert len(positions) == 10 * result["env_runners"]["num_episodes"]
    assert np.allclose(positions[:10], np.arange(1, 11) / 10)
    # The old top-level key reads the same place.
    assert result["custom_metrics"] is result["env_runners"]["custom_metrics"]
    lines = warnings_seen()
    for form, replacement in [
        (
            "OldStyleCallbacks.on_episode_start(worker=, base_env=, policies=)",
            "env_runner=, env=, rl_module=",
        ),
        ("OldStyleCallbacks.on_episode_step(worker=, base_env=)", "env_runner=, env="),
        ("OldStyleCallbacks.on_sample_end(worker=)", "env_runner="),
        ("OldStyleCallbacks.on_sub_environment_created", "on_environment_created"),
        ("OldStyleCallbacks.on_learn_on_batch (never called here)", "on_sample_end"),
        ("episode.user_data", "episode.custom_data"),
        ("episode.custom_metrics", "metrics_logger.log_value"),
        ("episode.hist_data", "reduce='item_series'"),
        ("episode.length", "episode.t"),
        ("episode.total_reward", "get_return()"),
        ("episode.last_observation_for()", "get_observations(-1)"),
        ('result["custom_metrics"]', 'result["env_runners"]["custom_metrics"]'),
    ]:
        assert_warned_once(lines, form, replacement)


def test_default_callbacks_and_make_multi_callbacks(warnings_seen):
    from callbacks import DefaultCallbacks, make_multi_callbacks

    calls = []

    class First(DefaultCallbacks):
        def on_train_result(self, algorithm, result, **kwargs):  # old: not keyword-only
            calls.append(("first", result["episode_reward_mean"]))

    class Second(DefaultCallbacks):
        def on_train_result(self, algorithm, result, **kwargs):
            calls.append(("second", result["training_iteration"]))

    assert DefaultCallbacks is RLlibCallback
    with small_ppo(0).callbacks(make_multi_callbacks([First, Second])).build() as algo:
        result = algo.train()
    assert calls == [("first", result["env_runners"]["episode_return_mean"]), ("second", 1)]
    lines = warnings_seen()
    assert_warned_once(lines, "DefaultCallbacks", "RLlibCallback")
    assert_warned_once(lines, "make_multi_callbacks([A, B])", "config.callbacks([A, B])")


def test_workers_foreach_worker_and_old_checkpoint_names(warnings_seen, tmp_path):
    with small_ppo(1).build() as algo:
        indices = algo.workers.foreach_worker(lambda w: w.worker_index, local_worker=False)
        assert indices == [1]
        algo.save_checkpoint(tmp_path / "checkpoint")
        algo.load_checkpoint(tmp_path / "checkpoint")
    lines = warnings_seen()
    assert_warned_once(lines, "algorithm.workers", "algorithm.env_runner_group")
    assert_warned_once(lines, "foreach_worker(...)", "foreach_env_runner(...)")
    assert_warned_once(lines, "save_checkpoint(dir)", "save_to_path(dir)")
    assert_warned_once(lines, "load_checkpoint(dir)", "restore_from_path(dir)")


@pytest.mark.parametrize("parallel", [False, True])
def test_evaluation_results_answer_the_old_keys(parallel, warnings_seen):
    config = small_ppo(0).evaluation(
        evaluation_interval=1,
        evaluation_duration=2,
        evaluation_num_env_runners=1,
        evaluation_parallel_to_training=parallel,
    )
    with config.build() as algo:
        evaluation = algo.train()["evaluation"]
    assert evaluation["episode_reward_mean"] == evaluation["env_runners"]["episode_return_mean"]


class EpisodeLengthsOldForm(RLlibCallback):
    """The old stack's callback signatures: `worker=`, `base_env=`, `episode.length`."""

    def on_episode_end(self, *, worker, base_env, policies, episode, env_index, **kwargs):
        episode.custom_metrics["length"] = episode.length
        episode.custom_metrics["worker"] = worker.worker_index


@pytest.mark.parametrize(
    "switch",
    [
        lambda c: c.api_stack(
            enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False
        ),
        lambda c: c.update_from_dict(
            {"enable_rl_module_and_learner": False, "enable_env_runner_and_connector_v2": False}
        ),
    ],
)
def test_old_api_stack_switch_runs_the_new_stack_with_one_warning(switch, warnings_seen):
    config = switch(small_ppo(1).environment(LevelEnv).callbacks(EpisodeLengthsOldForm))
    # What runs is the new stack: scripts that branch on these settings take its path.
    assert config.enable_rl_module_and_learner and config.enable_env_runner_and_connector_v2
    config.api_stack(enable_rl_module_and_learner=False)  # again: no second warning
    with config.build() as algo:
        result = algo.train()
    assert result["custom_metrics"]["length_mean"] == 10.0
    assert result["custom_metrics"]["worker_mean"] == 1.0
    assert result["episode_reward_mean"] == result["env_runners"]["episode_return_mean"]
    stack_lines = [line for line in warnings_seen() if "api_stack(...=False)" in line]
    assert len(stack_lines) == 1 and "new API stack" in stack_lines[0]
