"""One typed refusal: everything this project does not do raises `NotSupported` naming the
capability, and stays of the type the same call raised before (`ImportError`, `ValueError`,
`ConfigError`, `NotImplementedError`), so older `except` clauses still catch it."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

from trainer import DQNConfig, PPOConfig, capabilities
from trainer.algorithms import get_trainable_cls, registry
from trainer.compat.rllib_settings import Unsupported
from trainer.connectors.env_to_module import MeanStdFilter
from trainer.errors import (
    ConfigError,
    EnvRunnerError,
    NotSupported,
    RLlibNotAvailable,
    UnsupportedSetting,
)
from trainer.launcher.script import _exception_report
from trainer.runners.multi_agent_observations import multi_agent_observation_pieces


class DictActionEnv(gym.Env):
    """A one-step env whose nested action space has a MultiBinary leaf, for which there is no
    action distribution here."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Dict(
            {"move": gym.spaces.Discrete(2), "switches": gym.spaces.MultiBinary(3)}
        )

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, True, False, {}


def _refusal(call) -> NotSupported:
    with pytest.raises(NotSupported) as raised:
        call()
    return raised.value


def test_get_trainable_cls_of_another_rllib_algorithm_is_a_refusal_and_a_value_error(
    monkeypatch,
):
    # Every algorithm RLlib 2.60 registers is here; the refusal stays for a name the registry
    # lists as RLlib's and does not have (one is made up here).
    for name in ("APPO", "BC", "CQL", "DQN", "DreamerV3", "IMPALA", "IQL", "MARWIL", "PPO", "SAC"):
        assert get_trainable_cls(name).__name__ == name
    monkeypatch.setattr(registry, "OTHER_RLLIB_ALGORITHM_NAMES", ("NewAlgorithm",))
    refused = _refusal(lambda: get_trainable_cls("NewAlgorithm"))
    assert isinstance(refused, ValueError)
    assert refused.capability == capabilities.OTHER_ALGORITHMS
    assert "NewAlgorithm" in str(refused) and "PPO" in str(refused)
    with pytest.raises(ValueError) as typo:  # a name RLlib does not have either: no refusal
        get_trainable_cls("PPPO")
    assert not isinstance(typo.value, NotSupported)


def test_config_refusals_are_config_errors_naming_the_capability():
    cases = {
        capabilities.LEARNER_CONNECTORS: lambda: (
            DQNConfig()
            .environment("CartPole-v1")
            .training(learner_connector=lambda *args: None)
            .validate()
        ),
        capabilities.MULTI_AGENT: lambda: multi_agent_observation_pieces(
            PPOConfig().env_runners(env_to_module_connector=lambda env: MeanStdFilter()), None
        ),
    }
    for capability, call in cases.items():
        refused = _refusal(call)
        assert isinstance(refused, ConfigError) and isinstance(refused, UnsupportedSetting)
        assert refused.capability == capability, (capability, refused)
        # pickles with its type and capability (it may come from an EnvRunner process)
        again = pickle.loads(pickle.dumps(refused))
        assert type(again) is type(refused) and again.capability == capability


def test_a_plain_config_error_is_no_refusal():
    with pytest.raises(ConfigError) as raised:
        PPOConfig().training(lr=-1.0)
    assert not isinstance(raised.value, NotSupported) and raised.value.capability is None


def test_an_action_leaf_without_distribution_is_refused_from_the_env_runner_with_capability():
    config = (
        PPOConfig()
        .environment(DictActionEnv)
        .env_runners(num_env_runners=1)
        .framework("numpy")
        .debugging(seed=0)
    )
    with pytest.raises(NotSupported) as raised:
        config.build()
    refused = raised.value
    assert isinstance(refused, EnvRunnerError) and isinstance(refused, ValueError)
    assert refused.capability == capabilities.ACTION_SPACES
    assert "action space['switches']: MultiBinary(3)" in str(refused)
    assert _exception_report(refused)["capability"] == capabilities.ACTION_SPACES


def test_the_launchers_refusal_is_the_same_type():
    refused = RLlibNotAvailable(
        "ray.rllib.examples.algorithms.classes.vpg.Other", capabilities.OTHER_ALGORITHMS
    )
    assert isinstance(refused, NotSupported) and isinstance(refused, ImportError)
    again = pickle.loads(pickle.dumps(refused))
    assert type(again) is RLlibNotAvailable and str(again) == str(refused)
    assert again.capability == capabilities.OTHER_ALGORITHMS


def _other_value(default):
    """A value of the default's kind that is not the default."""
    if isinstance(default, bool):
        return not default
    if isinstance(default, (int, float)):
        return default + 2
    if isinstance(default, str):
        return default + "_other"
    return lambda *args, **kwargs: None  # None defaults stand for classes and callables


@pytest.mark.parametrize("config_class", [PPOConfig, DQNConfig])
def test_every_unsupported_rllib_setting_is_a_refusal_with_a_capability(config_class):
    refused = []
    for method, rules in config_class._rllib_rules().items():
        for name, rule in rules.items():
            # (rl_module_spec takes specs: a function is a wrong value, not a refusal)
            if not isinstance(rule, Unsupported) or name == "rl_module_spec":
                continue
            value = _other_value(rule.default)
            if rule.is_fine(value):
                continue
            with pytest.raises(ConfigError) as raised:
                getattr(config_class(), method)(**{name: value})
            assert isinstance(raised.value, NotSupported), (method, name, raised.value)
            assert raised.value.capability, (method, name)
            refused.append(name)
    assert {
        "add_default_connectors_to_learner_pipeline",
        "add_default_connectors_to_module_to_env_pipeline",
    } <= set(refused)
    assert "offline_eval_runner_class" in refused


def test_calls_the_launcher_refuses_are_refusals_and_not_implemented_errors():
    from trainer.launcher import tune_api

    for call, capability in (
        (lambda: tune_api.register_trainable("mine", object), capabilities.TUNE),
    ):
        refused = _refusal(call)
        assert isinstance(refused, NotImplementedError) and refused.capability == capability
