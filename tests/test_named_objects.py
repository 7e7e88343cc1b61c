"""Named shared objects through the public API: env code and callbacks in EnvRunner processes call
one object by name; the main process reads it; calls run one at a time; the server starts on first
use and stops with the algorithm."""

import os
import time

import pytest
from helpers import LevelEnv, small_ppo

from callbacks import RLlibCallback
from trainer import NamedObjectError, create_named_object, get_named_object
from trainer.errors import EnvRunnerError
from trainer.named_objects import shutdown_named_objects
from trainer.testing import env_runner_pids


class Counter:
    def __init__(self, start=0):
        self.count = start

    def inc(self, n):
        self.count += n

    def slow_inc(self):
        # Read, yield, write: only calls that run one at a time keep every increment.
        value = self.count
        time.sleep(0.0005)
        self.count = value + 1

    def get(self):
        return self.count

    def fail(self):
        raise ArithmeticError("the counter overflowed")


def server_pids():
    return [pid for pid in env_runner_pids() if _cmdline(pid).find(b"named_objects.server") >= 0]


def _cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read()


class SlowCounter(Counter):
    def inc(self, n):
        time.sleep(0.001)  # a backlog builds up behind calls that do not wait
        self.count += n


@pytest.fixture(autouse=True)
def no_server_left():
    yield
    shutdown_named_objects()


class CountEpisodes(RLlibCallback):
    def on_episode_end(self, *, episode, **kwargs):
        get_named_object("episodes").inc(1)


@pytest.mark.slow
def test_the_counter_counts_every_env_step_of_two_runners_exactly():
    steps = create_named_object("env_steps", Counter)
    episodes = create_named_object("episodes", Counter)
    config = (
        small_ppo(2)
        .environment(LevelEnv, env_config={"count_steps_in": "env_steps"})
        .env_runners(num_envs_per_env_runner=2)
        .callbacks(CountEpisodes)
    )
    with config.build() as algo:
        for _ in range(3):
            result = algo.train()
            # Read from the main process while training goes on.
            assert steps.get() == result["num_env_steps_sampled_lifetime"]
            assert episodes.get() == result["env_runners"]["num_episodes_lifetime"]
        assert steps.get() >= 600


@pytest.mark.slow
def test_calls_from_two_runners_run_one_at_a_time():
    create_named_object("slow", Counter)
    with small_ppo(2).environment(LevelEnv).build() as algo:
        algo.env_runner_group.foreach_env_runner(
            lambda runner: [get_named_object("slow").slow_inc() for _ in range(200)],
            local_env_runner=False,
        )
    # Created before the algorithm: it outlives the algorithm's stop() (RLlib's tests build
    # several algorithms around one counter) until shutdown_named_objects().
    assert get_named_object("slow").get() == 2 * 200
    shutdown_named_objects()
    with pytest.raises(NamedObjectError, match="not running"):
        get_named_object("slow")


@pytest.mark.slow
def test_the_value_read_before_stop_is_exact():
    counter = create_named_object("slow2", Counter, start=5)
    with small_ppo(2).environment(LevelEnv).build() as algo:
        algo.env_runner_group.foreach_env_runner(
            lambda runner: [get_named_object("slow2").slow_inc() for _ in range(200)],
            local_env_runner=False,
        )
        assert counter.get() == 5 + 2 * 200
    shutdown_named_objects()


@pytest.mark.slow
def test_the_server_starts_on_first_use_and_stops_with_the_algorithm():
    with small_ppo(1).environment(LevelEnv).build() as algo:
        assert server_pids() == []  # nothing created: no server
        counter = create_named_object("late", Counter)  # created after the runners started
        algo.env_runner_group.foreach_env_runner(
            lambda r: get_named_object("late").inc(3), local_env_runner=False
        )
        assert counter.get() == 3
        assert len(server_pids()) == 1
    assert server_pids() == []
    with pytest.raises(NamedObjectError, match="not running"):
        counter.get()


def test_errors_name_the_object_the_method_and_what_exists():
    counter = create_named_object("errors", Counter)
    with pytest.raises(ValueError, match=r"no named object by that name; existing: \['errors'\]"):
        get_named_object("missing")
    with pytest.raises(ValueError, match="the name is taken"):
        create_named_object("errors", Counter)
    assert create_named_object("errors", Counter, get_if_exists=True).name == "errors"
    with pytest.raises(
        NamedObjectError,
        match=r"errors\.fail\(\) raised ArithmeticError: the "
        r"counter overflowed(.|\n)*Traceback",
    ):
        counter.fail()
    with pytest.raises(NamedObjectError, match=r"errors\.nope\(\) raised AttributeError"):
        counter.nope()
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        create_named_object("", Counter)


