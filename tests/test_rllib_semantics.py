"""RLlib 2.60's semantics where scripts depend on them: the Algorithm's mutable `_counters`,
`evaluate()` without evaluation runners, checkpoint paths as `file://` URIs and other
filesystems, `RLModuleSpec` for the default modules, and RLlib's value ranges (a learning rate
of 0). Real builds, worker processes, envs and files throughout."""

import math
import os
import sys

import gymnasium as gym
import numpy as np
import pytest
from helpers import LevelEnv, small_ppo

from callbacks import RLlibCallback
from trainer import PPO, ConfigError, DefaultModelConfig, DQNConfig, PPOConfig, RLModuleSpec
from trainer.checkpoints import CheckpointError


class TaskCounter(RLlibCallback):
    """RLlib's curriculum example keeps its current task in `algorithm._counters`."""

    def on_train_result(self, *, algorithm, result, **kwargs):
        result["task_seen"] = algorithm._counters["current_env_task"]
        algorithm._counters["current_env_task"] += 1


def test_counters_are_one_mutable_dict_that_keeps_script_writes():
    algo = small_ppo(1).environment(LevelEnv).callbacks(TaskCounter).build()
    try:
        counters = algo._counters
        assert counters["never_written"] == 0  # a defaultdict(int), as in RLlib
        seen = [algo.train()["task_seen"] for _ in range(3)]
        assert seen == [0, 1, 2] and algo._counters is counters
        assert counters["current_env_task"] == 3
        # The step counters stay current alongside the script's own keys.
        assert counters["training_iteration"] == 3
        assert counters["num_env_steps_sampled"] == algo.num_env_steps_sampled_lifetime >= 600
        assert counters["num_env_steps_trained"] > 0
    finally:
        algo.stop()


def test_evaluate_without_evaluation_runners_samples_on_the_local_runner():
    events = []
    config = (
        small_ppo(0)
        .environment(LevelEnv)
        .callbacks(
            on_evaluate_start=lambda **kw: events.append("start"),
            on_evaluate_end=lambda **kw: events.append("end"),
        )
        .evaluation(evaluation_duration=3)
    )
    algo = config.build()
    try:
        first = algo.train()["env_runners"]
        evaluation = algo.evaluate()["env_runners"]
        assert events == ["start", "end"] and algo.eval_env_runner_group is None
        assert evaluation["num_episodes"] == 3 and evaluation["episode_len_mean"] == 10
        second = algo.train()["env_runners"]
        # Evaluation episodes stay out of the training counts.
        assert (
            second["num_episodes_lifetime"]
            == first["num_episodes_lifetime"] + second["num_episodes"]
        )
    finally:
        algo.stop()
    algo = small_ppo(1).environment(LevelEnv).build()
    try:
        with pytest.raises(ValueError, match="create_env_on_local_worker=True"):
            algo.evaluate()
    finally:
        algo.stop()


