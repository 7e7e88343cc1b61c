"""Runs every example script of the installed Ray 2.60 wheel's `rllib/examples` through the
RLlib launcher (`python -m trainer run SCRIPT ARGS`), with the arguments RLlib's CI gives it
(`bench/rllib_example_args.py`, one run per CI entry), each in its own process with a time
limit, and writes `docs/rllib_compatibility.md`.

    python bench/rllib_examples.py                  # all, 120 s each, one at a time
    python bench/rllib_examples.py --only envs/ -j 2 --timeout 300 --no-write
    python bench/rllib_examples.py --extra-root ~/ray/rllib/examples --only algorithms/sac/ \
        --timeout 900 --merge                       # RLlib's SAC examples (not in the wheel)

Which files: every `.py` under `rllib/examples` except `__init__.py`, `utils.py`, folders named
`classes` or `utils` (classes the scripts import, not scripts), and `_old_api_stack`'s
`models/` and `policy/` folders (the same); `_old_api_stack`'s own scripts run (they are
reported out of scope when the launcher's typed error says they need the old API stack).

How each run is classified:
- pass: exit status 0 within the time limit;
- out of scope: the script stopped on `RLlibNotAvailable` (the launcher's typed error; its
  capability is shown), or a static rule below matches the CI arguments;
- fail: anything else (the first line of the error, or "timeout").

Static rules (documented in the page too): a script under `_old_api_stack/` needs RLlib's old
API stack (`FOLDER_RULES`); one that stops on
`ModuleNotFoundError` for torch, tensorflow, ... (it imports the framework itself) needs what
that package serves (`MISSING_PACKAGES`); one that stops on an `ImportError` of a PettingZoo
env family whose extra is not installed (`pettingzoo[sisl]`: pymunk) needs a third-party env
(`MISSING_EXTRAS`); `--algo=X` with X not registered here (`trainer.algorithms.registry`) needs
algorithms not implemented here; `--num-gpus-per-learner=N` with N > 0 needs GPUs; `--old-api-stack` needs RLlib's old API
stack. Multi-agent scripts run like the others: those that need what is not here (torch
RLModules, connector pieces other than FlattenObservations, DQN) stop on the typed error that
names it.

Scripts RLlib 2.60 has but its wheel does not ship (`NOT_IN_WHEEL` in
`bench/rllib_example_args.py`: the tuned SAC, APPO, IMPALA and TQC examples and the DreamerV3
examples of `rllib/examples/algorithms/`) run
from `--extra-root DIR`, a folder laid out as `rllib/examples` (a checkout of ray-project/ray's):
without it they are left out of the runs.

Examples that read a dataset of RLlib's checkout the wheel does not ship (`RECORDED_DATA` in
`bench/rllib_example_args.py`) run from a copy laid out as the checkout, beside a dataset this
project records (its PPO trained, then `python -m trainer record`; cached under
`bench/.cache/`).

Re-running part of the examples (`--only`, repeatable) prints the results; with `--merge` it
also rewrites those rows of the page (and the summary and the README's count), keeping the
other rows from the page's last full run.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.rllib_example_args import CI_ARGS, NOT_IN_WHEEL, RECORDED_DATA  # noqa: E402
from trainer.algorithms.registry import ALGORITHM_NAMES  # noqa: E402
from trainer.capabilities import POLICY_EXPORT  # noqa: E402
from trainer.launcher import table  # noqa: E402

PAGE = REPO / "docs" / "rllib_compatibility.md"
#: Where the recorded datasets of `RECORDED_DATA` are kept between runs.
DATA_CACHE = REPO / "bench" / ".cache" / "recorded_data"
README = REPO / "README.md"
SKIPPED_DIRS = {"classes", "utils", "__pycache__"}
SKIPPED_OLD_STACK_DIRS = {"models", "policy"}
#: A script that stops on `ModuleNotFoundError` for one of these packages (it imports the
#: framework itself, not through RLlib) needs the capability.
MISSING_PACKAGES = {
    "torch": table.TORCH,
    "tensorflow": table.TORCH,
    "tree": table.TORCH,
    "ale_py": table.ATARI,
    "pyspiel": table.THIRD_PARTY_ENVS,
    "open_spiel": table.THIRD_PARTY_ENVS,
    "pettingzoo": table.MULTI_AGENT,
    "onnxruntime": POLICY_EXPORT,
}
#: Folders of `rllib/examples` whose every script shows a capability this project does not
#: have (applied to runs that do not pass).
FOLDER_RULES = {
    "_old_api_stack/": table.OLD_API_STACK,
}
#: A script that stops on `ImportError` ("cannot import name ... from 'MODULE'") for one of
#: these modules imports an env family whose pip extra is not installed.
MISSING_EXTRAS = {
    "pettingzoo.sisl": f"{table.THIRD_PARTY_ENVS}: PettingZoo's SISL envs (pettingzoo[sisl], "
    "pymunk; not installed)",
}
#: What a run asking for GPUs needs (this machine has none; RLlib refuses such a run too).
GPUS = "GPUs (`--num-gpus-per-learner` > 0; there are none here)"
STATIC_RULES = (
    ("a script under `_old_api_stack/`", table.OLD_API_STACK),
    (
        "stopped on `ModuleNotFoundError` for "
        + ", ".join(f"`{name}`" for name in MISSING_PACKAGES),
        "the capability that package "
        "serves (torch/tensorflow/tree: torch RLModules; ale_py: Atari; pyspiel/open_spiel: "
        "third-party envs; pettingzoo: multi-agent; onnxruntime: policy export)",
    ),
    (
        "stopped on `ImportError` of "
        + ", ".join(f"`{name}`" for name in MISSING_EXTRAS)
        + " (an env family whose extra is not installed)",
        "; ".join(MISSING_EXTRAS.values()),
    ),
    (
        "stopped on gymnasium's `DependencyNotInstalled` (an env family whose extra is not "
        "installed: MuJoCo, Box2D)",
        "that family's envs (the extra the error names)",
    ),
    ("`--algo=X`, X not an algorithm here", table.OTHER_ALGORITHMS),
    ("`--num-gpus-per-learner=N`, N > 0", GPUS),
    ("`--old-api-stack`", table.OLD_API_STACK),
)


def examples_dir() -> Path:
    """`ray/rllib/examples` of the installed wheel (found on disk; RLlib is never imported)."""
    import importlib.machinery

    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("Ray is not installed: pip install 'ray==2.60.0' (the test extra)")
    return Path(spec.submodule_search_locations[0]) / "rllib" / "examples"


def ray_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ray")
    except PackageNotFoundError:
        return "?"


def example_scripts(root: Path) -> list[str]:
    """The example scripts, as paths relative to `root`, sorted."""
    found = []
    for path in root.rglob("*.py"):
        relative = path.relative_to(root)
        parts = relative.parts
        if path.name in ("__init__.py", "utils.py") or SKIPPED_DIRS & set(parts[:-1]):
            continue
        if parts[0] == "_old_api_stack" and SKIPPED_OLD_STACK_DIRS & set(parts[1:-1]):
            continue
        found.append(relative.as_posix())
    return sorted(found)


@dataclass
class Run:
    example: str
    ci_name: str
    args: list[str]
    tags: tuple[str, ...]
    result: str = ""  # "pass" | "fail" | "out of scope"
    detail: str = ""
    seconds: float = 0.0
    log: list[str] = field(default_factory=list)
    #: The script's path when it is not `root / example` (a `NOT_IN_WHEEL` script).
    script: str = ""


def _matches(text: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(text, pattern) or pattern in text for pattern in patterns)


def extra_scripts(root: Path, extra_root: Path | None) -> dict[str, Path]:
    """The `NOT_IN_WHEEL` scripts found under `extra_root` and not in the wheel's `root`."""
    if extra_root is None:
        return {}
    return {
        example: extra_root / example
        for example in sorted(NOT_IN_WHEEL)
        if (extra_root / example).is_file() and not (root / example).is_file()
    }


