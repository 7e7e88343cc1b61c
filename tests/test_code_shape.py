"""The shape of the sampling code, checked from the source: no function or method in
`trainer/runners` or `trainer/env` is longer than `MAX_LINES` lines (from its `def` line to its
last line, decorators not counted) or of a cyclomatic complexity above `MAX_COMPLEXITY` (ruff's
mccabe check, C901). A function that grows past either is split into named steps, as the
runners' rollout loops are: each step small, the data flow written in the docstring of the
function that calls them.

Each failure names every offending function with its size, so one run lists all there is to do.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

#: The directory that holds the `trainer` package.
SOURCE_ROOT = Path(__file__).resolve().parent.parent
#: The packages checked, relative to `SOURCE_ROOT`.
CHECKED = ("trainer/runners", "trainer/env")
#: The most lines a function may have, its `def` line and its last line included.
MAX_LINES = 80
#: The highest cyclomatic complexity (mccabe's, as ruff counts it) a function may have.
MAX_COMPLEXITY = 20


def long_functions(root: Path = SOURCE_ROOT) -> list[str]:
    """One line per function or method over `MAX_LINES` lines: its file, line, name and size."""
    found = []
    for package in CHECKED:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                assert node.end_lineno is not None
                size = node.end_lineno - node.lineno + 1
                if size > MAX_LINES:
                    where = path.relative_to(root).as_posix()
                    found.append(f"{where}:{node.lineno}: {node.name} has {size} lines")
    return found


def complex_functions(root: Path = SOURCE_ROOT) -> list[str]:
    """ruff's C901 findings over `CHECKED` (one line each: file, line, name, complexity)."""
    command = [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "--select",
        "C901",
        "--config",
        f"lint.mccabe.max-complexity={MAX_COMPLEXITY}",
        "--output-format",
        "concise",
        "--no-cache",
        *CHECKED,
    ]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    found = [line for line in done.stdout.splitlines() if " C901 " in line]
    # ruff exits 0 when clean and 1 with findings; anything else (1 without findings: no
    # ruff installed, say) means nothing was checked.
    checked = (done.returncode, bool(found)) in ((0, False), (1, True))
    assert checked, f"ruff did not run ({done.returncode}):\n{done.stdout}{done.stderr}"
    return found


def test_no_function_over_max_lines() -> None:
    found = long_functions()
    assert not found, f"over {MAX_LINES} lines (split into named steps):\n" + "\n".join(found)


def test_no_function_over_max_complexity() -> None:
    found = complex_functions()
    assert not found, f"complexity over {MAX_COMPLEXITY}:\n" + "\n".join(found)


def test_the_checks_see_an_offender(tmp_path: Path) -> None:
    """The checks catch what they are for: a long and branchy function in a checked package."""
    branches = "".join(f"    if x == {i}:\n        x += {i}\n" for i in range(MAX_LINES))
    body = f"def sprawling(x):\n{branches}    return x\n"
    for package in CHECKED:
        (tmp_path / package).mkdir(parents=True)
    (tmp_path / CHECKED[0] / "sprawl.py").write_text(body, encoding="utf-8")
    size = len(body.splitlines())
    assert long_functions(tmp_path) == [f"{CHECKED[0]}/sprawl.py:1: sprawling has {size} lines"]
    (finding,) = complex_functions(tmp_path)
    assert "sprawl.py:1:5: C901 `sprawling` is too complex" in finding
