"""Fault tolerance through the public API: RLlib's scenarios (fatal without restarts, ignore mode,
recovery with the callback's indices, a hanging runner, evaluation runners, an exhausted budget),
SIGKILL mid-sample, a crashing callback, sub-env restarts, and no orphan processes."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest
from helpers import small_ppo

from callbacks import CallbackError, RLlibCallback
from trainer.errors import (
    EnvRunnerCrashed,
    EnvRunnerError,
    NoHealthyEnvRunners,
    StepFailedRecreateEnvError,
)
from trainer.testing import FaultInjectionEnv, env_runner_pids, kill_env_runner


def faulty_ppo(num_env_runners=2, **env_config):
    return small_ppo(num_env_runners).environment(FaultInjectionEnv, env_config=env_config)


class RecordRecreated(RLlibCallback):
    def __init__(self):
        self.recoveries = []

    def on_env_runners_recreated(
        self, *, algorithm, env_runner_group, env_runner_indices, is_evaluation, **kwargs
    ):
        assert env_runner_group is (
            algorithm.eval_env_runner_group if is_evaluation else algorithm.env_runner_group
        )
        self.recoveries.append((list(env_runner_indices), is_evaluation))


class OldStyleRecreated(RLlibCallback):
    def __init__(self):
        self.worker_ids = []

    def on_workers_recreated(self, *, algorithm, worker_set, worker_ids, is_evaluation, **kwargs):
        self.worker_ids.append(list(worker_ids))


@pytest.mark.slow
def test_without_restarts_a_failure_is_fatal_and_names_runner_kind_and_traceback():
    config = faulty_ppo(crash_after_n_steps=20, crash_on_worker_indices=[1]).fault_tolerance(
        restart_failed_env_runners=False
    )
    with config.build() as algo:
        with pytest.raises(EnvRunnerError) as info:
            algo.train()
    error = info.value
    assert error.worker_index == 1 and error.kind == "exception"
    assert "EnvRunner 1 raised InjectedFault" in str(error)
    assert "injected crash in step()" in error.remote_traceback
    assert any(
        "restart_failed_env_runners=False" in note
        for note in getattr(error, "__notes__", ["restart_failed_env_runners=False"])
    )


@pytest.mark.slow
def test_ignore_mode_goes_on_with_the_healthy_runners_until_none_is_left():
    config = faulty_ppo(crash_after_n_steps=20, crash_on_worker_indices=[1]).fault_tolerance(
        restart_failed_env_runners=False, ignore_env_runner_failures=True
    )
    with config.build() as algo:
        result = algo.train()
        assert result["fault_tolerance"]["num_healthy_workers"] == 1
        assert result["fault_tolerance"]["num_failures"]["exception"] == 1
        assert result["fault_tolerance"]["num_remote_worker_restarts"] == 0
        assert result["env_runners"]["num_env_steps_sampled"] >= 200
        assert algo.train()["training_iteration"] == 2
        kill_env_runner(algo, 2)
        with pytest.raises(NoHealthyEnvRunners, match="no healthy EnvRunner is left"):
            algo.train()


@pytest.mark.slow
def test_failed_runners_are_restarted_resynced_and_reported_per_recovery():
    # Each sub-env crashes at its 150th step: every runner fails about every other sample.
    config = (
        faulty_ppo(crash_after_n_steps=150)
        .callbacks([RecordRecreated, OldStyleRecreated])
        .debugging(seed=1)
    )
    with config.build() as algo:
        first_pids = algo.env_runner_group.remote_pids()
        results = [algo.train() for _ in range(4)]
        recoveries = algo.callbacks[0].recoveries
        restarts = results[-1]["fault_tolerance"]["num_remote_worker_restarts"]
        assert restarts >= 2 and sum(len(ids) for ids, _ in recoveries) == restarts
        assert all(set(ids) <= {1, 2} and not evaluation for ids, evaluation in recoveries)
        assert algo.callbacks[1].worker_ids == [ids for ids, _ in recoveries]
        assert results[-1]["fault_tolerance"]["num_failures"]["exception"] == restarts
        assert results[-1]["fault_tolerance"]["num_env_steps_lost"] > 0
        assert algo.env_runner_group.remote_pids() != first_pids
        # The restarted processes hold the learner's weights.
        for weights in algo.env_runner_group.foreach_env_runner(lambda r: r.get_weights()):
            for name, value in algo.get_weights().items():
                np.testing.assert_array_equal(weights[name], value)
        assert algo.env_runner_group.foreach_env_runner(
            lambda r: r.env_context.recreated_worker, local_env_runner=False
        ) == [True, True]


@pytest.mark.slow
def test_a_hanging_runner_times_out_is_restarted_and_then_left_out():
    config = (
        faulty_ppo(p_stall=1.0, stall_time_s=30, crash_on_worker_indices=[1])
        .env_runners(sample_timeout_s=1.0)
        .fault_tolerance(max_num_env_runner_restarts=1, ignore_env_runner_failures=True)
    )
    with config.build() as algo:
        start = time.monotonic()
        result = algo.train()
        assert time.monotonic() - start < 15
    tolerance = result["fault_tolerance"]
    assert tolerance["num_failures"]["timeout"] == 2
    assert tolerance["num_remote_worker_restarts"] == 1
    assert tolerance["num_healthy_workers"] == 1


@pytest.mark.slow
def test_an_exhausted_restart_budget_raises_the_failure():
    config = faulty_ppo(
        crash_after_n_steps=30, crash_on_worker_indices=[1], hard=True
    ).fault_tolerance(max_num_env_runner_restarts=2)
    with config.build() as algo:
        with pytest.raises(EnvRunnerCrashed, match="EnvRunner 1 crashed .*SIGKILL") as info:
            for _ in range(10):
                algo.train()
        assert algo.env_runner_group.num_remote_worker_restarts() == 2
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:
        assert "restarted 2 times (max_num_env_runner_restarts=2)" in notes[0]


@pytest.mark.slow
def test_sigkill_in_the_middle_of_sample_costs_only_that_request():
    class SlowSteps(RLlibCallback):
        def on_episode_step(self, **kwargs):
            time.sleep(0.002)

    config = small_ppo(2, train_batch_size=400).callbacks([SlowSteps, RecordRecreated])
    with config.build() as algo:
        algo.train()
        pid = algo.env_runner_group.remote_pids()[1]
        killer = __import__("threading").Timer(0.15, os.kill, (pid, signal.SIGKILL))
        killer.start()
        result = algo.train()
        killer.join()
        assert result["env_runners"]["num_env_steps_sampled"] >= 400
        assert result["fault_tolerance"]["num_failures"]["crashed"] == 1
        assert result["fault_tolerance"]["num_remote_worker_restarts"] == 1
        assert algo.callbacks[1].recoveries == [([1], False)]
        assert algo.env_runner_group.healthy_env_runner_ids() == [1, 2]


@pytest.mark.slow
def test_a_crash_in_on_episode_step_restarts_the_runner():
    def crash_once(env_runner, episode, **kwargs):
        if (
            env_runner.worker_index == 2
            and not env_runner.env_context.recreated_worker
            and len(episode) == 5
        ):
            raise ValueError("callback bug in the first process")

    config = small_ppo(2).callbacks(RecordRecreated, on_episode_step=crash_once)
    with config.build() as algo:
        result = algo.train()
        assert result["fault_tolerance"]["num_failures"]["callback"] == 1
        assert algo.callbacks[0].recoveries == [([2], False)]


@pytest.mark.slow
def test_a_callback_that_always_raises_is_named_each_iteration_until_the_budget_ends(caplog):
    """RLlib's rule: the failing runner is restarted at most once per iteration, each train()
    returns with what the healthy runner sampled, a warning names the callback, its event and
    the runner; the restart budget, once spent, ends it with the CallbackError."""

    def always(env_runner, **kwargs):
        if env_runner.worker_index == 1:
            raise ValueError("deterministic bug")

    config = (
        small_ppo(2)
        .callbacks(on_episode_step=always)
        .fault_tolerance(max_num_env_runner_restarts=3, delay_between_env_runner_restarts_s=0)
    )
    with config.build() as algo:
        for _ in range(2):
            caplog.clear()
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled"] >= 200  # runner 2's
            (left_out,) = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
            assert ".always' raised ValueError" in left_out and "'on_episode_step'" in left_out
            assert "EnvRunner 1 is left out until the next iteration" in left_out
        assert "the same way in 2 iterations in a row" in left_out
        assert algo.env_runner_group.num_remote_worker_restarts() == 2
        with pytest.raises(CallbackError, match="deterministic bug") as info:
            algo.train()  # its third restart at the start, its fourth refused
        assert algo.env_runner_group.num_remote_worker_restarts() == 3
    notes = getattr(info.value, "__notes__", None)
    if notes is not None:
        assert "restarted 3 times (max_num_env_runner_restarts=3)" in notes[0]


class WrongShapeAfter30Steps(gym.Env):
    """Every episode's 30th step returns an observation of the wrong shape (a deterministic
    env bug that strikes only after the env has stepped)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.t = 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action):
        self.t += 1
        shape = (3,) if self.t == 30 else (4,)
        return np.zeros(shape, np.float32), 1.0, False, False, {}


