"""Writes RLlib's record of modules and names (`trainer.launcher.rllib_names`, whose docstring
says what it holds) from the installed Ray 2.60 wheel's source; nothing of Ray is imported.

    python -m trainer.compat.rllib_names_record           # writes the data file
    python -m trainer.compat.rllib_names_record --check   # exit 1 when it differs (a test runs it)
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainer.compat.rllib_surface import UNEVALUATED, SourceIndex, ray_version
from trainer.launcher.rllib_names import (
    ALIAS,
    CLASS,
    CONSTANT,
    DATA_FILE,
    FUNCTION,
    MODULE,
    VALUE,
)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _bound_statements(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that bind a module's top-level names when it runs: into `if`, `try` and
    `with` blocks, not into `if TYPE_CHECKING:` (bound for type checkers only)."""
    for node in statements:
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _bound_statements(node.body)
            yield from _bound_statements(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _bound_statements(node.body)
            for handler in node.handlers:
                yield from _bound_statements(handler.body)
            yield from _bound_statements(node.orelse)
            yield from _bound_statements(node.finalbody)
        elif isinstance(node, ast.With):
            yield from _bound_statements(node.body)
        else:
            yield node


def _included(parts: list[str]) -> bool:
    """Whether a module of the wheel's `ray/rllib` (its path parts, from "ray") is recorded."""
    if "tests" in parts or parts[-1].startswith("test_") or parts[-1] == "conftest":
        return False
    if len(parts) > 2 and parts[2] == "examples":
        return len(parts) == 3 or "classes" in parts or "utils" in parts[3:]
    return True


def wheel_modules(root: Path) -> list[tuple[str, Path]]:
    """(dotted name, file) of every recorded module under the wheel's `ray/rllib`."""
    found = []
    for path in sorted((root / "rllib").rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if not _included(parts):
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.append((".".join(parts), path))
    return found


def _targets(node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[str]:
    """The module-level names an assignment binds (`a = b = ...`, `a, b = ...`; not the
    attribute or item of `a.x = ...` / `a[0] = ...`)."""

    def bound(target: ast.expr) -> list[str]:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, ast.Starred):
            return bound(target.value)
        if isinstance(target, (ast.Tuple, ast.List)):
            return [name for element in target.elts for name in bound(element)]
        return []

    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [name for target in targets for name in bound(target)]


def _literal_repr(value: Any) -> str | None:
    """The repr of a literal value that `ast.literal_eval` reads back as equal, or None."""
    try:
        text = repr(value)
        return text if ast.literal_eval(text) == value else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _module_record(index: SourceIndex, module: str, tree: ast.Module) -> dict[str, Any]:
    kinds: dict[str, Any] = {}

    def put(name: str, kind: str, value: Any = None) -> None:
        for other in (CLASS, FUNCTION, VALUE):  # a later binding replaces an earlier one
            if name in kinds.get(other, ()):
                kinds[other].remove(name)
        for other in (CONSTANT, ALIAS, MODULE):
            kinds.get(other, {}).pop(name, None)
        if kind in (CLASS, FUNCTION, VALUE):
            kinds.setdefault(kind, []).append(name)
        else:
            kinds.setdefault(kind, {})[name] = value

    def from_ray(source: str, name: str, bound: str) -> None:
        """A name imported from the `ray` module `source`: a constant's value, a module, or an
        alias to where it is defined."""
        if index.module_path(f"{source}.{name}") is not None:
            put(bound, MODULE, f"{source}.{name}")
            return
        definition = index.definition(source, name)
        if definition is not None and isinstance(definition[1], (ast.Assign, ast.AnnAssign)):
            value = index.literal(definition[0], definition[1].value)
            text = None if value is UNEVALUATED else _literal_repr(value)
            if text is not None:
                put(bound, CONSTANT, text)
                return
        origin = definition[0] if definition is not None else source
        put(bound, ALIAS, origin if name == bound else f"{origin}:{name}")

    for node in _bound_statements(tree.body):
        if isinstance(node, ast.ClassDef):
            put(node.name, CLASS)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            put(node.name, FUNCTION)
        elif isinstance(node, ast.ImportFrom):
            source = index.absolute(module, node)
            if source != "ray" and not source.startswith("ray."):
                continue
            for alias in node.names:
                if alias.name != "*":
                    from_ray(source, alias.name, alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ray" and alias.asname:
                    put(alias.asname, MODULE, alias.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if _targets(node) == ["__all__"] and node.value is not None:
                value = index.literal(module, node.value)
                if isinstance(value, (list, tuple)):
                    kinds["all"] = [str(name) for name in value]
                continue
            value = UNEVALUATED
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and len(_targets(node)) == 1:
                value = index.literal(module, node.value)
            text = None if value is UNEVALUATED else _literal_repr(value)
            for name in _targets(node):
                if text is not None:
                    put(name, CONSTANT, text)
                else:
                    put(name, VALUE)
    # Private names are kept where the module defines them (scripts import RLlib's
    # `_dummy_external_client`), not where it imports them; dunders are Python's.
    recorded: dict[str, Any] = {}
    for kind, names in kinds.items():
        if kind == "all":
            recorded[kind] = names
            continue

        if isinstance(names, dict):
            kept_items = {n: v for n, v in sorted(names.items()) if _kept(n, kind)}
            if kept_items:
                recorded[kind] = kept_items
        else:
            kept_names = sorted(n for n in set(names) if _kept(n, kind))
            if kept_names:
                recorded[kind] = kept_names
    return recorded


def _kept(name: str, kind: str) -> bool:
    """Whether a name of a module is recorded: not a dunder; a private one only where the
    module defines it."""
    return not name.startswith("__") and (not name.startswith("_") or kind not in (ALIAS, MODULE))


def generate() -> dict[str, Any]:
    """The data, read from the installed Ray wheel's source (nothing of it is imported)."""
    index = SourceIndex()
    modules: dict[str, Any] = {}
    packages = []
    for module, path in wheel_modules(index.root):
        tree = index.module(module)
        if tree is None:
            continue
        modules[module] = _module_record(index, module, tree)
        if path.name == "__init__.py":
            packages.append(module)
    return {"ray_version": ray_version(), "packages": packages, "modules": modules}


def render_record(head: dict[str, Any], table: str, rows: dict[str, Any]) -> str:
    """A record file's text: the `head` entries, then `table` with one line per row (sorted),
    so that a change to RLlib is a small diff."""
    lines = ["{", *(f"{json.dumps(key)}: {json.dumps(value)}," for key, value in head.items())]
    lines.append(f"{json.dumps(table)}: {{")
    items = sorted(rows.items())
    for i, (name, record) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(name)}: {json.dumps(record, sort_keys=True)}{comma}")
    lines += ["}", "}", ""]
    return "\n".join(lines)


def write_or_check(data_file: Path, text: str, writer: str, argv: list[str]) -> int:
    """Writes a record file, or with `--check` in `argv` exits 1 when it differs from `text`
    (naming the `writer` module that rewrites it)."""
    if "--check" in argv:
        current = data_file.read_text(encoding="utf-8") if data_file.exists() else ""
        if current != text:
            print(f"{data_file} is stale: run python -m {writer}")
            return 1
        return 0
    data_file.write_text(text, encoding="utf-8")
    print(f"wrote {data_file}")
    return 0


def render(data: dict[str, Any]) -> str:
    """The file's text: one line per module."""
    head = {"ray_version": data["ray_version"], "packages": sorted(data["packages"])}
    return render_record(head, "modules", data["modules"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return write_or_check(DATA_FILE, render(generate()), "trainer.compat.rllib_names_record", argv)


if __name__ == "__main__":
    sys.exit(main())
