"""RLlib 2.60's builder methods and keywords that the conformance test found missing, and the
Algorithm's Tune Trainable API: real builds, worker processes, envs and files."""

from __future__ import annotations

import json
import os
import tempfile

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from trainer import ConfigError, DQNConfig, EnvRunner, PPOConfig, SingleAgentEpisode
from trainer.algorithms.ppo import PPO
from trainer.compat.rllib_settings import IgnoredSettingWarning
from trainer.connectors import (
    ConnectorPipelineV2,
    EnvToModulePipeline,
    FlattenObservations,
    MeanStdFilter,
    ObservationPreprocessor,
)
from trainer.testing import assert_no_env_runner_processes


# -- builder methods and keywords -------------------------------------------------------------
def test_offline_data_takes_rllib_defaults_refuses_data_and_warns_for_options():
    config = small_ppo().offline_data(
        input_="sampler", output=None, input_read_method="read_parquet"
    )
    assert config.input_ == "sampler" and config.output is None and config.is_online
    assert not config.is_offline
    # PPO learns from its EnvRunners: recorded data is for the offline algorithms.
    with pytest.raises(ConfigError, match=r"offline_data\(input_='/data/cartpole'\).*BC, MARWIL"):
        small_ppo().offline_data(input_="/data/cartpole").validate()
    # Offline evaluation computes an offline algorithm's loss.
    with pytest.raises(ConfigError, match="offline_evaluation_interval=1"):
        small_ppo().evaluation(offline_evaluation_interval=1).validate()
    with pytest.warns(
        IgnoredSettingWarning, match=r"map_batches_kwargs=\{'concurrency': 2\}\) has no"
    ):
        small_ppo().offline_data(map_batches_kwargs={"concurrency": 2}).build().stop()


def read_variable(runner: EnvRunner) -> tuple[int, str | None, str | None]:
    return (
        runner.worker_index,
        os.environ.get("LOCALRL_WORKER_VAR"),
        os.environ.get("LOCALRL_DRIVER_VAR"),
    )


def test_python_environment_sets_variables_in_the_main_and_worker_processes(monkeypatch):
    monkeypatch.delenv("LOCALRL_DRIVER_VAR", raising=False)
    monkeypatch.delenv("LOCALRL_WORKER_VAR", raising=False)
    config = small_ppo(num_env_runners=2).python_environment(
        extra_python_environs_for_driver={"LOCALRL_DRIVER_VAR": "driver"},
        extra_python_environs_for_worker={"LOCALRL_WORKER_VAR": 7},
    )
    algo = config.build()
    try:
        seen = algo.env_runner_group.foreach_env_runner(read_variable)
        assert seen[0] == (0, None, "driver")  # the local runner, in this process
        # The worker processes: their own variables, and the main process's (set before they
        # started, so inherited).
        assert sorted(seen[1:]) == [(1, "7", "driver"), (2, "7", "driver")]
        assert os.environ.get("LOCALRL_WORKER_VAR") is None
    finally:
        algo.stop()
    with pytest.raises(ConfigError, match="extra_python_environs_for_worker=.*a dict"):
        PPOConfig().python_environment(extra_python_environs_for_worker=["A=1"])


def test_algorithm_specific_rllib_settings_belong_to_their_config():
    config = DQNConfig().training(num_atoms=1, v_min=-5.0, hiddens=[64], adam_epsilon=1e-8)
    assert (config.v_min, config.hiddens) == (-5.0, [64])
    with pytest.raises(ConfigError, match=r"num_atoms=0\): num_atoms must be an int >= 1"):
        DQNConfig().training(num_atoms=0)
    with pytest.raises(TypeError, match="unknown setting num_atoms"):
        PPOConfig().training(num_atoms=1)
    assert not hasattr(PPOConfig(), "v_min") and PPOConfig().lr_schedule is None
    with pytest.warns(IgnoredSettingWarning, match=r"training\(lr_schedule=.*old-API-stack"):
        small_ppo().training(lr_schedule=[[0, 1e-3], [1000, 1e-4]]).build().stop()


