"""Hostile settings, walked over the whole settings table of PPOConfig and DQNConfig: each bad
value is refused at the builder call (or, for values that only clash together, at validate())
with a ConfigError naming the setting and the value, and a refused call leaves the config as it
was. RLlib's settings without an effect here (`trainer.compat.rllib_settings`) are walked too.

Config-level only: nothing is built."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import pytest

from trainer import ConfigError
from trainer.algorithms.dqn import DQNConfig
from trainer.algorithms.ppo import PPOConfig
from trainer.compat.rllib_settings import rules_of
from trainer.core.policy_spec import PolicySpec

CONFIGS = (PPOConfig, DQNConfig)

#: Builder arguments spelled otherwise than the setting.
ARGUMENT = {"stats_cls_lookup": "custom_stats_cls_lookup", "framework_str": "framework"}

NOT_A_VALUE = [{1, 2}, object(), b"bytes", 1 + 2j]
BOOL = ["yes", 1, 0, None, {"a": 1}, [True], math.nan]
COUNT = ["3", 1.5, True, False, -1, 10**30, None, [1], {"a": 1}, math.nan, math.inf]
OPTIONAL_COUNT = ["3", 1.5, True, -1, 10**30, [1], math.nan]
NUMBER = ["0.1", True, None, math.nan, -math.inf, [0.1], {"a": 0.1}]
NON_NEGATIVE = [*NUMBER, -1, -1e-9]
SECONDS = [*NON_NEGATIVE, 1e30, 10**30]
POSITIVE_SECONDS = [*SECONDS, 0]
ENUM = ["bogus", "", 1, None, ["sync"], True]
DICT = [5, "x", [1], True]
CALLABLE = [5, "fn", [print]]

#: Every setting of both classes and the hostile values each must refuse (a test keeps this
#: table covering the whole settings table).
HOSTILE: dict[str, list[Any]] = {
    # environment()
    "env": [5, {"a": 1}, "NoSuchEnv-v9", 1.5, True, lambda: None],
    "env_config": DICT,
    "env_task_fn": [*CALLABLE, lambda: 0, lambda results, env: 0],
    "normalize_actions": BOOL,
    "clip_actions": BOOL,
    "observation_space": [5, "Box", {"a": 1}, gym.spaces.Box],
    "action_space": [5, "Discrete(2)", [2]],
    # env_runners()
    "num_env_runners": COUNT,
    "num_envs_per_env_runner": [*COUNT, 0],
    "gym_env_vectorize_mode": ENUM,
    "rollout_fragment_length": [*COUNT, 0, "AUTO", "bogus"],
    "batch_mode": [*ENUM, "TRUNCATE_EPISODES"],
    "sample_timeout_s": POSITIVE_SECONDS,
    "explore": BOOL,
    "env_runner_cls": [5, "EnvRunner", int, {"a": 1}],
    "create_env_on_local_worker": BOOL,
    "validate_env_runners_after_construction": BOOL,
    "env_to_module_connector": [*CALLABLE, lambda: [], lambda env, spaces: []],
    "module_to_env_connector": [*CALLABLE, lambda: [], lambda env, spaces, device: []],
    "observation_filter": ENUM,
    "backend": ENUM,
    "ray_address": [5, "", ["auto"]],
    # exploration()
    "exploration_config": [
        5,
        [1],
        {"type": "Bogus"},
        {"type": 5},
        {"bogus_argument": 1},
        {"type": "EpsilonGreedy", "initial_epsilon": 5},
    ],
    # evaluation()
    "evaluation_interval": OPTIONAL_COUNT,
    "evaluation_duration": [*COUNT, 0, "AUTO", "bogus"],
    "evaluation_duration_unit": [*ENUM, "steps"],
    "evaluation_num_env_runners": COUNT,
    "evaluation_parallel_to_training": BOOL,
    "evaluation_config": [5, "x", [1], {"bogus_setting": 1}, {"lr": -1}, {"batch_mode": "x"}],
    "custom_evaluation_function": [*CALLABLE, lambda algorithm: {}],
    "evaluation_force_reset_envs_before_iteration": BOOL,
    "evaluation_sample_timeout_s": POSITIVE_SECONDS,
    "evaluation_auto_duration_min_env_steps_per_sample": [*COUNT, 0],
    "evaluation_auto_duration_max_env_steps_per_sample": [*COUNT, 0],
    "offline_evaluation_interval": [*OPTIONAL_COUNT, 0],
    "offline_evaluation_type": [*ENUM, "is", "pdis"],
    "num_offline_eval_runners": COUNT,
    "offline_eval_batch_size_per_runner": [*COUNT, 0],
    "dataset_num_iters_per_offline_eval_runner": [*COUNT, 0],
    # training()
    "gamma": ["0.9", True, None, math.nan, math.inf, [0.9]],
    "lr": [*NON_NEGATIVE, [[0, -1]], [[0, math.nan]], [[0]], [["a", 1]]],
    "train_batch_size": [*COUNT, 0],
    "num_epochs": [*COUNT, 0],
    "minibatch_size": [*OPTIONAL_COUNT, 0],
    "shuffle_batch_per_epoch": BOOL,
    "grad_clip": ["1", True, math.nan, -1, [1.0]],
    "grad_clip_by": ENUM,
    "learner_class": [5, "PPOTorchLearner", int],
    "learner_config_dict": DICT,
    "learner_connector": CALLABLE,
    "optimizer": [5, [1], {"type": "sgd"}, {"bogus": 1}, {"eps": -1}, {"betas": (2, 0.9)}],
    "model": [
        5,
        [1],
        {"bogus_key": 1},
        {"fcnet_hiddens": "x"},
        {"fcnet_hiddens": [-1]},
        {"fcnet_hiddens": [10**30]},
        {"fcnet_hiddens": [2**16, 2**16]},
    ],
    # debugging()
    "seed": ["1", 1.5, True, -1, [1], math.nan],
    "log_level": [*ENUM, "LOUD"],
    "check_nan": BOOL,
    "_evaluation_parallel_to_training_wo_thread": BOOL,
    # reporting()
    "metrics_num_episodes_for_smoothing": [*COUNT, 0],
    "min_time_s_per_iteration": [s for s in SECONDS if s is not None],
    "min_sample_timesteps_per_iteration": COUNT,
    "min_train_timesteps_per_iteration": COUNT,
    "stats_cls_lookup": [5, "mean", {"mean": int}, {5: int}],
    # fault_tolerance()
    "restart_failed_env_runners": BOOL,
    "ignore_env_runner_failures": BOOL,
    "max_num_env_runner_restarts": COUNT,
    "max_consecutive_failed_iterations": [*OPTIONAL_COUNT, 0],
    "delay_between_env_runner_restarts_s": SECONDS,
    "env_runner_health_probe_timeout_s": POSITIVE_SECONDS,
    "restart_failed_sub_environments": BOOL,
    "env_runner_restore_timeout_s": POSITIVE_SECONDS,
    # checkpointing()
    "checkpoint_frequency": COUNT,
    "num_to_keep": [*OPTIONAL_COUNT, 0],
    "checkpoint_score_attribute": [5, "", "a//b", ["a"]],
    "checkpoint_score_order": [*ENUM, "MAX"],
    "checkpoint_at_end": BOOL,
    # python_environment()
    "extra_python_environs_for_driver": [*DICT, {5: "x"}, {"": "x"}, {"A=B": "x"}],
    "extra_python_environs_for_worker": [*DICT, {5: "x"}, {"": "x"}, {"A": "x\0y"}],
    # multi_agent() / rl_module()
    "policies": [5, "p", {"a": 5}, [1, 2], {"a": (1, 2)}, {"a": PolicySpec(config={"lr": "x"})}],
    # (a callable of the wrong signature is taken, as RLlib takes any callable, and refused by
    # validate(): tests/test_multi_agent_config.py)
    "policy_mapping_fn": [5, "fn", None],
    "policies_to_train": [5, "p", [1], lambda: True],
    "count_steps_by": [*ENUM, "steps"],
    "algorithm_config_overrides_per_module": [5, [1], {"m": 5}, {"m": {"lr": "x"}}],
    # framework() / api_stack() / experimental()
    # (None, which RLlib takes, leaves the default framework: tests/test_rllib_semantics.py)
    "framework_str": [v for v in ENUM if v is not None] + ["jax", "TORCH"],
    "enable_rl_module_and_learner": BOOL,
    "enable_env_runner_and_connector_v2": BOOL,
    "_torch_lr_scheduler_classes": [5, [5], {"m": 5}, {5: []}],
    # PPO's training()
    "lambda_": ["0.9", True, None, math.nan, math.inf],
    "clip_param": ["0.2", True, None, math.nan, -0.1],
    "vf_clip_param": ["10", True, None, math.nan, -1],
    "vf_loss_coeff": NON_NEGATIVE,
    "entropy_coeff": [*NON_NEGATIVE, [[1, 0.1], [100, 0.0]]],  # (a schedule starts at 0)
    "kl_coeff": NON_NEGATIVE,
    "kl_target": NON_NEGATIVE,
    "use_gae": BOOL,
    "use_critic": BOOL,
    "use_kl_loss": BOOL,
    # DQN's training()
    "replay_buffer_config": [5, [1], {"type": 5}, {"type": "Bogus"}, {"capacity": -1}],
    "target_network_update_freq": COUNT,
    "tau": ["1", True, None, math.nan],
    "num_steps_sampled_before_learning_starts": COUNT,
    "double_q": BOOL,
    "dueling": BOOL,
    "n_step": [*COUNT, 0, (3, 1), (0, 2), "3"],
    "epsilon": ["0.1", True, None, math.nan, 2, -0.1, [[0, 2]], [[0]]],
    "training_intensity": ["1", True, 0, -1, math.nan],
    "td_error_loss_fn": [*ENUM, "l1"],
    "num_atoms": [*COUNT, 0],
    # (v_min >= v_max is refused by validate(), where both are known)
    "v_min": [*NUMBER],
    "v_max": [*NUMBER],
    "store_buffer_in_checkpoints": BOOL,
    # offline_data()
    "input_": [5, "", [], [1], None, {"a": 1}, True],
    "input_read_method": [*ENUM, "read_csv"],
    "input_read_method_kwargs": DICT,
    "input_read_schema": [*DICT, {"obs": 1}, {1: "o_t"}],
    "input_read_episodes": BOOL,
    "input_read_batch_size": [*OPTIONAL_COUNT, 0],
    "input_compress_columns": ["obs", 5, [1], True, None],
    "ignore_final_observation": BOOL,
    "dataset_num_iters_per_learner": [*OPTIONAL_COUNT, 0],
    "offline_data_class": [5, "OfflineData", len, True],
    "prelearner_class": [5, "OfflinePreLearner", len, True],
    "output": [5, "", [1], True, {"a": 1}],
    "output_write_episodes": BOOL,
    "output_max_rows_per_file": [*OPTIONAL_COUNT, 0],
    "output_write_remaining_data": BOOL,
    "output_compress_columns": ["obs", 5, [1], True, None],
    "output_write_method": [*ENUM, "write_json"],
}


def _snapshot(config: Any) -> str:
    """The config's settings as text: NaN equals NaN, and a nested change shows."""
    return repr(sorted(config.to_dict().items(), key=lambda item: item[0]))


