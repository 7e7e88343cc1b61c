"""Runs RLlib 2.60's own new-stack unit-test files, unmodified, through the RLlib launcher
(`python -m trainer run FILE`: the file's `pytest.main([__file__])` runs inside it) and compares
them test by test with a baseline run under real RLlib 2.60 on the same machine.

    python bench/rllib_tests.py                     # every file of the manifest, 300 s each
    python bench/rllib_tests.py -j 2 --write        # and write the docs table, the README line
    python bench/rllib_tests.py --only test_ppo --verbose
    python bench/rllib_tests.py --baseline -j 2     # the same files under real RLlib 2.60
    python bench/rllib_tests.py --data-root ~/ray   # with RLlib's repository data
    python bench/rllib_tests.py --only test_tqc --merge   # re-run some, rewrite their rows

The files: `bench/rllib_tests_manifest.json` names each (its path in ray-project/ray, the commit
and store id it was read from, its sha256 and how its version was chosen) and every file left
out, with the reason. Their texts are kept out of the repository, in the git-ignored cache
`bench/.cache/rllib_tests/<path>`; a file missing there or whose sha256 differs is reported
and not run.

Each file runs in a fresh folder, laid out as RLlib's checkout (the file and the support files
the manifest names beside it), in its own process group, killed whole at the time limit. A
pytest plugin (`bench/pytest_plugins/rllib_tests_log.py`) streams each test's result, so a run
killed at its limit still counts what finished.

Each test's result:
- passed / skipped (as pytest says);
- refused: it stopped on this project's typed `NotSupported` (`RLlibNotAvailable`,
  `UnsupportedSetting`, ...): a capability that is not here, named at the call;
- needs data: it stopped on a file of RLlib's repository that the wheel does not ship
  (`rllib/tests/data/...`, `rllib/offline/tests/data/...`); `--data-root DIR` (a checkout of
  ray-project/ray, or any folder holding `rllib/**/data`) links those folders in;
- timeout: running, or not yet started, when the file's time limit ran out;
- failed: anything else (the error's first line is shown).

The measure (printed last, and written by `--write` into `docs/rllib_compatibility.md` and the
README): of the tests RLlib 2.60 passes on this machine (the baseline,
`bench/rllib_tests_baseline.json`, written by `--baseline`), how many pass here; each of the
others is either a row of the deliberate-differences table (`trainer.compat.differences`, kind
UNIT_TEST, keyed `PATH::CLASS::TEST`) or a gap.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.rllib_examples import PAGE, README, git_commit, ray_version, run_in_group  # noqa: E402

MANIFEST = REPO / "bench" / "rllib_tests_manifest.json"
CACHE = REPO / "bench" / ".cache" / "rllib_tests"
BASELINE = REPO / "bench" / "rllib_tests_baseline.json"
#: Each file's latest results through the launcher (merged run by run; `--gaps` reads it).
LATEST = REPO / "bench" / ".cache" / "rllib_tests_latest.json"
PLUGINS = REPO / "bench" / "pytest_plugins"
#: The docs page's section and the README's line this bench writes (between these markers).
PAGE_MARKERS = ("<!-- rllib unit tests: begin -->", "<!-- rllib unit tests: end -->")
README_MARKERS = ("<!-- rllib tests: begin -->", "<!-- rllib tests: end -->")

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
REFUSED, NEEDS_DATA, TIMEOUT = "refused", "needs data", "timeout"
RESULTS = (PASSED, FAILED, REFUSED, NEEDS_DATA, TIMEOUT, SKIPPED)
#: A failure's text naming this project's typed refusal.
_REFUSAL = re.compile(r"\b(RLlibNotAvailable|NotSupported|UnsupportedSetting|UnsupportedCall)\b")
#: A failure on a file of RLlib's repository (not in the wheel): its data folders.
_DATA = re.compile(
    r"(FileNotFoundError|No such file|does not exist|NotFound|not found|Path not found)"
    r"[^\n]*(tests/data|offline/tests/data|/data/)"
)


@dataclass
class TestResult:
    result: str
    detail: str = ""


@dataclass
class FileRun:
    path: str
    tests: dict[str, TestResult] = field(default_factory=dict)
    seconds: float = 0.0
    #: Why the file did not run at all, or what stopped it as a whole ("timeout", a collection
    #: error, an exit status without any test reported).
    problem: str = ""


def load_manifest() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def test_files(manifest: dict) -> list[dict]:
    """The manifest's test files (its support files, conftest.py and the like, go with them)."""
    return [entry for entry in manifest["files"] if not entry.get("support_only")]


