"""RLlib 2.60's multi-agent example scripts, unmodified, through the RLlib-script launcher
(`python -m trainer run SCRIPT ARGS`, run in the test process through `trainer.cli.main` by
tests/cli_in_process.py: a fresh interpreter's start cost about 3 s a script) with the
arguments RLlib's CI gives them, reaching RLlib's own stop criteria (those that reach it within
a minute; the longer runs, custom_heuristic_policy.py and
rock_paper_scissors_learned_vs_learned.py, are rows of `bench/rllib_examples.py`,
docs/rllib_compatibility.md); and the per-agent observation pieces
(`FlattenObservations(multi_agent=True, agent_ids=...)`) those scripts use, through the public
API."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from cli_in_process import run_cli
from helpers import rllib_example

from trainer import PPOConfig, launcher
from trainer.connectors import FlattenObservations, MeanStdFilter
from trainer.errors import ConfigError
from trainer.examples.envs.classes.multi_agent.rock_paper_scissors import RockPaperScissors
from trainer.runners.multi_agent_env_runner import MultiAgentEnvRunner

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 280


def run_example(tmp_path: Path, relative: str, *args: str) -> tuple[str, dict]:
    """Runs the example through the launcher (`python -m trainer run`, in this process: the
    same `main(argv)`, without the interpreter's start, see tests/cli_in_process.py); returns
    its output and the launcher's report."""
    report = tmp_path / "report.json"
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        HOME=str(tmp_path),  # ~/ray_results
        LOCALRL_LAUNCHER_REPORT=str(report),
    )
    env.pop(launcher.ENV_VAR, None)
    result = run_cli(
        "run", str(rllib_example(relative)), *args, cwd=tmp_path, env=env, timeout=RUN_TIMEOUT_S
    )
    output = result.stdout + result.stderr
    assert report.exists(), output[-3000:]
    return output, json.loads(report.read_text())


def progress(output: str) -> list[dict]:
    """The script's progress lines: iteration, env steps, combined and per-module returns."""
    rows = []
    for line in output.splitlines():
        match = re.match(r"iter +(\d+) \| total time \(s\) +[\d.]+ \| ts (\d+) \| (.*)$", line)
        if match:
            columns = dict(
                column.rsplit(" ", 1) for column in match.group(3).split(" | ") if " " in column
            )
            rows.append(
                {
                    "iter": int(match.group(1)),
                    "ts": int(match.group(2)),
                    **{name: float(value) for name, value in columns.items()},
                }
            )
    return rows