def _names_value(message: str, value: Any) -> bool:
    """Whether `message` shows `value`: its repr, or (a dict) one of its keys."""
    if repr(value) in message:
        return True
    return isinstance(value, dict) and any(str(key) in message for key in value)


def _refusal_problem(
    config: Any, call: Callable[[], Any], names: tuple[str, ...], value: Any
) -> str | None:
    """None when `call` raises a ConfigError naming one of `names` and `value` and leaves
    `config` as it was, else what went wrong."""
    before = _snapshot(config)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except ConfigError as error:
        message = str(error)
    except Exception as error:  # noqa: BLE001 - a raw error is what this test looks for
        return f"{names[0]}={value!r}: raw {type(error).__name__}: {error}"
    else:
        return f"{names[0]}={value!r}: accepted"
    if not any(name in message for name in names) or not _names_value(message, value):
        return f"{names[0]}={value!r}: the message names not both: {message[:200]}"
    if _snapshot(config) != before:
        return f"{names[0]}={value!r}: the refused call changed the config"
    return None


def _refused(config: Any, call: Callable[[], Any], names: tuple[str, ...], value: Any) -> None:
    problem = _refusal_problem(config, call, names, value)
    assert problem is None, problem


def test_the_table_covers_every_setting():
    names = set().union(*(cls._settings() for cls in CONFIGS))
    assert sorted(names - set(HOSTILE)) == []
    assert sorted(set(HOSTILE) - names) == []