def cached_text(entry: dict) -> str | None:
    """The file's cached text, when it is there and its sha256 is the manifest's."""
    path = CACHE / entry["path"]
    if not path.is_file():
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        return None
    return data.decode("utf-8")


def _first_line(message: str) -> str:
    for line in message.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def _error_line(message: str) -> str:
    """The line of a failure's text that names the error (`E   ValueError: ...`, or the crash
    message pytest puts first)."""
    lines = [line.strip() for line in message.splitlines()]
    for line in lines:
        if line.startswith("E ") and re.search(r"\w+(Error|Exception|NotAvailable)\b", line):
            return line[1:].strip()[:300]
    return _first_line(message)


def classify_failure(message: str) -> TestResult:
    match = _REFUSAL.search(message)
    if match and "tests/data" in message:  # a refusal to read RLlib's repository data
        return TestResult(NEEDS_DATA, _error_line(message))
    if match:
        refusal = next((line.strip() for line in message.splitlines() if _REFUSAL.search(line)), "")
        return TestResult(REFUSED, refusal.lstrip("E ").strip()[:300])
    if _DATA.search(message):
        return TestResult(NEEDS_DATA, _error_line(message))
    return TestResult(FAILED, _error_line(message))


def test_key(path: str, nodeid: str) -> str:
    """`rllib/.../test_x.py::Class::test` whatever folder pytest took as its root."""
    _, sep, rest = nodeid.partition("::")
    return f"{path}::{rest}" if sep else path


def read_log(path: str, log: Path) -> tuple[dict[str, TestResult], list[str], str]:
    """The plugin's lines: each test's result, the tests started but not finished, and the
    first collection error."""
    results: dict[str, TestResult] = {}
    started: list[str] = []
    collect_error = ""
    if not log.exists():
        return results, started, collect_error
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "start" in record:
            started.append(test_key(path, record["start"]))
        elif "collect_error" in record:
            collect_error = collect_error or record["message"]
        elif "test" in record:
            key = test_key(path, record["test"])
            if record["outcome"] == PASSED:
                outcome = TestResult(PASSED)
            elif record["outcome"] == SKIPPED:
                outcome = TestResult(SKIPPED, _first_line(record["message"]))
            else:
                outcome = classify_failure(record["message"])
            # A teardown's failure after a passed call fails the test; a first failure stays.
            if key not in results or results[key].result in (PASSED, SKIPPED):
                results[key] = outcome
    unfinished = [key for key in started if key not in results]
    return results, unfinished, collect_error


def link_data(work: Path, data_root: Path) -> None:
    """Links every `data` folder under `data_root/rllib` into the run's checkout layout."""
    for folder in (data_root / "rllib").rglob("data"):
        if folder.is_dir() and "__pycache__" not in folder.parts:
            target = work / folder.relative_to(data_root)
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(folder, target_is_directory=True)