def test_an_env_runner_without_a_server_gets_a_clear_error():
    config = small_ppo(1).environment(LevelEnv).fault_tolerance(restart_failed_env_runners=False)
    with config.build() as algo:
        with pytest.raises(EnvRunnerError, match="named-object server is not running"):
            algo.env_runner_group.foreach_env_runner(
                lambda r: get_named_object("anything"), local_env_runner=False
            )


@pytest.mark.slow
def test_rays_spelling_async_calls_from_two_runners_are_all_counted():
    from trainer import named_objects as ray

    counter = ray.remote(SlowCounter).options(name="global_counter").remote()
    config = small_ppo(2).environment(
        LevelEnv, env_config={"count_steps_in": "global_counter", "count_with_remote": True}
    )
    with config.build() as algo:
        for _ in range(2):
            result = algo.train()
            # Each runner waited for its .remote() calls before answering: all are counted.
            assert ray.get(counter.get.remote()) == result["num_env_steps_sampled_lifetime"]
        assert ray.get_actor("global_counter").get() == result["num_env_steps_sampled_lifetime"]


def test_a_failed_remote_call_raises_at_get_and_is_logged_if_never_read(caplog):
    from trainer import named_objects as ray

    counter = create_named_object("async_errors", Counter)
    ref = counter.fail.remote()
    with pytest.raises(NamedObjectError, match="ArithmeticError: the counter overflowed"):
        ray.get(ref)
    counter.fail.remote()  # dropped at once: logged when its reply is read
    assert counter.get() == 0
    assert "failed and its result was never read" in caplog.text


def _address():
    from trainer.named_objects import client_settings

    return client_settings()["address"]


@pytest.mark.slow
def test_a_silent_client_blocks_nobody():
    """A local process that connects and sends nothing used to hold the server's one
    accept-and-handshake loop, so every later connection (the runners') hung. Now each
    connection is authenticated on its own thread, under a deadline."""
    import socket

    from trainer.named_objects import HANDSHAKE_TIMEOUT_S

    counter = create_named_object("steps", Counter)
    silent = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(3)]
    for sock in silent:
        sock.connect(_address())
    try:
        config = (
            small_ppo(2)
            .environment(LevelEnv, env_config={"count_steps_in": "steps"})
            .env_runners(sample_timeout_s=HANDSHAKE_TIMEOUT_S * 4)
        )
        with config.build() as algo:
            result = algo.train()
            assert counter.get() == result["env_runners"]["num_env_steps_sampled_lifetime"]
        started = time.monotonic()
        assert counter.get() > 0
        assert time.monotonic() - started < HANDSHAKE_TIMEOUT_S
    finally:
        for sock in silent:
            sock.close()


def test_the_server_socket_is_in_a_directory_only_its_user_can_enter():
    import os
    import stat

    create_named_object("c", Counter)
    directory = os.path.dirname(_address())
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_ISSOCK(os.stat(_address()).st_mode)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="switching to another user needs root"
)
@pytest.mark.slow
def test_another_user_cannot_connect():
    import socket

    create_named_object("c", Counter)
    pid = os.fork()
    if pid == 0:  # the child: become "nobody" and try the server's socket
        code = 2
        try:
            os.setgid(65534)
            os.setuid(65534)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(5)
            sock.connect(_address())
            code = 0  # connected: the directory let another user in
        except PermissionError:
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 1


@pytest.mark.slow
def test_a_dead_server_fails_calls_with_a_clear_error_and_comes_back_on_create():
    import signal

    counter = create_named_object("c", Counter)
    counter.inc(2)
    (pid,) = server_pids()
    os.kill(pid, signal.SIGKILL)  # returns once the kill is certain: no code of it runs again
    # The main process started the server: it reads the exit status.
    with pytest.raises(NamedObjectError, match=r"died \(killed"):
        counter.get()
    # No shutdown_named_objects() needed: the next create starts a new server.
    again = create_named_object("c", Counter, 5)
    assert again.get() == 5
    assert len(server_pids()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("attempt", range(3))
def test_a_create_right_after_the_server_was_killed_starts_a_new_one(attempt):
    # The killed server still looks alive for a moment (its exit is not yet visible to the
    # parent), and on a busy machine that moment is long: the create must wait for the end it
    # can see coming (refused connections), not fail on it.
    import signal

    create_named_object("c", Counter, 1)
    (pid,) = server_pids()
    os.kill(pid, signal.SIGKILL)
    again = create_named_object("c", Counter, 5)
    assert again.get() == 5
    assert server_pids() != [pid]
