"""A pytest plugin `bench/test_durations.py` loads into the whole suite's run
(`-p test_durations_log`): the controlling process (not an xdist worker) appends one JSON line
per test phase to the file named by `LOCALRL_TEST_DURATIONS_LOG` as the phase ends:
`[NODEID, "setup" | "call" | "teardown", SECONDS, SLOW]`, SLOW whether the test carries the
`slow` marker (it is left out of the fast tier)."""

from __future__ import annotations

import json
import os
from typing import Any

_PATH = os.environ.get("LOCALRL_TEST_DURATIONS_LOG", "")


def pytest_runtest_logreport(report: Any) -> None:
    if not _PATH or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    record = [report.nodeid, report.when, round(report.duration, 3), "slow" in report.keywords]
    with open(_PATH, "a", encoding="utf-8") as file:
        file.write(json.dumps(record) + "\n")
