"""The config builder: values checked at the call or at validate(), builder semantics."""

import pytest
from helpers import small_ppo

from trainer import AlgorithmConfig, ConfigError, PPOConfig
from trainer.compat.rllib_settings import IgnoredSettingWarning


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda c: c.training(lr=-1), r"training\(lr=-1\): lr must be a number >= 0"),
        (lambda c: c.training(gamma=float("nan")), r"gamma=nan\): gamma must be a finite number"),
        (lambda c: c.training(num_epochs=0), r"num_epochs=0\): num_epochs must be an int >= 1"),
        (
            lambda c: c.training(clip_param=-0.1),
            r"clip_param=-0.1\): clip_param must be a number >= 0 or float\(\"inf\"\)",
        ),
        (lambda c: c.training(lrr=0.1), r"unknown setting lrr=0.1\. Did you mean 'lr'\?"),
        (
            lambda c: c.training(model={"fcnet_activation": "bogus"}),
            r"fcnet_activation'\]='bogus': allowed values are \['tanh', 'relu'",
        ),
        (
            lambda c: c.training(model={"use_lstm": 1}),
            r"\['use_lstm'\]=1: must be True or False",
        ),
        (lambda c: c.training(model={"use_lsmt": True}), r"unknown key\(s\) \['use_lsmt'\]"),
        (lambda c: c.rl_module(model_config={"fcnet_hiddens": [0]}), r"list of positive ints"),
        (
            lambda c: c.env_runners(num_env_runners=-1),
            r"num_env_runners=-1\): num_env_runners must be an int >= 0",
        ),
        (lambda c: c.env_runners(num_env_runners=1.5), r"num_env_runners=1.5\)"),
        (lambda c: c.env_runners(rollout_fragment_length=0), r'"auto" or an int >= 1'),
        (
            lambda c: c.env_runners(batch_mode="episodes"),
            r"batch_mode='episodes'\): batch_mode must be one of \['truncate_episodes', "
            r"'complete_episodes'\]",
        ),
        (lambda c: c.env_runners(sample_timeout_s=0), r"sample_timeout_s=0\)"),
        (lambda c: c.environment("CartPoel-v1"), r"env='CartPoel-v1'.*did you mean 'CartPole-v1'"),
        (
            lambda c: c.environment("no_such_module_here:Env-v0"),
            r"env='no_such_module_here:Env-v0'\): gymnasium imports 'no_such_module_here' to "
            r"make this env, and it is not installed \(No module named 'no_such_module_here'\)",
        ),
        (
            lambda c: c.environment("gymnasium.envs.classic_control:NoSuch-v0"),
            r"no env of that name",
        ),
        (lambda c: c.environment(42), r"env=42\): must be a gymnasium id"),
        (lambda c: c.environment(dict), r"a class must subclass gymnasium.Env"),
        (
            lambda c: c.environment("CartPole-v1", env_config=[1]),
            r"env_config=\[1\]\): env_config must be a dict",
        ),
        (lambda c: c.debugging(seed=-3), r"seed=-3\): seed must be None or an int >= 0"),
        (lambda c: c.debugging(log_level="LOUD"), r"log_level='LOUD'"),
        (lambda c: c.framework("jax"), r"framework='jax'\): framework must be one of"),
        (lambda c: c.training(grad_clip_by="max"), r"grad_clip_by='max'\)"),
        (
            lambda c: c.multi_agent(count_steps_by="episodes"),
            r"count_steps_by='episodes'\): count_steps_by must be one of \['env_steps', "
            r"'agent_steps'\]",
        ),
        (lambda c: c.rl_module(rl_module_spec=object()), r"must be an RLModuleSpec"),
        (lambda c: c.api_stack(enable_rl_module_and_learner=3), r"must be True or False"),
        (lambda c: c.reporting(metrics_num_episodes_for_smoothing=0), r"smoothing=0\)"),
    ],
)
def test_bad_values_fail_at_the_call_naming_setting_value_and_allowed(call, message):
    with pytest.raises(ConfigError, match=message):
        call(PPOConfig())