def test_rllib_keywords_of_other_builders_and_moved_names_are_taken():
    config = (
        PPOConfig()
        .learners(learner_config_dict={}, custom_resources_per_learner={})
        .resources(num_cpus_for_local_worker=1, custom_resources_for_main_process={})
        .env_runners(use_env_runner_state_server=False, env_runner_state_server_max_concurrency=16)
        .training(num_aggregator_actors_per_learner=0)
        .rl_module(model_config_dict={"fcnet_hiddens": [8]})
        .callbacks(on_evaluate_offline_start=None)
    )
    assert config.model_config["fcnet_hiddens"] == [8]
    with pytest.raises(ConfigError, match="learner_class must be None or a subclass of a torch"):
        PPOConfig().learners(learner_class=object)
    assert config.gym_env_vectorize_mode == "sync" and config.log_gradients is False
    assert PPOConfig().shuffle_batch_per_epoch and not DQNConfig().shuffle_batch_per_epoch


def test_config_reads_as_a_dict_and_round_trips_through_its_state():
    def on_end(**kwargs):
        pass

    config = small_ppo().callbacks(on_episode_end=on_end).callbacks(on_episode_end=None)
    assert config.callbacks_on_episode_end is on_end  # None leaves an event as it is
    assert config.callbacks_on_train_result is None
    assert "lr" in config.keys() and dict(config.items())["lr"] == config.lr
    assert config.pop("lr") == config.lr and "lr" in config  # RLlib's pop reads
    assert list(config.values())[list(config.keys()).index("gamma")] == config.gamma
    state = config.get_state()
    assert state["class"] is PPOConfig
    clone = PPOConfig.from_state(state)
    assert type(clone) is PPOConfig and clone.to_dict() == config.to_dict()
    data = json.loads(json.dumps(config.serialize()))
    assert data["lr"] == config.lr and data["env"] == "CartPole-v1"
    config.train_batch_size_per_learner = 400
    assert config.train_batch_size == 400 == config.total_train_batch_size
    assert PPOConfig().environment(None).env is None
    assert PPOConfig.DEFAULT_POLICY_MAPPING_FN("agent", None, None) == "default_policy"
    assert PPOConfig.DEFAULT_AGENT_TO_MODULE_MAPPING_FN("agent", None) == "default_policy"


def test_train_batch_size_vs_rollout_fragment_length_is_checked_as_rllib_does():
    fits = PPOConfig().env_runners(num_env_runners=2, rollout_fragment_length=1000)
    fits.training(train_batch_size=4000).validate_train_batch_size_vs_rollout_fragment_length()
    misfit = PPOConfig().env_runners(num_env_runners=2, rollout_fragment_length=3000)
    with pytest.raises(
        ConfigError,
        match=r"train_batch_size=4000 .*rollout_fragment_length "
        r"to \"auto\" or to 2000",
    ):
        misfit.validate_train_batch_size_vs_rollout_fragment_length()


def test_build_algo_and_build_env_to_module_connector():
    config = small_ppo().env_runners(env_to_module_connector=lambda env: [MeanStdFilter()])
    pipeline = config.build_env_to_module_connector(gym.make("CartPole-v1"))
    assert [type(p) for p in pipeline.connectors] == [MeanStdFilter]
    assert pipeline.observation_space.shape == (4,)
    algo = config.build_algo(use_copy=False)
    try:
        assert algo.config.is_frozen and not config.is_frozen
    finally:
        algo.stop()


# -- the Algorithm as Tune's Trainable --------------------------------------------------------
class TrainablePPO(PPO):
    """Overrides Tune's hooks the way RLlib users do."""

    cleanups = 0

    def log_result(self, result):
        result["seen_by_log_result"] = True
        super().log_result(result)

    def cleanup(self):
        type(self).cleanups += 1
        super().cleanup()


def mark_result(algorithm, result, **kwargs):
    result["callback_after_log_result"] = result.get("seen_by_log_result", False)


