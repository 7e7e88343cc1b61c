"""EnvRunner worker processes forked from the worker template (`trainer.runners.worker_forkserver`):
they are the main process's children, get its environment, working directory and stdout at build
time, die with it (even by SIGKILL, even stuck in C code), outlive a dead template, and are
spawned as processes of their own where the template cannot be used."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from helpers import small_ppo

from trainer.errors import EnvRunnerCrashed, EnvRunnerError
from trainer.runners import protocol, worker_forkserver
from trainer.runners.env_runner_group import prestart_workers
from trainer.runners.worker_forkserver import TEMPLATE_NAME, template_pid
from trainer.testing import env_runner_pids, kill_env_runner

pytestmark = pytest.mark.skipif(
    not worker_forkserver.forking_available(), reason="workers are forked on Linux only"
)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def _name(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as handle:
        return handle.read().strip()


def _cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().replace(b"\0", b" ").decode()


def _remote(algo, func):
    return algo.env_runner_group.foreach_env_runner(func, local_env_runner=False)


def _wait_gone(pids, timeout_s=30.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    alive = [p for p in pids if os.path.exists(f"/proc/{p}")]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and _state(p) != "Z"]
    return alive


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


@pytest.mark.slow
def test_workers_are_forked_from_one_template_and_are_children_of_the_main_process():
    with small_ppo(2).build() as algo:
        pids = sorted(algo.env_runner_group.remote_pids().values())
        template = template_pid()
        assert template is not None and _name(template) == TEMPLATE_NAME
        assert _parent(template) == os.getpid()
        for pid in pids:
            assert _parent(pid) == os.getpid()
            assert "trainer.runners.worker_template" in _cmdline(pid)
            assert _name(pid) != TEMPLATE_NAME
        assert sorted(env_runner_pids()) == pids  # the template is no EnvRunner
        assert _remote(algo, lambda runner: os.getppid()) == [os.getpid()] * 2
        algo.train()
    with small_ppo(1).build() as algo:
        assert template_pid() == template  # reused: no Python boots for the second build
        assert _parent(algo.env_runner_group.remote_pids()[1]) == os.getpid()


def _has_torch(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as handle:
        return "libtorch" in handle.read()


@pytest.mark.slow
def test_a_torch_modules_workers_fork_with_torch_imported_once_by_the_template():
    """Torch's import (about 1.5 s of CPU) happens once, in the template, on the first torch
    build's fork request: its workers, later builds and restarts fork with it imported. A
    numpy build's template never imports it."""
    pytest.importorskip("torch")
    worker_forkserver.stop_template()
    with small_ppo(1).build() as algo:
        assert not _has_torch(template_pid())
        template = template_pid()
    config = _torch_modules(small_ppo(2)).fault_tolerance(restart_failed_env_runners=True)
    with config.build() as algo:
        assert template_pid() == template and _has_torch(template)
        pids = sorted(algo.env_runner_group.remote_pids().values())
        assert all(_has_torch(pid) for pid in pids)
        kill_env_runner(algo, 1)
        algo.train()  # the lost EnvRunner is restarted: forked again, torch imported
        restarted = algo.env_runner_group.remote_pids()[1]
        assert restarted not in pids and _has_torch(restarted)
        assert _remote(algo, lambda runner: type(runner.module).__name__) == ["TorchModuleView"] * 2
    assert template_pid() == template


def _torch_modules(config):
    """`config` on torch with a learner class named: its EnvRunners build torch modules (the
    default config's act in numpy until asked for one, `tests/test_deferred_torch.py`)."""
    from trainer.algorithms.ppo.torch_learner import PPOTorchLearner

    return config.framework("torch").training(learner_class=PPOTorchLearner)


