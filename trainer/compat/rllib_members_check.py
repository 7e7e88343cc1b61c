"""RLlib 2.60's classes, measured member by member against their counterparts here.

For every class of RLlib's record of classes (`trainer.util.rllib_members`) that this project
serves (the launcher's table maps its module here, and the name is no placeholder), every member
RLlib defines on it or on one of its bases inside `ray` is looked for on the counterpart, with
`inspect.getattr_static` (no descriptor runs, no refusal fires at lookup):

- missing: neither the class, its bases, nor its `__init__` (an attribute `self.x = ...`) has it;
- kind: RLlib's method is a property here, or the reverse; RLlib's classmethod or staticmethod
  is an instance method here (callers call it on the class);
- signature: a parameter RLlib's callers can pass by name is not taken (same name, or a
  `**kwargs`; RLlib's own `_private=` parameters aside), fewer arguments can be passed by
  position than RLlib requires (a defaulted one taken by keyword only is fine: RLlib's callers
  pass those by name), or more are required (by position, or a keyword RLlib does not require);
- lookup: reading it on the class raises (a refusal must wait for the call).

A finding is keyed `Owner.member`, the owner the RLlib class that defines the member, so one
row of the gap table (`trainer.compat.rllib_member_gaps`) stands for it in every subclass.

    python -m trainer.compat.rllib_members_check [--all] [NAME ...]

prints the findings that neither the gap table nor the deliberate-differences table names
(`--all`: every finding; NAMEs keep those whose key or class contains one of them), then the
counts: classes checked, members missing (public / protected), other findings.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainer.compat.differences import all_differences
from trainer.compat.rllib_member_gaps import GAPS
from trainer.compat.rllib_surface import SourceIndex
from trainer.launcher import finder
from trainer.util.rllib_members import (
    CLASSMETHOD,
    CONSTRUCTOR,
    KEYWORD,
    POSITIONAL,
    PROPERTY,
    STATICMETHOD,
    RLlibMember,
    RLlibMembers,
    rllib_members,
)

MISSING, KIND, SIGNATURE, LOOKUP = "missing", "kind", "signature", "lookup"


@dataclass(frozen=True)
class Finding:
    """A member of RLlib's that is missing here or does not fit."""

    #: RLlib's qualified class name the member was checked on.
    rllib_class: str
    #: `Owner.member` (the owner: RLlib's class that defines it).
    key: str
    #: MISSING, KIND, SIGNATURE or LOOKUP.
    problem: str
    detail: str = ""
    protected: bool = False

    def line(self) -> str:
        where = self.rllib_class.rpartition(".")[2]
        return f"{self.key} (on {where}): {self.problem}" + (
            f": {self.detail}" if self.detail else ""
        )


@dataclass
class Measurement:
    """What a run of the check saw."""

    classes: int = 0
    #: RLlib classes whose counterpart here is a placeholder (refused whole), by name.
    placeholders: list[str] = field(default_factory=list)
    #: RLlib classes served by RLlib's own code (example modules run from the wheel's file).
    wheel: list[str] = field(default_factory=list)
    #: RLlib classes with no served counterpart that is a class (not mapped, or a function).
    unserved: list[str] = field(default_factory=list)
    public: int = 0
    protected: int = 0
    findings: list[Finding] = field(default_factory=list)

    def missing_keys(self, protected: bool) -> set[str]:
        return {f.key for f in self.findings if f.problem == MISSING and f.protected == protected}

    def missing_checks(self, protected: bool) -> int:
        return sum(1 for f in self.findings if f.problem == MISSING and f.protected == protected)


@functools.cache
def _difference_reasons() -> dict[str, str]:
    """The deliberate-differences table's API rows (`Class.member` keys), with why."""
    return {row.rllib: f"{row.here}; {row.why}" for row in all_differences()}


def gap_reason(key: str) -> str | None:
    """Why `Owner.member` is absent or different here: its row in the gap table, else in the
    deliberate-differences table; None where neither names it."""
    return GAPS.get(key) or _difference_reasons().get(key)


def counterpart(rllib_class: str) -> Any:
    """This project's object for RLlib's class (a placeholder where it has none), found the way
    the launcher finds it; None where the module is not served at all."""
    module, _, name = rllib_class.rpartition(".")
    found = finder.resolve_rllib_name(module, name)
    if found is not None:
        return found
    plan = finder.plan_for(module)
    if plan.kind in ("rllib", "lenient", "map"):
        return finder.placeholder(rllib_class, plan.why)
    return None