def execute(
    entry: dict,
    manifest: dict,
    timeout_s: float,
    baseline: bool,
    data_root: Path | None,
    expected: list[str],
) -> FileRun:
    """Runs one test file (through the launcher, or with `baseline` under real RLlib) and reads
    each test's result. `expected`: the file's tests the baseline knows (a file that stops
    before reporting them counts them as that failure)."""
    run = FileRun(entry["path"])
    text = cached_text(entry)
    if text is None:
        run.problem = "not in bench/.cache/rllib_tests (or its sha256 differs from the manifest)"
        return run
    by_path = {e["path"]: e for e in manifest["files"]}
    with tempfile.TemporaryDirectory(prefix="rllib-test-") as folder:
        work = Path(folder)
        script = work / entry["path"]
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(text, encoding="utf-8")
        for support in entry.get("support", []):
            support_text = cached_text(by_path[support]) if support in by_path else None
            if support_text is not None:
                (work / support).parent.mkdir(parents=True, exist_ok=True)
                (work / support).write_text(support_text, encoding="utf-8")
        if data_root is not None:
            link_data(work, data_root)
        log = work / "results.jsonl"
        python_path = [str(PLUGINS)] + ([] if baseline else [str(REPO)])
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(
                python_path + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
            ),
            PYTEST_ADDOPTS="-p rllib_tests_log -p no:cacheprovider",
            LOCALRL_RLLIB_TESTS_LOG=str(log),
            PYTHONUNBUFFERED="1",
        )
        env.pop("LOCALRL_RLLIB_LAUNCHER", None)
        launcher = [] if baseline else ["-m", "trainer", "run"]
        start = time.monotonic()
        returncode, timed_out, output = run_in_group(
            [sys.executable, *launcher, str(script)], work, env, timeout_s
        )
        run.seconds = time.monotonic() - start
        results, unfinished, collect_error = read_log(entry["path"], log)
    run.tests = results
    if timed_out:
        run.problem = TIMEOUT
        for key in unfinished + [key for key in expected if key not in results]:
            run.tests[key] = TestResult(TIMEOUT, f"the file's {timeout_s:.0f} s ran out")
    elif collect_error:
        stop = classify_failure(collect_error)
        run.problem = f"did not import: {stop.detail}"
        for key in expected:
            run.tests.setdefault(key, TestResult(stop.result, f"did not import: {stop.detail}"))
    elif not results:
        tail = [line for line in output.splitlines() if line.strip()][-1:] or [""]
        run.problem = f"exit status {returncode}, no test reported: {tail[0][:200]}"
        for key in expected:
            run.tests.setdefault(key, TestResult(FAILED, run.problem))
    return run


def load_baseline() -> dict:
    if not BASELINE.exists():
        return {"tests": {}, "files": {}}
    return json.loads(BASELINE.read_text(encoding="utf-8"))


def unit_test_differences() -> dict[str, str]:
    """The deliberate-differences table's rows for RLlib's unit tests: key -> why."""
    from trainer.algorithms.registry import UNIT_TEST
    from trainer.compat.differences import all_differences

    return {d.rllib: d.why for d in all_differences() if d.kind == UNIT_TEST}


@dataclass
class Measure:
    """The bench's measure over a set of runs."""

    rllib_passes: int
    passes_here: int
    differences: int
    others: int

    def line(self) -> str:
        share = self.passes_here / self.rllib_passes if self.rllib_passes else 0.0
        return (
            f"{self.passes_here} of {self.rllib_passes} tests that RLlib 2.60 passes here pass "
            f"through the launcher ({share:.0%}); {self.differences} of the {self.others} "
            "others are deliberate differences"
        )


def measure(runs: list[FileRun], baseline: dict, differences: dict[str, str]) -> Measure:
    here = {key: result for run in runs for key, result in run.tests.items()}
    rllib_passed = [key for key, t in baseline["tests"].items() if t["result"] == PASSED]
    ran = {run.path for run in runs}
    rllib_passed = [key for key in rllib_passed if key.partition("::")[0] in ran]
    passes = [key for key in rllib_passed if key in here and here[key].result == PASSED]
    others = [key for key in rllib_passed if key not in passes]
    return Measure(
        len(rllib_passed), len(passes), sum(key in differences for key in others), len(others)
    )


def counts(run: FileRun) -> str:
    tally = {result: 0 for result in RESULTS}
    for test in run.tests.values():
        tally[test.result] += 1
    return ", ".join(f"{n} {result}" for result, n in tally.items() if n) or "no test"


def print_run(run: FileRun, verbose: bool, baseline: dict, differences: dict[str, str]) -> None:
    print(
        f"{run.seconds:6.1f} s  {run.path}: {counts(run)}"
        + (f"  [{run.problem}]" if run.problem else ""),
        flush=True,
    )
    if not verbose:
        return
    for key, test in sorted(run.tests.items()):
        if test.result != PASSED:
            rllib = baseline["tests"].get(key, {}).get("result", "?")
            mark = "  (a deliberate difference)" if key in differences else ""
            print(f"    {test.result:>10} (RLlib: {rllib}) {key}: {test.detail}{mark}", flush=True)


