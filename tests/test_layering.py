"""The package's layers, checked from the source: the lowest layers import nothing above them.

`trainer.util` (helpers) imports nothing of `trainer` but itself and `trainer.errors`;
`trainer.checkpoints` (the on-disk format) does not import `trainer.algorithms` (which uses
it). Every import counts: at module level, inside functions, and relative ones. Also: the
EnvRunner's import path of earlier releases names the same classes as its home.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest

#: The directory that holds the `trainer` package.
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path, root: Path = SOURCE_ROOT) -> str:
    """The dotted name of the module in the file at `path` under `root`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, absolute name) of every import in the file at `path`, whose module is `module`;
    `from X import Y` gives `X` and `X.Y` (Y may be a submodule)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: `from ..x import y` climbs level - 1 packages
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.append((node.lineno, base))
            found += [
                (node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"
            ]
    return found


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def violations(package: str, allowed: Callable[[str], bool], root: Path = SOURCE_ROOT) -> list[str]:
    """Every import of `trainer` in the modules of `package` (under `root`) that `allowed`
    refuses, as "path:line imports name"."""
    found = []
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        for line, name in imported_modules(path, module_name(path, root)):
            if within(name, "trainer") and not allowed(name):
                found.append(f"{path.relative_to(root)}:{line} imports {name}")
    return found


def test_util_imports_only_util_and_errors():
    assert (
        violations(
            "trainer.util",
            lambda name: within(name, "trainer.util") or within(name, "trainer.errors"),
        )
        == []
    )


def test_checkpoints_do_not_import_algorithms():
    assert (
        violations("trainer.checkpoints", lambda name: not within(name, "trainer.algorithms")) == []
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import trainer.checkpoints.codec\n", ["trainer.checkpoints.codec"]),
        (
            "def f():\n    from trainer.algorithms import algorithm\n",
            ["trainer.algorithms", "trainer.algorithms.algorithm"],
        ),
        (
            "from ..algorithms.ppo import PPO\n",
            ["trainer.algorithms.ppo", "trainer.algorithms.ppo.PPO"],
        ),
        ("from . import rng\n", ["trainer.util", "trainer.util.rng"]),
        ("from trainer import *\n", ["trainer"]),
    ],
)
def test_the_import_reader_sees_every_kind_of_import(tmp_path, source, expected):
    probe = tmp_path / "trainer" / "util" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(source)
    assert module_name(probe, tmp_path) == "trainer.util.probe"
    assert [name for _, name in imported_modules(probe, "trainer.util.probe")] == expected


def test_a_violation_is_reported_with_its_place(tmp_path):
    probe = tmp_path / "trainer" / "util" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("import os\n\n\ndef f():\n    from trainer.checkpoints import codec\n")
    assert violations("trainer.util", lambda name: within(name, "trainer.util"), tmp_path) == [
        "trainer/util/probe.py:5 imports trainer.checkpoints",
        "trainer/util/probe.py:5 imports trainer.checkpoints.codec",
    ]


def test_the_env_runner_keeps_its_earlier_import_path():
    import trainer
    from trainer.env import env_runner as earlier
    from trainer.runners import env_runner as home

    assert earlier.EnvRunner is home.EnvRunner is trainer.EnvRunner
    assert earlier.SingleAgentEnvRunner is home.SingleAgentEnvRunner
    assert earlier.StepFailedRecreateEnvError is trainer.StepFailedRecreateEnvError
