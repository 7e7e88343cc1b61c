"""A named-object server that dies, stops or works long, as each process that uses it sees it:
a death fails the calls in flight and later ones at once, with the exit status where the process
can know it; a stopped server is reported within `UNRESPONSIVE_REPORTED_WITHIN_S` by the health
checks; a long method on a healthy server (sleeping, or computing in C code that holds Python's
lock) is waited for. Real server and EnvRunner processes, real signals."""

import contextlib
import os
import re
import signal
import subprocess
import threading
import time

import pytest
from helpers import LevelEnv, small_ppo
from test_named_objects import Counter, server_pids

from callbacks import RLlibCallback
from trainer import NamedObjectError, create_named_object, get_named_object
from trainer.errors import CallbackError, EnvRunnerError
from trainer.named_objects import (
    UNRESPONSIVE_REPORTED_WITHIN_S,
    client,
    health,
    shutdown_named_objects,
)

#: What a SIGKILLed server's death reads like where its exit status can be known (or, on a
#: machine so busy that its exit takes longer than EXIT_SHOW_S to show, its pending SIGKILL).
KILLED = r"died \(killed(, and exiting| by signal 9 \(SIGKILL\))\)"


class Worker(Counter):
    def sleep(self, seconds):
        time.sleep(seconds)
        return seconds

    def backtrack(self, n):
        # Catastrophic backtracking: seconds inside the regex engine, which holds the GIL.
        return re.match(r"(a+)+$", "a" * n + "b")


@pytest.fixture(autouse=True)
def no_server_left():
    yield
    shutdown_named_objects()


