"""RLlib's example scripts under examples/rllib/, run as a user runs them (short: the stop
criteria cut them after two iterations; bench-length runs are in bench/)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tuned_pendulum_ppo_with_mean_std_filter_runs_as_written():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "rllib" / "pendulum_ppo.py"), "--stop-iters",
         "2"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = [line for line in completed.stdout.splitlines() if line.startswith("iter")]
    assert len(lines) == 2 and "steps    2080" in lines[-1]


def _run_module(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_evaluation_parallel_to_training_example_runs_its_assertions():
    # RLlib's example asserts in on_train_result that each evaluation ran exactly the
    # configured duration ("auto": at least one step per evaluation runner).
    # (The "auto" branch asserts without printing; the fixed ones print "(ok)!".) The stop
    # reward is out of reach so that both iterations run: a greedy evaluation after one
    # iteration can already score CartPole's 500.
    for args, prints_ok in (
            (["--evaluation-duration", "auto", "--evaluation-parallel-to-training"], False),
            (["--evaluation-duration", "3", "--evaluation-duration-unit", "episodes",
              "--evaluation-num-env-runners", "1"], True)):
        completed = _run_module("trainer.examples.evaluation.evaluation_parallel_to_training",
                                "--stop-iters", "2", "--stop-reward", "1e9", *args)
        assert completed.returncode == 0, completed.stderr[-3000:]
        iterations = [line for line in completed.stdout.splitlines() if line.startswith("iter")]
        assert len(iterations) == 2
        assert ("Number of run evaluation episodes: 3 (ok)!" in completed.stdout) == prints_ok


def test_example_driver_as_test_fails_when_the_success_metric_is_missed():
    completed = _run_module("trainer.examples.evaluation.evaluation_parallel_to_training",
                            "--stop-iters", "1", "--as-test", "--evaluation-num-env-runners",
                            "1")
    assert completed.returncode != 0
    # RLlib's message: the success metric, its target and the best value over the run.
    assert "`evaluation/env_runners/episode_return_mean` of 500.0 not reached! Best value " \
           "reached is" in completed.stderr


def test_single_agent_episode_docs_example_runs_as_a_script():
    # RLlib's doc_code/sa_episode.py: its asserts and check() calls are the test.
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "rllib" / "doc_code" / "sa_episode.py")],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.splitlines()[:3] == ["[-2.0, -1.0, 0.0]", "[-1.0, 0.0, 1.0]",
                                                 "[0.0, 1.0, 2.0]"]
