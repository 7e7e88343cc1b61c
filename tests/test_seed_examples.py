"""The callbacks doc's examples, run as a user runs them: a script (unguarded top-level code, as in
the docs) in a fresh interpreter, with the imports changed and, where a script's header says so,
fewer iterations or less SGD per iteration (what the tests check does not depend on learning)."""

import math
import re
import subprocess
import sys
from pathlib import Path

import ormsgpack
import pytest

from trainer.algorithms.replay import PrioritizedEpisodeReplayBuffer

sys.setrecursionlimit(10000)

EXAMPLES = Path(__file__).parent / "seed_examples"
#: Each runs a training script of the docs in a fresh interpreter.
pytestmark = pytest.mark.slow


def run_example(name: str, timeout: float = 240, cwd: Path | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    # RLlib's older forms warn once each (the main process relays the workers' warnings).
    warnings = re.findall(r"^DeprecationWarning: (.*)$", proc.stderr, re.M)
    assert len(warnings) == len(set(warnings)), proc.stderr
    return proc.stdout


def test_lambda_on_episode_end_prints_every_episode_from_the_workers():
    out = run_example("lambda_on_episode_end.py")
    returns = [float(r) for r in re.findall(r"^Episode done\. R=([0-9.]+)$", out, re.M)]
    # 4000 steps of a random-ish CartPole policy: well over 50 episodes, each at least 8 steps.
    assert len(returns) > 50
    assert all(8.0 <= r <= 500.0 for r in returns)


def test_stateful_callback_keeps_state_per_env_runner():
    out = run_example("stateful_episode_return.py")
    pairs = [
        (float(r), float(s))
        for r, s in re.findall(r"^Episode done\. R=([0-9.]+) Global SUM=([0-9.]+)$", out, re.M)
    ]
    assert len(pairs) > 50

    # Two EnvRunners (PPO's default), each with its own instance: every printed sum must be one
    # runner's previous sum plus this return. Lines of the two processes interleave, so search
    # for an assignment of lines to runners (depth-first; ambiguity is rare).
    def assign(k: int, sums: tuple) -> tuple | None:
        if k == len(pairs):
            return sums
        episode_return, printed_sum = pairs[k]
        for i, running in enumerate(sums):
            if math.isclose(running + episode_return, printed_sum):
                found = assign(k + 1, sums[:i] + (printed_sum,) + sums[i + 1 :])
                if found is not None:
                    return found
        return None

    final_sums = assign(0, (0.0, 0.0))
    assert final_sums is not None, "printed sums are not two independent running sums"
    assert min(final_sums) > 0, "both runners should have finished episodes"


@pytest.mark.parametrize("script", ["acrobot_custom_data.py", "acrobot_temporary_data.py"])
def test_acrobot_theta1_reaches_the_results(script):
    out = run_example(script)
    rows = re.findall(r"^iter=(\d) theta1_mean=(\S+) R=(\S+)$", out, re.M)
    assert [int(i) for i, _, _ in rows] == [0, 1, 2]
    for _, theta, ret in rows:
        theta, ret = float(theta), float(ret)
        assert -180.0 <= theta <= 180.0 and not math.isnan(theta)
        assert -500.0 <= ret <= 0.0


def test_dqn_writes_its_replay_buffer_with_ormsgpack(tmp_path):
    out = run_example("dqn_replay_buffer_to_disk.py", cwd=tmp_path)
    iterations = re.findall(r"'training_iteration': (\d+)[,}]", out)
    assert iterations == ["1", "2", "3", "4"]
    # Written at iterations 2 and 4: the file holds the buffer after the 4th (1000 steps each).
    state = ormsgpack.unpackb((tmp_path / "replay_buffer_contents.msgpack").read_bytes())
    assert state["type"] == "PrioritizedEpisodeReplayBuffer"
    assert state["_num_timesteps_added"] == 4000
    buffer = PrioritizedEpisodeReplayBuffer(capacity=state["capacity"])
    buffer.set_state(state)
    assert len(buffer) == 4000 and buffer.get_num_episodes() == len(state["episode_id_to_index"])
    batch = buffer.sample_transitions(64)
    assert batch["obs"].shape == (64, 4) and set(batch["actions"].tolist()) <= {0, 1}


def test_env_task_fn_raises_every_runners_task_after_each_iteration():
    out = run_example("curriculum_env_task_fn.py")
    rows = re.findall(r"^iteration (\d) return ([0-9.]+) tasks (.*)$", out, re.M)
    assert [(int(i), tasks) for i, _, tasks in rows] == [
        (1, "[[1], [1]]"),
        (2, "[[2], [2]]"),
        (3, "[[3], [3]]"),
    ]
    # Each iteration's episodes ran on the task set after the previous one: 20 / (1 + task).
    assert [float(r) for _, r, _ in rows] == pytest.approx([20.0, 10.0, 20 / 3], abs=1e-3)


@pytest.mark.parametrize("script", ["curriculum_training_loop.py", "curriculum_callbacks.py"])
def test_the_curriculum_follows_episode_reward_mean(script):
    out = run_example(script)
    means = [float(m) for m in re.findall(r"episode_reward_mean=([0-9.]+)", out)]
    tasks = [int(t) for t in re.findall(r"task=(\d)", out)]
    # Task 0 pays 150 per episode, task 1 250, task 2 350 (means over the last 100 episodes).
    assert means[0] == pytest.approx(150.0) and means[-1] == pytest.approx(350.0)
    assert means == sorted(means)
    assert tasks == [1, 2, 2]


def test_the_global_counter_counts_every_env_step_of_both_runners():
    out = run_example("global_counter.py")
    assert out.splitlines()[0] == "0"
    rows = re.findall(r"^count=(\d+) env_steps=(\d+)$", out, re.M)
    assert len(rows) == 2 and all(count == steps for count, steps in rows)
    assert int(rows[-1][0]) >= 8000