def planned_runs(root: Path, only: list[str] | None, extra_root: Path | None = None) -> list[Run]:
    """Every CI entry of every example (the wheel's, then the `NOT_IN_WHEEL` ones found under
    `extra_root`); with `only`, the entries whose example path or CI name matches one of the
    patterns (a glob, or text it contains)."""
    extra = extra_scripts(root, extra_root)
    runs = []
    for example in [*example_scripts(root), *extra]:
        entries = CI_ARGS.get(example) or NOT_IN_WHEEL.get(example)
        for ci_name, args, tags in entries or [("(no CI entry)", [], ())]:
            if only and not (_matches(example, only) or _matches(ci_name, only)):
                continue
            script = str(extra[example]) if example in extra else ""
            runs.append(Run(example, ci_name, list(args), tuple(tags), script=script))
    return runs


def _uncell(text: str) -> str:
    return text.replace("\\|", "|")


def page_runs(root: Path, extra_root: Path | None = None) -> list[Run]:
    """The runs the page lists (its table rows), in the order a full run makes them; a run
    the page lacks (a CI entry added since) is listed as not run."""
    listed: dict[tuple[str, str], Run] = {}
    if PAGE.exists():
        row = re.compile(
            r"^\| `(?P<example>[^`]+)` \| (?P<ci>.*?) \| `(?P<args>.*?)` \| "
            r"(?P<result>pass|fail|out of scope) \| (?P<detail>.*) \| (?P<seconds>[\d.]+) \|$"
        )
        for line in PAGE.read_text(encoding="utf-8").splitlines():
            match = row.match(line)
            if match:
                ci_name = re.sub(r" \([\w, ]+\)$", "", _uncell(match["ci"]))
                run = Run(match["example"], ci_name, [], ())
                run.result, run.detail = match["result"], _uncell(match["detail"])
                run.seconds = float(match["seconds"])
                listed[run.example, ci_name] = run
    runs = []
    for planned in planned_runs(root, None, extra_root):
        found = listed.get((planned.example, planned.ci_name))
        if found is None:
            planned.result, planned.detail = "fail", "not run (no row in the page)"
        else:
            planned.result, planned.detail, planned.seconds = (
                found.result,
                found.detail,
                found.seconds,
            )
        runs.append(planned)
    # The rows of scripts the wheel does not ship stay when they did not run this time (no
    # --extra-root).
    planned_keys = {(run.example, run.ci_name) for run in runs}
    for example, entries in NOT_IN_WHEEL.items():
        for ci_name, args, tags in entries:
            found = listed.get((example, ci_name))
            if found is not None and (example, ci_name) not in planned_keys:
                found.args, found.tags = list(args), tuple(tags)
                runs.append(found)
    return runs