@pytest.mark.slow
@pytest.mark.parametrize("cls", CONFIGS)
def test_every_hostile_value_is_refused_at_the_builder_call_and_changes_nothing(cls):
    problems = []
    # One config for all: each refused call must leave it as it was (checked every time).
    config = cls().environment("CartPole-v1")
    for name, setting in cls._settings().items():
        argument = ARGUMENT.get(name, name)
        for value in HOSTILE[name] + NOT_A_VALUE:
            builder = getattr(config, setting.method)
            problems.append(
                _refusal_problem(
                    config, partial(builder, **{argument: value}), (name, argument), value
                )
            )
            # As an attribute, the way RLlib scripts also set it: refused at once (the
            # setting's own check), else by validate() (the checks of a dict's contents).
            problems.append(_attribute_problem(config, name, value))
    assert [problem for problem in problems if problem] == []


def _attribute_problem(config: Any, name: str, value: Any) -> str | None:
    if setting_check_refuses(config, name, value):
        return _refusal_problem(config, partial(setattr, config, name, value), (name,), value)
    config = config.copy()  # this write is taken: validate() must refuse it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        setattr(config, name, value)
    return _refusal_problem(config, config.validate, (name,), value)


def setting_check_refuses(config: Any, name: str, value: Any) -> bool:
    return config._settings()[name].check(value) is not None


