"""The suite's longest runs, which the whole suite skips to stay under its 15-minute budget on
2 cores (tests/conftest.py: LONG_TESTS): RLlib's own long tests (a PPO training with crashing
sub-envs, a distributed EnvRunner on Ray, an example with parallel evaluation), this
project's long multi-agent and backend runs, two torch learning runs, and the mypy check
(`.ci/run` runs mypy as a step of its own). Runs them with
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

from conftest import LONG_TESTS, LONG_TESTS_VAR  # noqa: E402


def node_ids() -> list[str]:
    """The pytest node ids of LONG_TESTS (found by file name under tests/)."""
    ids = []
    for file_name, test_name in sorted(LONG_TESTS):
        (path,) = [p for p in (REPO / "tests").rglob(file_name)]
        ids.append(f"{path.relative_to(REPO)}::{test_name}")
    return ids


def selected_names() -> str:
    """The -k expression of LONG_TESTS: each test by its name (a parametrized case by its
    test's name: -k takes no brackets, so its other cases run too)."""
    return " or ".join(sorted({test.split("[")[0] for _, test in LONG_TESTS}))


def main() -> int:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-m",
        "slow or not slow",
        "-p",
        "no:cacheprovider",
        "--durations=0",
        *sys.argv[1:],
    ]
    # Class-based RLlib tests are selected by name (-k), the others by node id.
    names = selected_names()
    files = sorted({str(Path(node.split("::")[0])) for node in node_ids()})
    result = subprocess.run(
        [*command, "-k", names, *files],
        cwd=REPO,
        env={**os.environ, LONG_TESTS_VAR: "1"},
    )
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
