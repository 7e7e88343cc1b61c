"""`bench/rllib_tests.py`: RLlib's unit-test files run through the launcher, test by test.

One end-to-end run of a small RLlib-style test file (written here, not RLlib's: RLlib's texts
stay out of the repository) through the real launcher in its own process, with the bench's
pytest plugin streaming each result; the measure, the time limit and the writers on their own.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def bench(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO))
    try:
        import bench.rllib_tests as module
    finally:
        sys.path.remove(str(REPO))
    monkeypatch.setattr(module, "CACHE", tmp_path / "cache")
    return module


# An RLlib-style test file: its imports are RLlib's, it ends in pytest.main([__file__]).
_FILE = """
import unittest

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS


class TestSmall(unittest.TestCase):
    def test_builds_and_trains(self):
        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=0)
            .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
            .build()
        )
        assert ENV_RUNNER_RESULTS in algo.train()
        algo.stop()

    def test_fails(self):
        raise ValueError("on purpose")

    def test_refused(self):
        from ray.rllib.models.catalog import ModelCatalog

        ModelCatalog.get_model_v2(None, None, 2, {})

    def test_needs_data(self):
        open("rllib/tests/data/cartpole/large.json")

    @unittest.skip("not today")
    def test_skipped(self):
        pass


if __name__ == "__main__":
    import pytest, sys

    sys.exit(pytest.main(["-v", __file__]))
