"""The Ray backend (`env_runners(backend="ray")`): EnvRunners as real Ray actors on a local Ray
instance shared by the test session (`ray_session`, tests/conftest.py). Sampling and learning, code run on the actors, errors
keeping their type, `stop()` ending every actor, the main job, Ray missing. Restarts and a
multi-node cluster are in test_ray_cluster.py, both backends side by side in test_backends_alike.py."""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import pytest
from helpers import RaisingStepEnv

from trainer import EnvRunnerError, PPOConfig
from trainer.algorithms.algorithm_config import ConfigError
from trainer.compat.rllib_settings import IgnoredSettingWarning

ray = pytest.importorskip("ray", reason="needs Ray (the test extra: pip install -e '.[test]')")
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.usefixtures("ray_session")]


def _config(**env_runners):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(backend="ray", num_env_runners=2, **env_runners)
        .training(lr=0.0003, train_batch_size=1000, minibatch_size=128, num_epochs=6)
        .debugging(seed=0)
    )


def _actor_id(runner):
    import ray

    return ray.get_runtime_context().get_actor_id()


def test_ppo_learns_on_ray_actors_and_code_runs_on_them():
    with warnings.catch_warnings():
        warnings.simplefilter("error", IgnoredSettingWarning)  # the actors take these
        algo = _config(num_cpus_per_env_runner=2).build()
    try:
        first = algo.train()["env_runners"]["episode_return_mean"]
        for _ in range(5):
            result = algo.train()
        assert result["env_runners"]["episode_return_mean"] > first + 15
        where = algo.env_runner_group.foreach_env_runner(
            lambda runner: (runner.worker_index, os.getpid(), _actor_id(runner))
        )
        assert [index for index, _, _ in where] == [0, 1, 2]
        assert where[0][2] is None  # the local runner is in this process, no actor
        assert where[0][1] == os.getpid() != where[1][1] != where[2][1]
        assert where[1][2] and where[2][2] and where[1][2] != where[2][2]
        assert algo.env_runner_group.foreach_env_runner(
            lambda runner: ray.get_runtime_context().get_assigned_resources().get("CPU"),
            local_env_runner=False,
        ) == [2.0, 2.0]
        # return_obj_refs=True: Ray's own refs, which the script's ray.get reads.
        refs = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.worker_index, local_env_runner=False, return_obj_refs=True
        )
        assert all(isinstance(ref, ray.ObjectRef) for ref in refs)
        assert ray.get(refs) == [1, 2]
    finally:
        algo.stop()


def test_a_torch_module_samples_on_ray_actors_and_learns():
    """framework("torch") on the Ray backend: each actor builds the inference-only torch
    module and receives the learner's weights as numpy arrays."""
    algo = (
        _config()
        .framework("torch")
        .rl_module(model_config={"fcnet_hiddens": [32], "fcnet_activation": "tanh"})
        .training(lr=0.001)
        .build()
    )
    try:
        first = algo.train()["env_runners"]["episode_return_mean"]
        for _ in range(5):
            result = algo.train()
        assert result["env_runners"]["episode_return_mean"] > first + 15
        on_actors = algo.env_runner_group.foreach_env_runner(
            lambda runner: (
                _actor_id(runner) is not None,
                runner.module.framework,
                sorted(runner.module.get_weights()) == sorted(runner.module.rl_module.get_state()),
                any(key.startswith("vf") for key in runner.module.get_weights()),
            ),
            local_env_runner=False,
        )
        assert on_actors == [(True, "torch", True, False)] * 2
    finally:
        algo.stop()


def test_an_env_error_in_an_actor_keeps_its_type_and_stop_ends_the_actors():
    algo = (
        PPOConfig()
        .environment(RaisingStepEnv)
        .env_runners(backend="ray", num_env_runners=1, rollout_fragment_length=10)
        .training(train_batch_size=20, minibatch_size=10, num_epochs=1)
        .fault_tolerance(restart_failed_env_runners=False)
    ).build()
    actor = algo.env_runner_group.remote_runner(1).actor
    try:
        with pytest.raises(ValueError, match=RaisingStepEnv.MESSAGE) as raised:
            algo.train()
        assert isinstance(raised.value, EnvRunnerError) and raised.value.worker_index == 1
    finally:
        algo.stop()
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(actor.answer.remote(None), timeout=30)


def test_backend_ray_without_ray_says_how_to_install_it(monkeypatch):
    from trainer.runners import ray_runner

    monkeypatch.setattr(ray_runner, "ray_installed", lambda: False)
    with pytest.raises(ConfigError, match=r"backend='ray'.*pip install -e '\.\[ray\]'"):
        PPOConfig().env_runners(backend="ray")
    with pytest.raises(ConfigError, match="backend must be"):
        PPOConfig().env_runners(backend="threads")