def _finite_numbers(tree, path=""):
    """Every number in a nested result dict, with its path."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _finite_numbers(value, f"{path}/{key}")
    elif isinstance(tree, (int, float, np.number)) and not isinstance(tree, bool):
        yield path, float(tree)


@pytest.mark.slow
@pytest.mark.parametrize(
    "make_config",
    [
        lambda: small_ppo(1, lr=0.0),
        lambda: (
            DQNConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=1)
            .training(lr=0.0, num_steps_sampled_before_learning_starts=100, train_batch_size=32)
            .reporting(min_sample_timesteps_per_iteration=300)
            .rl_module(model_config={"fcnet_hiddens": [16]})
        ),
    ],
)
def test_a_learning_rate_of_zero_trains_and_keeps_the_weights(make_config):
    algo = make_config().build()
    try:
        before = {k: v.copy() for k, v in algo.get_weights().items()}
        for _ in range(2):
            result = algo.train()
        after = algo.get_weights()
        assert all(np.array_equal(before[k], after[k]) for k in before)
        learner = result["learners"]["default_policy"]
        assert learner["curr_lr"] == 0.0
        assert result["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"] > 0
        bad = [(path, value) for path, value in _finite_numbers(result) if not math.isfinite(value)]
        assert not bad, bad
    finally:
        algo.stop()


@pytest.mark.parametrize(
    "settings",
    [
        {"vf_clip_param": float("inf"), "clip_param": 0.0, "grad_clip": float("inf")},
        {"gamma": 1.0, "lambda_": 1.0, "kl_target": 0.0},
    ],
)
def test_rllib_value_ranges_train(settings):
    config = small_ppo(0, **settings).evaluation(evaluation_interval=0)
    algo = config.build()
    try:
        result = algo.train()
        assert "evaluation" not in result  # evaluation_interval=0: never, as in RLlib
        assert all(math.isfinite(v) for _, v in _finite_numbers(result["learners"]))
    finally:
        algo.stop()


# -- checkpoint locations: file:// URIs and pyarrow filesystems ------------------------------
def _weights_equal(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a)


def test_file_uris_save_restore_and_build_from_the_named_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a folder named "file:" would appear here
    target = tmp_path / "runs" / "my ckpt"
    algo = small_ppo(1).build()
    try:
        algo.train()
        weights = algo.get_weights()
        written = algo.save_to_path(target.as_uri())  # file:///.../runs/my%20ckpt
        assert written == str(target) and (target / "metadata.json").is_file()
        assert not (tmp_path / "file:").exists()
        state = algo.get_state()
        algo.train()
        algo.restore_from_path(f"file://localhost{target}")
        assert _weights_equal(weights, algo.get_weights())
        algo.train()
        # state=: that state is saved, not the current one (RLlib's save_to_path(state=)).
        algo.save_to_path(str(tmp_path / "from_state"), state=state)
        algo.restore_from_path(tmp_path / "from_state")
        assert _weights_equal(weights, algo.get_weights()) and algo.iteration == 1
        with PPO.from_checkpoint(target.as_uri()) as restored:
            assert restored.iteration == 1 and _weights_equal(weights, restored.get_weights())
        with pytest.raises(CheckpointError, match="not on host 'elsewhere'"):
            algo.restore_from_path(f"file://elsewhere{target}")
    finally:
        algo.stop()


@pytest.mark.parametrize(
    "call",
    [
        lambda algo: algo.save_to_path("s3://bucket/ckpt"),
        lambda algo: algo.restore_from_path("gs://bucket/ckpt"),
        lambda algo: PPO.from_checkpoint("hdfs://node/ckpt"),
    ],
)
def test_other_schemes_need_a_filesystem(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    algo = small_ppo(0).build()
    try:
        with pytest.raises(CheckpointError, match=r"needs a filesystem: pass filesystem="):
            call(algo)
        # Without pyarrow, the error says so.
        monkeypatch.setitem(sys.modules, "pyarrow", None)
        monkeypatch.setitem(sys.modules, "pyarrow.fs", None)
        with pytest.raises(CheckpointError, match=r"pyarrow is not installed: pip install"):
            call(algo)
    finally:
        algo.stop()
    assert os.listdir(tmp_path) == []  # nothing written under the working directory


def test_a_pyarrow_filesystem_holds_the_checkpoint(tmp_path):
    fs_module = pytest.importorskip(
        "pyarrow.fs", reason="needs pyarrow (the test extra: pip install -e '.[test]')"
    )
    # A filesystem rooted elsewhere: the path is the filesystem's own, as in RLlib.
    filesystem = fs_module.SubTreeFileSystem(
        str(tmp_path / "bucket_root"), fs_module.LocalFileSystem()
    )
    (tmp_path / "bucket_root").mkdir()
    algo = small_ppo(1).build()
    try:
        algo.train()
        weights = algo.get_weights()
        assert algo.save_to_path("s3://bucket/run", filesystem=filesystem) == "s3://bucket/run"
        assert (tmp_path / "bucket_root" / "bucket" / "run" / "metadata.json").is_file()
        algo.train()
        algo.save_to_path("bucket/run", filesystem=filesystem)  # replaces the first one
        second = algo.get_weights()
        algo.restore_from_path("s3://bucket/run", filesystem=filesystem)
        assert _weights_equal(second, algo.get_weights())
        with PPO.from_checkpoint("bucket/run", filesystem) as restored:
            assert restored.iteration == 2 and not _weights_equal(weights, second)
        with pytest.raises(CheckpointError, match="no such directory"):
            algo.restore_from_path("bucket/missing", filesystem=filesystem)
        with pytest.raises(CheckpointError, match="must be a pyarrow.fs.FileSystem"):
            algo.save_to_path("bucket/run", filesystem="s3")
        with pytest.raises(TypeError, match="pass the config as config="):
            PPO.from_checkpoint("bucket/run", algo.config)
    finally:
        algo.stop()


# -- RLModuleSpec for the default modules ----------------------------------------------------
def test_rl_module_spec_configures_the_default_module(tmp_path):
    spec = RLModuleSpec(
        model_config=DefaultModelConfig(fcnet_hiddens=[12], fcnet_activation="relu")
    )
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .rl_module(rl_module_spec=spec)
    )
    # The spec's model_config wins over the config's, whichever came first (as RLlib merges).
    config.rl_module(model_config={"fcnet_hiddens": [64], "head_fcnet_hiddens": [5]})
    assert config.model["fcnet_hiddens"] == [12] and config.model["vf_share_layers"]
    assert config.model["head_fcnet_hiddens"] == []  # DefaultModelConfig gives every key
    assert isinstance(config.rl_module_spec, RLModuleSpec)
    with config.build() as algo:
        shapes = {k: v.shape for k, v in algo.get_weights().items()}
        algo.train()
        path = algo.save_to_path(str(tmp_path / "ckpt"))
    assert (4, 12) in shapes.values() and (12, 2) in shapes.values()
    # The checkpoint's plain-data config rebuilds the same networks without unpickling.
    with PPO.from_checkpoint(path) as restored:
        assert {k: v.shape for k, v in restored.get_weights().items()} == shapes


def test_rl_module_spec_spaces_and_dict_model_config():
    box = gym.spaces.Box(-5.0, 5.0, (4,), np.float32)
    spec = RLModuleSpec(observation_space=box, model_config={"fcnet_hiddens": [7]})
    config = small_ppo(0).rl_module(rl_module_spec=spec)
    assert config.observation_space == box
    assert config.model["fcnet_hiddens"] == [7]
    with config.build() as algo:
        assert algo.train()["training_iteration"] == 1
    assert small_ppo(0).update_from_dict({"rl_module_spec": spec}).model["fcnet_hiddens"] == [7]


class MyTorchModule:
    """Stands for a user's torch RLModule class."""