"""
_PATH = "rllib/algorithms/small/tests/test_small.py"


def _cached(bench, text: str, path: str = _PATH) -> dict:
    target = bench.CACHE / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return {"path": path, "sha256": hashlib.sha256(text.encode()).hexdigest()}


@pytest.mark.slow
@pytest.mark.cli
def test_a_file_runs_through_the_launcher_test_by_test(bench):
    entry = _cached(bench, _FILE)
    run = bench.execute(entry, {"files": [entry]}, 120.0, False, None, [])
    results = {key.rpartition("::")[2]: test for key, test in run.tests.items()}
    assert set(results) == {
        "test_builds_and_trains",
        "test_fails",
        "test_refused",
        "test_needs_data",
        "test_skipped",
    }, run
    assert all(key.startswith(f"{_PATH}::TestSmall::") for key in run.tests)
    assert results["test_builds_and_trains"].result == bench.PASSED
    assert results["test_fails"].result == bench.FAILED
    assert "ValueError: on purpose" in results["test_fails"].detail
    assert results["test_refused"].result == bench.REFUSED
    assert "RLlibNotAvailable" in results["test_refused"].detail
    assert results["test_needs_data"].result == bench.NEEDS_DATA
    assert results["test_skipped"].result == bench.SKIPPED
    assert run.problem == ""


@pytest.mark.slow
@pytest.mark.cli
def test_the_time_limit_names_the_running_and_the_unstarted_tests(bench):
    text = (
        "import time\n\n"
        "def test_quick():\n    pass\n\n"
        "def test_slow():\n    time.sleep(60)\n\n"
        "if __name__ == '__main__':\n    import pytest, sys\n"
        "    sys.exit(pytest.main([__file__]))\n"
    )
    entry = _cached(bench, text)
    later = f"{_PATH}::test_never_started"
    run = bench.execute(entry, {"files": [entry]}, 8.0, False, None, [later])
    assert run.problem == bench.TIMEOUT
    assert run.tests[f"{_PATH}::test_quick"].result == bench.PASSED
    assert run.tests[f"{_PATH}::test_slow"].result == bench.TIMEOUT
    assert run.tests[later].result == bench.TIMEOUT
    assert run.seconds < 40


def test_a_file_not_in_the_cache_or_changed_does_not_run(bench):
    entry = _cached(bench, _FILE)
    (bench.CACHE / _PATH).write_text(_FILE + "# changed\n", encoding="utf-8")
    run = bench.execute(entry, {"files": [entry]}, 60.0, False, None, [])
    assert "sha256" in run.problem and not run.tests
    missing = {"path": "rllib/x/tests/test_missing.py", "sha256": "0" * 64}
    assert (
        "not in bench/.cache"
        in bench.execute(missing, {"files": []}, 60.0, False, None, []).problem
    )


def test_the_measure_counts_what_rllib_passes_and_the_table_names(bench):
    t = bench.TestResult
    run = bench.FileRun("rllib/a/tests/test_a.py")
    run.tests = {
        "rllib/a/tests/test_a.py::one": t(bench.PASSED),
        "rllib/a/tests/test_a.py::two": t(bench.FAILED, "x"),
        "rllib/a/tests/test_a.py::three": t(bench.REFUSED, "y"),
        "rllib/a/tests/test_a.py::four": t(bench.PASSED),
    }
    baseline = {
        "tests": {
            "rllib/a/tests/test_a.py::one": {"result": "passed"},
            "rllib/a/tests/test_a.py::two": {"result": "passed"},
            "rllib/a/tests/test_a.py::three": {"result": "passed"},
            "rllib/a/tests/test_a.py::four": {"result": "failed"},  # not counted: RLlib fails it
            "rllib/b/tests/test_b.py::other": {"result": "passed"},  # not counted: not run
        }
    }
    differences = {"rllib/a/tests/test_a.py::three": "why"}
    total = bench.measure([run], baseline, differences)
    assert (total.rllib_passes, total.passes_here, total.differences, total.others) == (3, 1, 1, 2)
    assert total.line() == (
        "1 of 3 tests that RLlib 2.60 passes here pass through the launcher (33%); 1 of the "
        "2 others are deliberate differences"
    )


def test_write_replaces_its_own_section_and_readme_line(bench, tmp_path, monkeypatch):
    page, readme = tmp_path / "page.md", tmp_path / "README.md"
    page.write_text("# examples\n\n| rows |\n")
    readme.write_text("intro\n<!-- rllib tests: begin -->\nold\n<!-- rllib tests: end -->\nrest\n")
    monkeypatch.setattr(bench, "PAGE", page)
    monkeypatch.setattr(bench, "README", readme)
    run = bench.FileRun(
        "rllib/a/tests/test_a.py", {"rllib/a/tests/test_a.py::one": bench.TestResult("passed")}
    )
    baseline = {
        "date": "d",
        "machine": "m",
        "tests": {"rllib/a/tests/test_a.py::one": {"result": "passed"}},
    }
    manifest = {"left_out": [{"path": "rllib/z/test_z.py", "reason": "old API stack"}]}
    for _ in range(2):  # a second write replaces the first
        bench.write([run], manifest, baseline, ["- run: now"])
    text = page.read_text()
    assert text.startswith("# examples\n\n| rows |\n")
    assert text.count("## RLlib 2.60's unit tests, run unmodified") == 1
    assert "| `rllib/a/tests/test_a.py` | 1 passed | 1 passed |" in text
    assert "| `rllib/z/test_z.py` | old API stack |" in text
    line = readme.read_text()
    assert line.count("<!-- rllib tests: begin -->") == 1 and "old" not in line
    assert "**1 of 1 tests that RLlib 2.60 passes here pass through the launcher (100%)" in line


def test_a_merge_keeps_the_rows_it_did_not_rerun(bench, tmp_path, monkeypatch):
    """`--merge`'s reading of the page: the files' rows as written, and each file's tests
    RLlib passes as passed unless the page lists them as not passing here; a section written
    from them alone (one file re-run) keeps the other file's cell and its failing test."""
    page, readme = tmp_path / "page.md", tmp_path / "README.md"
    page.write_text("# examples\n")
    readme.write_text("<!-- rllib tests: begin -->\nold\n<!-- rllib tests: end -->\n")
    monkeypatch.setattr(bench, "PAGE", page)
    monkeypatch.setattr(bench, "README", readme)
    t = bench.TestResult
    a, b = "rllib/a/tests/test_a.py", "rllib/b/tests/test_b.py"
    baseline = {
        "tests": {
            f"{a}::one": {"result": "passed"},
            f"{a}::two": {"result": "passed"},
            f"{b}::three": {"result": "passed"},
            f"{b}::four": {"result": "passed"},
        }
    }
    first_a = bench.FileRun(a, {f"{a}::one": t(bench.PASSED), f"{a}::two": t(bench.REFUSED, "x")})
    first_b = bench.FileRun(
        b, {f"{b}::three": t(bench.PASSED), f"{b}::four": t(bench.FAILED, "y: z")}
    )
    manifest = {"left_out": []}
    bench.write([first_a, first_b], manifest, baseline, ["- run: first"])

    kept = bench.page_rows(baseline)
    assert kept.header == ["- run: first"]
    assert kept.cells == {a: "1 passed, 1 refused", b: "1 passed, 1 failed"}
    assert kept.runs[b].tests == {
        f"{b}::three": t(bench.PASSED),
        f"{b}::four": t(bench.FAILED, "y: z"),
    }
    rerun_a = bench.FileRun(a, {f"{a}::one": t(bench.PASSED), f"{a}::two": t(bench.PASSED)})
    cells = {b: kept.cells[b]}
    bench.write([rerun_a, kept.runs[b]], manifest, baseline, [*kept.header, "- merged"], cells)
    text = page.read_text()
    assert f"| `{a}` | 2 passed |" in text and f"| `{b}` | 1 passed, 1 failed |" in text
    assert f"| `{b}::four` | failed: y: z |" in text and f"{a}::two" not in text
    assert "**3 of 4 tests that RLlib 2.60 passes here" in text
    assert "- run: first\n- merged" in text


