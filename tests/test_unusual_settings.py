"""Values RLlib accepts but that are surely mistakes (`gamma=1.5`, `clip_param=0`, ...): taken, as
RLlib takes them, with one `UnusualSettingWarning` per config naming the setting, the value and
the usual range; usual values stay silent."""

from __future__ import annotations

import warnings

import pytest
from helpers import small_ppo

from trainer import DQNConfig, PPOConfig
from trainer.algorithms.settings import UnusualSettingWarning

#: (config class, builder method, setting, value, the usual range the warning names).
UNUSUAL = [
    (PPOConfig, "training", "gamma", 1.5, "between 0 and 1"),
    (PPOConfig, "training", "gamma", -0.1, "between 0 and 1"),
    (PPOConfig, "training", "lambda_", 2, "between 0 and 1"),
    (PPOConfig, "training", "lambda_", -1, "between 0 and 1"),
    (PPOConfig, "training", "clip_param", 0, "above 0, typically 0.1 to 0.3"),
    (PPOConfig, "training", "kl_target", 0, "above 0, typically 0.01 to 0.05"),
    (PPOConfig, "training", "grad_clip", 0, "above 0, or None"),
    (DQNConfig, "training", "grad_clip", 0, "above 0, or None"),
    (PPOConfig, "evaluation", "evaluation_interval", 0, "1 or more, or None"),
    (DQNConfig, "training", "tau", 2, "above 0 and at most 1"),
]

#: Usual values of the same settings, edges included: no warning.
USUAL = [
    (PPOConfig, "training", {"gamma": 0.0, "lambda_": 0.0, "clip_param": 0.1}),
    (PPOConfig, "training", {"gamma": 1.0, "lambda_": 1.0, "clip_param": float("inf")}),
    (PPOConfig, "training", {"kl_target": 0.02, "grad_clip": None}),
    (PPOConfig, "training", {"grad_clip": 40.0}),
    (PPOConfig, "evaluation", {"evaluation_interval": None}),
    (PPOConfig, "evaluation", {"evaluation_interval": 1}),
    (DQNConfig, "training", {"tau": 1.0}),
    (DQNConfig, "training", {"tau": 0.005}),
]


def _ids(case):
    return f"{case[0].__name__}-{case[2]}={case[3]}"


@pytest.mark.parametrize("cls, method, name, value, usual", UNUSUAL, ids=map(_ids, UNUSUAL))
def test_a_surely_mistaken_value_is_taken_with_a_warning_naming_it(cls, method, name, value, usual):
    config = cls()
    with pytest.warns(UnusualSettingWarning) as record:
        getattr(config, method)(**{name: value})
    assert getattr(config, name) == value  # taken, as RLlib takes it
    (warning,) = record
    message = str(warning.message)
    assert message.startswith(f"{cls.__name__}.{method}({name}={value!r}): {name} is usually ")
    assert usual in message
    assert warning.filename == __file__  # it points at the user's line


@pytest.mark.parametrize("cls, method, name, value, usual", UNUSUAL, ids=map(_ids, UNUSUAL))
def test_an_attribute_write_warns_too(cls, method, name, value, usual):
    config = cls()
    with pytest.warns(UnusualSettingWarning, match=rf"{name}={value!r}\): {name} is usually"):
        setattr(config, name, value)
    assert getattr(config, name) == value


@pytest.mark.parametrize("cls, method, settings", USUAL)
def test_usual_values_do_not_warn(cls, method, settings):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusualSettingWarning)
        getattr(cls(), method)(**settings)


def test_defaults_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusualSettingWarning)
        PPOConfig().environment("CartPole-v1").validate()
        DQNConfig().environment("CartPole-v1").validate()


def test_one_warning_per_config_not_per_call():
    """The same value again, a copy of the config, its build: no second warning; another
    unusual value of the same setting is named anew."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        config = small_ppo(0).training(gamma=1.5)
        config.training(gamma=1.5)
        config.gamma = 1.5
        copy = config.copy()
        copy.training(gamma=1.5)
        with copy.build() as algo:
            algo.train()
        config.training(gamma=-0.1)
    messages = [str(w.message) for w in record if issubclass(w.category, UnusualSettingWarning)]
    assert len(messages) == 2
    assert "gamma=1.5" in messages[0] and "gamma=-0.1" in messages[1]