# -- the examples, through the launcher ------------------------------------------------------
@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.cli
def test_agents_act_in_sequence_reaches_minus_4(tmp_path):
    """TicTacToe, players acting in turns: RLlib's stop reward (-4.0, its default) within its
    budget (CI's 3 iterations; --as-test makes the script itself check it)."""
    output, report = run_example(
        tmp_path, "envs/agents_act_in_sequence.py", "--num-agents=2", "--stop-iters=3", "--as-test"
    )
    assert report["outcome"] == "ok", output[-3000:]
    assert "`env_runners/episode_return_mean` of -4.0 reached! ok" in output
    rows = progress(output)
    assert rows and rows[-1]["iter"] <= 3 and rows[-1]["combined return"] >= -4.0
    # RLlib's multi-agent progress columns: a return per policy.
    assert {"return player1", "return player2"} <= set(rows[-1])


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.cli
def test_different_spaces_for_agents_runs_its_iterations(tmp_path):
    """Agents with different observation and action spaces, one of two policies trained."""
    output, report = run_example(
        tmp_path,
        "multi_agent/different_spaces_for_agents.py",
        "--algo=PPO",
        "--stop-iters=4",
        "--framework=torch",
    )
    assert report["outcome"] == "ok", output[-3000:]
    assert [row["iter"] for row in progress(output)] == [1, 2, 3, 4]


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.cli
@pytest.mark.parametrize(
    "script, args, policies",
    [
        (
            "envs/agents_act_simultaneously.py",
            ["--num-agents=2", "--stop-iters=1"],
            {"player1", "player2"},
        ),
    ],
)
def test_zero_sum_self_play_runs_its_iterations(tmp_path, script, args, policies):
    """Two learned rock-paper-scissors players: a zero-sum game, so RLlib's CI stops these on
    iterations; each player's return shows, and the two sum to the combined 0."""
    output, report = run_example(tmp_path, script, *args)
    assert report["outcome"] == "ok", output[-3000:]
    rows = progress(output)
    iterations = int(re.search(r"--stop-iters?=(\d+)", " ".join(args)).group(1))
    assert [row["iter"] for row in rows] == list(range(1, iterations + 1))
    last = rows[-1]
    assert last["combined return"] == 0.0
    returns = [last[f"return {policy}"] for policy in sorted(policies)]
    assert returns[0] == pytest.approx(-returns[1])


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.cli
def test_shared_encoder_cartpole_runs_rllibs_ci_iterations(tmp_path):
    """RLlib's CI entry: ten iterations of two VPG policies after one shared encoder."""
    output, report = run_example(
        tmp_path, "multi_agent/shared_encoder_cartpole.py", "--stop-iter=10"
    )
    assert report["outcome"] == "ok", output[-3000:]
    rows = progress(output)
    assert [row["iter"] for row in rows] == list(range(1, 11))
    assert {"return p0", "return p1"} <= set(rows[-1])


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.cli
def test_pettingzoo_waterworld_names_the_missing_extra(tmp_path):
    """Waterworld needs `pettingzoo[sisl]` (pymunk), which is not installed: the script stops
    at its own import of it (before anything of this project runs)."""
    try:
        from pettingzoo.sisl import waterworld_v4  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("pettingzoo[sisl] is installed here")
    output, report = run_example(
        tmp_path,
        "multi_agent/pettingzoo_independent_learning.py",
        "--num-agents=2",
        "--stop-iters=1",
    )
    assert report["outcome"] == "error" and report["type"] == "ImportError", output[-3000:]
    assert "waterworld_v4" in report["message"] and "pettingzoo.sisl" in report["message"]


# -- per-agent observation pieces --------------------------------------------------------------
def _rps_config(connector):
    return (
        PPOConfig()
        .environment(RockPaperScissors)
        .env_runners(env_to_module_connector=connector)
        .multi_agent(
            policies={"player1", "player2"},
            policy_mapping_fn=lambda agent_id, episode: agent_id,
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=5)
    )


def test_flatten_observations_per_agent_flattens_the_named_agents_only():
    """`FlattenObservations(multi_agent=True, agent_ids={"player1"})`: player1's module is
    built for one-hot observations and its episodes hold them; player2 keeps the env's."""
    config = _rps_config(
        lambda env, spaces, device: FlattenObservations(multi_agent=True, agent_ids={"player1"})
    )
    runner = MultiAgentEnvRunner(config, worker_index=1, num_workers=1)
    try:
        env_space = RockPaperScissors({}).get_observation_space("player1")
        assert isinstance(env_space, gym.spaces.Discrete)
        spaces = runner.get_spaces()
        assert spaces["player1"][0] == gym.spaces.Box(0.0, 1.0, (env_space.n,), np.float32)
        assert spaces["player2"][0] == env_space
        episodes = runner.sample(num_timesteps=20)
        for episode in episodes:
            flat = episode.agent_episodes["player1"].get_observations()
            assert np.asarray(flat).shape[1:] == (env_space.n,)
            assert np.all(np.asarray(flat).sum(axis=1) == 1.0)  # one-hot rows
            plain = episode.agent_episodes["player2"].get_observations()
            assert all(env_space.contains(int(obs)) for obs in plain)
    finally:
        runner.stop()


def test_flatten_observations_needs_multi_agent_for_agent_ids():
    with pytest.raises(ValueError, match="agent_ids needs multi_agent=True"):
        FlattenObservations(agent_ids={"player1"})