@pytest.mark.slow
def test_a_torch_build_starts_the_template_with_torch_before_validating():
    """A torch config's build starts the template first thing, torch among its imports, so
    that they run while the main process imports its own torch; its workers fork from it. A
    numpy config starts none ahead."""
    pytest.importorskip("torch")
    worker_forkserver.stop_template()
    prestart_workers(small_ppo(1))
    assert template_pid() is None
    config = _torch_modules(small_ppo(1))
    prestart_workers(config)
    template = template_pid()
    assert template is not None
    with config.build() as algo:
        assert template_pid() == template and _has_torch(template)
        assert _parent(algo.env_runner_group.remote_pids()[1]) == os.getpid()


def test_a_variable_a_library_sets_on_itself_keeps_the_template(monkeypatch):
    """tensorboardX, imported on a thread while the main job builds, sets CRC32C_SW_MODE: the
    evaluation EnvRunners fork from the same template as the training ones."""
    monkeypatch.delenv("CRC32C_SW_MODE", raising=False)
    with small_ppo(1).build():
        template = template_pid()
    monkeypatch.setenv("CRC32C_SW_MODE", "auto")
    with small_ppo(1).build():
        assert template_pid() == template


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:"):
            inodes.add(target)
    return inodes


def test_the_workers_of_one_build_are_forked_in_one_request_each_holding_only_its_own_ends(
    monkeypatch,
):
    requests = []
    fork = worker_forkserver.WorkerTemplate.fork

    def counted(self, workers, preload=()):
        requests.append([worker.worker_index for worker in workers])
        return fork(self, workers, preload)

    monkeypatch.setattr(worker_forkserver.WorkerTemplate, "fork", counted)
    with small_ppo(4).build() as algo:
        assert requests == [[1, 2, 3, 4]]
        pids = algo.env_runner_group.remote_pids()
        assert all(_parent(pid) == os.getpid() for pid in pids.values())
        # No worker holds another's socket end: the main process sees each one's end alone.
        sockets = {index: _socket_inodes(pid) for index, pid in pids.items()}
        for index, inodes in sockets.items():
            others = set().union(*(sockets[other] for other in sockets if other != index))
            assert not inodes & others, f"EnvRunner {index} shares {inodes & others}"
        # A killed worker's socket closes with it: a request to it fails as a crash at once,
        # not after the reply's timeout.
        handle = algo.env_runner_group.remote_runner(2)
        os.kill(pids[2], signal.SIGKILL)
        start = time.monotonic()
        with pytest.raises(EnvRunnerCrashed):
            handle.send(protocol.call("ping"))
            while handle.has_pending():  # replies to requests of the build, then the ping's
                handle.read_reply(timeout=30.0)
        assert time.monotonic() - start < 10.0


def test_more_workers_than_one_request_takes_are_forked_in_several(monkeypatch):
    monkeypatch.setattr(worker_forkserver, "FORK_BATCH_MAX", 2)
    requests = []
    fork = worker_forkserver.WorkerTemplate.fork

    def counted(self, workers, preload=()):
        requests.append([worker.worker_index for worker in workers])
        return fork(self, workers, preload)

    monkeypatch.setattr(worker_forkserver.WorkerTemplate, "fork", counted)
    with small_ppo(5).build() as algo:
        assert requests == [[1, 2], [3, 4], [5]]
        assert _remote(algo, lambda runner: (runner.worker_index, os.getppid())) == [
            (index, os.getpid()) for index in range(1, 6)
        ]
        algo.train()


@pytest.mark.slow
def test_environment_and_working_directory_at_build_time_reach_the_workers(monkeypatch, tmp_path):
    with small_ppo(1).build():
        pass
    before = template_pid()
    monkeypatch.setenv("LOCALRL_TEST_BUILD_TIME_VAR", "set after the template started")
    monkeypatch.chdir(tmp_path)
    with small_ppo(1).build() as algo:
        assert _remote(
            algo, lambda runner: (os.environ.get("LOCALRL_TEST_BUILD_TIME_VAR"), os.getcwd())
        ) == [("set after the template started", str(tmp_path))]
        assert template_pid() != before  # a fresh template: the old one's were stale
    assert _wait_gone([before]) == []  # and the stale one ended