@pytest.mark.parametrize(
    "env, env_config, failure",
    [
        ("crashing", {"p_crash": 1.0}, "raised EnvError: Simulated env crash"),
        (
            WrongShapeAfter30Steps,
            {},
            "sub-env 0's step() returned an observation of shape (3,) where its observation "
            "space Box(-1.0, 1.0, (4,), float32) has shape (4,)",
        ),
    ],
    ids=["raises_at_every_step", "wrong_obs_shape_at_step_30"],
)
@pytest.mark.slow
def test_a_runner_failing_every_time_is_restarted_once_per_iteration_and_train_returns(
    env, env_config, failure
):
    """RLlib's rule (its test_on_env_runners_recreated_callback, p_crash=1.0): restarts go on
    across iterations, at most one per runner and iteration, and each train() returns (the
    default, max_consecutive_failed_iterations=None; with a limit the iteration that reaches it
    raises the failure, see test_hostile_failures.py)."""
    if env == "crashing":
        from trainer import register_env
        from trainer.examples.envs.classes.cartpole_crashing import CartPoleCrashing

        register_env("crashing", lambda config: CartPoleCrashing(config))
    config = (
        small_ppo(2)
        .environment(env, env_config=env_config)
        .callbacks(RecordRecreated)
        .fault_tolerance(delay_between_env_runner_restarts_s=0)
    )
    with config.build() as algo:
        for _ in range(3):
            started = time.monotonic()
            result = algo.train()
            assert time.monotonic() - started < 20
            assert result["env_runners"]["num_env_steps_sampled"] == 0
            assert result["fault_tolerance"]["num_waiting_workers"] == 2
            assert all(failure in f for f in result["fault_tolerance"]["failures_this_iteration"])
        # Iteration 1 restarts both at once after their first failure, 2 and 3 when they start.
        assert algo.callbacks[0].recoveries == [([1, 2], False)] * 3
        assert algo.restore_env_runners(algo.env_runner_group) == [1, 2]
        assert algo.env_runner_group.healthy_env_runner_ids() == [1, 2]
        assert algo.env_runner_group.num_remote_worker_restarts() == 8