def test_algorithm_has_tunes_trainable_api(tmp_path, monkeypatch):
    # The logdir is made in the system's temporary folder: here, this test's.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = (
        PPOConfig(algo_class=TrainablePPO)
        .update_from_dict(small_ppo(num_env_runners=1).to_dict())
        .callbacks(on_train_result=mark_result)
    )
    algo = config.build()
    try:
        result = algo.train()
        assert result["seen_by_log_result"] and result["callback_after_log_result"]
        assert algo.get_config() is algo.config
        assert (algo.trial_name, algo.trial_id, algo.trial_resources) == (
            "default",
            "default",
            None,
        )
        assert os.path.isdir(algo.logdir) and "TrainablePPO_CartPole-v1" in algo.logdir
        assert os.path.dirname(algo.logdir) == str(tmp_path)
        assert not algo.is_actor() and algo.get_current_ip_pid()[1] == os.getpid()
        assert algo.reset_config({"lr": 1e-3}) is False and algo.reset({"lr": 1e-3}) is False
        assert algo.iteration == 1 == algo.training_iteration
        filled = algo.get_auto_filled_metrics(time_this_iter=0.5)
        assert filled["iterations_since_restore"] == 1 and filled["pid"] == os.getpid()
        assert set(algo.get_auto_filled_metrics(debug_metrics_only=True)) <= set(filled)
        assert len(algo.train_buffered(buffer_time_s=0.0)) == 1
        assert len(algo.train_buffered(buffer_time_s=60.0, max_buffer_length=2)) == 2
        saved = algo.save(str(tmp_path / "ckpt"))
        weights = algo.get_weights(policies=["default_policy"])
        algo.train()
        algo.restore(checkpoint_path=saved)
        assert all(np.array_equal(weights[k], algo.get_weights()[k]) for k in weights)
        assert algo.iteration == 4
        assert set(algo.get_state(components=["algorithm", "learner"])) == {"algorithm", "learner"}
        assert "metrics" not in algo.get_state(not_components="metrics")
        # As RLlib's: the main process's CPU and one per EnvRunner (worker processes: one
        # bundle; no Ray runs here, so nothing caps it at a node's CPUs).
        assert TrainablePPO.default_resource_request(algo.config).bundles == [{"CPU": 2.0}]
        assert "num_env_runners" in TrainablePPO.resource_help(algo.config)
        assert algo.offline_data is None and algo.local_replay_buffer is None
        assert algo.evaluation_config.in_evaluation and algo.eval_env_runner is None
    finally:
        algo.stop()
    assert TrainablePPO.cleanups == 1  # stop() runs cleanup()
    assert_no_env_runner_processes()


def test_compute_single_action_takes_rllibs_input_forms():
    algo = small_ppo().build()
    try:
        obs = np.zeros(4, np.float32)
        greedy = algo.compute_single_action(obs, explore=False)
        assert algo.compute_single_action(input_dict={"obs": obs}, explore=False) == greedy
        with pytest.raises(ValueError, match="either observation or input_dict"):
            algo.compute_single_action(obs, input_dict={"obs": obs})
        with pytest.raises(KeyError, match="one module"):
            algo.compute_single_action(obs, policy_id="other")
    finally:
        algo.stop()


# -- EnvRunner and connectors ---------------------------------------------------------------
class ClipObservations(ObservationPreprocessor):
    """Clips every observation to [-0.01, 0.01]."""

    def preprocess(self, observation, episode):
        return np.clip(observation, -0.01, 0.01).astype(np.float32)


def test_every_runner_has_the_algorithms_trial_id_default_without_tune():
    # As in RLlib: the Algorithm gives its trial_id to every EnvRunner, local, remote and
    # restarted, and evaluation's ("default" outside a Tune trial; tests/test_tune.py checks
    # a trial's own id).
    config = small_ppo(1).evaluation(evaluation_interval=1, evaluation_num_env_runners=1)
    with config.build() as algo:
        algo.env_runner_group.foreach_env_runner(lambda r: os._exit(1), local_env_runner=False)
        algo.train()
        assert algo.env_runner_group.num_remote_worker_restarts() == 1
        groups = (algo.env_runner_group, algo.eval_env_runner_group)
        trial_ids = [group.foreach_env_runner(lambda r: r.tune_trial_id) for group in groups]
    assert trial_ids == [["default", "default"], ["default", "default"]]