@contextlib.contextmanager
def stopped(pid):
    """`pid` stopped (SIGSTOP) for the block, and resumed after it whatever happens. Waits
    until the stop has taken effect: the kernel stops each thread as it next runs."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 5
        while health.ProcStat.read(pid).state not in ("T", "t"):
            assert time.monotonic() < deadline, f"process {pid} did not stop within 5 s"
            time.sleep(0.001)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def kill_later(pid, seconds):
    timer = threading.Timer(seconds, os.kill, (pid, signal.SIGKILL))
    timer.start()
    return timer


def test_the_server_process_as_a_parent_and_as_another_process_sees_it():
    child = subprocess.Popen(["sleep", "30"])
    try:
        as_parent = health.ServerProcess(child.pid, child)
        as_other = health.ServerProcess(child.pid)  # an EnvRunner: a pid, no Popen
        assert as_parent.condition() == as_other.condition() == ("alive", "")
        deadline = time.monotonic() + 5  # once started, `sleep` sleeps: as a stuck server does
        while as_other.has_runnable_thread():
            assert time.monotonic() < deadline, "sleep 30 did not go to sleep within 5 s"
            time.sleep(0.001)
        with stopped(child.pid):
            condition, how = as_other.condition()
            assert condition == "stopped" and "SIGCONT" in how
        os.kill(child.pid, signal.SIGKILL)
        # At once, before it ran again: the pending SIGKILL says it will serve nothing again.
        assert as_other.condition()[0] in ("dying", "dead")
        # Not its parent: the zombie's exit status is read from /proc.
        assert as_other.wait_for_exit(5) == ("dead", "killed by signal 9 (SIGKILL)")
        assert as_parent.wait_for_exit(5) == ("dead", "killed by signal 9 (SIGKILL)")
        assert as_other.condition() == (
            "dead",
            "exited; its exit status went to the main process, its parent",
        )
    finally:
        child.kill()
        child.wait()


def test_a_process_that_computes_or_waits_for_a_cpu_is_not_taken_for_stuck():
    busy = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        watched = health.ServerProcess(busy.pid)
        before = watched.cpu_ticks()
        deadline = time.monotonic() + 10
        while watched.cpu_ticks() == before:  # one clock tick of CPU (10 ms) shows
            assert time.monotonic() < deadline, "the busy loop used no CPU in 10 s"
            time.sleep(0.005)
        assert watched.has_runnable_thread()  # running, or ready to run on a busy machine
    finally:
        busy.kill()
        busy.wait()


@pytest.mark.slow
def test_a_call_in_flight_and_the_calls_after_fail_at_once_when_the_server_is_killed():
    worker = create_named_object("w", Worker)
    (pid,) = server_pids()
    kill_later(pid, 0.3)
    started = time.monotonic()
    with pytest.raises(NamedObjectError, match=rf"\(pid {pid}\) {KILLED}; its objects are gone"):
        worker.sleep(30)
    assert time.monotonic() - started < 3
    with pytest.raises(NamedObjectError, match=rf"\(pid {pid}\) {KILLED}"):
        worker.get()


@pytest.mark.slow
def test_a_stopped_server_is_reported_within_seconds_and_serves_again_once_resumed():
    counter = create_named_object("c", Counter, 7)
    (pid,) = server_pids()
    with stopped(pid):
        started = time.monotonic()
        with pytest.raises(NamedObjectError, match=rf"\(pid {pid}\) is stopped .*SIGCONT"):
            counter.get()
        assert time.monotonic() - started < UNRESPONSIVE_REPORTED_WITHIN_S + 1
        # A new connection: the kernel queues it, the stopped server would answer no
        # handshake; the process is read first.
        started = time.monotonic()
        with pytest.raises(NamedObjectError, match="is stopped"):
            counter.get()
        assert time.monotonic() - started < 1
    assert counter.get() == 7  # resumed: the next call connects anew


@pytest.mark.slow
def test_a_create_while_the_server_is_stopped_says_so_and_starts_no_other():
    create_named_object("c", Counter)
    (pid,) = server_pids()
    with stopped(pid):
        started = time.monotonic()
        with pytest.raises(NamedObjectError, match="is stopped"):
            create_named_object("d", Counter)
        assert time.monotonic() - started < UNRESPONSIVE_REPORTED_WITHIN_S + 1
        assert server_pids() == [pid]


@pytest.mark.slow
def test_without_proc_the_ping_reports_a_stopped_server(monkeypatch):
    # Where the process cannot be read (not Linux), the ping alone tells. Shorter checks keep
    # the test short; the bound is the same sum.
    monkeypatch.setattr(health, "proc_available", lambda: False)
    monkeypatch.setattr(client, "HEALTH_CHECK_INTERVAL_S", 0.2)
    monkeypatch.setattr(client, "PING_TIMEOUT_S", 0.5)
    counter = create_named_object("c", Counter)
    (pid,) = server_pids()
    with stopped(pid):
        started = time.monotonic()
        with pytest.raises(NamedObjectError, match="did not answer a health check within 0.5 s"):
            counter.get()
        assert time.monotonic() - started < 0.2 + 0.5 + 2


@pytest.mark.slow
def test_a_long_method_on_a_healthy_server_is_waited_for(monkeypatch):
    # Health checks every 0.2 s (shortened: several in a short test): a sleeping method answers
    # its pings (the server answers them on another thread), and one that holds the GIL in the
    # regex engine (2 s and more) for longer than a ping may take (shortened to 1 s) uses CPU:
    # both are waited for.
    monkeypatch.setattr(client, "HEALTH_CHECK_INTERVAL_S", 0.2)
    monkeypatch.setattr(client, "PING_TIMEOUT_S", 1.0)
    worker = create_named_object("w", Worker)
    started = time.monotonic()
    assert worker.sleep(1.0) == 1.0
    assert worker.backtrack(26) is None
    assert time.monotonic() - started > 1.0 + 1.0


class CountEpisodes(RLlibCallback):
    def on_episode_end(self, *, episode, **kwargs):
        get_named_object("episodes").inc(1)


def on_the_runner(algo, function):
    return algo.env_runner_group.foreach_env_runner(function, local_env_runner=False)


def runner_only_config():
    # The runner's error is raised (not restarted): its message is what the test reads.
    return small_ppo(1).environment(LevelEnv).fault_tolerance(restart_failed_env_runners=False)


@pytest.mark.slow
def test_an_env_runner_sees_a_stopped_server_within_seconds():
    create_named_object("w", Worker)
    (pid,) = server_pids()
    with runner_only_config().build() as algo:
        assert on_the_runner(algo, lambda runner: get_named_object("w").get()) == [0]
        with stopped(pid):
            started = time.monotonic()
            with pytest.raises(EnvRunnerError, match=rf"\(pid {pid}\) is stopped"):
                on_the_runner(algo, lambda runner: get_named_object("w").get())
            assert time.monotonic() - started < UNRESPONSIVE_REPORTED_WITHIN_S + 1


@pytest.mark.slow
def test_an_env_runner_sees_the_server_die_at_once_with_its_exit_status():
    create_named_object("w", Worker)
    (pid,) = server_pids()
    with runner_only_config().build() as algo:
        assert on_the_runner(algo, lambda runner: get_named_object("w").get()) == [0]
        kill_later(pid, 0.5)
        started = time.monotonic()
        # Not the server's parent: the runner reads the exit status of the unreaped server.
        with pytest.raises(EnvRunnerError, match=rf"\(pid {pid}\) {KILLED}"):
            on_the_runner(algo, lambda runner: get_named_object("w").sleep(30))
        assert time.monotonic() - started < 3


@pytest.mark.slow
def test_train_reports_a_server_killed_mid_run_within_seconds():
    counter = create_named_object("episodes", Counter)
    with runner_only_config().callbacks(CountEpisodes).build() as algo:
        algo.train()
        assert counter.get() > 0
        (pid,) = server_pids()
        os.kill(pid, signal.SIGKILL)
        started = time.monotonic()
        expected = rf"CountEpisodes.on_episode_end.*\(pid {pid}\) {KILLED}"
        with pytest.raises(CallbackError, match=expected):
            algo.train()
        assert time.monotonic() - started < 5


class CountStepsWithoutWaiting(RLlibCallback):
    def on_episode_step(self, **kwargs):
        get_named_object("steps").inc.remote(1)


def test_remote_calls_raise_in_the_caller_once_the_server_is_killed():
    """Ray raises `RayActorError` where a dead actor is called: `.remote()` on a killed server
    raises too (within `REMOTE_CHECK_INTERVAL_S`), instead of one warning per call lost."""
    counter = create_named_object("c", Counter)
    counter.inc.remote(1)
    assert counter.get() == 1
    (pid,) = server_pids()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(NamedObjectError, match=rf"\(pid {pid}\) {KILLED}"):
        for _ in range(10):  # far fewer than a batch (BATCH_SIZE): none of them sends one
            counter.inc.remote(1)
            time.sleep(client.REMOTE_CHECK_INTERVAL_S)


@pytest.mark.slow
def test_train_ends_with_the_callback_error_when_the_server_is_killed_mid_run(capfd):
    """The runners' callbacks call `.remote()`: after the server's SIGKILL they raise it, the
    runners are restarted and fail the same way, and (with a streak limit of 3) the third
    train() raises the CallbackError naming the event, the callback and the runner. No warning
    per lost call."""
    counter = create_named_object("steps", Counter)
    config = (
        small_ppo(2)
        .callbacks(CountStepsWithoutWaiting)
        .fault_tolerance(delay_between_env_runner_restarts_s=0, max_consecutive_failed_iterations=3)
    )
    with config.build() as algo:
        result = algo.train()
        assert counter.get() == result["num_env_steps_sampled_lifetime"]
        (pid,) = server_pids()
        os.kill(pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(CallbackError, match="named-object server") as info:
            for _ in range(3):
                algo.train()
        assert time.monotonic() - started < 30
        assert algo.iteration == 3  # two empty iterations, then the raise
    error = info.value
    assert error.event == "on_episode_step"
    assert error.callback_name == "CountStepsWithoutWaiting.on_episode_step"
    assert error.env_runner_index in (1, 2)
    assert "failed and its result was never read" not in capfd.readouterr().err
