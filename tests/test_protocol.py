"""The worker protocol (`trainer.runners.protocol`), the pool and the runner-handle interface.

Round trips of the message records and of errors (their type kept where they pickle), the pool
on handles that are not processes, and a whole `EnvRunnerGroup` on a second backend (runners
served on threads of this process) to show the group needs nothing but the two interfaces."""

from __future__ import annotations

import pickle
import threading
import time
from multiprocessing import Pipe
from multiprocessing.connection import wait

import cloudpickle
import gymnasium as gym
import pytest
from helpers import RaisingStepEnv

from trainer import EnvRunnerError, PPOConfig
from trainer.callbacks import CallbackError
from trainer.env.envs import make_env_creator
from trainer.errors import EnvRunnerCrashed, EnvRunnerTimeout
from trainer.runners import protocol, worker
from trainer.runners.env_runner_group import EnvRunnerGroup
from trainer.runners.handle import RunnerBackend, RunnerHandle
from trainer.runners.pool import RunnerPool
from trainer.util import deprecation


# -- records ---------------------------------------------------------------------------------
def test_requests_and_replies_round_trip_with_ids_and_labels():
    requests = [
        protocol.Init(protocol.next_request_id(), ["/x"], b"spec"),
        protocol.call("sample_with_metrics", explore=False),
        protocol.apply(cloudpickle.dumps(len), key=1),
        protocol.stop(),
    ]
    ids = [request.request_id for request in requests]
    assert len(set(ids)) == 4 and ids == sorted(ids)
    for request in requests:
        assert pickle.loads(pickle.dumps(request)) == request
    assert [r.label for r in requests] == ["__init__", "sample", "foreach_env_runner", "stop"]
    reply = protocol.Reply(ids[1], value={"a": 1}, warnings=(("old", "new"),))
    assert pickle.loads(pickle.dumps(reply)) == reply
    assert reply.error is None and reply.cause is None


class NeedsTwoArguments(Exception):
    def __init__(self, a, b):
        super().__init__(a)
        self.b = b


def _error_round_trip(cause: BaseException) -> BaseException:
    error = EnvRunnerError(2, "sample", type(cause).__name__, str(cause), "Traceback: here", 7)
    reply = pickle.loads(pickle.dumps(protocol.error_reply(5, error, cause)))
    with pytest.raises(EnvRunnerError) as raised:
        protocol.raise_error(reply)
    return raised.value


@pytest.mark.parametrize(
    "cause",
    [
        ValueError("bad value"),
        KeyError("k"),
        FileNotFoundError(2, "no file"),
        ZeroDivisionError("z"),
        gym.error.Error("gymnasium's"),
    ],
)
def test_a_remote_error_keeps_its_type_and_its_original(cause):
    error = _error_round_trip(cause)
    assert isinstance(error, type(cause)) and isinstance(error, EnvRunnerError)
    assert type(error.__cause__) is type(cause) and str(error.__cause__) == str(cause)
    assert (error.worker_index, error.method, error.env_steps) == (2, "sample", 7)
    assert "Traceback: here" in error.remote_traceback
    assert str(error).startswith(f"EnvRunner 2 raised {type(cause).__name__}")
    assert error.kind == "exception"
    # Pickled again (as a failure in results), it is the plain error class.
    assert type(pickle.loads(pickle.dumps(error))) is EnvRunnerError


def test_a_cause_that_does_not_unpickle_leaves_the_error_as_text():
    error = _error_round_trip(NeedsTwoArguments(1, 2))  # its __init__ cannot be re-run
    assert type(error) is EnvRunnerError and error.__cause__ is None
    assert error.error_type == "NeedsTwoArguments"