def test_other_pieces_in_a_multi_agent_run_are_refused_naming_the_piece():
    """Only per-agent observation pieces run in multi-agent runs (FlattenObservations and
    MeanStdFilter with multi_agent=True): another piece fails with the multi-agent capability
    named (the launcher reports such a script out of scope)."""
    with pytest.raises(ConfigError, match="MeanStdFilter") as error:
        MultiAgentEnvRunner(
            _rps_config(lambda env, spaces, device: MeanStdFilter()),
            worker_index=1,
            num_workers=1,
        )
    assert error.value.capability == "multi-agent"


@pytest.mark.slow  # an iteration of PPO's defaults, rendering each step (about 30 s)
@pytest.mark.ray
@pytest.mark.cli
def test_custom_env_render_method_multi_agent_renders_each_sub_env(tmp_path):
    """RLlib's EnvRenderCallback on a multi-agent env: each episode's own sub-env renders."""
    output, report = run_example(
        tmp_path, "envs/custom_env_render_method.py", "--num-agents=2", "--stop-iters=1"
    )
    assert report["outcome"] == "ok", output[-3000:]
    assert {"return p0", "return p1"} <= set(progress(output)[-1])


# -- the examples bench's multi-agent rules and merge ----------------------------------------
def _bench():
    sys.path.insert(0, str(REPO))
    try:
        import bench.rllib_examples as bench
    finally:
        sys.path.remove(str(REPO))
    return bench


@pytest.mark.ray
def test_bench_multi_agent_runs_are_in_scope_and_extras_named():
    bench = _bench()
    run = bench.Run("multi_agent/multi_agent_cartpole.py", "multi_agent_cartpole", [], ())
    bench.classify(run, 1, False, {"outcome": "exit", "code": 1}, "ValueError: x", 60)
    assert run.result == "fail"  # multi-agent is no longer out of scope by itself
    run = bench.Run("multi_agent/pettingzoo_independent_learning.py", "p", ["--num-agents=2"], ())
    report = {
        "outcome": "error",
        "type": "ImportError",
        "message": "cannot import name 'waterworld_v4' from 'pettingzoo.sisl' (/x/__init__.py)",
    }
    bench.classify(run, 1, False, report, "", 60)
    assert run.result == "out of scope" and "pettingzoo[sisl]" in run.detail
    run = bench.Run("multi_agent/multi_agent_pendulum.py", "m", ["--num-gpus-per-learner=1"], ())
    bench.classify(run, 1, False, {"outcome": "error", "type": "ValueError", "message": ""}, "", 60)
    assert run.result == "out of scope" and "GPUs" in run.detail


@pytest.mark.ray
def test_bench_merge_reads_back_the_rows_it_wrote(tmp_path, monkeypatch):
    """`--merge` keeps the rows it did not re-run: the page's rows read back as written."""
    bench = _bench()
    monkeypatch.setattr(bench, "PAGE", tmp_path / "page.md")
    readme = tmp_path / "README.md"
    readme.write_text("<!-- rllib examples: begin -->\nold\n<!-- rllib examples: end -->\n")
    monkeypatch.setattr(bench, "README", readme)
    root = bench.examples_dir()
    runs = bench.planned_runs(root, None)
    for index, run in enumerate(runs):
        run.result = ("pass", "fail", "out of scope")[index % 3]
        run.detail = f"detail {index} | with a bar" if run.result != "pass" else ""
        run.seconds = index + 0.5
    header = bench.run_header(60, 1, "abc1234", "2026-11-24 00:00 UTC", 1.0)
    bench.write_page(runs, header, "2026-11-24 00:00 UTC")
    read = bench.page_runs(root)
    assert [(r.example, r.ci_name, r.result, r.detail, r.seconds) for r in read] == [
        (r.example, r.ci_name, r.result, r.detail, r.seconds) for r in runs
    ]
    assert bench.page_header() == header