def save_latest(runs: list[FileRun]) -> None:
    """Merges `runs` into `LATEST` (each file's latest results through the launcher)."""
    latest = json.loads(LATEST.read_text(encoding="utf-8")) if LATEST.exists() else {}
    for run in runs:
        latest[run.path] = {
            "seconds": round(run.seconds, 1),
            "problem": run.problem,
            "tests": {k: {"result": t.result, "detail": t.detail} for k, t in run.tests.items()},
        }
    LATEST.parent.mkdir(parents=True, exist_ok=True)
    LATEST.write_text(json.dumps(latest, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def print_gaps() -> int:
    """Prints the tests the baseline passes that did not pass in their file's latest run here
    (a deliberate difference marked), then the measure over those files."""
    if not LATEST.exists():
        print("no run through the launcher yet")
        return 1
    latest = json.loads(LATEST.read_text(encoding="utf-8"))
    baseline, differences = load_baseline(), unit_test_differences()
    runs = []
    for path, saved in sorted(latest.items()):
        run = FileRun(path, seconds=saved["seconds"], problem=saved["problem"])
        run.tests = {k: TestResult(v["result"], v["detail"]) for k, v in saved["tests"].items()}
        runs.append(run)
        for key, test in sorted(baseline["tests"].items()):
            if key.partition("::")[0] != path or test["result"] != PASSED:
                continue
            here = run.tests.get(key, TestResult(FAILED, run.problem or "not reported"))
            if here.result != PASSED:
                mark = " (a deliberate difference)" if key in differences else ""
                print(f"{here.result:>10}  {key}: {here.detail[:200]}{mark}")
    print(measure(runs, baseline, differences).line())
    return 0


def write_baseline(runs: list[FileRun], started: str, timeout_s: float, jobs: int) -> None:
    previous = load_baseline()
    tests = dict(previous["tests"])
    files = dict(previous["files"])
    for run in runs:
        tests = {k: v for k, v in tests.items() if k.partition("::")[0] != run.path}
        tests.update({k: {"result": t.result, "detail": t.detail} for k, t in run.tests.items()})
        files[run.path] = {"seconds": round(run.seconds, 1), "problem": run.problem}
    data = {
        "about": (
            "Each test's result under real RLlib (the Ray wheel below, no launcher) on the "
            "machine named, written by `python bench/rllib_tests.py --baseline`"
        ),
        "ray": ray_version(),
        "date": started,
        "machine": machine(),
        "timeout_s": timeout_s,
        "jobs": jobs,
        "files": dict(sorted(files.items())),
        "tests": dict(sorted(tests.items())),
    }
    BASELINE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({cpu}), "
        f"Python {platform.python_version()}"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:240]


def section(
    runs: list[FileRun],
    manifest: dict,
    baseline: dict,
    differences: dict[str, str],
    header: list[str],
    cells: dict[str, str] | None = None,
) -> str:
    """The docs page's section: the measure, a row per file, the tests RLlib passes that do not
    pass here, and the files left out. `cells`: a file's "here" cell as the page had it (the
    files a merge did not re-run)."""
    total = measure(runs, baseline, differences)
    lines = [
        PAGE_MARKERS[0],
        "## RLlib 2.60's unit tests, run unmodified",
        "",
        "Generated by `python bench/rllib_tests.py --write` (do not edit by hand). RLlib 2.60's "
        "own new-stack unit-test files (`bench/rllib_tests_manifest.json`: where each came "
        "from, its sha256, and every file left out with the reason) run unmodified through "
        "the launcher (`python -m trainer run FILE`), each in its own process with a time "
        "limit, and are compared test by test with a run of the same files under real RLlib "
        f"2.60 on the same machine (`--baseline`: {baseline.get('date', '?')}, "
        f"{baseline.get('machine', '?')}).",
        "",
        *header,
        f"- **{total.line()}**",
        "",
        "Results: *refused* is this project's typed `NotSupported` at the call (a capability "
        "not here); *needs data* is a file of RLlib's repository the wheel does not ship "
        "(`--data-root DIR` links a checkout's data folders in); *timeout* is a test running "
        "or not started when the file's limit ran out.",
        "",
        "| file | here | RLlib 2.60 | seconds |",
        "|---|---|---|---|",
    ]
    for run in runs:
        rllib = FileRun(run.path)
        rllib.tests = {
            k: TestResult(v["result"])
            for k, v in baseline["tests"].items()
            if k.partition("::")[0] == run.path
        }
        here_cell = (cells or {}).get(run.path) or _cell(counts(run))
        lines.append(f"| `{run.path}` | {here_cell} | {_cell(counts(rllib))} | {run.seconds:.0f} |")
    here = {key: t for run in runs for key, t in run.tests.items()}
    ran = {run.path for run in runs}
    missing = sorted(
        key
        for key, t in baseline["tests"].items()
        if t["result"] == PASSED
        and key.partition("::")[0] in ran
        and here.get(key, TestResult(FAILED)).result != PASSED
    )
    lines += [
        "",
        f"### Tests RLlib 2.60 passes that do not pass here ({len(missing)})",
        "",
        "| test | here | why |",
        "|---|---|---|",
    ]
    for key in missing:
        test = here.get(key, TestResult(FAILED, "not reported"))
        why = differences.get(key, "not a deliberate difference: a gap")
        lines.append(f"| `{_cell(key)}` | {test.result}: {_cell(test.detail)} | {_cell(why)} |")
    lines += [
        "",
        f"### Files left out ({len(manifest['left_out']) + len(manifest.get('not_fetched', []))})",
        "",
        "| file | why |",
        "|---|---|",
    ]
    for entry in [*manifest["left_out"], *manifest.get("not_fetched", [])]:
        lines.append(f"| `{entry['path']}` | {_cell(entry['reason'])} |")
    lines.append(PAGE_MARKERS[1])
    return "\n".join(lines)


@dataclass
class PageRows:
    """What the page's unit-test section says of the files a merge does not re-run."""

    #: Its header lines (the last full run's, and earlier merges').
    header: list[str]
    #: Each file's run as the page reports it: every test RLlib passes in the baseline, passed
    #: unless the page lists it among those that do not pass here (with its result).
    runs: dict[str, FileRun]
    #: Each file's "here" cell, as written.
    cells: dict[str, str]


_FILE_ROW = re.compile(r"^\| `([^`]+)` \| (.*?) \| (.*?) \| (\d+) \|$")
_MISSING_ROW = re.compile(r"^\| `([^`]+::[^`]+)` \| (\w[\w ]*?): ?(.*?) \| .* \|$")


def page_rows(baseline: dict) -> PageRows:
    """The page's unit-test section, read back (see `PageRows`)."""
    page = PAGE.read_text(encoding="utf-8")
    begin, end = PAGE_MARKERS
    if begin not in page or end not in page:
        raise SystemExit(
            f"--merge: {PAGE.relative_to(REPO)} has no unit-test section to merge into"
        )
    block = page[page.index(begin) : page.index(end)].splitlines()
    header = [line for line in block if line.startswith("- ") and not line.startswith("- **")]
    missing: dict[str, TestResult] = {}
    runs: dict[str, FileRun] = {}
    cells: dict[str, str] = {}
    for line in block:
        if found := _MISSING_ROW.match(line):
            missing[found.group(1)] = TestResult(found.group(2), found.group(3))
        elif found := _FILE_ROW.match(line):
            path = found.group(1)
            runs[path] = FileRun(path, seconds=float(found.group(4)))
            cells[path] = found.group(2)
    for key, test in baseline["tests"].items():
        path = key.partition("::")[0]
        if path in runs and test["result"] == PASSED:
            runs[path].tests[key] = missing.get(key, TestResult(PASSED))
    return PageRows(header, runs, cells)


def replace_between(text: str, markers: tuple[str, str], block: str) -> str:
    """`text` with the block between `markers` (markers included) replaced; appended when
    absent."""
    begin, end = markers
    if begin in text and end in text:
        return text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def write(
    runs: list[FileRun],
    manifest: dict,
    baseline: dict,
    header: list[str],
    cells: dict[str, str] | None = None,
) -> None:
    differences = unit_test_differences()
    page = PAGE.read_text(encoding="utf-8")
    block = section(runs, manifest, baseline, differences, header, cells)
    PAGE.write_text(replace_between(page, PAGE_MARKERS, block), encoding="utf-8")
    total = measure(runs, baseline, differences)
    readme = README.read_text(encoding="utf-8")
    line = (
        f"{README_MARKERS[0]}\nRLlib 2.60's own unit tests, unmodified through the launcher: "
        f"**{total.line()}** ([the table](docs/rllib_compatibility.md)).\n{README_MARKERS[1]}"
    )
    README.write_text(replace_between(readme, README_MARKERS, line), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per file (300)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="files at a time (default 1)")
    parser.add_argument(
        "--only",
        metavar="TEXT",
        action="append",
        help="only files whose path contains TEXT (repeatable: any of them)",
    )
    parser.add_argument(
        "--baseline",
        action="store_true",
        help=f"run the files under real RLlib 2.60 (no launcher) and write {BASELINE.name}",
    )
    parser.add_argument(
        "--data-root",
        type=Path,
        metavar="DIR",
        help="a folder holding RLlib's repository data (rllib/**/data, as in a checkout of "
        "ray-project/ray): linked into each run",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="write the table into docs/rllib_compatibility.md and the README's line (a run "
        "of every file only)",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="with --only: rewrite the re-run files' rows of docs/rllib_compatibility.md and "
        "the README's line, the other files' rows kept as the page has them",
    )
    parser.add_argument("--verbose", action="store_true", help="each test that did not pass")
    parser.add_argument(
        "--gaps",
        action="store_true",
        help="run nothing: list the tests RLlib passes in the baseline that did not pass here "
        "in each file's latest run",
    )
    args = parser.parse_args(argv)
    if args.gaps:
        return print_gaps()
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout}: must be > 0 seconds")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: must be >= 1")
    if args.write and (args.only or args.baseline):
        parser.error(
            "--write needs a run of every file through the launcher (no --only, no --baseline)"
        )
    if args.merge and (not args.only or args.baseline or args.write):
        parser.error("--merge re-runs part of the files: give --only (and no --baseline, --write)")
    if args.data_root is not None and not (args.data_root / "rllib").is_dir():
        parser.error(f"--data-root {args.data_root}: no rllib/ folder in it")
    manifest = load_manifest()
    entries = [
        entry
        for entry in test_files(manifest)
        if not args.only or any(text in entry["path"] for text in args.only)
    ]
    if not entries:
        parser.error(f"--only {args.only!r} matches no file of {MANIFEST.name}")
    baseline = load_baseline()
    differences = unit_test_differences()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    commit = git_commit()
    load = os.getloadavg()[0]

    def one(entry: dict) -> FileRun:
        expected = [k for k in baseline["tests"] if k.partition("::")[0] == entry["path"]]
        run = execute(entry, manifest, args.timeout, args.baseline, args.data_root, expected)
        print_run(run, args.verbose, baseline, differences)
        return run

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(one, entries))
    if args.baseline:
        write_baseline(runs, started, args.timeout, args.jobs)
        print(f"wrote {BASELINE.relative_to(REPO)}")
        return 0
    save_latest(runs)
    header = [
        f"- run: {started}, commit {commit}",
        f"- on: {machine()} (load average {load:.1f} at the start); Ray wheel "
        f"{ray_version()}; time limit {args.timeout:.0f} s per file, {args.jobs} at a time",
    ]
    if args.write:
        write(runs, manifest, baseline, header)
        print("wrote docs/rllib_compatibility.md's unit-test section and the README's line")
    if args.merge:
        kept = page_rows(baseline)
        rerun = {run.path: run for run in runs}
        merged_runs = [rerun.get(path, run) for path, run in kept.runs.items()]
        merged_runs += [run for path, run in rerun.items() if path not in kept.runs]
        cells = {path: cell for path, cell in kept.cells.items() if path not in rerun}
        note = (
            f"- files {', '.join(f'`{text}`' for text in args.only)} re-run: {started}, "
            f"commit {commit}, load average {load:.1f} at the start, time limit "
            f"{args.timeout:.0f} s, {args.jobs} at a time; the other rows are from the runs above"
        )
        write(merged_runs, manifest, baseline, [*kept.header, note], cells)
        print("merged the re-run rows into docs/rllib_compatibility.md and the README's line")
        runs = merged_runs
    print(f"{len(runs)} files, {sum(len(r.tests) for r in runs)} tests")
    print(measure(runs, baseline, differences).line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