def test_clip_rewards_has_no_effect_as_on_rllibs_new_api_stack_and_says_so():
    from trainer.compat.rllib_settings import IgnoredSettingWarning

    config = PPOConfig().environment("CartPole-v1", clip_rewards=True)
    with pytest.warns(
        IgnoredSettingWarning, match=r"clip_rewards=True\) has no effect.*ClipReward"
    ):
        config.ignored_settings_warnings()
    assert (
        PPOConfig().environment("CartPole-v1", clip_rewards=False).ignored_settings_warnings() == []
    )


def test_cross_setting_problems_fail_at_validate():
    with pytest.raises(ConfigError, match="minibatch_size=500 must be <= train_batch_size=200"):
        small_ppo(minibatch_size=500).validate()
    with pytest.raises(ConfigError, match="no env is set"):
        PPOConfig().validate()
    with pytest.raises(ConfigError, match="truncate_episodes' needs use_critic=True"):
        small_ppo(use_critic=False).validate()
    small_ppo(use_critic=False).env_runners(batch_mode="complete_episodes").validate()


def test_builder_semantics_copy_dict_reads_and_freeze():
    config = PPOConfig()
    assert config.training(lr=0.01) is config
    assert config["lr"] == config.lr == 0.01 and config.get("nope", 7) == 7
    assert config.train_batch_size == 4000 and config.num_env_runners == 2  # RLlib's defaults
    copy = config.copy()
    copy.training(lr=0.02, model={"fcnet_hiddens": [8]})
    assert config.lr == 0.01 and config.model["fcnet_hiddens"] == [256, 256]
    assert copy.model["fcnet_hiddens"] == [8] and copy.model["fcnet_activation"] == "tanh"
    config.training(train_batch_size_per_learner=1000)
    assert config.train_batch_size == 1000
    config.freeze()
    with pytest.raises(ConfigError, match="frozen"):
        config.training(lr=0.5)
    assert not config.copy().is_frozen
    with pytest.raises(KeyError):
        config["not_a_setting"]


def test_to_dict_from_dict_round_trip_and_overrides():
    def on_end(**kwargs):
        return None

    config = small_ppo(1, lr=0.004).callbacks(on_episode_end=on_end).debugging(seed=5)
    data = config.to_dict()
    assert (
        data["lr"] == 0.004
        and data["seed"] == 5
        and data["callbacks_on"]["on_episode_end"] == [on_end]
    )
    again = PPOConfig.from_dict(data)
    assert again.to_dict() == data
    assert AlgorithmConfig.overrides(explore=False, env_config={"a": 1}) == {
        "explore": False,
        "env_config": {"a": 1},
    }
    with pytest.raises(ConfigError, match="unknown setting expolre"):
        AlgorithmConfig.overrides(expolre=False)
    with pytest.raises(ConfigError, match="explore must be True or False"):
        AlgorithmConfig.overrides(explore="no")
    # A builder method's name (RLlib's torch lr scheduler example passes exploration=False):
    # RLlib takes it and it changes nothing; here it warns and is dropped.
    with pytest.warns(IgnoredSettingWarning, match="exploration is a builder method"):
        assert PPOConfig.overrides(exploration=False, lr=0.1) == {"lr": 0.1}


def test_built_algorithm_config_is_frozen():
    algo = small_ppo(0).build()
    try:
        with pytest.raises(ConfigError, match="frozen"):
            algo.config.training(lr=1.0)
    finally:
        algo.stop()


def test_rollout_fragment_length_auto_splits_the_batch_over_runners_and_envs():
    config = (
        PPOConfig()
        .training(train_batch_size=4000)
        .env_runners(num_env_runners=3, num_envs_per_env_runner=2)
    )
    lengths = [config.get_rollout_fragment_length(i) for i in (1, 2, 3)]
    assert lengths == [667, 667, 666]
    assert sum(n * 2 for n in lengths) == 4000
    assert PPOConfig().env_runners(num_env_runners=0).get_rollout_fragment_length(0) == 4000
    assert PPOConfig().env_runners(rollout_fragment_length=50).get_rollout_fragment_length(1) == 50


def test_porting_no_ops_are_accepted():
    config = (
        PPOConfig()
        .framework("torch")
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .learners(num_learners=0)
        .resources(num_gpus=0)
    )
    assert config.framework_str == "torch"