@pytest.mark.slow
def test_a_failure_after_its_restart_leaves_out_only_that_runner_for_the_iteration():
    """Runner 1 fails every time, runner 2 never: each iteration fills its batch from runner 2
    while runner 1 waits for the next one."""
    config = faulty_ppo(crash_after_n_steps=20, crash_on_worker_indices=[1]).fault_tolerance(
        delay_between_env_runner_restarts_s=0
    )
    with config.build() as algo:
        for iteration in range(2):
            result = algo.train()
            assert result["env_runners"]["num_env_steps_sampled"] >= 200
            tolerance = result["fault_tolerance"]
            assert tolerance["num_healthy_workers"] == 1 and tolerance["num_waiting_workers"] == 1
            assert len(tolerance["failures_this_iteration"]) == 2 - iteration
            assert all("EnvRunner 1 raised" in f for f in tolerance["failures_this_iteration"])


@pytest.mark.slow
@pytest.mark.parametrize("num_env_runners", [0, 2])
def test_restart_failed_sub_environments_recreates_only_the_broken_sub_env(num_env_runners):
    config = (
        faulty_ppo(num_env_runners, crash_after_n_steps=40)
        .env_runners(num_envs_per_env_runner=2)
        .fault_tolerance(restart_failed_sub_environments=True)
    )
    with config.build() as algo:
        pids = algo.env_runner_group.remote_pids()
        result = algo.train()
        assert algo.env_runner_group.remote_pids() == pids
    tolerance = result["fault_tolerance"]
    assert tolerance["num_sub_environment_restarts"] >= 2
    assert tolerance["num_env_steps_lost"] > 0
    assert tolerance["num_remote_worker_restarts"] == 0
    assert result["env_runners"]["num_env_steps_sampled"] >= 200
    # Dropped episodes never finish: every reported episode is shorter than a crash.
    assert result["env_runners"]["episode_len_max"] <= 40