def static_rule(example: str, args: list[str]) -> str | None:
    """The capability the path or the CI arguments alone show a run needs (see the module
    docstring)."""
    for folder, capability in FOLDER_RULES.items():
        if example.startswith(folder):
            return capability
    for arg in args:
        match = re.fullmatch(r"--algo[= ](\w+)", arg)
        if match and match.group(1) not in ALGORITHM_NAMES:
            return table.OTHER_ALGORITHMS
        match = re.fullmatch(r"--num-gpus-per-learner[= ]([\d.]+)", arg)
        if match and float(match.group(1)) > 0:
            return GPUS
        if arg == "--old-api-stack":
            return table.OLD_API_STACK
    return None


def _last_error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt|NotAvailable)\b", line):
            return line
    return lines[-1] if lines else ""


def run_in_group(
    command: list[str], cwd: Path, env: dict[str, str], timeout_s: float
) -> tuple[int, bool, str]:
    """Runs `command` in a new process group, killed whole at `timeout_s` (and after it ends:
    leftovers such as a script's EnvRunners go with it). Returns the exit status, whether the
    time ran out, and the output (stdout and stderr together, kept in a file in `cwd`)."""
    with open(cwd / "output.txt", "w+", encoding="utf-8", errors="replace") as output:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        output.seek(0)
        return process.returncode, timed_out, output.read()


def execute(run: Run, root: Path, timeout_s: float) -> Run:
    """Runs one CI entry in a new process group (killed whole at the time limit) in a fresh
    working folder."""
    with tempfile.TemporaryDirectory(prefix="rllib-example-") as work:
        report_path = os.path.join(work, "launcher-report.json")
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join(
                [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
            ),
            LOCALRL_LAUNCHER_REPORT=report_path,
            PYTHONUNBUFFERED="1",
        )
        env.pop("LOCALRL_RLLIB_LAUNCHER", None)
        script = run.script or str(root / run.example)
        if run.example in RECORDED_DATA:
            script = str(checkout_copy(run.example, Path(script), Path(work), env))
        command = [sys.executable, "-m", "trainer", "run", script, *run.args]
        start = time.monotonic()
        returncode, timed_out, text = run_in_group(command, Path(work), env, timeout_s)
        run.seconds = time.monotonic() - start
        report = None
        if os.path.exists(report_path):
            with open(report_path, encoding="utf-8") as file:
                report = json.load(file)
    run.log = text.splitlines()[-40:]
    classify(run, returncode, timed_out, report, text, timeout_s)
    return run