@pytest.mark.parametrize(
    "spec, message",
    [
        (RLModuleSpec(catalog_class=MyTorchModule), r"catalog_class=MyTorchModule"),
        (RLModuleSpec(model_config={"fcnet_hiddens": [0]}), r"list of positive ints"),
        ({"module_class": None}, r"must be an RLModuleSpec"),
    ],
)
def test_rl_module_spec_refusals_say_why(spec, message):
    with pytest.raises(ConfigError, match=message):
        PPOConfig().rl_module(rl_module_spec=spec)


def test_a_module_class_that_cannot_run_is_taken_and_refused_by_validate():
    """RLlib's rl_module() takes any class; validate() refuses one that cannot train here."""
    config = PPOConfig().environment("CartPole-v1")
    config.rl_module(rl_module_spec=RLModuleSpec(module_class=MyTorchModule))
    assert config.rl_module_spec.module_class is MyTorchModule
    with pytest.raises(
        ConfigError, match=r"module_class=MyTorchModule is not supported: RLModules other than"
    ):
        config.validate()


def test_learning_rate_schedules_follow_env_steps_sampled():
    # RLlib's lr schedule: piecewise linear in env steps sampled, the last rate after it.
    schedule = [[0, 0.01], [400, 0.0]]
    algo = small_ppo(0, lr=schedule).build()
    try:
        rates = [algo.train()["learners"]["default_policy"]["curr_lr"] for _ in range(3)]
        weights = algo.get_weights()
        algo.train()  # the rate is 0 from 400 steps on: the weights stay
        assert _weights_equal(weights, algo.get_weights())
    finally:
        algo.stop()
    # Updates after 200, 400 and 600 sampled steps.
    assert rates == [pytest.approx(0.005), 0.0, 0.0]
    with pytest.raises(ConfigError, match=r"lr must be a number >= 0 or a schedule"):
        PPOConfig().training(lr=[[10, 0.1]])