def test_a_callback_error_keeps_the_callbacks_exception_type():
    error = CallbackError("on_episode_end", "MyCallback", "ValueError", "no", "tb", 3)
    reply = pickle.loads(pickle.dumps(protocol.error_reply(1, error, ValueError("no"))))
    with pytest.raises(ValueError) as raised:
        protocol.raise_error(reply)
    assert isinstance(raised.value, CallbackError)
    assert (raised.value.event, raised.value.env_runner_index) == ("on_episode_end", 3)


@pytest.mark.slow
def test_an_env_error_in_a_worker_process_arrives_as_its_own_type():
    algo = (
        PPOConfig()
        .environment(RaisingStepEnv)
        .env_runners(num_env_runners=1, rollout_fragment_length=10)
        .training(train_batch_size=20, minibatch_size=10, num_epochs=1)
        .fault_tolerance(restart_failed_env_runners=False)
    ).build()
    try:
        with pytest.raises(ValueError, match=RaisingStepEnv.MESSAGE) as raised:
            algo.train()
        assert isinstance(raised.value, EnvRunnerError)
        assert raised.value.worker_index == 1
        assert isinstance(raised.value.__cause__, ValueError)
    finally:
        algo.stop()


# -- the pool on handles that are not processes ----------------------------------------------
class ScriptedHandle(RunnerHandle):
    """A runner that answers each request with `answer(request)` after `delay_s`, or never."""

    def __init__(self, worker_index, answer, delay_s=0.0):
        self.worker_index, self.healthy, self.pid = worker_index, True, None
        self._answer, self._delay_s = answer, delay_s
        self._pending: list[tuple[float, protocol.Request]] = []
        self.killed = False

    def send(self, request, *, pickled=None):
        if self.killed:
            raise EnvRunnerCrashed(self.worker_index, request.label, -9)
        self._pending.append((time.monotonic() + self._delay_s, request))

    def has_pending(self):
        return bool(self._pending)

    def reply_ready(self):
        return bool(self._pending) and time.monotonic() >= self._pending[0][0]

    def read_reply(self, timeout):
        due, request = self._pending[0]
        if due - time.monotonic() > timeout:
            raise self.timed_out(timeout)
        time.sleep(max(due - time.monotonic(), 0))
        self._pending.pop(0)
        return self._answer(request)

    def timed_out(self, timeout):
        label = self._pending[0][1].label if self._pending else "request"
        self._pending.clear()
        self.kill()
        return EnvRunnerTimeout(self.worker_index, label, timeout)

    def is_alive(self):
        return not self.killed

    def exitcode(self):
        return -9 if self.killed else None

    def kill(self):
        self.killed, self.healthy = True, False

    def stop(self, timeout=2.0):
        self.kill()

    @staticmethod
    def wait(handles, timeout):
        deadline = time.monotonic() + timeout
        while True:
            ready = [h for h in handles if h.reply_ready()]
            if ready or time.monotonic() >= deadline:
                return ready
            time.sleep(0.001)


def _fails(request):
    raise EnvRunnerError(2, request.label, "ValueError", "no", "tb")


def test_the_pool_gathers_replies_errors_and_silences_within_one_deadline():
    pool = RunnerPool()
    pool.put(ScriptedHandle(1, lambda request: request.kwargs["x"] * 2))
    pool.put(ScriptedHandle(2, _fails))
    pool.put(ScriptedHandle(3, lambda request: "late", delay_s=30))
    started = time.monotonic()
    replies, failures = pool.call([1, 2, 3], lambda index: protocol.call("f", x=index), 0.2)
    assert time.monotonic() - started < 2
    assert replies == {1: 2}
    assert isinstance(failures[2], EnvRunnerError) and isinstance(failures[3], EnvRunnerTimeout)
    assert pool.healthy_ids() == [1, 2]  # the silent one was killed; an error leaves it alive
    assert [e.worker_index for e in pool.collect_exited()] == []  # it was killed, not idle-dead
    _, failures = pool.send([3], lambda index: protocol.call("f", x=1))
    assert isinstance(failures[3], EnvRunnerCrashed)


