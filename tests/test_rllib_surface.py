"""RLlib 2.60's config, Algorithm and EnvRunner surface (issue 15): every builder setting is
implemented, accepted with a warning at build, or refused with what to do instead; and the names
RLlib code reaches for exist. Real builds, worker processes, envs and files throughout."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from callbacks import RLlibCallback
from trainer import ConfigError, EnvRunner, PPOConfig
from trainer import named_objects as ray
from trainer.compat.rllib_settings import RLLIB_SETTINGS, IgnoredSettingWarning, NoEffect


def test_every_listed_rllib_setting_is_accepted_by_its_builder_method():
    config = PPOConfig()
    for method, table in RLLIB_SETTINGS.items():
        for name, rule in table.items():
            getattr(config, method)(**{name: rule.default})
            # (the value given: `config["is_atari"]` answers RLlib's property, which decides
            # from the env's id where no flag was given)
            assert config._given_value(name) == rule.default, name


def test_no_effect_settings_warn_once_at_build_naming_setting_and_why():
    config = (
        small_ppo()
        .env_runners(num_cpus_per_env_runner=3)
        .learners(num_learners=0, num_gpus_per_learner=1)
        .resources(num_gpus=2)
        .framework("tf2")
        .reporting(log_gradients=False)
    )
    with pytest.warns(IgnoredSettingWarning) as caught:
        algo = config.build()
    algo.stop()
    messages = [str(w.message) for w in caught]
    assert any("num_cpus_per_env_runner=3" in m and "Ray" in m for m in messages)
    assert any("num_gpus_per_learner=1" in m and "GPU" in m for m in messages)
    assert any("num_gpus=2" in m for m in messages)
    assert any("framework('tf2')" in m and "numpy" in m for m in messages)
    assert len(messages) == 4  # num_learners=0 and log_gradients mean what runs here


def test_defaults_build_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        small_ppo().learners(num_learners=0).build().stop()


def test_unknown_keyword_is_a_config_error_and_a_type_error():
    with pytest.raises(TypeError, match="unknown setting lrr=1.*Did you mean 'lr'"):
        PPOConfig().training(lrr=1)
    with pytest.raises(ConfigError):
        PPOConfig().env_runners(num_env_runner=1)


def test_single_agent_multi_agent_form_and_flags():
    config = PPOConfig().multi_agent(
        policies={"default_policy"},
        policies_to_train=None,
        policy_mapping_fn=lambda aid, ep, **kw: "default_policy",
        count_steps_by="env_steps",
    )
    assert not config.is_multi_agent and config.is_multi_agent() is False
    assert config.enable_env_runner_and_connector_v2 and config.enable_rl_module_and_learner
    assert isinstance(RLLIB_SETTINGS["resources"]["num_gpus"], NoEffect)


def test_rllib_settings_round_trip_through_to_dict_and_overrides():
    config = PPOConfig().env_runners(num_gpus_per_env_runner=0.5)
    clone = PPOConfig.from_dict(config.to_dict())
    assert clone.num_gpus_per_env_runner == 0.5
    assert PPOConfig.overrides(num_gpus_per_env_runner=0) == {"num_gpus_per_env_runner": 0}


def test_optimizer_and_grad_clip_by_reach_the_learner():
    algo = (
        small_ppo()
        .training(
            optimizer={"eps": 1e-5, "betas": (0.8, 0.99)}, grad_clip=1e-3, grad_clip_by="value"
        )
        .build()
    )
    try:
        assert (algo.learner.optimizer.eps, algo.learner.optimizer.beta1) == (1e-5, 0.8)
        before = algo.learner.module.flat_params.copy()
        algo.train()
        # Adam's first step moves each weight by about lr whatever the clipped gradient's scale.
        assert np.abs(algo.learner.module.flat_params - before).max() < 2 * algo.config.lr
    finally:
        algo.stop()
    with pytest.raises(ConfigError, match="optimizer=.*set the learning rate"):
        PPOConfig().training(optimizer={"lr": 0.1})


def test_observation_and_action_space_settings_shape_the_networks():
    obs_space = gym.spaces.Box(-10.0, 10.0, (4,), np.float32)
    algo = (
        small_ppo()
        .environment(observation_space=obs_space, action_space=gym.spaces.Discrete(2))
        .build()
    )
    try:
        assert algo.learner.module.spaces.obs_dim == 4
        algo.train()
    finally:
        algo.stop()


class CountingRunner(EnvRunner):
    """A user subclass: counts its samples and says where it runs."""

    def sample(self, **kwargs):
        self.metrics.log_value("custom_runner_samples", 1, reduce="sum")
        return super().sample(**kwargs)


@pytest.mark.slow
def test_env_runner_cls_runs_in_worker_processes_and_local_runner_gets_envs():
    algo = (
        small_ppo(num_env_runners=2)
        .env_runners(env_runner_cls=CountingRunner, create_env_on_local_worker=True)
        .build()
    )
    try:
        result = algo.train()
        kinds = algo.env_runner_group.foreach_env_runner(lambda r: type(r).__name__)
        assert kinds == ["CountingRunner"] * 3
        assert result["env_runners"]["custom_runner_samples"] >= 2
        assert algo.env_runner.env is not None and len(algo.env_runner.sample(num_episodes=1))
        assert algo.env_runner_group.healthy_worker_ids() == [1, 2]
    finally:
        algo.stop()


def crash_on_runner_2(config):
    if config.worker_index == 2 and not config.recreated_worker:
        raise RuntimeError("runner 2 cannot start")
    return gym.make("CartPole-v1")


@pytest.mark.slow
def test_validate_env_runners_after_construction():
    with pytest.raises(Exception, match="runner 2 cannot start"):
        small_ppo(num_env_runners=2).environment(crash_on_runner_2).build()
    algo = (
        small_ppo(num_env_runners=2)
        .environment(crash_on_runner_2)
        .env_runners(validate_env_runners_after_construction=False)
        .build()
    )
    try:
        assert algo.env_runner_group.healthy_env_runner_ids() == [1, 2]  # 2 was restarted
        assert algo.train()["fault_tolerance"]["num_remote_worker_restarts"] == 1
    finally:
        algo.stop()


def test_min_train_timesteps_per_iteration_repeats_training_steps():
    algo = small_ppo().reporting(min_train_timesteps_per_iteration=500).build()
    try:
        result = algo.train()
        assert result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"] >= 500
    finally:
        algo.stop()


def test_algorithm_names_rllib_code_reaches_for(tmp_path):
    algo = small_ppo(num_env_runners=1).build()
    try:
        result = algo.step()
        assert result["training_iteration"] == 1 == algo._counters["training_iteration"]
        assert algo._counters["num_env_steps_sampled"] >= 200
        out = algo.get_module().forward_inference({"obs": np.zeros((3, 4), np.float32)})
        assert out["action_dist_inputs"].shape == (3, 2)
        saved = algo.save(str(tmp_path / "ckpt"))
        weights = algo.learner_group.get_weights()["default_policy"]
        algo.train()
        algo.restore(saved)
        restored = algo.learner_group.get_weights()["default_policy"]
        assert all(np.array_equal(weights[k], restored[k]) for k in weights)
        assert algo.restore_env_runners(algo.env_runner_group) == []  # none had failed
    finally:
        algo.stop()


def test_env_runner_from_config_alone_with_its_own_mutable_config():
    config = small_ppo().environment(env_config={})
    runner = EnvRunner(config=config)
    try:
        assert runner.config is not config and not runner.config.is_frozen
        assert sum(len(e) for e in runner.sample(num_timesteps=20)) >= 20
        with pytest.raises(ValueError, match="at most one"):
            runner.sample(num_timesteps=5, num_episodes=1)
        runner.config.env_runners(num_envs_per_env_runner=3)
        runner.make_env()
        assert runner.num_envs == 3 and len(runner.env.envs) == 3
        assert len(runner.sample(num_episodes=2)) == 2
    finally:
        runner.stop()
    assert config.num_envs_per_env_runner == 1


@ray.remote
class Counter:
    def __init__(self):
        self.count = 0

    def inc(self):
        self.count += 1
        return self.count


def test_named_object_created_before_an_algorithm_outlives_it():
    counter = Counter.options(name="surface_counter").remote()
    try:
        for _ in range(2):
            small_ppo().build().stop()
        refs = [counter.inc.remote() for _ in range(3)]
        ready, rest = ray.wait(refs, num_returns=2)
        assert len(ready) == 2 and len(rest) == 1
        assert ray.get(refs) == [1, 2, 3]
    finally:
        ray.shutdown_named_objects()


class PairingCallback(RLlibCallback):
    """Counts episode events per process; reports unfinished episodes in each sample and
    episodes started but not ended."""

    def __init__(self):
        self.started = self.ended = 0

    def on_episode_start(self, **kwargs):
        self.started += 1

    def on_episode_end(self, **kwargs):
        self.ended += 1

    def on_sample_end(self, *, env_runner, samples, **kwargs):
        env_runner.metrics.log_value(
            "unfinished", sum(not e.is_done for e in samples), reduce="sum"
        )
        env_runner.metrics.log_value("unpaired", self.started - self.ended, reduce="sum")


@pytest.mark.slow
def test_complete_episodes_sample_pairs_start_and_end_within_one_train():
    config = (
        small_ppo(num_env_runners=2)
        .env_runners(num_envs_per_env_runner=3, batch_mode="complete_episodes")
        .training(train_batch_size=300, minibatch_size=100, num_epochs=1)
        .callbacks(PairingCallback)
    )
    algo = config.build()
    try:
        for _ in range(2):
            runners = algo.train()["env_runners"]
            assert runners["unfinished"] == 0 and runners["unpaired"] == 0
            assert runners["num_env_steps_sampled"] >= 300
    finally:
        algo.stop()
    # An explicit num_timesteps cuts episodes into chunks, as RLlib does in either mode.
    runner = EnvRunner(config=config.copy().env_runners(num_env_runners=0))
    try:
        chunks = runner.sample(num_timesteps=30)
        assert any(not e.is_done for e in chunks)
    finally:
        runner.stop()