def recorded_dataset(
    example: str, env: dict[str, str], data: tuple[str, list[str], list[str]] | None = None
) -> Path:
    """The dataset `data` (in `RECORDED_DATA`'s form; by default `RECORDED_DATA[example]`)
    describes: recorded once (PPO trained with `python -m trainer`, its policy recorded with
    `python -m trainer record`) into `DATA_CACHE`, then reused."""
    data_dir, train_args, record_args = data if data is not None else RECORDED_DATA[example]
    target = DATA_CACHE / data_dir.replace("/", "__")
    if target.is_dir():
        return target
    with tempfile.TemporaryDirectory(prefix="recorded-data-") as work:
        run_dir = os.path.join(work, "run")
        staging = os.path.join(work, "data")
        for command in (
            [sys.executable, "-m", "trainer", *train_args, "--output-dir", run_dir],
            [sys.executable, "-m", "trainer", "record", run_dir, "--output", staging, *record_args],
        ):
            done = subprocess.run(
                command, cwd=work, env=env, capture_output=True, text=True, timeout=1800
            )
            if done.returncode != 0:
                raise RuntimeError(
                    f"recording the dataset of {example} failed: {' '.join(command)}\n"
                    + (done.stdout + done.stderr)[-3000:]
                )
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, target)
    return target


def checkout_copy(
    example: str,
    script: Path,
    work: Path,
    env: dict[str, str],
    data: tuple[str, list[str], list[str]] | None = None,
) -> Path:
    """The script copied into `work` as RLlib's checkout lays it out, its dataset
    (`recorded_dataset` of `data`, by default `RECORDED_DATA[example]`) linked in where the
    checkout holds RLlib's; the copy's path."""
    data = data if data is not None else RECORDED_DATA[example]
    data_dir = data[0]
    tree = work / "checkout" / "rllib"
    copy = tree / "examples" / example
    copy.parent.mkdir(parents=True)
    copy.write_bytes(script.read_bytes())
    link = tree / data_dir
    link.parent.mkdir(parents=True)
    link.symlink_to(recorded_dataset(example, env, data), target_is_directory=True)
    return copy


def classify(
    run: Run, returncode: int, timed_out: bool, report: dict | None, text: str, timeout_s: float
) -> None:
    if not timed_out and returncode == 0:
        run.result, run.detail = "pass", ""
        return
    if report and report.get("capability"):
        run.result, run.detail = "out of scope", report["capability"]
        return
    rule = static_rule(run.example, run.args)
    message = (report or {}).get("message", "")
    # Raised in the script, or in an EnvRunner (the EnvRunnerError's message names it).
    missing = re.search(r"No module named '([\w]+)[\w.]*'", message)
    if rule is None and missing and missing.group(1) in MISSING_PACKAGES:
        rule = MISSING_PACKAGES[missing.group(1)]
    extra = re.match(r"cannot import name '\w+' from '([\w.]+)'", message)
    if rule is None and extra and extra.group(1) in MISSING_EXTRAS:
        rule = MISSING_EXTRAS[extra.group(1)]
    # gymnasium's error for an env family whose extra is not installed (MuJoCo, Box2D, ...).
    dependency = re.search(
        r"DependencyNotInstalled: (\w+) is not installed, run `pip install \"?([^`\"]+)\"?`",
        message,
    )
    if rule is None and dependency:
        rule = f"{dependency.group(1)} envs ({dependency.group(2)}; not installed here)"
    if rule is not None:
        run.result, run.detail = "out of scope", f"{rule} (static rule)"
        return
    run.result = "fail"
    if timed_out:
        run.detail = f"timeout after {timeout_s:.0f} s"
    elif report and report.get("outcome") == "error":
        run.detail = f"{report['type']}: {report['message']}"
    elif report and report.get("outcome") == "exit":
        run.detail = f"exit status {report['code']}: {_last_error_line(text)}"
    else:
        run.detail = f"exit status {returncode}: {_last_error_line(text)}"


def git_commit() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            text=True,
            capture_output=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            text=True,
            capture_output=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return commit + (" (with uncommitted changes)" if dirty.strip() else "")