def test_observation_preprocessor_rewrites_what_the_module_sees_in_a_real_runner():
    config = small_ppo().env_runners(env_to_module_connector=lambda env: ClipObservations())
    runner = EnvRunner(config=config, tune_trial_id="trial_1")
    try:
        episodes = runner.sample(num_timesteps=50)
        observations = np.concatenate([np.asarray(e.get_observations()) for e in episodes])
        assert np.abs(observations).max() <= 0.01 and np.abs(observations).max() > 0
        assert runner.tune_trial_id == "trial_1" and runner.num_env_steps_sampled_lifetime >= 50
        assert runner.apply(lambda r, extra: (r.worker_index, extra), "x") == (0, "x")
        episodes, connector_state, metrics = runner.sample_get_state_and_metrics(num_timesteps=10)
        assert sum(len(e) for e in episodes) >= 10 and connector_state is None and metrics
        before = runner.module.get_weights()
        runner.make_module()
        assert set(runner.module.get_weights()) == set(before)
        assert set(runner.get_state(components="rng")) == {"rng"}
    finally:
        runner.stop()


def test_pipeline_pieces_are_inserted_and_removed_as_in_rllib():
    space = gym.spaces.Dict({"a": gym.spaces.Box(-1.0, 1.0, (2,)), "b": gym.spaces.Discrete(3)})
    pipeline = EnvToModulePipeline(
        space, gym.spaces.Discrete(2), connectors=[FlattenObservations()]
    )
    assert pipeline.observation_space.shape == (5,)
    with pytest.raises(ValueError, match="add FlattenObservations before it"):
        pipeline.insert_before(FlattenObservations, MeanStdFilter())  # Dict into the filter
    assert [type(p) for p in pipeline.connectors] == [FlattenObservations]  # unchanged
    assert pipeline.insert_after(FlattenObservations, MeanStdFilter()) is pipeline.connectors[0]
    assert pipeline.connectors[1].input_observation_space.shape == (5,)
    pipeline.remove("MeanStdFilter")
    pipeline.remove("MeanStdFilter")  # none left: nothing happens, as in RLlib
    pipeline.append(MeanStdFilter())
    assert [type(p).__name__ for p in pipeline.connectors] == [
        "FlattenObservations",
        "MeanStdFilter",
    ]
    pipeline.prepend(FlattenObservations())
    assert pipeline.observation_space.shape == (5,)
    with pytest.raises(ValueError, match="no connector piece named or of type 'Nope'"):
        pipeline.insert_after("Nope", MeanStdFilter())
    assert isinstance(pipeline, ConnectorPipelineV2)


def test_flatten_observations_drops_keys_and_refuses_other_forms():
    space = gym.spaces.Dict(
        {
            "pos": gym.spaces.Box(-1.0, 1.0, (2,)),
            "mask": gym.spaces.MultiBinary(3),
            "goal": gym.spaces.Discrete(4),
        }
    )
    piece = FlattenObservations(space, gym.spaces.Discrete(2), keys_to_remove=["mask"])
    assert piece.observation_space.shape == (6,)  # goal one-hot (4) + pos (2)
    episode = SingleAgentEpisode(
        observations=[
            {
                "pos": np.array([0.5, -0.5], np.float32),
                "mask": np.array([1, 0, 1], np.int8),
                "goal": 2,
            }
        ]
    )
    piece(rl_module=None, batch={}, episodes=[episode])
    # gymnasium orders a Dict by key: goal (one-hot), then pos; mask is gone.
    assert np.array_equal(episode.get_observations(-1), [0, 0, 1, 0, 0.5, -0.5])
    with pytest.raises(ValueError, match="as_learner_connector=True.*not supported"):
        FlattenObservations(as_learner_connector=True)
    # Per-agent flattening is for MultiAgentEnvs (tests/test_multi_agent_examples.py).
    with pytest.raises(ValueError, match="agent_ids needs multi_agent=True"):
        FlattenObservations(agent_ids=["a"])
    with pytest.raises(ValueError, match="the env is single-agent"):
        FlattenObservations(space["pos"], gym.spaces.Discrete(2), multi_agent=True)