@pytest.mark.parametrize("cls", CONFIGS)
def test_a_refused_call_with_several_settings_sets_none_of_them(cls):
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("training", {"gamma": 0.5, "lr": -1}, "lr"),
        ("training", {"train_batch_size_per_learner": 64, "num_epochs": 0}, "num_epochs"),
        ("training", {"model": {"fcnet_hiddens": [8]}, "grad_clip": math.nan}, "grad_clip"),
        ("env_runners", {"num_env_runners": 2, "batch_mode": "x"}, "batch_mode"),
        ("env_runners", {"explore": False, "exploration_config": [1]}, "exploration_config"),
        ("evaluation", {"evaluation_interval": 2, "evaluation_duration": 0}, "evaluation_duration"),
        ("multi_agent", {"policies": {"a", "b"}, "count_steps_by": "x"}, "count_steps_by"),
        ("learners", {"learner_config_dict": {"a": 1}, "num_learners": "two"}, "num_learners"),
        ("resources", {"num_gpus": 0.5, "num_cpus_per_worker": -1}, "num_cpus_per_worker"),
        ("fault_tolerance", {"max_num_env_runner_restarts": 3, "bogus": 1}, "bogus"),
        ("debugging", {"seed": 3, "log_level": "LOUD"}, "log_level"),
        ("rl_module", {"model_config": {"fcnet_hiddens": [8]}, "bogus": 1}, "bogus"),
    ]
    for method, kwargs, bad in calls:
        config = cls().environment("CartPole-v1")
        call = getattr(config, method)
        _refused(config, partial(call, **kwargs), (bad,), kwargs[bad])
    config = cls()
    _refused(config, lambda: config.update_from_dict({"gamma": 0.5, "lr": "x"}), ("lr",), "x")
    _refused(config, lambda: config.update_from_dict([("lr", 0.1)]), ("from_dict",), [("lr", 0.1)])
    _refused(config, lambda: config.update_from_dict({"multiagent": 5}), ("multiagent",), 5)
    _refused(
        config,
        lambda: config.callbacks(on_train_result=lambda **kw: None, on_episode_end=5),
        ("on_episode_end",),
        5,
    )


def _hostile_by_kind(default: Any) -> list[Any]:
    if isinstance(default, bool):
        return ["yes", 1, None, [True]]
    if isinstance(default, (int, float)):
        hostile = ["3", True, None, [1], math.nan, math.inf, 10**30]
        return hostile + ([-1] if default >= 0 else [])
    if isinstance(default, str):
        # "auto" (CPU counts) also takes a number
        return [None, ["x"], True] + ([-1, "x"] if default == "auto" else [5])
    if isinstance(default, dict):
        return [5, "x", [1]]
    return [5, "x", {"a": 1}]  # lists


@pytest.mark.slow
@pytest.mark.parametrize("cls", CONFIGS)
def test_rllib_settings_without_an_effect_refuse_values_of_another_kind(cls):
    problems = []
    config = cls()  # one for all, as above
    for method, table in rules_of(cls._ALGO_RLLIB_SETTINGS).items():
        for name, rule in table.items():
            if rule.default is None or method == "callbacks":
                continue  # None stands for classes, callables, paths: any kind
            for value in _hostile_by_kind(rule.default) + NOT_A_VALUE:
                if value is None and getattr(rule, "takes_none", False):
                    continue  # RLlib takes None for it (local_gpu_idx)
                call = getattr(config, method)
                problems.append(
                    _refusal_problem(config, partial(call, **{name: value}), (name,), value)
                )
    assert [problem for problem in problems if problem] == []


