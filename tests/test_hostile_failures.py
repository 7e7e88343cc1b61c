"""Failures that come back on every restart, as a user's test suite would provoke them: an env
whose step() always raises, a reset() that always hangs, a callback that always raises, an
observation of the wrong shape. By default each `train()` restarts the runners and returns, for
ever (RLlib's rule), and the streak is logged once as an ERROR naming the failure and the
setting; with `max_consecutive_failed_iterations=N`, once N iterations in a row sampled nothing
that `train()` raises the original error with its type. A flaky failure, with samples in
between, keeps being restarted. Real worker processes, real envs."""

from __future__ import annotations

import math
import time

import gymnasium as gym
import numpy as np
import pytest
from helpers import HangingResetEnv, small_ppo
from test_named_objects import Counter

from trainer import PPO
from trainer.errors import (
    CallbackError,
    ConfigError,
    EnvDataError,
    EnvRunnerError,
    EnvRunnerTimeout,
    InjectedFault,
)
from trainer.named_objects import (
    create_named_object,
    get_named_object,
    shutdown_named_objects,
)
from trainer.testing import FaultInjectionEnv

#: The fault_tolerance(max_consecutive_failed_iterations=) these tests opt into.
DEFAULT_LIMIT = 3


class WrongShape(gym.Env):
    """Returns a 3-float observation from the call env_config["where"] names, where its space
    holds 4 floats."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.where = (config or {}).get("where", "step")

    def reset(self, *, seed=None, options=None):
        return np.zeros(3 if self.where == "reset" else 4, np.float32), {}

    def step(self, action):
        shape = 3 if self.where == "step" else 4
        return np.zeros(shape, np.float32), 1.0, False, False, {}


class FailsWhileTold(gym.Env):
    """Every step raises while the named object "switch" holds a non-zero count."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if get_named_object("switch").get():
            raise RuntimeError("told to fail")
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 20, False, {}


def always_raises(**kwargs):
    raise ValueError("a bug in the callback")


def _failing(config, **fault_tolerance):
    fault_tolerance.setdefault("max_consecutive_failed_iterations", DEFAULT_LIMIT)
    return config.fault_tolerance(delay_between_env_runner_restarts_s=0, **fault_tolerance)


def _train_until_it_raises(algo, error_type, limit=DEFAULT_LIMIT, *, sampled_before=False):
    """Calls train() up to `limit` times: the first `limit - 1` return with nothing sampled and
    no healthy runner (and, if nothing was `sampled_before`, no episode return), the last
    raises `error_type` (returned)."""
    started_at = algo.iteration
    for _ in range(limit - 1):
        result = algo.train()
        sampled = result["env_runners"]["num_env_steps_sampled"]
        assert sampled == 0 or (sampled_before and math.isnan(sampled))
        assert sampled_before or math.isnan(result["env_runners"]["episode_return_mean"])
        assert result["fault_tolerance"]["num_healthy_workers"] == 0
        assert result["fault_tolerance"]["failures_this_iteration"]
    with pytest.raises(error_type) as info:
        algo.train()
    assert algo.iteration == started_at + limit - 1  # the raising call counts none
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"in {limit} iterations in a row EnvRunners failed and nothing was sampled" in notes
    assert "max_consecutive_failed_iterations=None" in notes
    return info.value


@pytest.mark.slow
def test_an_env_whose_step_always_raises_ends_train_with_its_error():
    config = _failing(small_ppo(2).environment(FaultInjectionEnv, env_config={"p_crash": 1.0}))
    with config.build() as algo:
        error = _train_until_it_raises(algo, EnvRunnerError)
    assert isinstance(error, InjectedFault)  # the env's own exception class, too
    assert "raised InjectedFault: injected crash in step()" in str(error)
    assert "injected crash in step()" in error.remote_traceback


@pytest.mark.slow
def test_a_reset_that_always_hangs_ends_train_with_the_timeout():
    config = _failing(small_ppo(1).environment(HangingResetEnv).env_runners(sample_timeout_s=0.5))
    with config.build() as algo:
        started = time.monotonic()
        error = _train_until_it_raises(algo, EnvRunnerTimeout)
        assert time.monotonic() - started < 20
    assert error.worker_index == 1
    assert "in reset" in error.stack


@pytest.mark.slow
@pytest.mark.parametrize("event", ["on_episode_start", "on_episode_step", "on_sample_end"])
def test_a_callback_that_always_raises_ends_train_with_the_callback_error(event):
    config = _failing(small_ppo(1).callbacks(**{event: always_raises}))
    with config.build() as algo:
        error = _train_until_it_raises(algo, CallbackError)
    assert isinstance(error, ValueError)
    assert error.event == event
    assert error.callback_name.endswith("always_raises")
    assert error.env_runner_index == 1
    assert "a bug in the callback" in str(error)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["reset", "step"])