@pytest.mark.cli
def test_the_main_job_trains_on_ray_actors(tmp_path):
    import json
    import subprocess
    import sys

    # The job joins the session's Ray (RAY_ADDRESS, as on a cluster) rather than starting one
    # of its own (seconds): its actors end with it. Without the preset: its evaluation actor
    # would be a third actor.
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer",
            "--backend",
            "ray",
            "--preset",
            "none",
            "--num-env-runners",
            "2",
            "--train-batch-size",
            "200",
            "--minibatch-size",
            "100",
            "--num-epochs",
            "1",
            "--stop-iters",
            "2",
            "--output-dir",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "RAY_ADDRESS": address},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    params = json.loads((tmp_path / "run" / "params.json").read_text())
    assert params["backend"] == "ray" and params["num_env_runners"] == 2
    lines = (tmp_path / "run" / "progress.csv").read_text().splitlines()
    assert len(lines) == 3  # header and two iterations


def test_an_actor_that_waits_for_resources_is_named_with_what_it_asked_for(monkeypatch):
    # Two actors of 3 CPUs on the session's 4-CPU instance: the second never starts. Ray keeps
    # it pending silently; the startup timeout says what it asked for and what the cluster has.
    from trainer.errors import EnvRunnerTimeout
    from trainer.runners import env_runner_group

    monkeypatch.setattr(env_runner_group, "STARTUP_TIMEOUT_S", 5)
    with pytest.raises(EnvRunnerTimeout) as caught:
        _config(num_cpus_per_env_runner=3).build()
    message = str(caught.value)
    assert "did not answer __init__() within 5 s" in message
    assert (
        "Its Ray actor asked for {'CPU': 3} and may have waited for them: the cluster has "
        "{'CPU': 4.0} in all" in message
    )
    assert "evaluation_num_env_runners" in message


def test_a_learner_actor_that_waits_for_resources_is_named_with_what_it_asked_for(monkeypatch):
    # A learner actor of 5 CPUs on the session's 4-CPU instance never starts: the build ends
    # with what it asked for, and the pending actor is ended (the fixture checks none is left).
    # (Learner 0 is this process's: the timeout only waits for the actor that cannot start.)
    from trainer.algorithms import data_parallel

    monkeypatch.setattr(data_parallel, "START_TIMEOUT_S", 2)
    config = _config().env_runners(num_env_runners=0)
    config = config.learners(num_learners=2, num_cpus_per_learner=5)
    with pytest.raises(data_parallel.LearnerWorkerError) as caught:
        config.build()
    message = str(caught.value)
    assert "learner 1 (a Ray actor) did not start within 2 s" in message
    assert "asked for {'CPU': 5} and may have waited for them: the cluster has {'CPU': 4.0}" in (
        message
    )


def test_sac_samples_on_ray_actors_and_learns():
    """SAC's off-policy loop with its EnvRunners as Ray actors: replayed updates, the weights
    back to the actors. (Three iterations: the loop end to end; SAC's learning is
    test_sac*.py's, and bench/ray_backend.py times longer runs on Ray.)"""
    from trainer import SACConfig

    algo = (
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(backend="ray", num_env_runners=1)
        .training(num_steps_sampled_before_learning_starts=32, train_batch_size_per_learner=32)
        .reporting(min_time_s_per_iteration=0)
        .rl_module(model_config={"fcnet_hiddens": [16], "fusionnet_hiddens": [16]})
        .debugging(seed=0)
        .build()
    )
    try:
        initial = algo.learner.get_weights()
        results = [algo.train() for _ in range(3)]
        learned = algo.learner.get_weights()
        actor_weights = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.module.get_weights(), local_env_runner=False
        )[0]
    finally:
        algo.stop()
    # Updates from the replayed samples the actors sent: the weights moved.
    assert results[-1]["learners"]["default_policy"]["qf_loss"] >= 0.0
    assert results[-1]["num_env_steps_sampled_lifetime"] > 32
    assert any(not np.array_equal(initial[name], learned[name]) for name in learned)
    for name, weights in learned.items():
        np.testing.assert_array_equal(actor_weights[name], weights, err_msg=name)


def test_appo_samples_on_ray_actors_while_its_learner_learns():
    """APPO's asynchronous step on the Ray backend: sample requests carry newer weights to
    the actors (rising weights_seq_no) and the returns improve."""
    from trainer.algorithms.appo import APPOConfig

    algo = (
        APPOConfig()
        .environment("CartPole-v1")
        .env_runners(backend="ray", num_env_runners=2)
        .training(vf_loss_coeff=0.05, entropy_coeff=0.0, lr=0.002)
        .reporting(min_time_s_per_iteration=1)
        .debugging(seed=0)
        .build()
    )
    try:
        # (Asynchronous: how far an iteration gets varies with the machine's load, so the
        # bound is on env steps; the time limit only bounds a hang.)
        results = [algo.train()]
        hang_bound = time.monotonic() + 600
        while len(results) < 3 or (
            results[-1]["env_runners"]["episode_return_mean"]
            <= results[0]["env_runners"]["episode_return_mean"] + 15
            and results[-1]["env_runners"]["num_env_steps_sampled_lifetime"] < 300_000
            and time.monotonic() < hang_bound
        ):
            results.append(algo.train())
    finally:
        algo.stop()
    seq_nos = [r["env_runners"]["weights_seq_no"] for r in results]
    assert seq_nos == sorted(seq_nos) and seq_nos[-1] > seq_nos[0]
    returns = [r["env_runners"]["episode_return_mean"] for r in results]
    assert returns[-1] > returns[0] + 15, returns
