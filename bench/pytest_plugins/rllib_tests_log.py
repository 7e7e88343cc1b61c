"""A pytest plugin `bench/rllib_tests.py` loads into each RLlib test file's own pytest run
(`PYTEST_ADDOPTS="-p rllib_tests_log"`): it appends one JSON line per event to the file named by
`LOCALRL_RLLIB_TESTS_LOG` as the event happens, so a run killed at its time limit still tells
which tests finished and which one was running.

Lines: `{"start": NODEID}` when a test starts; `{"test": NODEID, "outcome": "passed" | "failed" |
"skipped", "when": "setup" | "call" | "teardown", "message": TEXT}` for each test's result (a
failure or skip in setup or teardown, else the call's); `{"collect_error": NODEID, "message":
TEXT}` for a module that did not import.
"""

from __future__ import annotations

import json
import os
from typing import Any

_PATH = os.environ.get("LOCALRL_RLLIB_TESTS_LOG", "")
#: The characters of a failure's text kept (its end: where the error is).
_KEPT = 4000


def _write(record: dict[str, Any]) -> None:
    if not _PATH:
        return
    with open(_PATH, "a", encoding="utf-8") as file:
        file.write(json.dumps(record) + "\n")


def _message(report: Any) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(report.longrepr or "")
    head = f"{crash.message}\n" if crash is not None else ""
    return head + text[-_KEPT:]


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _write({"start": nodeid})


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call" or report.outcome != "passed":
        _write(
            {
                "test": report.nodeid,
                "outcome": report.outcome,
                "when": report.when,
                "message": _message(report) if report.outcome != "passed" else "",
            }
        )


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _write({"collect_error": report.nodeid, "message": _message(report)})
