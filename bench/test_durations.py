"""Runs the whole test suite as CI does (README's command: `-m "slow or not slow" -n 2 tests`)
and records how long each test file took, into `tests/durations.json`:

    python bench/test_durations.py                    # run the suite, write the record
    python bench/test_durations.py --from LOG         # write it from a run's log instead
    python bench/test_durations.py --check            # print the record's summary only

The record is what two things read:

- the suite's schedule (`tests/conftest.py`): on pytest-xdist's workers each file runs whole on
  one worker, the files longest first (the longest-processing-time rule), so the two workers
  end together and a file's module-scoped fixtures (trained checkpoints, a Ray cluster) are
  built once, not once per worker;
- the budget test (`tests/test_suite_budget.py`): the fast tier's recorded seconds stay under
  its 4 minutes, the whole suite's per worker under its 15.

Each file's entry is `[ALL, FAST]`: the seconds of all its tests' phases (setup, call,
teardown), and of those not marked `slow`. The times are per test as it ran beside the other
worker, so their sum over the fast tier is about what the fast tier takes in one process.
A pytest plugin (`bench/pytest_plugins/test_durations_log.py`) logs each phase as it ends.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "tests" / "durations.json"
PLUGINS = REPO / "bench" / "pytest_plugins"
sys.path.insert(0, str(REPO))

from bench.report import machine  # noqa: E402  (the CPU model, as every benchmark names it)

#: README's test command, less its install step (`.ci/run` runs exactly that line).
SUITE = [
    "-m",
    "pytest",
    "-q",
    "-m",
    "slow or not slow",
    "-n",
    "2",
    "tests",
    "-p",
    "no:cacheprovider",
]


def run_suite(log: Path) -> float:
    """Runs the whole suite with the logging plugin; returns its wall seconds."""
    env = {
        **os.environ,
        "LOCALRL_TEST_DURATIONS_LOG": str(log),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")])),
    }
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, *SUITE, "-p", "test_durations_log"], cwd=REPO, env=env, check=False
    )
    wall = time.monotonic() - start
    if done.returncode != 0:
        print(f"the suite failed (exit {done.returncode}): the record is written anyway")
    return wall


def files_of(log: Path) -> dict[str, list[float]]:
    """{test file: [all seconds, fast-tier seconds]} from a run's log."""
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for line in log.read_text(encoding="utf-8").splitlines():
        nodeid, _when, seconds, slow = json.loads(line)
        entry = files[nodeid.split("::", 1)[0]]
        entry[0] += seconds
        if not slow:
            entry[1] += seconds
    return {name: [round(a, 1), round(f, 1)] for name, (a, f) in sorted(files.items())}


def as_text(record: dict) -> str:
    """The record as JSON with one line per file (a new record's diff shows what moved)."""
    head = {key: value for key, value in record.items() if key != "files"}
    lines = [
        f"  {json.dumps(name)}: {json.dumps(entry)}" for name, entry in record["files"].items()
    ]
    return json.dumps(head, indent=1)[:-2] + ',\n "files": {\n' + ",\n".join(lines) + "\n }\n}\n"


def summary(record: dict) -> str:
    files = record["files"]
    all_s = sum(a for a, _ in files.values())
    fast_s = sum(f for _, f in files.values())
    longest = sorted(files.items(), key=lambda item: -item[1][0])[:8]
    lines = [
        f"recorded {record['recorded']} on {record['machine']}",
        f"whole suite: {record['wall_s']:.0f} s wall on 2 workers; {all_s:.0f} s of tests "
        f"({all_s / 2:.0f} s per worker)",
        f"fast tier: {fast_s:.0f} s of tests",
        "longest files: " + ", ".join(f"{name} {a:.0f} s" for name, (a, _) in longest),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="log", type=Path, help="a run's log, instead of a run")
    parser.add_argument("--wall", type=float, default=0.0, help="that run's wall seconds")
    parser.add_argument("--check", action="store_true", help="print the record, write nothing")
    args = parser.parse_args()
    if args.check:
        print(summary(json.loads(RECORD.read_text(encoding="utf-8"))))
        return
    if args.log is not None:
        log, wall = args.log, args.wall
    else:
        log = Path(tempfile.mkdtemp(prefix="localrl-durations-")) / "log.jsonl"
        wall = run_suite(log)
    record = {
        "recorded": datetime.date.today().isoformat(),
        "machine": machine(),
        "wall_s": round(wall, 1),
        "files": files_of(log),
    }
    RECORD.write_text(as_text(record), encoding="utf-8")
    print(summary(record))


if __name__ == "__main__":
    main()
