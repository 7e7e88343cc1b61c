"""Writes RLlib's record of classes and their members (`trainer.util.rllib_members`, whose
docstring says what it holds) from the installed Ray 2.60 wheel's source; nothing of Ray is
imported.

    python -m trainer.compat.rllib_members_record           # writes the data file
    python -m trainer.compat.rllib_members_record --check   # exit 1 when it differs (a test)

The classes are those RLlib's record of modules and names (`trainer.launcher.rllib_names`) lists
as defined in a module, less the old API stack (a module or name the launcher's table refuses as
`OLD_API_STACK`), plus every base class inside `ray` that one of them inherits from.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

from trainer.capabilities import OLD_API_STACK
from trainer.compat.rllib_names_record import render_record, write_or_check
from trainer.compat.rllib_surface import SourceIndex, SurfaceReader, ray_version
from trainer.launcher import table
from trainer.launcher.rllib_names import CLASS, rllib_names
from trainer.util.rllib_members import (
    CLASSMETHOD,
    CONSTRUCTOR,
    DATA_FILE,
    METHOD,
    PROPERTY,
    STATICMETHOD,
)


def old_stack(module: str, name: str) -> bool:
    """Whether the launcher's table refuses RLlib's `module.name` as the old API stack."""
    path = max(
        (p for p in table.UNAVAILABLE_MODULES if module == p or module.startswith(p + ".")),
        key=len,
        default=None,
    )
    if path is not None and table.UNAVAILABLE_MODULES[path].capability == OLD_API_STACK:
        return True
    for refused in table.UNAVAILABLE_NAMES.values():
        why = refused.get(name)
        if why is not None and why.capability == OLD_API_STACK:
            return True
    why = table.UNAVAILABLE_NAMES.get(module, {}).get("*")
    return why is not None and why.capability == OLD_API_STACK


def _decorators(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = []
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.append(ast.unparse(target))
    return names


def _raises_when_called(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`@Deprecated(..., error=True)`: RLlib raises on every call, no working code calls it."""
    for decorator in func.decorator_list:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("Deprecated"):
            for keyword in decorator.keywords:
                if keyword.arg == "error" and isinstance(keyword.value, ast.Constant):
                    return keyword.value.value is True
    return False


def signature_text(func: ast.FunctionDef | ast.AsyncFunctionDef, *, bound: bool) -> str:
    """The parameters as one line: `a, b=, *args, c=, **kw` (`=`: has a default; a `*` marks
    the keyword-only ones where there is no `*args`), `self` / `cls` left out."""
    args = func.args
    positional = list(args.posonlyargs) + list(args.args)
    defaulted = len(positional) - len(args.defaults)
    parts = [a.arg + ("=" if i >= defaulted else "") for i, a in enumerate(positional)]
    if bound and parts:
        parts = parts[1:]
    if args.vararg:
        parts.append("*" + args.vararg.arg)
    elif args.kwonlyargs:
        parts.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        parts.append(arg.arg + ("=" if default is not None else ""))
    if args.kwarg:
        parts.append("**" + args.kwarg.arg)
    return ", ".join(parts)


def _member(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The member's record (`kind(signature)`, a `!` after the kind where RLlib marks it a hook
    to override), or None where it is not recorded."""
    name = func.name
    if name.startswith("__") and name != "__init__":
        return None
    decorators = _decorators(func)
    if any(d.endswith((".setter", ".deleter")) for d in decorators) or _raises_when_called(func):
        return None
    hook = "!" if any("OverrideToImplementCustomLogic" in d for d in decorators) else ""
    if name == "__init__":
        return f"{CONSTRUCTOR}({signature_text(func, bound=True)})"
    if any(d == "property" or d.endswith("cached_property") for d in decorators):
        return PROPERTY + hook
    if "staticmethod" in decorators:
        return f"{STATICMETHOD}{hook}({signature_text(func, bound=False)})"
    kind = CLASSMETHOD if "classmethod" in decorators else METHOD
    return f"{kind}{hook}({signature_text(func, bound=True)})"


def _class_record(reader: SurfaceReader, qualified: str) -> tuple[dict[str, Any], list[str]]:
    """The class's record (its bases inside `ray`, its own members) and those bases."""
    module, node = reader.class_node(qualified)
    bases = []
    for base in node.bases:
        resolved = reader.index.resolve_expression(module, base)
        if resolved is not None and isinstance(resolved[1], ast.ClassDef):
            bases.append(f"{resolved[0]}.{resolved[1].name}")
    members: dict[str, str] = {}
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            text = _member(statement)
            if text is not None:  # a property's setter (None) leaves the property
                members[statement.name] = text
    record: dict[str, Any] = {"m": dict(sorted(members.items()))}
    if bases:
        record["b"] = bases
    return record, bases


def generate() -> dict[str, Any]:
    """The data, read from the installed Ray wheel's source (nothing of it is imported)."""
    reader = SurfaceReader(SourceIndex())
    names = rllib_names()
    classes: dict[str, dict[str, Any]] = {}
    old: list[str] = []
    pending: list[tuple[str, bool]] = []
    for module in names.modules():
        for name in names.names(module):
            record = names.record(module, name)
            if record is None or record.kind != CLASS:
                continue
            if old_stack(module, name):
                old.append(f"{module}.{name}")
                continue
            pending.append((f"{module}.{name}", True))
    while pending:
        qualified, recorded = pending.pop()
        if qualified in classes:
            if recorded:
                classes[qualified].pop("x", None)
            continue
        try:
            defining_module, node = reader.class_node(qualified)
        except LookupError:
            continue
        if f"{defining_module}.{node.name}" != qualified:
            continue  # a name bound to a class defined elsewhere: recorded there
        entry, bases = _class_record(reader, qualified)
        if not recorded:
            entry["x"] = 1  # a base class only, not one of the recorded modules' classes
        classes[qualified] = entry
        pending += [(base, False) for base in bases if base not in classes]
    return {"ray_version": ray_version(), "old_stack": sorted(old), "classes": classes}


def render(data: dict[str, Any]) -> str:
    """The file's text: one line per class."""
    head = {"ray_version": data["ray_version"], "old_stack": data["old_stack"]}
    return render_record(head, "classes", data["classes"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = render(generate())
    return write_or_check(DATA_FILE, text, "trainer.compat.rllib_members_record", argv)


if __name__ == "__main__":
    sys.exit(main())
