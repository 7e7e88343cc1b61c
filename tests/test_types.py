"""Types are checked like everything else: mypy on `trainer/` (settings in pyproject.toml's
`[tool.mypy]`) reports nothing, and the types `AlgorithmConfig` declares for its settings agree
with the settings table that sets them at run time."""

from __future__ import annotations

import collections.abc
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import pytest

from trainer import EnvRunner
from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.algorithms.dqn import DQNConfig
from trainer.algorithms.ppo import PPOConfig

ROOT = Path(__file__).resolve().parents[1]
#: A cold run takes about 20 s on 2 busy cores (later runs reuse .mypy_cache); under the
#: suite's per-test timeout.
MYPY_TIMEOUT_S = 240

CONFIG_CLASSES = [AlgorithmConfig, PPOConfig, DQNConfig]
#: Declared on the config classes without being settings.
NOT_SETTINGS = {
    "_BASE_SETTINGS",
    "_ALGO_SETTINGS",
    "_DEFAULT_OVERRIDES",
    "_ALGO_RLLIB_SETTINGS",
    "_CLASSES",
    "_GIVEN_VALUE_ATTRIBUTES",
    "_frozen",
    "_rl_module_spec",
}


@pytest.mark.slow  # a cold run; .ci/run's own mypy step after the suite reuses its cache
def test_mypy_reports_no_errors_on_trainer():
    pytest.importorskip("mypy", reason="the type check needs mypy (pip install -e '.[test]')")
    done = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=MYPY_TIMEOUT_S,
    )
    assert done.returncode == 0, f"mypy reports type errors:\n{done.stdout}{done.stderr}"
    assert "Success: no issues found" in done.stdout, done.stdout


def _fits(value: Any, hint: Any) -> bool:
    """Whether `value` is of type `hint` as far as its outer form goes (a dict for
    `dict[str, Any]`, a class for `type[gym.Env]`, any callable for `Callable[..., Any]`)."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if origin is Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is float:  # an int is a float to a type checker
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is collections.abc.Callable:
        return callable(value)
    if origin is type:
        return isinstance(value, type)
    return isinstance(value, origin or hint)


@pytest.mark.parametrize("config_cls", CONFIG_CLASSES, ids=lambda cls: cls.__name__)
def test_every_setting_has_a_declared_type_that_its_default_fits(config_cls):
    # Names the config module imports for the type checker only.
    hints = typing.get_type_hints(config_cls, localns={"EnvRunner": EnvRunner})
    settings = config_cls._settings()
    assert sorted(set(settings) - set(hints)) == [], "settings without a declared type"
    assert sorted(set(hints) - set(settings) - NOT_SETTINGS) == [], (
        "declared types of settings that do not exist"
    )
    config = config_cls()
    wrong = {
        name: (getattr(config, name), hints[name])
        for name in settings
        if not _fits(getattr(config, name), hints[name])
    }
    assert wrong == {}, "defaults that do not fit their declared types"


def test_the_type_check_of_defaults_can_fail():
    # The check above is only worth something if a wrong default is caught.
    assert not _fits("auto", int)
    assert not _fits(True, int)
    assert not _fits(None, dict[str, Any])
    assert _fits("auto", int | Literal["auto"])
    assert not _fits("half", int | Literal["auto"])


def test_config_builders_keep_the_subclass_type():
    # Builders return Self: a PPOConfig chain stays a PPOConfig (what mypy sees, at run time).
    config = PPOConfig().environment("CartPole-v1").training(lr=1e-3).env_runners(num_env_runners=0)
    assert type(config) is PPOConfig
    assert type(config.copy()) is PPOConfig
    assert type(PPOConfig.from_dict({"lr": 1e-3})) is PPOConfig
