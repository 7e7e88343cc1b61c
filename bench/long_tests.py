"""The tests marked `long` (tests/conftest.py: RLLIB_LONG_TESTS, and the tests of this project
that carry the marker), which the whole suite skips: runs too long for its 15-minute budget on
2 cores yet (RLlib's own long tests: a PPO training with crashing sub-envs, a case that sleeps
45 s, a distributed EnvRunner on Ray, its parallel-evaluation example; the pages whose blocks
train; the mypy check, which `.ci/run` runs as a step of its own). Runs them with
LOCALRL_LONG_TESTS=1 and prints each one's outcome and time.

Run: python bench/long_tests.py [pytest options]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import LONG_TESTS_VAR  # noqa: E402


def main() -> int:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        "long",
        "-p",
        "no:cacheprovider",
        "--durations=0",
        *sys.argv[1:],
        "tests",
    ]
    result = subprocess.run(command, cwd=REPO, env={**os.environ, LONG_TESTS_VAR: "1"})
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
