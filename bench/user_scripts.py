"""Runs public users' RLlib scripts (new API stack), unmodified, through the RLlib launcher
(`python -m trainer run SCRIPT ARGS`) and, in the same sitting, under real RLlib 2.60
(`python SCRIPT ARGS` in the same virtualenv), and writes their table into
`docs/rllib_compatibility.md`.

    python bench/user_scripts.py --fetch-check          # is the cache complete? (no runs)
    python bench/user_scripts.py --fill-from-mirror /work/.mirror   # fill it from git mirrors
    python bench/user_scripts.py --both --timeout 90    # every script: launcher, then RLlib
    python bench/user_scripts.py --only rlframework --verbose        # launcher only
    python bench/user_scripts.py --baseline --only sac  # RLlib 2.60 only
    python bench/user_scripts.py --write                # the table from the stored results

The scripts: `bench/user_scripts_manifest.json` names each (repository, commit, path, sha256,
the git blob or store id it was read from, the support files of the same repository it needs,
the arguments and environment variables that keep it short, a category, and why it was
chosen) and the candidates left out, with the reason. No third-party text is in this
repository: the texts are kept in the git-ignored cache
`bench/.cache/user_scripts/<owner>+<repo>/<path>`; a script whose files are missing there or
whose sha256 differs is reported ("not cached") and not run.

Each run: a fresh folder holding the script and its support files laid out as their
repository (`<work>/repo/...`), `HOME` pointed into the folder (so `~/ray_results` and the like
stay there), the manifest's `cwd`, `pythonpath` (relative to the repository) and `env`, in its
own process group, killed whole at the time limit (`--timeout`, or the entry's own `timeout` when longer);
processes that left the group (Ray's raylet and workers) are found by a marker in their
environment and killed too. Both kinds of run get the same environment: `MPLBACKEND=Agg` and
`SDL_VIDEODRIVER=dummy` (no display here; scripts that render still run), and
`RAY_OVERRIDE_RESOURCES={"CPU": 8}` (`RAY_CPUS`): users' scripts ask for 2 to 8 EnvRunners,
which a real Ray on this 2-core machine would leave pending forever; with the override they
start, oversubscribed. The launcher serves most scripts without Ray (the override is then
unused); it runs those that use Tune's experiment runner under real Ray, as RLlib 2.60 does.

Packages the users' scripts import that the project's virtualenv did not have were installed
with pip (flappy-bird-gymnasium, SuperSuit, python-dotenv, argparse-dataclass); scripts needing
packages that would change what Ray itself loads (torch_geometric: psutil, aiohttp) are left out.

How a run is classified (the same rule for the launcher and for RLlib 2.60):
- pass: exit status 0 within the time limit, after at least one completed training iteration;
- pass (at limit): still running at the time limit, after at least one completed training
  iteration (user scripts hard-code long training; the bench does not edit them);
- out of scope (launcher runs only): the script stopped on the launcher's typed
  `NotSupported` (`RLlibNotAvailable`, `UnsupportedSetting`, ...; its capability is shown);
- fail: anything else, with the error line that ended the script ("timeout before the first
  training iteration" when the limit came first; "exit status 0 without a training iteration"
  for a script that returned without training, e.g. one that caught its own error).

A training iteration counts as completed when either (a) a completed `Algorithm.train()` call
was seen: a `sitecustomize` the bench puts first on the run's `PYTHONPATH` (it then runs any
other `sitecustomize` as Python would) wraps `Algorithm.train` (RLlib's, or this project's
when the launcher serves it) and appends one line per returned call to a file of the run
folder; it also loads in Ray's worker processes, so Tune's trials count; or (b) a `result.json`
under the run folder (Tune's and RLlib's own per-iteration logger, under the redirected `HOME`)
holds at least one line; or (c) the entry's own `progress` regex (taken from the script's
per-iteration print) matches the output.

The table's verdict per script: *pass* (passes here, at the limit or not); *fails in RLlib
too* (does not pass here, and does not pass under RLlib 2.60 either); *out of scope* (RLlib
2.60 passes, the launcher refused it with its typed error); *fail* (RLlib 2.60 passes, the
launcher does not); the first error line is shown (the launcher's; RLlib's for a script that
fails there too). Results are kept per kind in `bench/.cache/user_scripts_results.json`
(merged run by run), so `--write` always writes the latest of both kinds.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.rllib_examples import (  # noqa: E402
    PAGE,
    README,
    _last_error_line,
    git_commit,
    ray_version,
    run_in_group,
)

MANIFEST = REPO / "bench" / "user_scripts_manifest.json"
CACHE = REPO / "bench" / ".cache" / "user_scripts"
RESULTS = REPO / "bench" / ".cache" / "user_scripts_results.json"
PAGE_MARKERS = ("<!-- user scripts: begin -->", "<!-- user scripts: end -->")
#: The environment variable naming the file the train() observer appends to.
TRAIN_LOG_VAR = "LOCALRL_USER_SCRIPTS_TRAIN_LOG"
#: The marker every process of a run inherits (to find Ray's detached processes after it).
RUN_MARKER_VAR = "LOCALRL_USER_SCRIPTS_RUN"
#: The CPUs Ray is told the machine has (`RAY_OVERRIDE_RESOURCES`), the same for both kinds.
RAY_CPUS = 8
HERE, RLLIB = "here", "rllib"
PASS, PASS_AT_LIMIT, FAIL, OUT_OF_SCOPE, NOT_CACHED = (
    "pass",
    "pass (at limit)",
    "fail",
    "out of scope",
    "not cached",
)

#: The `sitecustomize.py` written into each run's hook folder (see the module docstring).
HOOK_SOURCE = r'''
"""bench/user_scripts.py's observer: counts completed Algorithm.train() calls."""
import os
import sys
import threading
import time

