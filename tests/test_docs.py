"""Every code block of README.md and docs/*.md runs, as RLlib's docs' testcode does, and the site
builds with `mkdocs build --strict`.

How a page's blocks run: in document order, in one fresh process per page (a driver, see
`_DRIVER`), in a temporary folder, under a time limit:

- ```python blocks share one namespace, so a block may continue the one before it (as RLlib's
  testcode groups do); the code runs as `__main__`;
- ```bash blocks run with `bash -euo pipefail` (`python` is this interpreter). A leading
  `pip install -e '...' && ` is left out: the package under test is installed already, and
  installing it again is what `.ci/run` does;
- ```toml, ```text blocks are data or output, not run; every block must name one of these
  languages (a block without one fails the test, so a new block cannot go unrun by accident).

Markers, an HTML comment on the line right before a block:

- `<!-- docs-test: file NAME -->`: the block is written to NAME in the page's folder (a config
  file or a script the following blocks use) instead of being run;
- `<!-- docs-test: skip (REASON) -->`: the block is not run; the reason is required and shown
  by `test_every_skipped_block_says_why`. Rare: for what needs a cluster, or the whole suite.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
RUN_LANGUAGES = {"python", "bash"}
DATA_LANGUAGES = {"toml", "text"}
#: Seconds one page's blocks may take together (a page trains a few short runs).
PAGE_TIMEOUT_S = 600
_FENCE = re.compile(r"^```(\S*)\s*$")
_MARKER = re.compile(r"^<!-- docs-test: (skip|file) (.*?) -->$")
_PIP_PREFIX = re.compile(r"^pip install -e '[^']*' && ")


@dataclass
class Block:
    page: str
    line: int  # the first line of the code, 1-based, in the page
    language: str
    code: str
    action: str  # "run", "file", "skip" or "data"
    argument: str = ""  # the file name, or the reason to skip


def blocks_of(page: Path) -> list[Block]:
    """The fenced code blocks of a page, with their markers."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    name = str(page.relative_to(REPO)) if page.is_relative_to(REPO) else page.name
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        if end == len(lines):
            raise AssertionError(f"{name}:{index + 1}: a code block that is never closed")
        language = fence.group(1)
        marker = _MARKER.match(lines[index - 1]) if index > 0 else None
        if marker is not None:
            action, argument = marker.group(1), marker.group(2)
            if action == "skip":
                argument = argument.strip()
                if not (argument.startswith("(") and argument.endswith(")") and argument[1:-1]):
                    raise AssertionError(
                        f"{name}:{index}: a skip marker without a reason "
                        "in parentheses: <!-- docs-test: skip (REASON) -->"
                    )
        elif language in RUN_LANGUAGES:
            action, argument = "run", ""
        else:
            action, argument = "data", ""
        blocks.append(
            Block(
                name,
                index + 2,
                language,
                "\n".join(lines[index + 1 : end]) + "\n",
                action,
                argument,
            )
        )
        index = end + 1
    return blocks


def _pages_with_runnable_blocks() -> list[Path]:
    return [
        page for page in PAGES if any(block.action in ("run", "file") for block in blocks_of(page))
    ]


def _page_cases() -> list:
    """`_pages_with_runnable_blocks`, each named by its path."""
    return [
        pytest.param(page, id=str(page.relative_to(REPO))) for page in _pages_with_runnable_blocks()
    ]


def test_every_block_names_a_known_language():
    unknown = [
        f"{block.page}:{block.line - 1}: ```{block.language}"
        for page in PAGES
        for block in blocks_of(page)
        if block.language not in RUN_LANGUAGES | DATA_LANGUAGES
    ]
    assert not unknown, (
        "code blocks must be python or bash (run), or toml or text (data): " + "; ".join(unknown)
    )


def test_every_skipped_block_says_why():
    skipped = [block for page in PAGES for block in blocks_of(page) if block.action == "skip"]
    for block in skipped:
        assert len(block.argument) > len("(needs)"), f"{block.page}:{block.line}"
    # Skipping is the exception: most blocks run.
    runnable = [block for page in PAGES for block in blocks_of(page) if block.action == "run"]
    assert len(skipped) * 5 < len(runnable), [f"{b.page}:{b.line}" for b in skipped]