class AsksToBeRecreated(gym.Env):
    """Raises StepFailedRecreateEnvError at its 30th step (each instance)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config=None):
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.steps == 30:
            raise StepFailedRecreateEnvError("simulator connection lost")
        return np.zeros(2, np.float32), 1.0, self.steps % 10 == 0, False, {}


def test_step_failed_recreate_env_error_recreates_the_sub_env_quietly(caplog):
    config = (
        small_ppo(1)
        .environment(AsksToBeRecreated)
        .fault_tolerance(restart_failed_sub_environments=True)
    )
    with config.build() as algo:
        result = algo.train()
    assert result["fault_tolerance"]["num_sub_environment_restarts"] >= 1
    assert result["fault_tolerance"]["num_remote_worker_restarts"] == 0
    # The same in the main process (num_env_runners=0): nothing is logged as an error.
    with caplog.at_level("DEBUG", logger="trainer"):
        with (
            small_ppo(0)
            .environment(AsksToBeRecreated)
            .fault_tolerance(restart_failed_sub_environments=True)
            .debugging(log_level="DEBUG")
            .build() as algo
        ):
            result = algo.train()
    assert result["fault_tolerance"]["num_sub_environment_restarts"] >= 1
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert any("asked to be re-created" in r.getMessage() for r in caplog.records)


def _die_in_runner_1(env_runner):
    if env_runner.worker_index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return env_runner.worker_index


def _raise_in_runner_1(env_runner):
    if env_runner.worker_index == 1:
        raise RuntimeError("broken between iterations")
    return env_runner.worker_index


@pytest.mark.parametrize(
    "func, failure",
    [(_die_in_runner_1, "killed by signal SIGKILL"), (_raise_in_runner_1, "broken between")],
)
def test_a_training_runner_failure_between_train_calls_is_in_the_next_result(func, failure):
    """A failure that a call between iterations handles (a foreach_env_runner call here; a
    weight sync, get_state() or a checkpoint save alike) was dropped when the next iteration
    started: the next result lists it and the restart, once."""
    with small_ppo(2).build() as algo:
        algo.train()
        group = algo.env_runner_group
        assert group.foreach_env_runner(func, local_env_runner=False) == [2]
        tolerance = algo.train()["fault_tolerance"]
        (reported,) = tolerance["failures_this_iteration"]
        assert "EnvRunner 1 " in reported and failure in reported
        assert tolerance["env_runners_restarted"] == [1]
        tolerance = algo.train()["fault_tolerance"]
        assert tolerance["failures_this_iteration"] == []
        assert tolerance["env_runners_restarted"] == []
        assert tolerance["num_remote_worker_restarts"] == 1


@pytest.mark.slow
def test_evaluation_runners_fail_and_recover():
    """The next round reports an evaluation runner killed between rounds (its process ended:
    `wait_s`; one still ending as the round starts is reported too, see test_evaluation.py's
    `test_an_evaluation_runner_killed_around_a_round_start_is_in_that_rounds_report`)."""
    config = (
        small_ppo(1)
        .callbacks(RecordRecreated)
        .evaluation(evaluation_interval=1, evaluation_num_env_runners=2, evaluation_duration=4)
    )
    with config.build() as algo:
        algo.train()
        kill_env_runner(algo, 2, evaluation=True, wait_s=5.0)
        result = algo.train()["evaluation"]
        assert "EnvRunner 2 crashed" in result["env_runner_failures"][0]
        assert result["env_runners_restarted"] == [2]
        assert algo.callbacks[0].recoveries == [([2], True)]
        assert algo.train()["evaluation"]["env_runners"]["num_episodes"] == 4
        assert algo.eval_env_runner_group.healthy_env_runner_ids() == [1, 2]


def test_kill_env_runner_names_a_missing_index():
    with small_ppo(1).build() as algo:
        with pytest.raises(ValueError, match=r"index=5\): no such remote EnvRunner; .*\[1\]"):
            kill_env_runner(algo, 5)


_EXIT_WITHOUT_STOP = textwrap.dedent("""
    import sys
    from helpers import small_ppo
    from trainer.testing import FaultInjectionEnv

    algo = (small_ppo(2).environment(FaultInjectionEnv, env_config={"crash_after_n_steps": 5})
            .fault_tolerance(restart_failed_env_runners=False).build())
    print(" ".join(map(str, algo.env_runner_group.remote_pids().values())), flush=True)
    if sys.argv[1] == "raise":
        algo.train()          # raises; the script ends with the traceback, without stop()
""")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "raise"])
def test_no_orphans_when_the_script_ends_without_stop(tmp_path, how):
    script = tmp_path / "script.py"
    script.write_text(_EXIT_WITHOUT_STOP)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(__file__)}
    done = subprocess.run(
        [sys.executable, str(script), how], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == (1 if how == "raise" else 0), done.stderr
    if how == "raise":
        assert "InjectedFault" in done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 30  # returns as soon as they are gone
    while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in pids if os.path.exists(f"/proc/{p}")]
    assert env_runner_pids() == []


@pytest.mark.slow
def test_delay_between_env_runner_restarts_s_is_waited_before_a_restart():
    config = small_ppo(1).fault_tolerance(delay_between_env_runner_restarts_s=0.8)
    with config.build() as algo:
        kill_env_runner(algo, 1)
        algo.env_runner_group.remote_runner(1).process.wait(timeout=10)
        started = time.monotonic()
        result = algo.train()
        assert time.monotonic() - started >= 0.8
        assert result["fault_tolerance"]["num_remote_worker_restarts"] == 1
