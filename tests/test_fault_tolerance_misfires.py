"""Fault tolerance without its misfires: a flaky env keeps being restarted and learns, a hanging
reset ends each iteration within its bound naming where it hung, `sample_timeout_s` bounds the
local runner too, and workers die with the training process even while stuck in C code holding
the GIL."""

import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from helpers import HangingResetEnv, small_ppo

from trainer.errors import EnvRunnerTimeout
from trainer.runners.restart_policy import iteration_bound_s
from trainer.testing import FaultInjectionEnv, kill_env_runner


def flaky_env_ppo(seed: int = 2, p_crash: float = 0.003):
    """PPO on FaultInjectionEnv (CartPole crashing with `p_crash` per step; the crashes are
    drawn from fresh entropy in each env, not from `seed`), 2 EnvRunners sampling 400-step
    fragments, restarted up to 1000 times. With p_crash 0.003 most samples fail before they
    finish (1 - 0.997**400 = 0.7) and the return reaches 60 within 60 iterations, with at least
    0.7 restarts per iteration (bench/learning_targets.py)."""
    return (
        small_ppo(2, train_batch_size=800, minibatch_size=200, num_epochs=6, lr=0.003)
        .environment(FaultInjectionEnv, env_config={"p_crash": p_crash})
        .env_runners(rollout_fragment_length=400)
        # A runner gets one or two tries per iteration: iterations that sample nothing happen
        # (and go on, by default, as in RLlib).
        .fault_tolerance(
            max_num_env_runner_restarts=1000,
            delay_between_env_runner_restarts_s=0.0,
        )
        .debugging(seed=seed)
    )


@pytest.mark.slow
def test_a_flaky_env_with_an_explicit_budget_keeps_training_and_learning():
    """p_crash 0.001: a third of the 400-step samples fail; the runners are restarted (RLlib's
    rule, checked in tests/test_fault_tolerance*.py), the iterations return with what was
    sampled, and PPO still learns: within 12 iterations (6 on a quiet machine) the mean
    return rises well above a random policy's (~22), with runners restarted on the way."""
    returns: list[float] = []
    restarts = 0
    with flaky_env_ppo(p_crash=0.001).build() as algo:
        for _ in range(12):
            result = algo.train()
            # An iteration whose samples all failed ends no episode: its mean is NaN, which
            # `max` would keep if it came first.
            mean = result["env_runners"].get("episode_return_mean", float("nan"))
            if not math.isnan(mean):
                returns.append(mean)
            restarts = algo.env_runner_group.num_remote_worker_restarts()
            if returns and max(returns) >= 50 and restarts >= 1:
                break
    # Seeds 0-2 on a quiet machine: best 72-98 within 6 iterations, after 2-7 restarts. On a
    # busy one, restarts take longer and iterations that sample nothing come more often (one
    # run in the whole suite: 3 of 6, best 31): twice the iterations.
    assert returns and max(returns) >= 50, f"mean returns {returns} with {restarts} restarts"
    # About a third of the 400-step samples fail: none failing in 24 is a 1 in 10,000 chance.
    assert restarts >= 1, returns


@pytest.mark.slow
def test_a_hanging_reset_ends_each_iteration_within_its_bound_naming_where_it_hung(caplog):
    """A runner that hangs every time is restarted once per iteration (RLlib's rule): each
    `train()` returns within the bound its settings give, with a warning naming the runner and
    where it hung, and the next iteration tries again."""
    config = (
        small_ppo(1)
        .environment(HangingResetEnv)
        .env_runners(sample_timeout_s=1.0)
        .fault_tolerance(delay_between_env_runner_restarts_s=0.0)
    )
    with config.build() as algo:
        for iteration in range(2):
            caplog.clear()
            started = time.monotonic()
            result = algo.train()
            assert time.monotonic() - started < min(iteration_bound_s(config), 30)
            assert result["env_runners"]["num_env_steps_sampled"] == 0
            tolerance = result["fault_tolerance"]
            assert tolerance["num_waiting_workers"] == 1
            failures = tolerance["failures_this_iteration"]
            assert len(failures) == 2 - iteration  # the second's restart is at its start
            for failure in failures:
                assert failure.startswith(
                    "EnvRunner 1 did not answer sample() within 1 s; its process was killed. "
                    "It was in: File "
                )
                assert "in reset" in failure  # the innermost frame: where it hung
            left_out = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
            assert len(left_out) == 1 and "EnvRunner 1 is left out until the next" in left_out[0]
            if iteration == 0:
                assert "in reset" in caplog.text  # the stack where it hung, logged in full once
        assert "the same way in 2 iterations in a row" in left_out[0]
        assert algo.env_runner_group.num_remote_worker_restarts() == 2


def test_sample_timeout_s_bounds_the_local_runner_too():
    config = small_ppo(0).environment(HangingResetEnv).env_runners(sample_timeout_s=1.0)
    with config.build() as algo:
        started = time.monotonic()
        with pytest.raises(
            EnvRunnerTimeout,
            match="EnvRunner 0 did not answer sample"
            r"\(\) within 1 s",
        ) as error:
            algo.train()
        assert time.monotonic() - started < 10
        assert "in reset" in error.value.stack


_STUCK_IN_C = textwrap.dedent("""
    import re, sys
    import gymnasium as gym
    from trainer import PPOConfig

    class StuckInC(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (2,))
        action_space = gym.spaces.Discrete(2)

        def __init__(self, config=None):
            pass

        def reset(self, *, seed=None, options=None):
            # Catastrophic backtracking: hours inside the regex engine, which holds the GIL, so
            # no watchdog thread of this process runs.
            re.match(r"(a+)+$", "a" * 64 + "b")

    config = (PPOConfig().environment(StuckInC)
              .env_runners(num_env_runners=1, sample_timeout_s=3600))
    algo = config.build()
    print(list(algo.env_runner_group.remote_pids().values())[0], flush=True)
    algo.train()
""")


def _cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_stuck_in_c_code_dies_with_a_killed_training_process(tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(_STUCK_IN_C)
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        worker_pid = int(process.stdout.readline())
        # A second of CPU since it was built: nothing but the regex takes the worker that long.
        started, deadline = _cpu_seconds(worker_pid), time.monotonic() + 120
        while _cpu_seconds(worker_pid) < started + 1.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _cpu_seconds(worker_pid) >= started + 1.0, "the worker never reached the regex"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        deadline = time.monotonic() + 30
        while _alive(worker_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker_pid), "the worker outlived the killed training process"
    finally:
        process.kill()


@pytest.mark.slow
def test_a_restarted_runner_samples_with_the_current_weights():
    """The restart hands the new process the learner's weights before it samples (it used to
    send them under a key the runner ignored, so one round was sampled with initial weights)."""
    with small_ppo(1).debugging(seed=0).build() as algo:
        algo.train()
        kill_env_runner(algo, 1)
        group = algo.env_runner_group
        deadline = time.monotonic() + 10
        while not (exited := group.collect_exited()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert group.handle_failures({e.worker_index: e for e in exited}) == [1]
        local = algo.get_weights()
        (remote,) = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.get_weights(), local_env_runner=False
        )
        for name, value in local.items():
            np.testing.assert_array_equal(remote[name], value, err_msg=name)