def test_a_block_without_a_reason_to_skip_is_refused(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- docs-test: skip () -->\n```python\nprint(1)\n```\n")
    with pytest.raises(AssertionError, match="without a reason"):
        blocks_of(page)


# The driver: runs one page's blocks in order in its own process (so a block's workers, named
# objects and globals cannot leak into the test process or another page).
_DRIVER = textwrap.dedent("""
    import json, os, re, subprocess, sys, traceback
    blocks = json.load(open(sys.argv[1]))
    namespace = {"__name__": "__main__"}
    for block in blocks:
        where = f"{block['page']}:{block['line']}"
        print(f"--- {where} ({block['language']}, {block['action']})", flush=True)
        if block["action"] == "file":
            with open(block["argument"], "w") as file:
                file.write(block["code"])
        elif block["language"] == "python":
            # Line numbers in tracebacks are the page's.
            code = compile("\\n" * (block["line"] - 1) + block["code"], block["page"], "exec")
            try:
                exec(code, namespace)
            except BaseException:
                traceback.print_exc()
                print(f"FAILED: the python block at {where}", flush=True)
                sys.exit(1)
        else:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block["code"]])
            if done.returncode != 0:
                print(f"FAILED: the bash block at {where}: exit status {done.returncode}",
                      flush=True)
                sys.exit(1)
    print("ALL BLOCKS RAN", flush=True)
""")


def _runnable(block: Block) -> dict:
    entry = asdict(block)
    if block.language == "bash" and block.action == "run":
        entry["code"] = "\n".join(_PIP_PREFIX.sub("", line) for line in block.code.splitlines())
    return entry


@pytest.mark.slow  # the pages' trainings, each page in a process of its own
@pytest.mark.parametrize("page", _page_cases())
def test_the_code_blocks_of_the_page_run(page, tmp_path):
    blocks = [_runnable(block) for block in blocks_of(page) if block.action in ("run", "file")]
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "driver.py").write_text(_DRIVER)
    work = tmp_path / "work"
    work.mkdir()
    # `python` in bash blocks is this interpreter; worker processes import this tree. A script
    # that runs it, not a symlink: a link to a virtual environment's python, placed outside the
    # environment's folder, starts the base interpreter without the environment's packages.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "HOME": str(tmp_path / "home"),
        "MPLBACKEND": "Agg",
    }
    process = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "blocks.json")],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=PAGE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        output, _ = process.communicate(timeout=60)
        pytest.fail(
            f"{page.name}: its blocks did not finish within {PAGE_TIMEOUT_S} s:\n" + output[-6000:]
        )
    assert process.returncode == 0 and output.rstrip().endswith("ALL BLOCKS RAN"), (
        f"{page.name}:\n{output[-8000:]}"
    )


# -- generated pages and the site ----------------------------------------------------------
def test_the_readme_benchmark_summary_is_rendered_from_the_benchmarks_page():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import report
    finally:
        sys.path.remove(str(REPO / "bench"))
    page = report.PAGE.read_text(encoding="utf-8")
    rows = report.parse_rows(page)
    assert page == report.render_page(rows), (
        "docs/BENCHMARKS.md is not as bench/report.py writes it: run python bench/report.py"
    )
    readme = report.README.read_text(encoding="utf-8")
    start = readme.index(report.README_BEGIN) + len(report.README_BEGIN)
    assert readme[start : readme.index(report.README_END)] == report.readme_summary(rows), (
        "the README's benchmark summary is stale: run python bench/report.py"
    )
    assert {name for name, row in rows.items() if row["result"] != report.NOT_RUN}, (
        "docs/BENCHMARKS.md holds no result"
    )


def test_the_readme_is_a_product_page_not_the_manual():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 300
    # .ci/run runs the line starting with this; the first command installs what it promises.
    assert re.search(r"^pip install -e '\.\[test\]' && ", readme, re.M)
    first = next(block for block in blocks_of(REPO / "README.md") if block.language == "bash")
    assert first.code.startswith("pip install -e '.[plot,tensorboard]' && python -m trainer")


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip(
        "mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'"
    )
    pytest.importorskip("material", reason="mkdocs-material is not installed")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-8000:]
    assert (tmp_path / "site" / "api" / "algorithm" / "index.html").exists()
    assert "save_to_path" in (tmp_path / "site" / "api" / "algorithm" / "index.html").read_text()


def test_the_readme_links_resolve():
    """The README is read on the repository's page, outside the site: its relative links must
    name files that exist (the site's own links are checked by the strict build)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    relative = [target for target in targets if "://" not in target]
    assert relative, "the README links to no docs page"
    missing = [target for target in relative if not (REPO / target).exists()]
    assert not missing, f"README links to missing files: {missing}"