def test_worker_output_goes_to_the_main_process_current_stdout(capfd):
    with capfd.disabled():  # the template starts while stdout is another file
        worker_forkserver.stop_template()
        with small_ppo(1).build():
            pass
    with small_ppo(1).build() as algo:
        _remote(algo, lambda runner: print("printed in a forked worker", flush=True))
        _remote(algo, lambda runner: print("and to stderr", file=sys.stderr, flush=True))
    captured = capfd.readouterr()
    assert "printed in a forked worker" in captured.out
    assert "and to stderr" in captured.err


def test_each_worker_draws_its_own_numpy_global_seed():
    with small_ppo(3).build() as algo:
        draws = _remote(algo, lambda runner: int(np.random.randint(2**62)))
    assert len(set(draws)) == 3


def _blas_threads(runner) -> list[int]:
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.mark.slow
def test_workers_run_one_blas_thread_unless_the_user_set_more(monkeypatch):
    with small_ppo(1).build() as algo:
        assert set(_remote(algo, _blas_threads)[0]) == {1}
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with small_ppo(1).build() as algo:
        assert set(_remote(algo, _blas_threads)[0]) == {2}
        assert _remote(algo, lambda runner: os.environ["OPENBLAS_NUM_THREADS"]) == ["2"]


@pytest.mark.slow
def test_workers_outlive_a_dead_template_and_restarts_fork_from_a_fresh_one():
    config = small_ppo(2).fault_tolerance(restart_failed_env_runners=True)
    with config.build() as algo:
        template = template_pid()
        os.kill(template, signal.SIGKILL)
        assert _wait_gone([template]) == []
        assert _remote(algo, lambda runner: "alive") == ["alive", "alive"]
        old = kill_env_runner(algo, 1)
        start = time.monotonic()
        algo.train()
        assert algo.env_runner_group.num_remote_worker_restarts() == 1
        new = algo.env_runner_group.remote_pids()[1]
        assert new != old and _parent(new) == os.getpid()
        assert "trainer.runners.worker_template" in _cmdline(new)
        assert template_pid() not in (None, template)
        assert time.monotonic() - start < 30  # bounded, not hung on the dead template


@pytest.mark.slow
def test_a_template_that_does_not_answer_in_time_means_spawned_workers(monkeypatch, caplog):
    monkeypatch.setattr(worker_forkserver, "_forking", worker_forkserver._Forking())
    monkeypatch.setattr(worker_forkserver, "STARTUP_TIMEOUT_S", 0.0)
    try:
        with small_ppo(2).build() as algo:
            pids = list(algo.env_runner_group.remote_pids().values())
            assert all(" -m trainer.runners.worker " in _cmdline(pid) for pid in pids)
            algo.train()
        assert "did not answer within 0 s" in caplog.text
        # The same environment: no second wait on a failing template.
        caplog.clear()
        with small_ppo(1).build():
            pass
        assert "did not answer" not in caplog.text
    finally:
        worker_forkserver.stop_template()


@pytest.mark.slow
def test_a_fork_not_answered_in_time_means_a_spawned_worker_on_fresh_descriptors(
    monkeypatch, caplog
):
    monkeypatch.setattr(worker_forkserver, "_forking", worker_forkserver._Forking())
    monkeypatch.setattr(worker_forkserver, "FORK_TIMEOUT_S", 0.0)
    monkeypatch.setattr(worker_forkserver, "PRELOAD_TIMEOUT_S", 0.0)  # (the config's module)
    try:
        with small_ppo(2).build() as algo:
            pids = list(algo.env_runner_group.remote_pids().values())
            assert all(" -m trainer.runners.worker " in _cmdline(pid) for pid in pids)
            assert _remote(algo, lambda runner: runner.worker_index) == [1, 2]
            algo.train()
        assert "did not answer within 0 s" in caplog.text
    finally:
        worker_forkserver.stop_template()
    # A worker the template forked after the main process gave up has ended (the autouse
    # fixture checks that no worker process outlives the test).