def test_an_observation_of_the_wrong_shape_ends_train_naming_the_space_and_shape(where):
    config = _failing(small_ppo(1).environment(WrongShape, env_config={"where": where}))
    with config.build() as algo:
        error = _train_until_it_raises(algo, EnvRunnerError)
    assert isinstance(error, EnvDataError)
    assert (
        f"sub-env 0's {where}() returned an observation of shape (3,) where its observation "
        "space Box(-1.0, 1.0, (4,), float32) has shape (4,)"
    ) in str(error)


@pytest.mark.slow
def test_the_limit_is_a_setting():
    config = _failing(
        small_ppo(1).environment(FaultInjectionEnv, env_config={"p_crash": 1.0}),
        max_consecutive_failed_iterations=1,
    )
    with config.build() as algo:
        _train_until_it_raises(algo, EnvRunnerError, limit=1)


@pytest.mark.slow
def test_by_default_restarts_go_on_as_in_rllib_with_one_error_line_per_streak(caplog):
    config = (
        small_ppo(1)
        .environment(FaultInjectionEnv, env_config={"p_crash": 1.0})
        .fault_tolerance(delay_between_env_runner_restarts_s=0)
    )
    assert config.max_consecutive_failed_iterations is None  # RLlib's behaviour by default
    with caplog.at_level("ERROR", logger="trainer"), config.build() as algo:
        for _ in range(DEFAULT_LIMIT + 2):
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled"] == 0
        # One restart per iteration: after its first failure, then when each iteration starts.
        assert algo.env_runner_group.num_remote_worker_restarts() == DEFAULT_LIMIT + 2
    streak_lines = [r for r in caplog.records if "in a row" in r.getMessage()]
    assert len(streak_lines) == 1, [r.getMessage() for r in streak_lines]
    line = streak_lines[0].getMessage()
    assert streak_lines[0].levelname == "ERROR"
    assert f"nothing was sampled in {DEFAULT_LIMIT} iterations in a row" in line
    assert "injected crash in step()" in line  # the cause
    assert "fault_tolerance(max_consecutive_failed_iterations=N)" in line  # how to opt in


@pytest.mark.slow
def test_a_flaky_failure_with_samples_in_between_keeps_being_restarted():
    """Each process's env fails at its 150th step, a new one counts from 0 again: every runner
    fails about every other sample, yet each iteration samples, so train() never gives up."""
    config = _failing(
        small_ppo(2).environment(FaultInjectionEnv, env_config={"crash_after_n_steps": 150})
    )
    with config.build() as algo:
        for _ in range(DEFAULT_LIMIT + 2):
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled"] >= 200
        assert result["fault_tolerance"]["num_remote_worker_restarts"] >= DEFAULT_LIMIT


class SampleOnlyPPO(PPO):
    """A user's training step that samples and logs no count of its own."""

    def training_step(self):
        self.env_runner_group.sample(min_env_steps=self.config.train_batch_size)


@pytest.mark.slow
def test_samples_count_even_when_the_training_step_logs_none():
    config = _failing(
        small_ppo(2).environment(FaultInjectionEnv, env_config={"crash_after_n_steps": 150})
    )
    with SampleOnlyPPO(config=config) as algo:
        for _ in range(DEFAULT_LIMIT + 2):
            algo.train()
        assert algo.env_runner_group.num_remote_worker_restarts() >= DEFAULT_LIMIT


@pytest.mark.slow
def test_a_streak_is_ended_by_an_iteration_that_samples():
    """Two failed iterations, then the env works again: the streak starts over, and it takes
    three more failed iterations to give up."""

    switch = create_named_object("switch", Counter, 1)
    try:
        with _failing(small_ppo(1).environment(FailsWhileTold)).build() as algo:
            for _ in range(DEFAULT_LIMIT - 1):
                assert algo.train()["env_runners"]["num_env_steps_sampled"] == 0
            switch.inc(-1)
            assert algo.train()["env_runners"]["num_env_steps_sampled"] >= 200
            switch.inc(1)
            _train_until_it_raises(algo, EnvRunnerError, sampled_before=True)
            assert algo.iteration == DEFAULT_LIMIT + DEFAULT_LIMIT - 1
    finally:
        shutdown_named_objects()


def test_with_the_local_runner_the_first_failure_raises():
    """num_env_runners=0: no process to restart, so train() raises the first failure, as in
    RLlib (the env's own exception; a callback's CallbackError)."""
    config = small_ppo(0).environment(FaultInjectionEnv, env_config={"p_crash": 1.0})
    with config.build() as algo:
        with pytest.raises(InjectedFault, match="injected crash in step"):
            algo.train()
    with small_ppo(0).callbacks(on_episode_step=always_raises).build() as algo:
        with pytest.raises(CallbackError, match="event 'on_episode_step', in EnvRunner 0"):
            algo.train()


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3"])
def test_the_setting_refuses_what_is_not_a_count_or_none(value):
    with pytest.raises(
        ConfigError,
        match=r"max_consecutive_failed_iterations must be None or an int >= 1",
    ):
        small_ppo(1).fault_tolerance(max_consecutive_failed_iterations=value)