def _ppo(**training: Any) -> PPOConfig:
    return PPOConfig().environment("CartPole-v1").training(**training)


#: Values fine alone that clash together: refused by validate() (build() runs it first).
CLASHES = [
    (lambda: _ppo(minibatch_size=100, train_batch_size=50), "minibatch_size=100"),
    (lambda: _ppo(use_gae=False), "use_gae"),
    (
        lambda: _ppo(use_critic=False, use_gae=True),
        "use_critic",
    ),
    (
        lambda: (
            DQNConfig()
            .environment("CartPole-v1")
            .env_runners(rollout_fragment_length=2)
            .training(n_step=5)
        ),
        "rollout_fragment_length=2",
    ),
    (
        lambda: (
            PPOConfig().environment("CartPole-v1").evaluation(evaluation_parallel_to_training=True)
        ),
        "evaluation_parallel_to_training",
    ),
    (
        lambda: PPOConfig().environment("CartPole-v1").evaluation(evaluation_duration="auto"),
        'evaluation_duration="auto"',
    ),
    (
        lambda: (
            PPOConfig()
            .environment("CartPole-v1")
            .evaluation(
                evaluation_auto_duration_min_env_steps_per_sample=50,
                evaluation_auto_duration_max_env_steps_per_sample=10,
            )
        ),
        "evaluation_auto_duration_min_env_steps_per_sample=50",
    ),
    (
        lambda: (
            PPOConfig()
            .environment("CartPole-v1")
            .multi_agent(policies={"a", "b"}, policies_to_train=["c"])
        ),
        "'c'",
    ),
    (
        lambda: (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(env_to_module_connector=lambda env: [], observation_filter="MeanStdFilter")
        ),
        "observation_filter='MeanStdFilter'",
    ),
    (lambda: PPOConfig(), "no env is set"),
    (
        lambda: (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=2, rollout_fragment_length=7)
            .training(train_batch_size=100, minibatch_size=50)
        ),
        'set rollout_fragment_length to "auto" or to 50',
    ),
    (
        lambda: PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=10**7),
        "num_env_runners=10000000 and evaluation_num_env_runners=0 ask for 10000000 worker",
    ),
]


@pytest.mark.parametrize("make, shown", CLASHES)
def test_settings_that_clash_are_refused_by_validate(make, shown):
    config = make()
    with pytest.raises(ConfigError, match=None) as error:
        config.validate()
    assert shown in str(error.value)


def test_a_value_written_past_the_builders_is_refused_by_validate():
    config = _ppo()
    config.__dict__["train_batch_size"] = "many"  # as an old pickled config could hold it
    with pytest.raises(ConfigError, match=r"train_batch_size='many': train_batch_size must be"):
        config.validate()


def test_an_attribute_write_is_checked_and_a_good_one_is_kept():
    config = _ppo()
    config.lr = 1e-4
    config.num_env_runners = 2
    assert (config.lr, config.num_env_runners) == (1e-4, 2)
    with pytest.raises(ConfigError, match=r"PPOConfig.num_env_runners = -2: num_env_runners"):
        config.num_env_runners = -2
    assert config.num_env_runners == 2


def test_things_that_are_not_configs_are_refused_where_a_config_is_expected():
    from trainer.algorithms.ppo import PPO

    with pytest.raises(ConfigError, match=r"PPO\(config=5\): give an AlgorithmConfig"):
        PPO(config=5)
    with pytest.raises(ConfigError, match=r"PPOConfig.from_state\(5\): give the dict"):
        PPOConfig.from_state(5)
    with pytest.raises(ConfigError, match=r"PPOConfig.from_dict\(\[1\]\): give a dict"):
        PPOConfig.from_dict([1])


def test_numpy_scalars_are_taken_as_rllib_takes_them_and_stored_as_python_numbers():
    import numpy as np

    config = PPOConfig().training(lr=np.float32(0.5), train_batch_size=np.int64(400))
    config.num_epochs = np.int32(3)
    assert (config.lr, config.train_batch_size, config.num_epochs) == (0.5, 400, 3)
    assert [type(config.lr), type(config.train_batch_size), type(config.num_epochs)] == [
        float,
        int,
        int,
    ]
    for hostile in (np.bool_(True), np.float64("nan"), np.int64(-1)):
        _refused(config, partial(config.training, num_epochs=hostile), ("num_epochs",), hostile)
