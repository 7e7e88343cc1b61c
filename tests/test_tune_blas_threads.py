"""BLAS threads in a Ray Tune trial: the `OMP_NUM_THREADS` that Ray gives the trial's actor (its
CPUs) is Ray's default, not the user's sizing, so the learner's updates and the trial's
EnvRunner processes run on the threads they run on in a plain process; a user's own setting
still reaches them. A trial of 2 CPUs whose update ran on 2 BLAS threads next to its EnvRunner
processes took 3 to 11 times as long per iteration as in a plain process
(`bench/tune_overhead.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import blas_threads

from trainer import DQN, DQNConfig
from trainer.callbacks import RLlibCallback

ray = pytest.importorskip("ray", reason="needs Ray (the test extra: pip install -e '.[test]')")
tune = pytest.importorskip("trainer.tune", reason="needs Ray Tune: pip install 'localrl[tune]'")
pytestmark = [
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.skipif(
        (os.cpu_count() or 1) < 2, reason="numpy's BLAS pool has one thread on one core"
    ),
]


def start_ray(**env_vars: str) -> None:
    # The trial's actor imports this file's callback by name: this folder goes on its path.
    path = os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        configure_logging=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, **env_vars}},
    )


@pytest.fixture
def local_ray():
    yield start_ray
    ray.shutdown()


def runner_blas_threads(runner) -> int:
    """The most threads of a BLAS pool in the EnvRunner's process."""
    return max(blas_threads())


class ReportBlasThreads(RLlibCallback):
    """Puts into the result the trial's `OMP_NUM_THREADS`, the BLAS pool sizes its learner's
    updates ran with, and those of its EnvRunner processes (not of the trial's own process,
    whose local EnvRunner does not sample)."""

    def on_algorithm_init(self, *, algorithm, **kwargs):
        learner = algorithm.learner
        update = learner.update
        learner.seen_blas_threads = set()

        def recording_update(*args, **kwargs):
            learner.seen_blas_threads.update(blas_threads())
            return update(*args, **kwargs)

        learner.update = recording_update

    def on_train_result(self, *, algorithm, result, **kwargs):
        result["omp_num_threads"] = os.environ.get("OMP_NUM_THREADS", "")
        result["update_blas_threads"] = sorted(algorithm.learner.seen_blas_threads)
        result["runner_blas_threads"] = sorted(
            set(
                algorithm.env_runner_group.foreach_env_runner(
                    runner_blas_threads, local_env_runner=False
                )
            )
        )


def trial_result(tmp_path: Path) -> dict:
    """One iteration of a DQN trial with 2 EnvRunner processes: it reserves both CPUs of the
    local Ray (one bundle), so Ray sets the trial actor's OMP_NUM_THREADS to 2."""
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2)
        .training(num_steps_sampled_before_learning_starts=0, train_batch_size=16)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .reporting(min_sample_timesteps_per_iteration=50)
        .callbacks(ReportBlasThreads)
    )
    results = tune.Tuner(
        DQN,
        param_space=config,
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), verbose=0, stop={"training_iteration": 1}
        ),
    ).fit()
    assert results.num_errors == 0, results.errors
    return results[0].metrics


def test_a_trials_updates_and_env_runners_run_on_one_blas_thread_under_rays_default(
    tmp_path, local_ray, monkeypatch
):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    local_ray()
    metrics = trial_result(tmp_path)
    assert metrics["omp_num_threads"] == "2"  # Ray's: the trial's 2 CPUs
    # As in a plain process: the updates on one thread (numpy's pool has 2 outside them), the
    # EnvRunner processes' pools of one thread.
    assert metrics["update_blas_threads"] == [1]
    assert metrics["runner_blas_threads"] == [1]


def test_a_users_omp_num_threads_still_sizes_a_trials_pools(tmp_path, local_ray, monkeypatch):
    # Set in the shell that started Ray (here: this process, whose environment Ray's processes
    # inherit): the user's, left as the user sized it.
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    local_ray()
    metrics = trial_result(tmp_path)
    assert metrics["omp_num_threads"] == "2"
    assert metrics["update_blas_threads"] == [2]
    assert metrics["runner_blas_threads"] == [2]
