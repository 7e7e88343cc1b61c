"""The suite's time budgets, on its recorded durations (`tests/durations.json`, written by
`python bench/test_durations.py` from a run of the whole suite as CI runs it): the fast tier (a
plain `python -m pytest`, one process) within 4 minutes, and the whole suite (README's command,
two workers) within 15. A test that makes the fast tier slow shows here once the record is
written again: mark it `slow`, or make it cheaper.

The record also orders the whole suite's files on pytest-xdist's workers (tests/conftest.py:
`longest_files_first`), so these tests check it can be read as that needs."""

from __future__ import annotations

import json

from conftest import DURATIONS, longest_files_first

#: The fast tier's budget, one process, and the whole suite's, on two workers (seconds).
FAST_TIER_BUDGET_S = 4 * 60
WHOLE_SUITE_BUDGET_S = 15 * 60


def _record() -> dict:
    return json.loads(DURATIONS.read_text(encoding="utf-8"))


def test_the_record_names_its_machine_and_every_file_of_it_exists():
    record = _record()
    assert record["machine"] and record["recorded"] and record["wall_s"] > 0
    root = DURATIONS.parents[1]
    missing = [name for name in record["files"] if not (root / name).is_file()]
    assert missing == [], "files in tests/durations.json that are gone: record it again"
    for name, (all_s, fast_s) in record["files"].items():
        assert 0 <= fast_s <= all_s, name


def test_the_fast_tier_fits_its_budget():
    fast_s = sum(fast for _, fast in _record()["files"].values())
    assert fast_s <= FAST_TIER_BUDGET_S, (
        f"the fast tier's tests took {fast_s:.0f} s in the record, over its "
        f"{FAST_TIER_BUDGET_S:.0f} s: mark the slowest new ones `slow`"
    )


def test_the_whole_suite_fits_its_budget_on_two_workers():
    record = _record()
    per_worker_s = sum(all_s for all_s, _ in record["files"].values()) / 2
    assert per_worker_s <= WHOLE_SUITE_BUDGET_S, (
        f"the whole suite's tests took {per_worker_s:.0f} s per worker in the record, over its "
        f"{WHOLE_SUITE_BUDGET_S:.0f} s"
    )
    assert record["wall_s"] <= WHOLE_SUITE_BUDGET_S, (
        f"the recorded run took {record['wall_s']:.0f} s, over {WHOLE_SUITE_BUDGET_S:.0f} s"
    )


class _Item:
    def __init__(self, nodeid: str):
        self.nodeid = nodeid


def test_the_files_run_longest_first_each_whole_and_in_its_own_order():
    files = _record()["files"]
    longest, shortest = sorted(files, key=lambda name: -files[name][0])[:: len(files) - 1]
    items = [
        _Item(f"{shortest}::test_a"),
        _Item(f"{longest}::test_b"),
        _Item("tests/test_not_recorded_yet.py::test_c"),
        _Item(f"{shortest}::test_d"),
        _Item(f"{longest}::test_e"),
    ]
    ordered = [item.nodeid for item in longest_files_first(items)]  # type: ignore[arg-type]
    assert ordered[:2] == [f"{longest}::test_b", f"{longest}::test_e"]
    assert ordered.index(f"{shortest}::test_a") + 1 == ordered.index(f"{shortest}::test_d")
    assert set(ordered) == {item.nodeid for item in items}