def summary(runs: list[Run]) -> str:
    counts = {
        kind: sum(r.result == kind for r in runs) for kind in ("pass", "fail", "out of scope")
    }
    examples = len({r.example for r in runs})
    in_scope = counts["pass"] + counts["fail"]
    return (
        f"{len(runs)} runs of {examples} examples: {counts['pass']} pass, "
        f"{counts['fail']} fail, {counts['out of scope']} out of scope "
        f"({counts['pass']}/{in_scope} of the in-scope runs pass)"
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:300]


def run_header(timeout_s: float, jobs: int, commit: str, started: str, load: float) -> list[str]:
    """The page's lines saying when, on what code and on what machine the runs ran."""
    machine = (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs (load "
        f"average {load:.1f} at the start), Python {platform.python_version()}"
    )
    return [
        f"- date: {started}",
        f"- commit: {commit}",
        f"- machine: {machine}; Ray wheel {ray_version()}; time limit {timeout_s:.0f} s per "
        f"run, {jobs} run(s) at a time",
    ]


#: Where `bench/rllib_tests.py`'s section of the page begins (its `PAGE_MARKERS[0]`).
UNIT_TESTS_SECTION = "<!-- rllib unit tests: begin -->"
#: The other benches' sections of the page, kept as they wrote them when this one rewrites it.
KEPT_SECTIONS = (
    (UNIT_TESTS_SECTION, "<!-- rllib unit tests: end -->"),
    ("<!-- user scripts: begin -->", "<!-- user scripts: end -->"),
)


def page_header() -> list[str]:
    """The page's own `run_header` lines and the lines of earlier merges (kept when some rows
    are merged in; a later merge's rows replace an earlier one's)."""
    if not PAGE.exists():
        return []
    # (The examples' part of the page: the unit tests' section, after it, has its own lines.)
    text = PAGE.read_text(encoding="utf-8").split(UNIT_TESTS_SECTION)[0]
    return [
        line
        for line in text.splitlines()
        if line.startswith(("- date: ", "- commit: ", "- machine: ", "- rows of "))
    ]


def write_page(runs: list[Run], header: list[str], started: str, merged: str | None = None) -> None:
    """The page: `header` (`run_header`'s lines); `merged`, when some rows were re-run, a line
    saying which, when and how. `started`: the date the README's count gives."""
    lines = [
        "# RLlib 2.60's examples, run unmodified",
        "",
        "Generated by `python bench/rllib_examples.py` (do not edit by hand). Every example "
        "script of the installed Ray wheel's `rllib/examples` runs through the launcher "
        "(`python -m trainer run SCRIPT ARGS`, see [porting.md](porting.md)) with the "
        "arguments RLlib's CI gives it in `rllib/BUILD.bazel` (one row per CI entry; "
        "`bench/rllib_example_args.py`), in its own process with a time limit. RLlib's "
        "tuned SAC, APPO, IMPALA and TQC examples and its DreamerV3 examples "
        "(`algorithms/sac/`, `appo/`, `impala/`, `tqc/`, `dreamerv3/`), which "
        "the wheel does not ship, run the same way from a checkout of ray-project/ray "
        "(`--extra-root`).",
        "",
        *header,
        *([f"- {merged}"] if merged else []),
        f"- **{summary(runs)}**",
        "",
        "Result: *pass* is exit status 0 within the limit; *out of scope* is a run stopped by "
        "the launcher's typed error (`RLlibNotAvailable`, whose capability is shown) or, when "
        'it did not pass otherwise, one matched by a static rule (marked "static rule"):',
        "",
        *(f"- {rule}: {capability}" for rule, capability in STATIC_RULES),
        "",
        "*fail* is anything else, with the first error line. Not run: files under "
        "`classes/` and `utils/` folders, `utils.py` and `__init__.py` (classes the scripts "
        "import), and `_old_api_stack/models/` and `/policy/` (the same); `_old_api_stack`'s "
        "scripts run like the others. Seconds include Python's start and, for a timeout, the "
        "whole limit. A CI entry's tags are RLlib's (manual: not run by RLlib's CI; gpu, "
        "multi_gpu), or flaky: RLlib's CI tracks the test as flaky, and its result varies "
        "from run to run here too (the row is its last run's).",
        "",
        "| example | CI entry | args | result | detail | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for run in runs:
        tags = f" ({', '.join(run.tags)})" if run.tags else ""
        args = " ".join(run.args) or "(none)"
        lines.append(
            f"| `{run.example}` | {_cell(run.ci_name)}{tags} | `{_cell(args)}` | "
            f"{run.result} | {_cell(run.detail)} | {run.seconds:.1f} |"
        )
    # The unit-test bench's and the users' scripts bench's sections (bench/rllib_tests.py,
    # bench/user_scripts.py) stay as those benches wrote them.
    old = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    for begin, end in KEPT_SECTIONS:
        if begin in old and end in old:
            lines += ["", old[old.index(begin) : old.index(end) + len(end)]]
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_readme_summary(runs, started)


def write_readme_summary(runs: list[Run], started: str) -> None:
    """The README's pass count: the line between its `rllib examples` markers."""
    begin, end = "<!-- rllib examples: begin -->\n", "\n<!-- rllib examples: end -->"
    readme = README.read_text(encoding="utf-8")
    start, stop = readme.index(begin) + len(begin), readme.index(end)
    counts = {kind: sum(r.result == kind for r in runs) for kind in ("pass", "fail")}
    line = (
        f"RLlib 2.60's own examples, unmodified through the launcher ({started}): "
        f"**{counts['pass']} of {counts['pass'] + counts['fail']} in-scope runs pass**; "
        f"{summary(runs)}."
    )
    README.write_text(readme[:start] + line + readme[stop:], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds each run may take (default 120)"
    )
    parser.add_argument(
        "--only",
        metavar="PATTERN",
        action="append",
        help="only CI entries whose example path (relative to rllib/examples) or CI name "
        "matches this glob or contains this text (repeatable: any of them)",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="with --only: also rewrite those rows of the page (its summary and the README's "
        "count follow), keeping the other rows from the page",
    )
    parser.add_argument(
        "--extra-root",
        type=Path,
        metavar="DIR",
        help="a folder laid out as rllib/examples (a checkout of ray-project/ray's) holding the "
        "scripts the wheel does not ship (NOT_IN_WHEEL: RLlib's tuned SAC, APPO, IMPALA and TQC "
        "examples, its DreamerV3 examples); they run too",
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, help="runs at a time (default 1)")
    parser.add_argument(
        "--no-write",
        action="store_true",
        help=f"print the results only (do not rewrite {PAGE.relative_to(REPO)} and "
        "the README's count; --only rewrites them only with --merge)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print the last lines of output of runs that did not pass",
    )
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout}: must be > 0 seconds")
    if args.jobs < 1:
        parser.error(f"--jobs {args.jobs}: must be >= 1")
    if args.merge and not args.only:
        parser.error("--merge needs --only (a full run rewrites the whole page)")
    root = examples_dir()
    commit = git_commit()  # the code that runs (taken before, as the tree may change meanwhile)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]  # seconds depend on what else runs: the page says how busy
    extra_root = args.extra_root.expanduser() if args.extra_root else None
    runs = planned_runs(root, args.only, extra_root)
    if not runs:
        parser.error(f"--only {args.only!r} matches no example under {root}")

    def one(run: Run) -> Run:
        execute(run, root, args.timeout)
        print(
            f"{run.result:>12}  {run.seconds:6.1f} s  {run.example} [{run.ci_name}]"
            + (f"  {run.detail}" if run.detail else ""),
            flush=True,
        )
        if args.verbose and run.result != "pass":
            print("    " + "\n    ".join(run.log[-15:]), flush=True)
        return run

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(one, runs))
    if args.merge and not args.no_write:
        fresh = {(run.example, run.ci_name): run for run in runs}
        runs = [fresh.get((run.example, run.ci_name), run) for run in page_runs(root, extra_root)]
        rows_of = f"rows of {', '.join(f'`{p}`' for p in args.only)} re-run: "
        merged = (
            f"{rows_of}{started}, commit {commit}, load average {load:.1f} at the start, time "
            f"limit {args.timeout:.0f} s, {args.jobs} at a time; the other rows are from the "
            "runs above"
        )
        # An earlier merge of the same rows is replaced by this one.
        header = [line for line in page_header() if not line.startswith(f"- {rows_of}")]
        write_page(runs, header, started, merged=merged)
        print(f"merged into {PAGE.relative_to(REPO)} and the README's count")
    elif args.only is not None:
        print(
            f"not written: {PAGE.relative_to(REPO)} and the README's count cover every "
            "example (--only ran some; --merge rewrites those rows)"
        )
    elif not args.no_write:
        write_page(runs, run_header(args.timeout, args.jobs, commit, started, load), started)
        print(f"wrote {PAGE.relative_to(REPO)} and the README's count")
    print(summary(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