def test_the_manifest_names_each_file_once_with_its_sha256():
    manifest = json.loads((REPO / "bench" / "rllib_tests_manifest.json").read_text())
    paths = [entry["path"] for entry in manifest["files"]]
    assert len(paths) == len(set(paths)) and paths == sorted(paths)
    for entry in manifest["files"]:
        assert entry["path"].startswith("rllib/") and entry["path"].endswith(".py")
        assert len(entry["sha256"]) == 64 and entry["id"] and entry["chosen"]
        # The store names the commit of most versions; one read by its id alone has none.
        assert entry["commit"] is None or len(entry["commit"]) == 40
    for entry in [*manifest["left_out"], *manifest.get("not_fetched", [])]:
        assert entry["reason"]


def test_every_unit_test_row_of_the_table_names_a_test_of_the_manifest():
    from trainer.algorithms.registry import UNIT_TEST
    from trainer.compat.differences import all_differences

    manifest = json.loads((REPO / "bench" / "rllib_tests_manifest.json").read_text())
    files = {entry["path"] for entry in manifest["files"]}
    baseline = json.loads((REPO / "bench" / "rllib_tests_baseline.json").read_text())
    for row in (d for d in all_differences() if d.kind == UNIT_TEST):
        assert row.rllib.partition("::")[0] in files, row.rllib
        assert baseline["tests"].get(row.rllib, {}).get("result") == "passed", row.rllib


@pytest.mark.slow
@pytest.mark.cli
def test_data_root_links_rllibs_repository_data_into_the_run(bench, tmp_path):
    text = (
        "from pathlib import Path\n\n"
        "def test_reads_data():\n"
        "    here = Path(__file__).resolve().parents[4]  # the checkout's root (rllib/..)\n"
        "    assert (here / 'rllib/tests/data/cartpole/small.json').read_text() == 'rows'\n\n"
        "if __name__ == '__main__':\n    import pytest, sys\n"
        "    sys.exit(pytest.main([__file__]))\n"
    )
    entry = _cached(bench, text)
    key = f"{_PATH}::test_reads_data"
    without = bench.execute(entry, {"files": [entry]}, 60.0, False, None, [])
    assert without.tests[key].result == bench.NEEDS_DATA, without
    data = tmp_path / "checkout" / "rllib" / "tests" / "data" / "cartpole"
    data.mkdir(parents=True)
    (data / "small.json").write_text("rows")
    run = bench.execute(entry, {"files": [entry]}, 60.0, False, tmp_path / "checkout", [])
    assert run.tests[key].result == bench.PASSED, run
