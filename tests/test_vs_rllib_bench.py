"""bench/vs_rllib.py's table from the saved output of earlier parts (`--from-logs`), without
running an example."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import vs_rllib  # noqa: E402

HEADER = (
    "vs_rllib: this project (commit abc1234) vs RLlib 2.60.0; Linux x86_64, 2 CPUs (AMD EPYC), "
    "Python 3.11.7, load 0.1 at the start; seeds {seeds}, limit {limit} s per run"
)


def _log(path: Path, limit: int, seeds: str, lines: list[str]) -> Path:
    path.write_text("\n".join([HEADER.format(seeds=seeds, limit=limit), *lines, "", "table"]))
    return path


def test_the_parts_make_one_table(tmp_path):
    first = _log(
        tmp_path / "part1.log",
        420,
        "0",
        [
            "  ppo/cartpole_ppo seed 0: here      4.0 s  reached",
            "  ppo/cartpole_ppo seed 0: RLlib    80.0 s  reached",
            "  dqn/cartpole_dqn seed 0: here     20.0 s  reached",
            "  dqn/cartpole_dqn seed 0: RLlib   100.0 s  not reached (timeout after 100 s)",
        ],
    )
    second = _log(
        tmp_path / "part2.log",
        600,
        "1",
        [
            "  ppo/cartpole_ppo seed 1: RLlib    90.0 s  reached",
            "  ppo/cartpole_ppo seed 1: here      6.0 s  reached",
            "  dqn/cartpole_dqn seed 0: here     10.0 s  reached",  # (a rerun: replaces)
            "  dqn/cartpole_dqn seed 0: RLlib   100.0 s  not reached (exit status 1: budget)",
            "  tqc/pendulum_tqc seed 0: here     30.0 s  not reached (exit status 1: budget)",
            "  tqc/pendulum_tqc seed 0: RLlib    90.0 s  not reached (exit status 1: budget)",
        ],
    )
    results = vs_rllib.runs_from_logs([first, second])
    # (The examples' order.)
    assert list(results) == ["ppo/cartpole_ppo", "dqn/cartpole_dqn", "tqc/pendulum_tqc"]
    assert [run.wall for run in results["ppo/cartpole_ppo"]["here"]] == [4.0, 6.0]
    assert (
        vs_rllib.ratio(results["ppo/cartpole_ppo"]["here"], results["ppo/cartpole_ppo"]["RLlib"])
        == 17.0
    )
    (dqn_here,) = results["dqn/cartpole_dqn"]["here"]
    (dqn_rllib,) = results["dqn/cartpole_dqn"]["RLlib"]
    assert dqn_here.seconds == 10.0
    # A run that did not reach counts as its part's limit (a bound).
    assert (dqn_rllib.reached, dqn_rllib.seconds, dqn_rllib.detail) == (
        False,
        600.0,
        "exit status 1: budget",
    )
    done = subprocess.run(
        [sys.executable, "bench/vs_rllib.py", "--from-logs", str(first), str(second)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "vs_rllib: this project (commit abc1234)" in done.stdout
    assert "limit 420 s per run [part1.log]" in done.stdout
    # Neither side reached TQC's stop: no ratio, named apart from the targets.
    assert "geometric mean of RLlib/here over 2 examples" in done.stdout
    assert "1 of the ratios are bounds" in done.stdout
    assert "no ratio (neither side reached its stop in any run): tqc/pendulum_tqc" in done.stdout


def test_a_log_without_runs_is_refused(tmp_path):
    empty = _log(tmp_path / "empty.log", 420, "0", [])
    done = subprocess.run(
        [sys.executable, "bench/vs_rllib.py", "--from-logs", str(empty)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "--from-logs: no runs in" in done.stderr