def _static(cls: type, name: str) -> Any:
    try:
        return inspect.getattr_static(cls, name)
    except AttributeError:
        return _ABSENT


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()


def _function_of(found: Any) -> tuple[Any, bool]:
    """(the callable to read a signature from, whether its first parameter is bound)."""
    if isinstance(found, staticmethod):
        return found.__func__, False
    if isinstance(found, classmethod):
        return found.__func__, True
    if inspect.isfunction(found):
        return found, True
    return found, False


def signature_problems(member: RLlibMember, here: Any, *, bound: bool) -> list[str]:
    """Why RLlib's callers of `member` would fail on `here` (empty when they would not)."""
    try:
        signature = inspect.signature(here)
    except (TypeError, ValueError):
        return []
    params = list(signature.parameters.values())
    if (
        bound
        and params
        and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)
    ):
        params = params[1:]
    by_name = {p.name: p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_keyword = any(p.kind == p.VAR_KEYWORD for p in params)
    var_positional = any(p.kind == p.VAR_POSITIONAL for p in params)
    positional_here = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    problems = []
    theirs = [p for p in member.parameters if p.kind in (POSITIONAL, KEYWORD)]
    for parameter in theirs:
        if parameter.name.startswith("_") or parameter.name in by_name or var_keyword:
            continue
        problems.append(f"takes no {parameter.name}=")
    their_positional = [p for p in theirs if p.kind == POSITIONAL]
    required_theirs = {p.name for p in theirs if not p.has_default}
    required_positional = sum(1 for p in their_positional if not p.has_default)
    if len(positional_here) < required_positional and not var_positional:
        problems.append(
            f"takes {len(positional_here)} arguments by position, RLlib requires "
            f"{required_positional}"
        )
    # A required parameter here is fine where RLlib requires it too: by position (one of
    # its first required positional ones) or by name (RLlib's callers pass it).
    required_here = [
        p
        for index, p in enumerate(positional_here)
        if p.default is p.empty and index >= required_positional and p.name not in required_theirs
    ]
    if required_here:
        problems.append(f"requires {', '.join(p.name for p in required_here)}, RLlib does not")
    for p in params:
        if p.kind == p.KEYWORD_ONLY and p.default is p.empty and p.name not in required_theirs:
            problems.append(f"requires {p.name}=, RLlib does not")
    return problems


def check_member(
    cls: type, member: RLlibMember, instance_names: set[str]
) -> tuple[str, str] | None:
    """(problem, detail) of RLlib's `member` on our `cls`, or None where it fits."""
    found = _static(cls, member.name)
    if member.kind == CONSTRUCTOR:
        found = _static(cls, "__init__")
        if found is object.__init__:
            return None
        problems = signature_problems(member, found, bound=True)
        return (SIGNATURE, "; ".join(problems)) if problems else None
    if found is _ABSENT:
        if member.name in instance_names:
            return None if member.kind == PROPERTY else (KIND, "an attribute set in __init__")
        return MISSING, ""
    try:
        getattr(cls, member.name)
    except AttributeError:
        pass  # an instance attribute, or a slot: read on instances
    except Exception as error:  # noqa: BLE001 - any raise at lookup is the finding
        return LOOKUP, f"reading it on the class raises {type(error).__name__}: {error}"
    if member.kind == PROPERTY:
        if inspect.isfunction(found) or isinstance(found, (staticmethod, classmethod)):
            return KIND, "a property in RLlib, a method here"
        return None
    if isinstance(found, property):
        return KIND, "a method in RLlib, a property here"
    if member.kind in (CLASSMETHOD, STATICMETHOD) and inspect.isfunction(found):
        return KIND, "called on the class in RLlib, an instance method here"
    if not callable(found) and not isinstance(found, (staticmethod, classmethod)):
        return KIND, f"a method in RLlib, {type(found).__name__} here"
    function, bound = _function_of(found)
    problems = signature_problems(member, function, bound=bound)
    return (SIGNATURE, "; ".join(problems)) if problems else None


def measure(selected: tuple[str, ...] = ()) -> Measurement:
    """Checks every served recorded class (or those whose name contains one of `selected`)."""
    record = rllib_members()
    measurement = Measurement()
    for rllib_class in record.classes():
        if selected and not any(s in rllib_class for s in selected):
            continue
        here = counterpart(rllib_class)
        if here is not None and finder.is_placeholder(here):
            measurement.placeholders.append(rllib_class)
            continue
        if not isinstance(here, type):
            measurement.unserved.append(rllib_class)
            continue
        if here.__module__.split(".")[0] == "ray":
            measurement.wheel.append(rllib_class)
            continue
        measurement.classes += 1
        measurement.findings += list(_check_class(rllib_class, here))
    return measurement


@functools.cache
def _module_tree(module: str) -> ast.Module | None:
    source = getattr(sys.modules.get(module), "__file__", None)
    if not source or not source.endswith(".py"):
        return None
    with open(source, encoding="utf-8") as file:
        return ast.parse(file.read())


@functools.cache
def _own_instance_names(klass: type) -> frozenset[str]:
    """The attributes the class declares (annotations) and those its methods set
    (`self.<name> = ...`, read from its module's source)."""
    tree = _module_tree(klass.__module__)
    # Attributes the class declares (`module: Any`): every instance has them.
    names: set[str] = set(vars(klass).get("__annotations__", {}))
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
            for inner in ast.walk(node):
                targets = (
                    inner.targets
                    if isinstance(inner, ast.Assign)
                    else [inner.target]
                    if isinstance(inner, (ast.AnnAssign, ast.AugAssign))
                    else []
                )
                names.update(
                    t.attr
                    for t in targets
                    if isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                )
    return frozenset(names)


def instance_names(cls: type) -> set[str]:
    """The attributes the methods of `cls` and its bases set on `self`."""
    return {name for klass in cls.__mro__ for name in _own_instance_names(klass)}


def _check_class(rllib_class: str, here: type) -> Iterator[Finding]:
    names: set[str] | None = None
    for member in rllib_members().members(rllib_class).values():
        if names is None:
            names = instance_names(here)
        result = check_member(here, member, names)
        if result is not None:
            yield Finding(rllib_class, member.key, result[0], result[1], member.protected)


def _wheel_module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def protected_overrides(index: SourceIndex | None = None) -> dict[str, set[str]]:
    """The protected members of recorded classes that RLlib's own examples and tests override
    (read from the installed wheel's source): `Owner._member` -> the overriding classes. What
    RLlib's code overrides, users' scripts override too; each must be here."""
    index = index or SourceIndex()
    record = rllib_members()
    found: dict[str, set[str]] = {}
    for path in sorted((index.root / "rllib").rglob("*.py")):
        module = _wheel_module_name(path, index.root)
        parts = module.split(".")
        if not ("examples" in parts or "tests" in parts or parts[-1].startswith("test_")):
            continue
        tree = index.module(module)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef):
                _add_overrides(index, record, module, node, found)
    return found