@pytest.mark.slow
def test_spawned_workers_where_fork_is_not_available(monkeypatch):
    monkeypatch.setattr(worker_forkserver, "forking_available", lambda: False)
    with small_ppo(2).build() as algo:
        pids = list(algo.env_runner_group.remote_pids().values())
        assert all(" -m trainer.runners.worker " in _cmdline(pid) for pid in pids)
        assert all(_parent(pid) == os.getpid() for pid in pids)
        algo.train()


_SCRIPT = textwrap.dedent("""
    import ctypes, sys
    from helpers import small_ppo
    from trainer.runners.worker_forkserver import template_pid

    algo = small_ppo(2).build()
    pids = list(algo.env_runner_group.remote_pids().values()) + [template_pid()]
    print(" ".join(map(str, pids)), flush=True)
    if sys.argv[1] == "stuck":
        # Runner 1 sleeps in C holding the GIL (no Python thread of it can run); the main
        # process waits for it.
        algo.env_runner_group.foreach_env_runner(
            lambda runner: ctypes.PyDLL(None).sleep(120), local_env_runner=False,
            remote_worker_ids=[1], timeout_seconds=120)
""")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["exit", "stuck"])
def test_workers_and_template_end_with_the_main_process(tmp_path, how):
    script = tmp_path / "script.py"
    script.write_text(_SCRIPT)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")]
        ),
    }
    main = subprocess.Popen(
        [sys.executable, str(script), how], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        pids = [int(pid) for pid in main.stdout.readline().split()]
        assert len(pids) == 3
        if how == "stuck":
            time.sleep(1.0)  # the runner is in its sleep
            main.kill()  # SIGKILL: no finalizer, no atexit runs in the main process
        assert main.wait(timeout=60) == (-signal.SIGKILL if how == "stuck" else 0)
    finally:
        main.kill()
        main.wait()
    assert _wait_gone(pids) == []


def _fails_to_build_on(indices):
    """An env creator that raises in the EnvRunners of `indices`."""

    def make(env_config):
        import gymnasium as gym

        if env_config.worker_index in indices:
            raise RuntimeError(f"no env for EnvRunner {env_config.worker_index}")
        return gym.make("CartPole-v1")

    return make


@pytest.mark.parametrize("failing", [1, 3])
def test_a_runner_that_fails_to_start_fails_the_build_whichever_replies_first(failing):
    # The build waits for runner 1's reply alone, builds the learner, then reads the others':
    # a failure of any of them still fails build(), as RLlib's validation asks.
    config = small_ppo(3).environment(_fails_to_build_on({failing}))
    with pytest.raises(EnvRunnerError, match=f"no env for EnvRunner {failing}"):
        config.build()


@pytest.mark.parametrize("failing", [1, 3])
def test_without_validation_the_runners_that_started_train(failing):
    config = (
        small_ppo(3)
        .environment(_fails_to_build_on({failing}))
        .fault_tolerance(restart_failed_env_runners=False, ignore_env_runner_failures=True)
        .env_runners(validate_env_runners_after_construction=False)
    )
    with config.build() as algo:
        assert algo.env_runner_group.healthy_env_runner_ids() == [
            i for i in (1, 2, 3) if i != failing
        ]
        algo.train()


def test_the_next_test_of_a_suite_forks_from_the_same_template(monkeypatch):
    """pytest renames the running test in `PYTEST_CURRENT_TEST` for each test: that does not
    make the template stale (a user's test suite would otherwise start one per test)."""
    with small_ppo(1).build():
        pass
    before = template_pid()
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_next.py::test_next (call)")
    with small_ppo(1).build() as algo:
        algo.train()
        assert template_pid() == before
