"""RLlib 2.60's public API surface, read from the installed Ray wheel's source with `ast`.

`ray.rllib` cannot be imported here (it needs dm-tree and torch), so nothing of it is imported:
each module's file is parsed, and names are resolved the way Python would, through the module's
own `import` / `from ... import` statements (relative ones included, `__init__.py` re-exports
followed). A class's surface is what a user can reach on it:

- its constructor's parameters and its public methods (with every parameter: name, kind,
  default as source text and, where the default is a literal or a module-level literal
  constant, its value), public properties and
  class attributes, and the public attributes its `__init__` assigns (`self.x = ...`);
- inherited members, from every base class that resolves to a class inside the `ray` package
  (bases outside it, such as `abc.ABC` or `gymnasium.Env`, end the walk);
- not: names starting with `_`, and members decorated `@Deprecated(..., error=True)` (calling
  them raises in RLlib, so no working RLlib code uses them).

A module's surface is its own top-level functions, classes and constants (or `__all__`),
without its `logger` and the framework handles `try_import_tf()` and the like return.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A default that could not be turned into a Python value (`NotProvided`, a call, a class).
UNEVALUATED = object()


@dataclass(frozen=True)
class Parameter:
    """One parameter of an RLlib function, as written in its source."""

    name: str
    #: "positional", "keyword" (keyword-only), "var_positional" (*args), "var_keyword" (**kw).
    kind: str
    #: The default's source text, or None when the parameter has no default.
    default_source: str | None
    #: The default's value when it is a literal (or names a module-level literal constant),
    #: else `UNEVALUATED`.
    default: Any = field(default=UNEVALUATED, compare=False)

    #: RLlib raises as soon as a value is given (`deprecation_warning(..., error=True)` when it
    #: differs from `DEPRECATED_VALUE`): no working RLlib code passes it.
    raises_when_given: bool = False

    @property
    def has_default(self) -> bool:
        return self.default_source is not None


@dataclass(frozen=True)
class Member:
    """A public name of an RLlib class or module."""

    name: str
    #: "method", "property", "attribute" (class-level or set in `__init__`), "constructor"
    #: (`__init__`, named so), "function", "class", "constant".
    kind: str
    #: Qualified name of the class (or module) that defines it.
    owner: str
    #: For methods and functions: the parameters after `self` / `cls`.
    parameters: tuple[Parameter, ...] = ()
    #: For attributes and constants: the value when it is a literal, else `UNEVALUATED`.
    value: Any = field(default=UNEVALUATED, compare=False)
    #: For attributes and constants: the value's source text.
    value_source: str | None = None
    #: For attributes: set on instances (in `__init__`) rather than on the class.
    on_instance: bool = False
    #: For methods: the source of the function (to map builder keywords to attributes).
    node: ast.AST | None = field(default=None, compare=False, repr=False)


def ray_root() -> Path:
    """The installed `ray` package's folder (found without importing it)."""
    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "ray is not installed: pip install -e '.[test]' installs "
            "ray==2.60.0, whose RLlib source the conformance test reads"
        )
    return Path(list(spec.submodule_search_locations)[0])