def _add_overrides(
    index: SourceIndex,
    record: RLlibMembers,
    module: str,
    node: ast.ClassDef,
    found: dict[str, set[str]],
) -> None:
    members: dict[str, RLlibMember] = {}
    for base in node.bases:
        resolved = index.resolve_expression(module, base)
        if resolved is None or not isinstance(resolved[1], ast.ClassDef):
            continue
        qualified = f"{resolved[0]}.{resolved[1].name}"
        if record.has_class(qualified):
            for name, member in record.members(qualified).items():
                members.setdefault(name, member)
    for statement in node.body:
        if (
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name in members
            and members[statement.name].protected
        ):
            found.setdefault(members[statement.name].key, set()).add(f"{module}.{node.name}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    show_all = "--all" in argv
    names = tuple(a for a in argv if not a.startswith("--"))
    measurement = measure()
    shown = [
        f
        for f in measurement.findings
        if (show_all or gap_reason(f.key) is None)
        and (not names or any(n in f.key or n in f.rllib_class for n in names))
    ]
    seen: set[tuple[str, str]] = set()
    for finding in shown:
        if (finding.key, finding.problem) in seen and not show_all:
            continue
        seen.add((finding.key, finding.problem))
        print(finding.line())
    print(
        f"{measurement.classes} RLlib classes checked here "
        f"({len(measurement.placeholders)} refused whole as placeholders, "
        f"{len(measurement.wheel)} run from the wheel, {len(measurement.unserved)} not "
        f"classes here); missing: {len(measurement.missing_keys(False))} public and "
        f"{len(measurement.missing_keys(True))} protected members "
        f"({measurement.missing_checks(False)} / {measurement.missing_checks(True)} "
        f"class-member pairs); "
        f"{sum(1 for f in measurement.findings if f.problem != MISSING)} kind or signature "
        f"findings; {len({f.key for f in measurement.findings if gap_reason(f.key) is None})} "
        "keys in neither the gap table nor the differences table"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