_LOG = os.environ.get("LOCALRL_USER_SCRIPTS_TRAIN_LOG")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain():
    # Run the next sitecustomize on sys.path, as Python would have without this one.
    import importlib.util

    for entry in sys.path:
        folder = os.path.abspath(entry or os.getcwd())
        if folder == _HERE:
            continue
        candidate = os.path.join(folder, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = module
            spec.loader.exec_module(module)
            return


def _wrap(cls):
    original = cls.train
    if getattr(original, "_user_scripts_counted", False):
        return

    def train(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        try:
            with open(_LOG, "a") as file:
                file.write("%d %.2f\n" % (os.getpid(), time.time()))
        except OSError:
            pass
        return result

    train._user_scripts_counted = True
    train.__wrapped__ = original
    cls.train = train


def _watch():
    names = ("trainer.algorithms.algorithm", "ray.rllib.algorithms.algorithm")
    deadline = time.time() + 7200
    while time.time() < deadline:
        for name in names:
            module = sys.modules.get(name)
            cls = getattr(module, "__dict__", {}).get("Algorithm") if module else None
            if isinstance(cls, type) and callable(getattr(cls, "train", None)):
                _wrap(cls)
                return
        time.sleep(0.1)


if _LOG:
    threading.Thread(target=_watch, name="user-scripts-train-observer", daemon=True).start()
try:
    _chain()
except Exception:  # never break the run over the chained one
    pass
'''


@dataclass
class RunResult:
    kind: str  # HERE | RLLIB
    result: str = ""
    detail: str = ""
    seconds: float = 0.0
    iterations: int = 0
    returncode: int | None = None
    timed_out: bool = False
    log: list[str] = field(default_factory=list)
    date: str = ""


def load_manifest() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def repo_dir(repository: str) -> str:
    return repository.replace("/", "+")


def entry_files(entry: dict) -> list[dict]:
    """The script and its support files: dicts with `path` and `sha256`."""
    return [{"path": entry["path"], "sha256": entry["sha256"]}, *entry.get("support", [])]


def cache_path(entry: dict, path: str) -> Path:
    return CACHE / repo_dir(entry["repository"]) / path


def missing_files(entry: dict) -> list[str]:
    """The entry's files that are not in the cache, or whose sha256 differs."""
    missing = []
    for item in entry_files(entry):
        path = cache_path(entry, item["path"])
        if not path.is_file():
            missing.append(f"{item['path']} (missing)")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != item["sha256"]:
            missing.append(f"{item['path']} (sha256 differs)")
    return missing


def fill_from_mirror(manifest: dict, mirror_root: Path) -> int:
    """Fills the cache from local git mirrors (`MIRROR/<owner>+<repo>/repo`, bare): each file
    at the entry's commit (or the support file's own `commit`). Returns the number written."""
    written = 0
    for entry in manifest["scripts"]:
        git_dir = mirror_root / repo_dir(entry["repository"]) / "repo"
        for item in entry_files(entry):
            target = cache_path(entry, item["path"])
            if (
                target.is_file()
                and hashlib.sha256(target.read_bytes()).hexdigest() == item["sha256"]
            ):
                continue
            commit = item.get("commit") or entry["commit"]
            done = subprocess.run(
                ["git", "--git-dir", str(git_dir), "show", f"{commit}:{item['path']}"],
                capture_output=True,
                timeout=60,
            )
            if done.returncode != 0:
                print(f"  {entry['name']}: {item['path']}: {done.stderr.decode().strip()}")
                continue
            if hashlib.sha256(done.stdout).hexdigest() != item["sha256"]:
                print(f"  {entry['name']}: {item['path']}: sha256 differs from the manifest")
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(done.stdout)
            written += 1
    return written


def fetch_check(manifest: dict) -> int:
    """Prints which entries' files are missing from the cache (or differ); 0 when complete."""
    incomplete = 0
    for entry in manifest["scripts"]:
        missing = missing_files(entry)
        if missing:
            incomplete += 1
            print(f"{entry['name']} ({entry['repository']}): " + "; ".join(missing))
    total = len(manifest["scripts"])
    print(
        f"{total - incomplete} of {total} scripts complete in {CACHE.relative_to(REPO)}"
        + (f"; {incomplete} incomplete" if incomplete else "")
    )
    return 1 if incomplete else 0


def _kill_marked(marker: str) -> int:
    """Kills the processes whose environment holds `RUN_MARKER_VAR=marker` (Ray's raylet and
    workers leave the run's process group). Returns how many were signalled."""
    needle = f"{RUN_MARKER_VAR}={marker}".encode()
    killed = 0
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == os.getpid():
            continue
        try:
            environ = (pid_dir / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            try:
                os.kill(int(pid_dir.name), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def _count_iterations(work: Path, output: str, progress: str | None) -> int:
    """Completed training iterations the run shows (see the module docstring)."""
    counts = [0]
    train_log = work / "train_calls.txt"
    if train_log.is_file():
        counts.append(sum(1 for line in train_log.read_text().splitlines() if line.strip()))
    for result_file in work.rglob("result.json"):
        try:
            counts.append(
                sum(1 for line in result_file.read_text(errors="replace").splitlines() if line)
            )
        except OSError:
            pass
    if progress:
        counts.append(len(re.findall(progress, output, flags=re.MULTILINE)))
    return max(counts)


def _error_detail(text: str) -> str:
    """The error line that ended the run (its last exception line), else the last line."""
    return _last_error_line(text)[:300]


def execute(entry: dict, kind: str, timeout_s: float) -> RunResult:
    """Runs one entry (through the launcher, or under RLlib 2.60) in a fresh folder."""
    run = RunResult(kind)
    run.date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    missing = missing_files(entry)
    if missing:
        run.result, run.detail = NOT_CACHED, "; ".join(missing)
        return run
    # an entry's own `timeout` is a floor for heavy scripts; a longer --timeout still applies
    timeout_s = max(float(entry.get("timeout", 0)), timeout_s)
    with tempfile.TemporaryDirectory(prefix="user-script-") as tmp:
        work = Path(tmp)
        root = work / "repo"
        for item in entry_files(entry):
            target = root / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cache_path(entry, item["path"]), target)
        for folder in entry.get("make_dirs", []):
            (root / folder).mkdir(parents=True, exist_ok=True)
        hook = work / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK_SOURCE, encoding="utf-8")
        home = work / "home"
        home.mkdir()
        marker = uuid.uuid4().hex
        report_path = work / "launcher-report.json"
        paths = [str(hook)] + [str(root / p) for p in entry.get("pythonpath", [])]
        if kind == HERE:
            paths.append(str(REPO))
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "LOCALRL_RLLIB_LAUNCHER", "LOCALRL_LAUNCHER_REPORT")
        }
        env.update(
            PYTHONPATH=os.pathsep.join(paths),
            HOME=str(home),
            PYTHONUNBUFFERED="1",
            MPLBACKEND="Agg",
            SDL_VIDEODRIVER="dummy",
            **{TRAIN_LOG_VAR: str(work / "train_calls.txt"), RUN_MARKER_VAR: marker},
        )
        # Ray (real Ray: RLlib 2.60's runs, and Tune's under the launcher) sees this many CPUs
        # (scripts ask for 2-8 EnvRunners; a 2-core machine would leave them pending forever).
        env.setdefault("RAY_OVERRIDE_RESOURCES", json.dumps({"CPU": RAY_CPUS}))
        env.update(entry.get("env", {}))
        if kind == HERE:
            env["LOCALRL_LAUNCHER_REPORT"] = str(report_path)
        script = str(root / entry["path"])
        command = [sys.executable]
        if kind == HERE:
            command += ["-m", "trainer", "run"]
        # "{work}" in an argument: the run's folder (for scripts that need an absolute path)
        command += [script, *(arg.replace("{work}", str(work)) for arg in entry.get("args", []))]
        cwd = root / entry.get("cwd", ".")
        cwd.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        try:
            run.returncode, run.timed_out, text = run_in_group(command, cwd, env, timeout_s)
        finally:
            _kill_marked(marker)
        run.seconds = time.monotonic() - start
        report = None
        if report_path.is_file():
            try:
                report = json.loads(report_path.read_text(encoding="utf-8"))
            except ValueError:
                report = None
        run.iterations = _count_iterations(work, text, entry.get("progress"))
    run.log = text.splitlines()[-60:]
    classify(run, report, text, timeout_s)
    return run


def classify(run: RunResult, report: dict | None, text: str, timeout_s: float) -> None:
    trained = run.iterations >= 1
    if run.timed_out:
        if trained:
            run.result = PASS_AT_LIMIT
            run.detail = f"{run.iterations} iteration(s) within {timeout_s:.0f} s"
        else:
            run.result = FAIL
            run.detail = f"timeout before the first training iteration ({timeout_s:.0f} s)"
        return
    if run.returncode == 0:
        if trained:
            run.result, run.detail = PASS, f"{run.iterations} iteration(s)"
        else:
            run.result = FAIL
            run.detail = "exit status 0 without a training iteration: " + _error_detail(text)
        return
    if report and report.get("capability"):
        run.result = OUT_OF_SCOPE
        run.detail = f"{report.get('type')}: {report.get('message')} [{report['capability']}]"
        return
    run.result = FAIL
    if report and report.get("outcome") == "error":
        run.detail = f"{report['type']}: {report['message']}"[:300]
    else:
        run.detail = f"exit status {run.returncode}: {_error_detail(text)}"


def load_results() -> dict:
    if RESULTS.is_file():
        return json.loads(RESULTS.read_text(encoding="utf-8"))
    return {HERE: {}, RLLIB: {}, "runs": []}


def save_results(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def verdict(here: dict | None, rllib: dict | None) -> str:
    """The table's verdict from the two runs' results (see the module docstring)."""
    passed = (PASS, PASS_AT_LIMIT)
    if here is None or here.get("result") == NOT_CACHED:
        return "not run"
    if here["result"] in passed:
        return "pass"
    if rllib is None:
        return "fail (RLlib 2.60 not run)"
    if rllib["result"] not in passed:
        return "fails in RLlib too"
    if here["result"] == OUT_OF_SCOPE:
        return "out of scope"
    return "fail"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def summary(manifest: dict, results: dict) -> str:
    scripts = manifest["scripts"]
    repos = {entry["repository"] for entry in scripts}
    verdicts = [
        verdict(results[HERE].get(e["name"]), results[RLLIB].get(e["name"])) for e in scripts
    ]
    here = [results[HERE].get(e["name"], {}).get("result") for e in scripts]
    rllib = [results[RLLIB].get(e["name"], {}).get("result") for e in scripts]
    rllib_pass = sum(r in (PASS, PASS_AT_LIMIT) for r in rllib)
    both = sum(
        h in (PASS, PASS_AT_LIMIT) and r in (PASS, PASS_AT_LIMIT)
        for h, r in zip(here, rllib, strict=True)
    )
    return (
        f"{len(scripts)} scripts from {len(repos)} repositories: "
        f"{verdicts.count('pass')} pass here ({here.count(PASS_AT_LIMIT)} of them at the time "
        f"limit), {verdicts.count('fail')} fail, {verdicts.count('fails in RLlib too')} fail "
        f"in RLlib too, {verdicts.count('out of scope')} out of scope; "
        f"{both} of the {rllib_pass} scripts RLlib 2.60 runs pass here "
        f"(RLlib 2.60: {rllib.count(PASS)} pass, {rllib.count(PASS_AT_LIMIT)} pass at the "
        f"limit, {rllib.count(FAIL)} fail); CPU: {cpu_model()}"
    )


#: Terminal colour codes (Ray's worker-log prefixes) left in error messages.
_ANSI = re.compile(r"\x1b\[[0-9;]*m|\[(?:3\d|39)m")


def _cell(text: str) -> str:
    return _ANSI.sub("", str(text)).replace("|", "\\|").replace("\n", " ")[:240]


def section(manifest: dict, results: dict) -> str:
    runs = results.get("runs", [])
    lines = [
        PAGE_MARKERS[0],
        "## Public users' RLlib scripts, run unmodified",
        "",
        "Generated by `python bench/user_scripts.py --write` (do not edit by hand). Public "
        "users' scripts for RLlib's new API stack (not ray-project/ray's own examples), "
        "chosen for variety, run unmodified through the launcher (`python -m trainer run "
        "SCRIPT ARGS`) and, in the same sitting, under real RLlib 2.60 (`python SCRIPT ARGS` "
        "in the same virtualenv), with arguments (or environment variables) that keep them "
        "short. `bench/user_scripts_manifest.json` names each script's repository, commit, "
        "path and sha256, the support files of its repository it needs, the arguments, a "
        "category and why it was chosen; the texts are kept in a git-ignored cache, not in "
        "this repository.",
        "",
        *(f"- run: {run}" for run in (runs[-6:] or ["none yet"])),
        f"- code: {git_commit()}; Ray wheel {ray_version()}; Python "
        f"{platform.python_version()}; {os.cpu_count()} CPUs",
        f"- **{summary(manifest, results)}**",
        "",
        "A run passes with exit status 0 after at least one completed training iteration, or "
        "*at the limit*: still training at its time limit after at least one completed "
        "iteration (users' scripts hard-code long training and are not edited). An iteration "
        "counts when an observer the bench loads (a `sitecustomize`) saw `Algorithm.train()` "
        "return, when a `result.json` under the run's folder has a line, or when the entry's "
        "`progress` pattern (the script's own per-iteration print) matched. The same rule "
        "applies to both runs. Verdict: *pass* (passes here); *fails in RLlib too* (RLlib "
        "2.60 does not pass it either); *out of scope* (RLlib 2.60 passes it, the launcher "
        "refused it with its typed `NotSupported`, whose capability is shown); *fail* "
        "(RLlib 2.60 passes it, the launcher does not). The error is the line that ended the "
        "launcher's run (RLlib's when it fails there too). Each row shows each kind's latest run "
        "(`runs` lists the sittings, their scripts and limits: runs that completed no iteration "
        "within the first limit were run again, under the same rule, with a longer one); the "
        "seconds include Ray's start-up and, at the limit, the whole limit.",
        "",
        "| repository | path | category | here | RLlib 2.60 | verdict | first error | seconds "
        "(here / RLlib) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in manifest["scripts"]:
        here = results[HERE].get(entry["name"])
        rllib = results[RLLIB].get(entry["name"])
        final = verdict(here, rllib)
        if final == "fails in RLlib too":
            error = f"RLlib: {rllib['detail']}" if rllib else ""
            if here and here["result"] not in (PASS, PASS_AT_LIMIT):
                error += f"; here: {here['detail']}"
        elif final == "pass":
            error = ""
        else:
            error = here["detail"] if here else ""
        seconds = " / ".join(f"{r['seconds']:.0f}" if r else "-" for r in (here, rllib))
        args = " ".join(entry.get("args", []))
        lines.append(
            f"| [{entry['repository']}](https://github.com/{entry['repository']}) | "
            f"`{_cell(entry['path'])}`{' `' + _cell(args) + '`' if args else ''} | "
            f"{_cell(entry['category'])} | {here['result'] if here else '-'} | "
            f"{rllib['result'] if rllib else '-'} | {final} | {_cell(error)} | {seconds} |"
        )
    left_out = manifest.get("left_out", [])
    if left_out:
        lines += [
            "",
            f"Candidates left out ({len(left_out)}; the manifest says why): "
            + "; ".join(f"{item['repository']} `{item['path']}`" for item in left_out[:40]),
        ]
    lines.append(PAGE_MARKERS[1])
    return "\n".join(lines)


def write_section(manifest: dict, results: dict) -> None:
    block = section(manifest, results)
    page = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    begin, end = PAGE_MARKERS
    if begin in page and end in page:
        page = page[: page.index(begin)] + block + page[page.index(end) + len(end) :]
    else:
        page = page.rstrip("\n") + "\n\n" + block + "\n"
    PAGE.write_text(page, encoding="utf-8")
    write_readme_line(manifest, results)


#: The README's line this bench writes (between these markers).
README_MARKERS = ("<!-- user scripts: begin -->\n", "\n<!-- user scripts: end -->")


def write_readme_line(manifest: dict, results: dict) -> None:
    """The README's one-line summary, beside RLlib's own examples and unit tests."""
    readme = README.read_text(encoding="utf-8")
    begin, end = README_MARKERS
    if begin not in readme or end not in readme:
        return
    start, stop = readme.index(begin) + len(begin), readme.index(end)
    line = (
        "Public users' RLlib scripts, unmodified through the "
        f"launcher beside RLlib 2.60: **{summary(manifest, results)}** "
        "([the table](docs/rllib_compatibility.md#public-users-rllib-scripts-run-unmodified))."
    )
    README.write_text(readme[:start] + line + readme[stop:], encoding="utf-8")


def select(manifest: dict, only: list[str] | None) -> list[dict]:
    entries = manifest["scripts"]
    if not only:
        return entries
    return [
        e
        for e in entries
        if any(p in e["name"] or p in e["repository"] or p in e["path"] for p in only)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fetch-check", action="store_true", help="check the cache; no runs")
    parser.add_argument(
        "--fill-from-mirror",
        type=Path,
        metavar="DIR",
        help="fill the cache from git mirrors DIR/<owner>+<repo>/repo (then check it)",
    )
    parser.add_argument("--baseline", action="store_true", help="run under real RLlib 2.60 only")
    parser.add_argument("--both", action="store_true", help="each script: launcher, then RLlib")
    parser.add_argument(
        "--only",
        action="append",
        metavar="TEXT",
        help="entries whose name, repository or path contains TEXT (repeatable)",
    )
    parser.add_argument("--timeout", type=float, default=90.0, help="seconds per run (90)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="runs at a time (default 1)")
    parser.add_argument(
        "--write",
        action="store_true",
        help="write the docs table (after "
        "the runs, if any were asked for; alone: from the stored results)",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="print the output's tail of runs that do not pass"
    )
    args = parser.parse_args(argv)
    manifest = load_manifest()
    if args.fill_from_mirror:
        print(f"wrote {fill_from_mirror(manifest, args.fill_from_mirror)} file(s)")
        return fetch_check(manifest)
    if args.fetch_check:
        return fetch_check(manifest)
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs must be >= 1 and --timeout > 0")
    run_anything = args.baseline or args.both or args.only or not args.write
    if run_anything:
        entries = select(manifest, args.only)
        if not entries:
            parser.error(f"--only {args.only!r} matches no entry")
        kinds = [HERE, RLLIB] if args.both else [RLLIB] if args.baseline else [HERE]
        lock = threading.Lock()
        started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        load = os.getloadavg()[0]

        def one(entry: dict) -> None:
            for kind in kinds:
                run = execute(entry, kind, args.timeout)
                print(
                    f"{run.result:>16} {kind:>5} {run.seconds:6.1f} s  {entry['name']}"
                    + (f"  {run.detail}" if run.detail else ""),
                    flush=True,
                )
                if args.verbose and run.result not in (PASS, PASS_AT_LIMIT):
                    print("    " + "\n    ".join(run.log[-20:]), flush=True)
                stored = {k: v for k, v in run.__dict__.items() if k != "log"}
                stored["log_tail"] = run.log[-40:]
                with lock:  # saved run by run: a long sitting keeps what finished
                    latest = load_results()
                    latest.setdefault(kind, {})[entry["name"]] = stored
                    save_results(latest)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(one, entries))
        results = load_results()
        results.setdefault("runs", []).append(
            f"{started}: {len(entries)} script(s){(' (' + ', '.join(args.only) + ')') if args.only else ''}, {'+'.join(kinds)}, limit "
            f"{args.timeout:.0f} s, {args.jobs} at a time, load {load:.1f} at the start, "
            f"commit {git_commit()}"
        )
        save_results(results)
    results = load_results()
    if args.write:
        write_section(manifest, results)
        print(f"wrote the user scripts' section of {PAGE.relative_to(REPO)}")
    print(summary(manifest, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