def ray_version() -> str:
    """The installed Ray's version, read from `ray/_version.py` (without importing ray)."""
    tree = ast.parse((ray_root() / "_version.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and "version" in _targets(node):
            return ast.literal_eval(node.value)
    return "unknown"


class SourceIndex:
    """Parsed modules of the `ray` package by dotted name, with name resolution."""

    def __init__(self, root: Path | None = None):
        self.root = root or ray_root()
        self._parsed: dict[str, ast.Module | None] = {}

    def module_path(self, module: str) -> Path | None:
        parts = module.split(".")
        if parts[0] != "ray":
            return None
        base = self.root.joinpath(*parts[1:])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def module(self, module: str) -> ast.Module | None:
        """The parsed module (parsed once per index), or None outside `ray`."""
        if module not in self._parsed:
            path = self.module_path(module)
            self._parsed[module] = (
                None if path is None else ast.parse(path.read_text(), filename=str(path))
            )
        return self._parsed[module]

    def is_package(self, module: str) -> bool:
        path = self.module_path(module)
        return path is not None and path.name == "__init__.py"

    def absolute(self, module: str, node: ast.ImportFrom) -> str:
        """The absolute module an `ImportFrom` in `module` names."""
        if not node.level:
            return node.module or ""
        package = module if self.is_package(module) else module.rsplit(".", 1)[0]
        for _ in range(node.level - 1):
            package = package.rsplit(".", 1)[0]
        return f"{package}.{node.module}" if node.module else package

    def definition(
        self, module: str, name: str, _seen: frozenset = frozenset()
    ) -> tuple[str, ast.AST] | None:
        """(defining module, node) of top-level `name` as `module` sees it, following imports;
        None when it leads outside `ray` or nowhere."""
        if (module, name) in _seen:
            return None
        _seen = _seen | {(module, name)}
        tree = self.module(module)
        if tree is None:
            return None
        found: tuple[str, ast.AST] | None = None
        for node in _top_level(tree):
            if (
                isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == name
            ):
                found = (module, node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and name in _targets(node):
                found = (module, node)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        source = self.absolute(module, node)
                        resolved = self.definition(source, alias.name, _seen)
                        if resolved is None and self.module_path(f"{source}.{alias.name}"):
                            resolved = (
                                f"{source}.{alias.name}",
                                ast.Module(body=[], type_ignores=[]),
                            )
                        found = resolved or found
        return found

    def resolve_expression(self, module: str, expr: ast.AST) -> tuple[str, ast.AST] | None:
        """Resolves `Name` or `a.b.Name` (a module alias path) as seen from `module`."""
        if isinstance(expr, ast.Name):
            return self.definition(module, expr.id)
        if isinstance(expr, ast.Attribute):
            owner = self.resolve_expression(module, expr.value)
            if owner is not None and isinstance(owner[1], ast.Module):
                return self.definition(owner[0], expr.attr)
            dotted = _dotted(expr)
            if dotted and dotted.startswith("ray."):
                mod, _, attr = dotted.rpartition(".")
                return self.definition(mod, attr)
        return None

    def literal(self, module: str, expr: ast.AST | None, depth: int = 0) -> Any:
        """The value of `expr` when it is a literal or names a literal constant, else
        `UNEVALUATED`."""
        if expr is None:
            return UNEVALUATED
        try:
            return ast.literal_eval(expr)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if depth < 5 and isinstance(expr, (ast.Name, ast.Attribute)):
            resolved = self.resolve_expression(module, expr)
            if resolved is not None and isinstance(resolved[1], (ast.Assign, ast.AnnAssign)):
                return self.literal(resolved[0], resolved[1].value, depth + 1)
        if depth < 5 and isinstance(expr, ast.JoinedStr):
            # f"{ENV_RUNNER_RESULTS}/episode_return_mean": plain fields of literal constants.
            parts = []
            for part in expr.values:
                if isinstance(part, ast.FormattedValue):
                    if part.conversion != -1 or part.format_spec is not None:
                        return UNEVALUATED
                    part = part.value
                value = self.literal(module, part, depth + 1)
                if value is UNEVALUATED:
                    return UNEVALUATED
                parts.append(str(value))
            return "".join(parts)
        return UNEVALUATED


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """Top-level statements, including those inside `if TYPE_CHECKING:` / `try:` blocks."""
    for node in tree.body:
        if isinstance(node, ast.If):
            yield from node.body
            yield from node.orelse
        elif isinstance(node, ast.Try):
            yield from node.body
            for handler in node.handlers:
                yield from handler.body
        else:
            yield node


def _targets(node: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = []
    for target in targets:
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, ast.Tuple):
            names += [e.id for e in target.elts if isinstance(e, ast.Name)]
    return names


def _dotted(expr: ast.AST) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        head = _dotted(expr.value)
        return None if head is None else f"{head}.{expr.attr}"
    return None


def _raising_parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters whose `if <param> != DEPRECATED_VALUE:` block (or `is not NotProvided`)
    calls `deprecation_warning(..., error=True)`."""
    raising = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.If):
            continue
        # `if a != DEPRECATED_VALUE:` or `if a != DEPRECATED_VALUE or b != DEPRECATED_VALUE:`
        tests = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
        names = [
            t.left.id
            for t in tests
            if isinstance(t, ast.Compare)
            and isinstance(t.left, ast.Name)
            and len(t.ops) == 1
            and isinstance(t.ops[0], (ast.NotEq, ast.IsNot))
        ]
        if not names:
            continue
        for inner in (n for statement in node.body for n in ast.walk(statement)):
            if (
                isinstance(inner, ast.Call)
                and (_dotted(inner.func) or "").endswith("deprecation_warning")
                and any(
                    k.arg == "error" and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in inner.keywords
                )
            ):
                raising.update(names)
    return raising


def _decorator_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = []
    for dec in func.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        names.append(_dotted(target) or "")
    return names


def raises_when_called(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`@Deprecated(..., error=True)`: RLlib raises on every call."""
    for dec in func.decorator_list:
        if isinstance(dec, ast.Call) and (_dotted(dec.func) or "").endswith("Deprecated"):
            for keyword in dec.keywords:
                if (
                    keyword.arg == "error"
                    and isinstance(keyword.value, ast.Constant)
                    and keyword.value.value is True
                ):
                    return True
    return False


class SurfaceReader:
    """Reads the public surface of RLlib classes and modules from their source."""

    def __init__(self, index: SourceIndex | None = None):
        self.index = index or SourceIndex()

    # -- functions ---------------------------------------------------------------------------
    def parameters(
        self, module: str, func: ast.FunctionDef | ast.AsyncFunctionDef, *, bound: bool
    ) -> tuple:
        args = func.args
        positional = list(args.posonlyargs) + list(args.args)
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults, strict=True))
        if bound and pairs:
            pairs = pairs[1:]  # self / cls
        params = [self._parameter(module, arg.arg, "positional", default) for arg, default in pairs]
        if args.vararg:
            params.append(Parameter(args.vararg.arg, "var_positional", None))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            params.append(self._parameter(module, arg.arg, "keyword", default))
        if args.kwarg:
            params.append(Parameter(args.kwarg.arg, "var_keyword", None))
        raising = _raising_parameters(func)
        return tuple(
            dataclasses.replace(p, raises_when_given=True) if p.name in raising else p
            for p in params
        )

    def _parameter(self, module: str, name: str, kind: str, default: ast.AST | None) -> Parameter:
        if default is None:
            return Parameter(name, kind, None)
        return Parameter(name, kind, ast.unparse(default), self.index.literal(module, default))

    # -- classes -----------------------------------------------------------------------------
    def class_node(self, qualified: str) -> tuple[str, ast.ClassDef]:
        module, _, name = qualified.rpartition(".")
        resolved = self.index.definition(module, name)
        for _ in range(5):  # `ObservationPreprocessor = SingleAgentObservationPreprocessor`
            if resolved is None or not isinstance(resolved[1], ast.Assign):
                break
            resolved = self.index.resolve_expression(resolved[0], resolved[1].value)
        if resolved is None or not isinstance(resolved[1], ast.ClassDef):
            raise LookupError(f"{qualified} is not a class in the installed Ray source")
        return resolved[0], resolved[1]

    def class_chain(self, qualified: str) -> list[tuple[str, ast.ClassDef]]:
        """The class and its bases inside `ray`, in method resolution order (C3 for the plain
        cases RLlib has: depth-first, left to right, each class once, last occurrence wins)."""
        module, node = self.class_node(qualified)
        order: list[tuple[str, ast.ClassDef]] = []

        def walk(mod: str, cls: ast.ClassDef) -> None:
            order.append((mod, cls))
            for base in cls.bases:
                resolved = self.index.resolve_expression(mod, base)
                if resolved is not None and isinstance(resolved[1], ast.ClassDef):
                    walk(resolved[0], resolved[1])

        walk(module, node)
        seen: dict[tuple[str, str], int] = {}
        for position, (mod, cls) in enumerate(order):
            seen[(mod, cls.name)] = position
        return [
            (mod, cls)
            for position, (mod, cls) in enumerate(order)
            if seen[(mod, cls.name)] == position
        ]

    def class_members(
        self, qualified: str, *, skip_owners: frozenset[str] = frozenset()
    ) -> dict[str, Member]:
        """Public members of the class, the nearest definition of each name winning. Members
        whose nearest definition is in a class of `skip_owners` (qualified names), or in one of
        its bases, are left out: another class's check covers them."""
        chain = self.class_chain(qualified)
        skipped: set[str] = set()
        for module, cls in chain[1:]:
            if f"{module}.{cls.name}" in skip_owners:
                skipped |= {f"{m}.{c.name}" for m, c in self.class_chain(f"{module}.{cls.name}")}
        members: dict[str, Member] = {}
        hidden: set[str] = set()
        for module, cls in chain:
            owner = f"{module}.{cls.name}"
            for name, member in self._own_members(module, cls, owner).items():
                if name in members or name in hidden:
                    continue
                if member is None or owner in skipped:
                    hidden.add(name)  # deprecated (raises in RLlib), or covered elsewhere
                    continue
                members[name] = member
        return members

    def _own_members(self, module: str, cls: ast.ClassDef, owner: str) -> dict[str, Member | None]:
        found: dict[str, Member | None] = {}
        init_attributes: dict[str, Member] = {}
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = _decorator_names(node)
                if node.name == "__init__":
                    init_attributes = self._init_attributes(module, node, owner)
                    found["__init__"] = Member(
                        "__init__",
                        "constructor",
                        owner,
                        self.parameters(module, node, bound=True),
                        node=node,
                    )
                    continue
                if node.name.startswith("_"):
                    continue
                if any(d.endswith(".setter") or d.endswith(".deleter") for d in decorators):
                    continue
                if raises_when_called(node):
                    found.setdefault(node.name, None)
                    continue
                if "property" in decorators or any(
                    d.endswith("cached_property") for d in decorators
                ):
                    found[node.name] = Member(node.name, "property", owner)
                    continue
                bound = "staticmethod" not in decorators
                found[node.name] = Member(
                    node.name,
                    "method",
                    owner,
                    self.parameters(module, node, bound=bound),
                    node=node,
                )
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for name in _targets(node):
                    if not name.startswith("_"):
                        found[name] = Member(
                            name,
                            "attribute",
                            owner,
                            value=self.index.literal(module, node.value),
                            value_source=_source(node.value),
                        )
        for name, member in init_attributes.items():
            # `self.x = DEPRECATED_VALUE`: a removed setting kept only to raise when used.
            found.setdefault(name, None if member.value_source == "DEPRECATED_VALUE" else member)
        return found

    def _init_attributes(
        self, module: str, init: ast.FunctionDef | ast.AsyncFunctionDef, owner: str
    ) -> dict[str, Member]:
        """`self.<public> = value` in `__init__` (the last assignment of a name wins, as at
        run time; nested blocks included)."""
        attributes: dict[str, Member] = {}
        for node in ast.walk(init):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                        and not target.attr.startswith("_")
                    ):
                        attributes[target.attr] = Member(
                            target.attr,
                            "attribute",
                            owner,
                            value=self.index.literal(module, node.value),
                            value_source=_source(node.value),
                            on_instance=True,
                        )
        return attributes

    # -- modules -----------------------------------------------------------------------------
    def module_members(self, module: str) -> dict[str, Member]:
        """The module's own public top-level names (`__all__` when it has one)."""
        tree = self.index.module(module)
        if tree is None:
            raise LookupError(f"{module} is not a module in the installed Ray source")
        exported = None
        for node in _top_level(tree):
            if isinstance(node, ast.Assign) and "__all__" in _targets(node):
                exported = set(ast.literal_eval(node.value))
        members: dict[str, Member] = {}
        for node in _top_level(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if raises_when_called(node):
                    continue
                members[node.name] = Member(
                    node.name,
                    "function",
                    module,
                    self.parameters(module, node, bound=False),
                    node=node,
                )
            elif isinstance(node, ast.ClassDef):
                members[node.name] = Member(node.name, "class", module)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                if _is_plumbing(node.value):
                    continue
                for name in _targets(node):
                    members[name] = Member(
                        name,
                        "constant",
                        module,
                        value=self.index.literal(module, node.value),
                        value_source=_source(node.value),
                    )
        for name in sorted((exported or set()) - set(members)):  # re-exported by import
            resolved = self.index.definition(module, name)
            kind = (
                "class"
                if resolved is not None and isinstance(resolved[1], ast.ClassDef)
                else "name"
            )
            members[name] = Member(name, kind, module)
        return {
            name: member
            for name, member in members.items()
            if (name in exported if exported is not None else not name.startswith("_"))
        }

    # -- builder methods ---------------------------------------------------------------------
    @staticmethod
    def keyword_attributes(method: Member) -> dict[str, str]:
        """For a config builder method: keyword -> the attribute its body stores it in
        (`self.<attr> = <keyword>`); keywords stored nowhere are left out."""
        stored: dict[str, str] = {}
        names = {p.name for p in method.parameters}
        for node in ast.walk(method.node) if method.node is not None else []:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Name)
                and node.value.id in names
            ):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        stored.setdefault(node.value.id, target.attr)
        return stored


def _is_plumbing(expr: ast.AST | None) -> bool:
    """Module-level names no user reaches for: a module's `logger`, and the framework handles
    of `try_import_tf()` / `try_import_torch()` / `try_import_jax()`."""
    if not isinstance(expr, ast.Call):
        return False
    called = _dotted(expr.func) or ""
    return called.startswith("try_import_") or called == "logging.getLogger"


def _source(expr: ast.AST | None) -> str | None:
    return None if expr is None else ast.unparse(expr)
