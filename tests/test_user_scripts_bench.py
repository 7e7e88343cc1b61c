"""bench/user_scripts.py: its manifest and its classification, without network or Ray."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import user_scripts as us  # noqa: E402


@pytest.fixture(scope="module")
def manifest() -> dict:
    return us.load_manifest()


def test_manifest_counts_and_fields(manifest):
    scripts = manifest["scripts"]
    assert len(scripts) >= 30
    assert len({entry["repository"] for entry in scripts}) >= 20
    names = [entry["name"] for entry in scripts]
    assert len(names) == len(set(names))
    for entry in scripts:
        assert entry["repository"] != "ray-project/ray"
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry["repository"])
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry["name"]
        assert entry["category"] and entry["why"]
        assert isinstance(entry.get("args", []), list)
        assert entry.get("blob") or entry.get("store_id"), entry["name"]
        for item in us.entry_files(entry):
            assert re.fullmatch(r"[0-9a-f]{64}", item["sha256"]), (entry["name"], item)
            assert not item["path"].startswith("/") and ".." not in item["path"].split("/")


def test_no_third_party_text_is_tracked():
    """The cache is git-ignored: nothing under bench/.cache is tracked or addable."""
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "bench/.cache/user_scripts/x/y.py"], cwd=REPO
    )
    assert ignored.returncode == 0


def test_missing_files_and_sha_check(tmp_path, monkeypatch):
    monkeypatch.setattr(us, "CACHE", tmp_path)
    data = b"print('hi')\n"
    entry = {
        "name": "t",
        "repository": "someone/thing",
        "path": "a/b.py",
        "sha256": hashlib.sha256(data).hexdigest(),
        "support": [{"path": "c.py", "sha256": "0" * 64}],
    }
    assert [m.split()[1] for m in us.missing_files(entry)] == ["(missing)", "(missing)"]
    (tmp_path / "someone+thing" / "a").mkdir(parents=True)
    (tmp_path / "someone+thing" / "a" / "b.py").write_bytes(data)
    (tmp_path / "someone+thing" / "c.py").write_bytes(b"other")
    assert us.missing_files(entry) == ["c.py (sha256 differs)"]


def _run(**kwargs) -> us.RunResult:
    run = us.RunResult(us.HERE)
    for key, value in kwargs.items():
        setattr(run, key, value)
    return run


def test_classify_rules():
    text = "Traceback (most recent call last):\nValueError: boom\n"
    run = _run(returncode=0, iterations=2)
    us.classify(run, None, "", 90)
    assert run.result == us.PASS
    run = _run(returncode=0, iterations=0)
    us.classify(run, None, "caught it\n", 90)
    assert run.result == us.FAIL and "without a training iteration" in run.detail
    run = _run(returncode=-9, timed_out=True, iterations=1)
    us.classify(run, None, "", 90)
    assert run.result == us.PASS_AT_LIMIT
    run = _run(returncode=-9, timed_out=True, iterations=0)
    us.classify(run, None, "", 90)
    assert run.result == us.FAIL and "timeout" in run.detail
    report = {"outcome": "error", "type": "RLlibNotAvailable", "message": "x", "capability": "c"}
    run = _run(returncode=1)
    us.classify(run, report, text, 90)
    assert run.result == us.OUT_OF_SCOPE
    run = _run(returncode=1)
    us.classify(run, None, text, 90)
    assert run.result == us.FAIL and run.detail.endswith("ValueError: boom")


def test_verdicts():
    passed, failed = {"result": us.PASS}, {"result": us.FAIL}
    refused = {"result": us.OUT_OF_SCOPE}
    assert us.verdict(passed, failed) == "pass"
    assert us.verdict(failed, failed) == "fails in RLlib too"
    assert us.verdict(refused, {"result": us.PASS_AT_LIMIT}) == "out of scope"
    assert us.verdict(failed, passed) == "fail"
    assert us.verdict(None, passed) == "not run"


def test_iteration_count_sources(tmp_path):
    assert us._count_iterations(tmp_path, "", None) == 0
    (tmp_path / "train_calls.txt").write_text("1 2\n1 3\n")
    assert us._count_iterations(tmp_path, "", None) == 2
    deep = tmp_path / "home" / "ray_results" / "PPO_x"
    deep.mkdir(parents=True)
    (deep / "result.json").write_text("{}\n{}\n{}\n")
    assert us._count_iterations(tmp_path, "", None) == 3
    assert us._count_iterations(tmp_path, "it 1\nit 2\nit 3\nit 4\n", r"^it \d") == 4


def test_hook_source_compiles():
    compile(us.HOOK_SOURCE, "sitecustomize.py", "exec")


def test_section_between_markers(tmp_path, monkeypatch, manifest):
    page = tmp_path / "page.md"
    page.write_text("# head\n\nkeep me\n", encoding="utf-8")
    monkeypatch.setattr(us, "PAGE", page)
    # The README's line goes to a copy: the test writes nothing of the repository's.
    readme = tmp_path / "README.md"
    readme.write_text("# x\n" + "OLD".join(us.README_MARKERS) + "\n", encoding="utf-8")
    monkeypatch.setattr(us, "README", readme)
    first = manifest["scripts"][0]["name"]
    results = {
        us.HERE: {first: {"result": us.FAIL, "detail": "E: x | y", "seconds": 3.0}},
        us.RLLIB: {first: {"result": us.PASS, "detail": "", "seconds": 4.0}},
        "runs": [],
    }
    us.write_section(manifest, results)
    us.write_section(manifest, results)  # replaced in place, not appended twice
    text = page.read_text(encoding="utf-8")
    assert text.count(us.PAGE_MARKERS[0]) == 1 and "keep me" in text
    assert "E: x \\| y" in text
    assert f"{len(manifest['scripts'])} scripts from" in text
    line = readme.read_text(encoding="utf-8")
    assert "OLD" not in line and f"{len(manifest['scripts'])} scripts from" in line