def test_the_pool_reads_only_the_last_reply_but_raises_an_earlier_error():
    answers = iter([EnvRunnerError(1, "set_weights", "ValueError", "bad", "tb"), "sampled"])

    def answer(request):
        value = next(answers)
        if isinstance(value, Exception):
            raise value
        return value

    pool = RunnerPool()
    pool.put(ScriptedHandle(1, answer))
    assert pool.broadcast([1], protocol.call("set_weights", weights={})) == {}
    replies, failures = pool.call([1], lambda index: protocol.call("sample"), 1.0)
    assert replies == {} and failures[1].method == "set_weights"


# -- a second backend: runners on threads of this process -----------------------------------
class ThreadRunner(RunnerHandle):
    """The worker's own serving loop (`trainer.runners.worker.serve`) on a thread, over a pipe."""

    def __init__(self, worker_index):
        self.worker_index, self.healthy, self.pid = worker_index, True, None
        self.conn, child_end = Pipe(duplex=True)
        self._thread = threading.Thread(
            target=worker.serve, args=(child_end, worker_index), daemon=True
        )
        self._thread.start()
        self._pending = []
        self._crashed = False

    def crash(self):
        """As if its process had been killed: gone, though nobody here gave it up yet."""
        self._crashed = True
        self.conn.close()

    def send(self, request, *, pickled=None):
        if not self.healthy:
            raise EnvRunnerCrashed(self.worker_index, request.label, None)
        self.conn.send(request)
        self._pending.append(request.request_id)

    def has_pending(self):
        return bool(self._pending)

    def reply_ready(self):
        return self.conn.poll()

    def read_reply(self, timeout):
        if not self.conn.poll(timeout):
            raise self.timed_out(timeout)
        return protocol.reply_value(
            self.conn.recv(), self._pending.pop(0), "request", self.worker_index
        )

    def timed_out(self, timeout):
        self.kill()
        return EnvRunnerTimeout(self.worker_index, "request", timeout)

    def is_alive(self):
        return self.healthy and not self._crashed

    def exitcode(self):
        return -9 if self._crashed else None

    def kill(self):
        self.healthy = False
        self._pending.clear()
        self.conn.close()  # the thread's loop ends at its next receive (closing twice is fine)

    def stop(self, timeout=2.0):
        if self.healthy:
            self.send(protocol.stop())
            self.read_reply(timeout)
        self.kill()

    @staticmethod
    def wait(handles, timeout):
        by_conn = {h.conn: h for h in handles}
        return [by_conn[c] for c in wait(list(by_conn), timeout=max(timeout, 0))]


class ThreadBackend(RunnerBackend):
    def start(self, worker_index):
        return ThreadRunner(worker_index)


@pytest.mark.slow
def test_a_group_runs_on_any_backend_that_implements_the_handle(monkeypatch):
    # The serving loop would keep this process's deprecation warnings for a main process, and
    # set this process's log handlers as a worker's.
    monkeypatch.setattr(deprecation, "collect_in_this_process", lambda: None)
    monkeypatch.setattr(worker, "_configure_logging", lambda level, index: None)
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2, rollout_fragment_length=50)
    )
    recreated = []
    group = EnvRunnerGroup(
        config,
        make_env_creator("CartPole-v1"),
        backend=ThreadBackend(),
        on_recreated=recreated.append,
    )
    try:
        episodes, metrics = group.sample(min_env_steps=100)
        assert sum(len(e) for e in episodes) >= 100 and len(metrics) == 2
        assert group.foreach_env_runner(lambda r: r.worker_index) == [0, 1, 2]
        group.remote_runner(2).crash()  # a runner that died while idle is restarted
        episodes, _ = group.sample(min_env_steps=100)
        assert recreated == [[2]] and group.healthy_env_runner_ids() == [1, 2]
        assert group.foreach_env_runner(lambda r: r._recreated, local_env_runner=False) == [
            False,
            True,
        ]
    finally:
        group.stop()