# -- the settings table: one source of names, defaults, checks and docs ----------------------
def test_the_docs_settings_page_is_the_settings_table():
    import subprocess
    import sys

    from trainer.cli.settings_page import SETTINGS_PAGE, settings_page, settings_tables

    page = SETTINGS_PAGE.read_text()
    assert page == settings_page(), (
        "docs/settings.md is stale: run python -m trainer.cli.settings_page"
    )
    assert settings_tables() in page
    printed = subprocess.run(
        [sys.executable, "-m", "trainer", "settings"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert printed.rstrip("\n") == settings_tables()


def test_every_setting_is_a_documented_keyword_of_its_builder_method():
    import inspect

    from trainer import AlgorithmConfig, DQNConfig, PPOConfig
    from trainer.algorithms.settings import BUILDER_METHODS

    # RLlib's builder arguments for these settings.
    keyword = {"framework_str": "framework", "stats_cls_lookup": "custom_stats_cls_lookup"}
    for cls in (AlgorithmConfig, PPOConfig, DQNConfig):
        for name, setting in cls._settings().items():
            assert setting.method in BUILDER_METHODS and setting.doc, name
            # PPO's and DQN's training() pass what is not theirs on to AlgorithmConfig's.
            parameters = {
                **inspect.signature(getattr(AlgorithmConfig, setting.method)).parameters,
                **inspect.signature(getattr(cls, setting.method)).parameters,
            }
            assert keyword.get(name, name) in parameters, (cls.__name__, name)
            assert setting.check(setting.default) is None, (name, setting.default)


def test_builder_docstrings_list_the_class_settings_with_its_defaults():
    from trainer import AlgorithmConfig, DQNConfig, PPOConfig

    assert "lr (5e-05): Adam's learning rate" in PPOConfig.training.__doc__
    assert "clip_param (0.3):" in PPOConfig.training.__doc__
    assert "lr (0.001):" in AlgorithmConfig.training.__doc__
    assert "clip_param" not in AlgorithmConfig.training.__doc__
    assert "num_env_runners (2):" in PPOConfig.env_runners.__doc__  # inherited, own defaults
    assert "num_env_runners (0):" in AlgorithmConfig.env_runners.__doc__
    assert "epsilon ([(0, 1.0), (10000, 0.05)]):" in DQNConfig.training.__doc__
    # The documented method is the same method.
    config = PPOConfig().env_runners(num_env_runners=1).training(clip_param=0.2)
    assert (config.num_env_runners, config.clip_param) == (1, 0.2)


def test_callbacks_none_sets_rllibs_default_class():
    # As RLlib's: what Tune's Tuner.restore(param_space=config.callbacks(None)) resolves a
    # search's callbacks class to (RLlib's continue_training_from_checkpoint.py).
    from trainer.callbacks import RLlibCallback

    class Counting(RLlibCallback):
        pass

    config = PPOConfig().callbacks(Counting)
    assert config.callbacks_class is Counting
    assert config.callbacks(None).callbacks_class is RLlibCallback
    assert config.to_dict()["callbacks_class"] is RLlibCallback


def test_env_config_updates_the_one_the_config_has_as_rllibs_deep_update():
    config = PPOConfig().environment(
        "CartPole-v1", env_config={"size": 8, "rewards": {"goal": 1.0, "hole": 0.0}}
    )
    config.environment(env_config={"rewards": {"hole": -1.0}, "level": 2})
    assert config.env_config == {"size": 8, "rewards": {"goal": 1.0, "hole": -1.0}, "level": 2}
    # The same through from_dict() and evaluation_config (the evaluation runners' config).
    config.update_from_dict({"env_config": {"size": 4}})
    assert config.env_config["size"] == 4 and config.env_config["level"] == 2
    config.evaluation(evaluation_config={"env_config": {"rewards": {"goal": 2.0}}})
    evaluation_env_config = config.get_evaluation_config_object().env_config
    assert evaluation_env_config["rewards"] == {"goal": 2.0, "hole": -1.0}
    assert config.env_config["rewards"] == {"goal": 1.0, "hole": -1.0}  # unchanged


def test_a_module_prefixed_gymnasium_id_trains():
    """gymnasium's "module:EnvId" form: the module is imported (as `gym.make` does) and the
    env is made from its id."""
    config = (
        PPOConfig()
        .environment("gymnasium.envs.classic_control:CartPole-v1")
        .training(train_batch_size=100, minibatch_size=50, num_epochs=1)
    )
    with config.build() as algo:
        result = algo.train()
    assert result["env_runners"]["num_env_steps_sampled"] >= 100
