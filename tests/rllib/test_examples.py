"""RLlib's example scripts under examples/rllib/, run as a user runs them (short: the stop
criteria cut them after two iterations; bench-length runs are in the README)."""

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