def test_get_rl_module_spec_fills_spaces_and_model_config_as_rllib():
    import gymnasium as gym

    from trainer import RLModuleSpec
    from trainer.algorithms.ppo import PPOConfig
    from trainer.algorithms.ppo.module import PolicyModule

    config = PPOConfig().rl_module(rl_module_spec=RLModuleSpec(model_config={"fcnet_hiddens": [8]}))
    assert config.get_default_rl_module_spec().module_class is PolicyModule  # numpy's default
    assert config.rl_module_spec.model_config == {"fcnet_hiddens": [8]}  # merged, as RLlib
    box, discrete = gym.spaces.Box(0.0, 1.0, (3,)), gym.spaces.Discrete(2)
    spec = config.get_rl_module_spec(spaces={"default_policy": (box, discrete)})
    assert (spec.observation_space, spec.action_space) == (box, discrete)
    assert spec.model_config["fcnet_hiddens"] == [8]
    env = gym.make("CartPole-v1")
    assert config.get_rl_module_spec(env=env).observation_space == env.observation_space
    with pytest.raises(ValueError, match="no observation_space"):
        config.get_rl_module_spec()


def test_rllib_config_values_the_builders_take():
    """Values RLlib's builders take: framework(None) (the default framework here), and
    learners(local_gpu_idx=None) (read only when a learner asks for a GPU), without a warning
    at build."""
    import warnings

    from trainer.algorithms.ppo import PPOConfig
    from trainer.compat.rllib_settings import IgnoredSettingWarning

    config = PPOConfig().framework("torch").framework(None)
    assert config.framework_str == "numpy" and not config.uses_torch
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .learners(local_gpu_idx=None)
    )
    assert config.local_gpu_idx is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)
        config.build().stop()


def test_a_generic_config_builds_the_algorithm_it_names_with_its_settings():
    """RLlib's rule: `AlgorithmConfig(algo_class=PPO)` gives its settings to PPO's own config
    class, whose other settings (PPO's) keep their defaults."""
    from trainer import PPO, AlgorithmConfig, PPOConfig

    config = (
        AlgorithmConfig(algo_class=PPO)
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(lr=0.12345, train_batch_size=200, minibatch_size=100)
    )
    with config.build() as algo:
        assert isinstance(algo.config, PPOConfig)
        assert (algo.config.lr, algo.config.train_batch_size) == (0.12345, 200)
        assert algo.config.clip_param == PPOConfig().clip_param
        assert algo.train()["num_env_steps_sampled_lifetime"] >= 200


def test_a_frozen_config_refuses_writes_as_rllib_does():
    from trainer import PPOConfig
    from trainer.errors import ConfigError

    config = PPOConfig().freeze()
    with pytest.raises(AttributeError, match="Cannot set attribute.+of an already frozen") as e:
        config.lr = 0.01
    assert isinstance(e.value, ConfigError)


def test_per_module_configs_are_kept_under_rllibs_name():
    from trainer import PPOConfig

    config = PPOConfig().multi_agent(
        policies={"m1", "m2"},
        algorithm_config_overrides_per_module={"m1": PPOConfig.overrides(lr=0.01)},
    )
    assert config.get_config_for_module("m1").lr == 0.01
    assert "m1" in config._per_module_overrides and "m2" not in config._per_module_overrides
    assert config.get_config_for_module("m2") is config


def test_to_dict_round_trips_without_warnings_and_with_rllibs_batch_key(caplog):
    """A config's dict (Tune's param_space, params.json) reads back into the same settings
    without a deprecation warning, and carries RLlib's `_train_batch_size_per_learner` (the
    key RLlib's to_dict writes for the per-learner batch)."""
    from trainer import PPOConfig

    config = PPOConfig().training(train_batch_size_per_learner=123)
    as_dict = config.to_dict()
    assert as_dict["_train_batch_size_per_learner"] == 123
    assert "num_cpus_per_worker" not in as_dict  # the old stack's cluster keys stay out
    with caplog.at_level("WARNING", logger="trainer"):
        again = PPOConfig().update_from_dict(as_dict)
    assert not [r for r in caplog.records if "DeprecationWarning" in r.getMessage()]
    assert again.train_batch_size_per_learner == 123
