"""The import hook behind the RLlib launcher: a finder on `sys.meta_path` that answers
`import ray...` with stand-in modules built from `trainer.launcher.table` and from RLlib 2.60's
own record of its modules and names (`trainer.launcher.rllib_names`).

Every module of RLlib 2.60 imports, and every name RLlib binds in one resolves. A stand-in module
looks a name up in the table's target modules of this project (in order), then as a submodule,
then in RLlib's record of the module: a constant gets RLlib's value, a name RLlib imports from
another of its modules is looked up there, and a class or function this project does not have
is a placeholder (`placeholder`) that raises `RLlibNotAvailable` (a `NotSupported` naming the
RLlib name, the capability it needs and what to use instead) when it is used: called, made, or
an attribute read. A script that imports what it never uses runs; one that uses it stops there,
at the call. A name RLlib 2.60 does not have either fails as Python fails (`ImportError: cannot
import name ...`), and so does a module RLlib 2.60 does not have. One of RLlib's example
scripts (`ray.rllib.examples.*`, a file of the wheel that is no module of RLlib's record and has
no counterpart in `trainer.examples`) imports from the installed wheel's own file, run under this
finder (tests import classes from such scripts); without the wheel it is a module RLlib lacks.
Of Ray outside RLlib, the modules the table marks unavailable (`ray.util`, `ray.serve`, Tune's
experiment runner without Ray Tune, ...) import, their names placeholders. Classes and functions
are this project's own objects (`ray.rllib.algorithms.ppo.PPOConfig is trainer.PPOConfig`), so
they pickle by their real module paths and EnvRunner processes need no hook to load them.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from trainer.errors import RemovedFromRLlib
from trainer.errors import RLlibNotAvailable as RLlibNotAvailable
from trainer.launcher import table, user_modules
from trainer.launcher.rllib_names import ALIAS, CLASS, CONSTANT, FUNCTION, MODULE, rllib_names
from trainer.launcher.table import Unavailable

#: Set in the environment by `install()` so that processes started by the script (EnvRunner
#: workers, Tune's trial actors, anything that imports `trainer`) install the same hook: "1"
#: (Ray's stand-in), "ray" (real Ray; only `ray.rllib`, and `ray.tune`/`ray.air`/`ray.train`
#: as `real_tune_available()` decides, mapped).
ENV_VAR = "LOCALRL_RLLIB_LAUNCHER"
#: First on the PYTHONPATH of the processes a launched script starts (and so of the worker
#: processes of a real Ray one of them starts): its sitecustomize readies the hook for a
#: process that imports `ray.rllib` before `trainer`.
STARTUP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "startup")
#: With real Ray, these top-level `ray.*` packages are still mapped (the rest is real Ray's);
#: with Ray Tune installed too, only `ray.rllib` (and Tune's `TUNE_OVERLAYS`).
MAPPED_WITH_REAL_RAY = ("rllib", "tune", "air")
#: What Ray Tune needs besides Ray (its `__init__` imports them): without them, no Tune.
TUNE_REQUIREMENTS = ("pandas", "pyarrow", "fsspec", "requests")
TABLE_FILE = RLlibNotAvailable.table_file
#: Optional packages a target module of this project may import (the `torch` extra): a stand-in
#: whose target cannot import one still imports, and its names refuse when used.
OPTIONAL_PACKAGES = {"torch": table.TORCH}


@dataclass(frozen=True)
class Plan:
    """How one module path is served:

    - "map": a stand-in over `targets` (this project's modules); RLlib's names they lack
      resolve through RLlib's record, refusing at use as `why` (or the table's names) says;
    - "rllib": one of RLlib's modules with no counterpart here: RLlib's names, refusing at use
      with `why` (None: a gap, no row in the table yet);
    - "lenient": a module of Ray outside RLlib that the table marks unavailable (`why`): each
      public name Ray has (any, where Ray is not installed to tell) refuses at use;
    - "namespace": a package that only holds mapped submodules;
    - "removed": a module RLlib itself removed (RLlib fails at its import too);
    - "wheel": one of RLlib's example modules (`ray.rllib.examples.*`, not a package) with no
      counterpart in `trainer.examples` and no row marking it unavailable (a script RLlib's
      record of its modules lacks, or a module of its example classes) run as a module from
      the installed wheel's source file (`detail`): `__name__` is the dotted name (its
      `if __name__ == "__main__":` part does not run) and its `ray.*` imports are served by
      this finder;
    - "unknown": RLlib 2.60 has no such module (`detail` says more).
    """

    kind: str
    targets: tuple[str, ...] = ()
    why: Unavailable | None = None
    detail: str = ""


def _refusal(rllib_name: str, why: Unavailable | None, used: str = "") -> RLlibNotAvailable:
    if why is None:  # a gap: RLlib has it, this project has no counterpart yet
        detail = f"no row for it in {TABLE_FILE}" + (f"; used: {used}" if used else "")
        return RLlibNotAvailable(rllib_name, None, detail=detail)
    detail = f"used: {used}" if used else ""
    return RLlibNotAvailable(rllib_name, why.capability, why.instead, detail=detail)


class _RefusedOnUse(type):
    """The metaclass of placeholders: making an instance (of the placeholder or of a subclass)
    or reading a public attribute the class does not define raises the placeholder's
    `RLlibNotAvailable`."""

    __localrl_unavailable__: Unavailable | None
    __localrl_rllib_name__: str

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise _refusal(cls.__localrl_rllib_name__, cls.__localrl_unavailable__, f"{cls.__name__}()")

    def __getattr__(cls, name: str) -> Any:
        # Private and special names stay AttributeErrors: Python's own machinery (typing,
        # inspect, pickle, copy) probes them with hasattr.
        if name.startswith("_"):
            raise AttributeError(name)
        raise _refusal(
            cls.__localrl_rllib_name__, cls.__localrl_unavailable__, f"{cls.__name__}.{name}"
        )

    def __getitem__(cls, item: Any) -> Any:
        # A typing alias subscripted in an annotation (`TensorStructType[...]`): itself.
        return cls


_placeholders: dict[str, Any] = {}


def placeholder(rllib_name: str, why: Unavailable | None, kind: str = CLASS) -> Any:
    """The stand-in for an RLlib name this project does not serve, which fails when used: for a
    class (and any other object: `kind` CLASS or VALUE), a class that can be subclassed,
    subscripted and used in `isinstance`, whose instances (and its subclasses') cannot be made
    and whose attributes cannot be read; for a function (`kind` FUNCTION), a function that
    fails when called. Either raises `RLlibNotAvailable` naming `rllib_name` and the
    capability (`why`; None: a gap). The same object for the same name (so it pickles by
    reference, and the name re-exported elsewhere in RLlib is the same object)."""
    if rllib_name in _placeholders:
        return _placeholders[rllib_name]
    module, _, short = rllib_name.rpartition(".")
    needs = "has no counterpart in localrl yet" if why is None else f"needs {why.capability}"
    doc = f"RLlib's {rllib_name}: {needs} (fails when used)."

    def refuse(used: str) -> None:
        """Raises the refusal where the name is given to something (`trainer.errors.
        refuse_placeholder`: a config setting), naming that use."""
        raise _refusal(rllib_name, why, used)

    if kind == FUNCTION:

        def function(*args: Any, **kwargs: Any) -> Any:
            if rllib_name in table.CLASS_FACTORIES:  # the class it builds refuses when used
                built = str(kwargs.get("name") or (args[0] if args else "Built"))
                return placeholder(f"{module}.{built}", why)
            raise _refusal(rllib_name, why, f"{short}()")

        function.__name__ = function.__qualname__ = short
        function.__module__ = module
        function.__doc__ = doc
        function.__localrl_refuse__ = refuse  # type: ignore[attr-defined]
        made: Any = function
    else:
        made = _RefusedOnUse(
            short,
            (),
            {
                "__module__": module,
                "__localrl_rllib_name__": rllib_name,
                "__localrl_unavailable__": why,
                "__localrl_refuse__": staticmethod(refuse),
                "__doc__": doc,
            },
        )
    _placeholders[rllib_name] = made
    return made


def is_placeholder(value: Any) -> bool:
    """Whether `value` is one of the placeholders `placeholder` makes."""
    return isinstance(value, _RefusedOnUse) or any(value is made for made in _placeholders.values())


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_real_tune: bool | None = None


def real_tune_available() -> bool:
    """Whether Ray Tune (`ray[tune]`, the `tune` extra) is installed: Ray's `tune` package and
    the packages it imports, looked up on disk (nothing is imported, so this is cheap enough
    for every EnvRunner process)."""
    global _real_tune
    if _real_tune is None:
        spec = importlib.machinery.PathFinder.find_spec("ray")
        locations = list(spec.submodule_search_locations or ()) if spec else []
        _real_tune = bool(locations) and all(
            importlib.machinery.PathFinder.find_spec(name) is not None for name in TUNE_REQUIREMENTS
        )
        _real_tune = _real_tune and os.path.isfile(
            os.path.join(locations[0], "tune", "__init__.py")
        )
    return _real_tune


def _is_parent_of_table_entry(fullname: str) -> bool:
    prefix = fullname + "."
    return any(
        path.startswith(prefix)
        for path in (*table.MODULES, *table.UNAVAILABLE_MODULES, *table.GENERIC_PREFIXES)
    )


def _longest_prefix(fullname: str, paths: Any) -> str | None:
    matches = [p for p in paths if fullname == p or fullname.startswith(p + ".")]
    return max(matches, key=len) if matches else None


def covering_unavailable(fullname: str) -> Unavailable | None:
    """The table's reason for `fullname`: that of the longest `UNAVAILABLE_MODULES` path that
    is it or holds it; None where none does."""
    path = _longest_prefix(fullname, table.UNAVAILABLE_MODULES)
    return None if path is None else table.UNAVAILABLE_MODULES[path]


def _is_rllib_path(fullname: str) -> bool:
    return fullname == "ray.rllib" or fullname.startswith("ray.rllib.")


def plan_for(fullname: str) -> Plan:
    """How `fullname` is served (see `trainer.launcher.table` for the precedence)."""
    if fullname in table.MODULES:
        return Plan("map", table.MODULES[fullname])
    if fullname in table.REMOVED_MODULES:
        return Plan("removed", detail=fullname)
    generic = _longest_prefix(fullname, table.GENERIC_PREFIXES)
    generic_target = None
    if generic is not None:
        generic_target = table.GENERIC_PREFIXES[generic] + fullname[len(generic) :]
        if _module_exists(generic_target):
            return Plan("map", (generic_target,))
    why = covering_unavailable(fullname)
    if rllib_names().has_module(fullname):
        # One of RLlib's example modules (not a package) with no counterpart here and no
        # row marking it unavailable: the wheel's own code, over the served names.
        source = _wheel_example_source(fullname) if generic_target and why is None else None
        if source is not None and not source.endswith("__init__.py"):
            return Plan("wheel", detail=source)
        return Plan("rllib", why=why)
    if _is_rllib_path(fullname):
        if _is_parent_of_table_entry(fullname) or rllib_names().holds_modules(fullname):
            return Plan("namespace", why=why)
        if generic_target is not None:
            source = _wheel_example_source(fullname)
            if source is not None:
                return Plan("wheel", detail=source)
            rllib_side = (
                "nor does the installed Ray wheel have it (RLlib fails to import it too)"
                if _ray_wheel_dir() is not None
                else "and RLlib ships its examples as scripts, not modules"
            )
            detail = (
                f"{generic_target} does not exist (RLlib's example modules map to "
                f"trainer.examples by the same path), {rllib_side}"
            )
            return Plan("unknown", detail=detail)
        return Plan("unknown", detail=f"RLlib {rllib_names().ray_version} has no {fullname}")
    if why is not None:
        if _ray_wheel_dir() is None or _ray_source_has(fullname):
            return Plan("lenient", why=why)  # imports; Ray's names in it fail when used
        return Plan("unknown", detail=f"Ray {rllib_names().ray_version} has no {fullname} either")
    if _is_parent_of_table_entry(fullname):
        return Plan("namespace")
    return Plan("unknown")


def resolve_rllib_name(module: str, name: str) -> Any:
    """This project's object for RLlib's `module.name` (a class a checkpoint names), by the
    table's map; None where the module is not mapped or its targets lack the name. Imports
    only this project's modules."""
    plan = plan_for(module)
    if plan.kind != "map":
        return None
    for target in plan.targets:
        found = getattr(importlib.import_module(target), name, None)
        if found is not None:
            return found
    return None


def _is_module_path(fullname: str) -> bool:
    """Whether `fullname` names a module (RLlib has it, or a table row names it or a module
    below it, or the generic example mapping finds it), not a name in its parent."""
    if (
        fullname in table.MODULES
        or fullname in table.UNAVAILABLE_MODULES
        or _is_parent_of_table_entry(fullname)
        or rllib_names().has_module(fullname)
        or (not _is_rllib_path(fullname) and _ray_source_has(fullname))
    ):
        return True
    generic = _longest_prefix(fullname, table.GENERIC_PREFIXES)
    return generic is not None and (
        _module_exists(table.GENERIC_PREFIXES[generic] + fullname[len(generic) :])
        or _wheel_example_source(fullname) is not None
    )


@functools.cache
def _ray_wheel_dir() -> str | None:
    """The installed Ray package's folder (None without Ray: it is an optional dependency)."""
    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(list(spec.submodule_search_locations)[0])


def _ray_source_file(fullname: str) -> str | None:
    """The installed Ray wheel's source file of this module (read from disk, never imported),
    or None."""
    wheel = _ray_wheel_dir()
    if wheel is None:
        return None
    base = os.path.join(wheel, *fullname.split(".")[1:])
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _wheel_example_source(fullname: str) -> str | None:
    """The installed wheel's source file of one of RLlib's example modules (under
    `ray.rllib.examples`: a script RLlib ships that tests import names from, or a module of
    its example classes); None without the wheel or such a file."""
    if not fullname.startswith("ray.rllib.examples."):
        return None
    return _ray_source_file(fullname)


def _ray_source_has(fullname: str) -> bool:
    """Whether the installed Ray wheel has this module."""
    return _ray_source_file(fullname) is not None


@functools.cache
def _ray_module_names(fullname: str) -> frozenset[str] | None:
    """The names one of Ray's modules outside RLlib binds at its top level, read from the
    installed wheel's source; None where there is no wheel to read (any name is taken then)."""
    if _ray_wheel_dir() is None:
        return None
    path = _ray_source_file(fullname)
    if path is None:
        return frozenset()
    with open(path, encoding="utf-8", errors="replace") as file:
        try:
            tree = ast.parse(file.read())
        except SyntaxError:
            return None
    return frozenset(_top_level_bindings(tree.body))


def _top_level_bindings(statements: list[ast.stmt]) -> set[str]:
    """The names a module's statements bind (looking into `if`, `try`, `with` and `for`
    blocks, not into functions and classes)."""
    names: set[str] = set()
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in statement.names)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        blocks = [getattr(statement, field, None) for field in ("body", "orelse", "finalbody")]
        blocks += [handler.body for handler in getattr(statement, "handlers", ())]
        for block in blocks:
            if isinstance(block, list):
                names |= _top_level_bindings(block)
    return names


def rllib_has_name(module: str, name: str) -> bool:
    """Whether RLlib's (or, outside RLlib, Ray's) `module` has `name` (a top-level binding or a
    submodule); outside RLlib, True where no Ray wheel is installed to tell."""
    if _is_rllib_path(module):
        names = rllib_names()
        return names.record(module, name) is not None or names.has_module(f"{module}.{name}")
    ray_names = _ray_module_names(module)
    return ray_names is None or name in ray_names or _ray_source_has(f"{module}.{name}")


#: The (module, name) pairs whose RLlib aliases are being followed on this thread (a cycle of
#: re-exports ends in a placeholder).
_following = threading.local()


class RLlibStandIn(types.ModuleType):
    """A module at a Ray/RLlib path whose names are looked up in this project's modules, then
    in RLlib's record of the module (see the module docstring)."""

    __localrl_targets__: tuple[str, ...] = ()
    __localrl_unavailable__: Unavailable | None = None
    __localrl_plan__: str = "map"
    #: An optional package a target could not import (`OPTIONAL_PACKAGES`), and why.
    __localrl_missing__: tuple[str, str] | None = None
    __localrl_shim__: bool = False
    __all__: list[str]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        module_name = self.__name__
        for target in self.__localrl_targets__:
            module = sys.modules.get(target)
            if module is None:
                try:
                    module = importlib.import_module(target)
                except ModuleNotFoundError:
                    continue  # an optional package it needs is missing (`__localrl_missing__`)
            if hasattr(module, name):
                return getattr(module, name)
        submodule = f"{module_name}.{name}"
        refused_names = table.UNAVAILABLE_NAMES.get(module_name, {})
        if name not in refused_names and _is_module_path(submodule):
            return importlib.import_module(submodule)
        removed = table.REMOVED_NAMES.get(module_name, {}).get(name)
        if removed is not None:  # RLlib 2.60 fails on it too
            raise RemovedFromRLlib(submodule, removed.replacement, removed.removed_in)
        value = self._rllib_value(name)
        if value is _MISSING:
            where = f" (nor has RLlib {rllib_names().ray_version}'s)"
            if self.__localrl_targets__:
                where = f": it maps to {', '.join(self.__localrl_targets__)}, which has none{where}"
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}{where}")
        self.__dict__[name] = value  # found once; later reads skip __getattr__
        return value

    def _why(self, name: str) -> Unavailable | None:
        """Why this module's `name` is not served: the table's row for the name, else this
        module's (or its package's), else an optional package its target lacks; None: a gap."""
        refused_names = table.UNAVAILABLE_NAMES.get(self.__name__, {})
        why = refused_names.get(name, refused_names.get("*"))
        if why is None and self.__localrl_missing__ is not None:
            package, capability = self.__localrl_missing__
            why = Unavailable(capability, f"pip install 'localrl[{package}]'")
        return why or self.__localrl_unavailable__

    def _rllib_value(self, name: str) -> Any:
        """`name` as RLlib's record of this module has it: a constant's value, a module, the
        origin's object for a re-export, or a placeholder; `_MISSING` where RLlib has none."""
        module_name = self.__name__
        if self.__localrl_plan__ == "lenient" or (
            not _is_rllib_path(module_name) and module_name in table.UNAVAILABLE_NAMES
        ):
            if name.startswith("_") or not rllib_has_name(module_name, name):
                return _MISSING
            return placeholder(f"{module_name}.{name}", self._why(name))
        record = rllib_names().record(module_name, name)
        if record is None:
            return _MISSING
        if record.kind == CONSTANT:
            return record.value
        if record.kind == MODULE and record.module is not None:
            return _import_or_placeholder(record.module, self._why(name))
        if record.kind == ALIAS and record.origin is not None:
            return self._follow(name, *record.origin)
        return placeholder(f"{module_name}.{name}", self._why(name), record.kind)

    def _follow(self, name: str, origin_module: str, origin_name: str) -> Any:
        """A name RLlib's module imports from `origin_module`: that module's (stand-in's) object,
        so a re-export is the same object as the original, placeholder or served."""
        following: set[tuple[str, str]] = getattr(_following, "pairs", None) or set()
        _following.pairs = following
        key = (origin_module, origin_name)
        if key not in following and origin_module != self.__name__:
            following.add(key)
            try:
                origin = importlib.import_module(origin_module)
                return getattr(origin, origin_name)
            except (ImportError, AttributeError):
                pass  # RLlib's origin is not served here: a placeholder named by it
            finally:
                following.discard(key)
        return placeholder(f"{origin_module}.{origin_name}", self._why(name))

    def __reduce__(self) -> tuple:
        # By name, as pickle treats modules: a process that unpickles it imports the RLlib path
        # (EnvRunner processes of a launched script have the hook; see `ENV_VAR`).
        return importlib.import_module, (self.__name__,)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        for target in self.__localrl_targets__:
            module = sys.modules.get(target)
            if module is not None:
                names.update(n for n in dir(module) if not n.startswith("_"))
        names.update(rllib_names().names(self.__name__))
        return sorted(names)


#: `_rllib_value`'s answer for a name RLlib does not have.
_MISSING = object()


def _import_or_placeholder(module: str, why: Unavailable | None) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return placeholder(module, why)


class _StandInLoader(importlib.abc.Loader):
    def __init__(self, plan: Plan):
        self.plan = plan

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return RLlibStandIn(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        plan, name = self.plan, module.__name__
        if not isinstance(module, RLlibStandIn):  # create_module made it
            raise TypeError(f"{name}: not a module this finder created")
        if plan.kind == "unknown" and _is_rllib_path(name):
            # Not in RLlib 2.60 either: Python's own error, so that `from ray.rllib.x import
            # NoSuchName` says "cannot import name", as it does under RLlib.
            raise ModuleNotFoundError(f"No module named {name!r} ({plan.detail})", name=name)
        if plan.kind == "unknown":
            raise RLlibNotAvailable(name, None, detail=plan.detail)
        if plan.kind == "removed":
            removed = table.REMOVED_MODULES[name]
            raise RemovedFromRLlib(name, removed.replacement, removed.removed_in)
        module.__localrl_plan__ = plan.kind
        module.__localrl_targets__ = plan.targets
        module.__localrl_unavailable__ = plan.why
        module.__path__ = []  # a package: its submodules come from this finder too
        module.__localrl_shim__ = True
        if plan.targets:
            module.__doc__ = f"RLlib's {name}, served by localrl from {', '.join(plan.targets)}"
        else:
            module.__doc__ = f"RLlib's {name}: its names fail when used (see `placeholder`)"
        exported: dict[str, None] = {}
        for target in plan.targets:
            try:
                found = importlib.import_module(target)  # a broken target fails here, not later
            except ModuleNotFoundError as error:
                package = (error.name or "").split(".")[0]
                if package not in OPTIONAL_PACKAGES:
                    raise
                module.__localrl_missing__ = (package, OPTIONAL_PACKAGES[package])
                continue
            # RLlib's modules mostly have no __all__: a star import takes every public name
            exported.update(dict.fromkeys(getattr(found, "__all__", ())))
            exported.update(
                dict.fromkeys(
                    n
                    for n, v in vars(found).items()
                    if not n.startswith("_") and not isinstance(v, types.ModuleType)
                )
            )
        names = rllib_names()
        if names.has_module(name):
            # What `from ray.rllib.x import *` takes: RLlib's names (each resolves).
            module.__all__ = names.star_names(name)
        elif plan.kind == "lenient":
            ray_names = _ray_module_names(name) or frozenset()
            module.__all__ = sorted(n for n in ray_names if not n.startswith("_"))
        else:
            module.__all__ = list(exported)


class TuneOverlay(types.ModuleType):
    """One of Ray Tune's modules (`table.TUNE_OVERLAYS`) seen through this project's Tune
    front: a public name a front module has is the front's (`Tuner`, `run`,
    `register_trainable`, ... that accept this project's algorithms), any other Tune's own.
    Submodules are Tune's (`__path__` is Tune's), so Tune's internals work unchanged under it."""

    __localrl_real__: types.ModuleType
    __localrl_fronts__: tuple[str, ...]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if not name.startswith("_"):  # Tune's private names are Tune's (its internals use them)
            for front_name in self.__localrl_fronts__:
                front = _front_module(front_name)
                if front is not None and hasattr(front, name):
                    return getattr(front, name)
        return getattr(self.__localrl_real__, name)

    def __dir__(self) -> list[str]:
        names = set(dir(self.__localrl_real__))
        for front_name in self.__localrl_fronts__:
            front = _front_module(front_name)
            if front is not None:
                names.update(n for n in dir(front) if not n.startswith("_"))
        return sorted(names)

    def __reduce__(self) -> tuple:
        return importlib.import_module, (self.__name__,)


def _front_module(name: str) -> types.ModuleType | None:
    """A front module (`trainer.tune`, ...) once fully imported; None while it is being
    imported (it imports Tune itself, and must see Tune's own names then)."""
    module = sys.modules.get(name)
    if module is None:
        module = importlib.import_module(name)
    spec = getattr(module, "__spec__", None)
    if spec is not None and getattr(spec, "_initializing", False):
        return None
    return module


def _make_overlay(name: str, real: types.ModuleType) -> TuneOverlay:
    overlay = TuneOverlay(name, real.__doc__)
    overlay.__localrl_real__ = real
    overlay.__localrl_fronts__ = table.TUNE_OVERLAYS[name]
    for attribute in ("__file__", "__path__", "__all__", "__spec__"):
        if hasattr(real, attribute):
            setattr(overlay, attribute, getattr(real, attribute))
    return overlay


def _put_overlay(name: str, real: types.ModuleType) -> TuneOverlay:
    """`sys.modules[name]` (and the parent package's attribute) becomes the overlay of `real`.
    The front is imported first, while Tune's modules are still Tune's own: it binds them
    (`import ray.tune as _ray_tune`), not their overlays (which would lead back to it)."""
    for front in table.TUNE_OVERLAYS[name]:
        importlib.import_module(front)
    overlay = _make_overlay(name, real)
    _bind_module(name, overlay)
    return overlay


def _bind_module(name: str, module: types.ModuleType) -> None:
    """`module` becomes `sys.modules[name]` and its parent package's attribute."""
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)


def _overlay_the_imported_modules(being_imported: AbstractSet[str] = frozenset()) -> None:
    """Tune modules imported (for real) before or while the finder is on: overlaid now (not
    those `being_imported`, still half-made)."""
    for name in table.TUNE_OVERLAYS:
        module = sys.modules.get(name)
        if (
            module is not None
            and name not in being_imported
            and not isinstance(module, TuneOverlay)
        ):
            _put_overlay(name, module)


class _TuneOverlayLoader(importlib.abc.Loader):
    """Imports Tune's own module (the finder stands aside for it), then puts the overlay in
    its place (and overlays Tune's other `TUNE_OVERLAYS` modules its import brought in)."""

    def __init__(self, finder: RLlibFinder):
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        placeholder_module = sys.modules.pop(name, None)
        self.finder.standing_aside.add(name)
        try:
            real = importlib.import_module(name)
            # The fronts import Tune themselves: while the finder stands aside, every Tune
            # module they import is Tune's own, and they bind those.
            for front in table.TUNE_OVERLAYS[name]:
                importlib.import_module(front)
        except BaseException:
            if placeholder_module is not None:
                sys.modules[name] = placeholder_module
            raise
        finally:
            self.finder.standing_aside.discard(name)
        if isinstance(real, TuneOverlay):  # overlaid while Tune imported itself
            real = real.__localrl_real__
        # the import system returns whatever sys.modules holds for `name` after exec_module
        _put_overlay(name, real)
        _overlay_the_imported_modules(self.finder.standing_aside)


class RLlibFinder(importlib.abc.MetaPathFinder):
    """Serves `ray` and everything under it. With `real_ray`: only `ray.rllib`, `ray.tune` and
    `ray.air`, leaving the rest to the installed Ray; and where Ray Tune is installed
    (`real_tune_available()`), `ray.tune`, `ray.air` and `ray.train` are Tune's own, with
    `TUNE_OVERLAYS` served as `TuneOverlay`s."""

    def __init__(self, real_ray: bool = False):
        self.real_ray = real_ray
        self.real_tune = real_ray and real_tune_available()
        #: Tune modules being imported for real by a `_TuneOverlayLoader` (not served then).
        self.standing_aside: set[str] = set()

    @property
    def serves_ray_stand_in(self) -> bool:
        """Whether `import ray` gives the stand-in: what the runners ask of the finders on
        `sys.meta_path` (`trainer.runners.ray_runner.RAY_STAND_IN` names this attribute)."""
        return not self.real_ray

    def serves(self, fullname: str) -> bool:
        parts = fullname.split(".")
        if parts[0] != "ray":
            return False
        if self.real_tune:
            return len(parts) > 1 and parts[1] == "rllib"
        if self.real_ray:
            return len(parts) > 1 and parts[1] in MAPPED_WITH_REAL_RAY
        return True

    def overlays(self, fullname: str) -> bool:
        """Whether `fullname` is one of Tune's modules served as a `TuneOverlay`."""
        return self.real_tune and fullname in table.TUNE_OVERLAYS

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        # While Tune imports itself for real (standing aside), its modules stay its own; they
        # are overlaid once that import is done.
        if self.overlays(fullname) and not self.standing_aside:
            return importlib.util.spec_from_loader(
                fullname, _TuneOverlayLoader(self), is_package=True
            )
        if not self.serves(fullname):
            return None
        plan = plan_for(fullname)
        if plan.kind == "wheel":
            is_package = os.path.basename(plan.detail) == "__init__.py"
            return importlib.util.spec_from_file_location(
                fullname,
                plan.detail,
                loader=importlib.machinery.SourceFileLoader(fullname, plan.detail),
                # A package's submodules come from this finder too (it is first on the path).
                submodule_search_locations=[os.path.dirname(plan.detail)] if is_package else None,
            )
        return importlib.util.spec_from_loader(fullname, _StandInLoader(plan), is_package=True)


#: Modules of the installed Ray that `install()` took out of `sys.modules` (put back by
#: `uninstall()`, so that objects made from them before stay valid).
_displaced: dict[str, types.ModuleType] = {}


def installed_finder() -> RLlibFinder | None:
    return next((f for f in sys.meta_path if isinstance(f, RLlibFinder)), None)


def install(real_ray: bool = False) -> None:
    """Puts the finder first on `sys.meta_path` (before the installed Ray) and records the mode
    in the environment for child processes. With `real_ray`, `import ray` stays the installed
    Ray. Modules of `ray` imported before (that the finder now serves) leave `sys.modules`, so
    that the next import gets the stand-in."""
    current = installed_finder()
    if current is not None and current.real_ray == real_ray:
        return
    uninstall()
    finder = RLlibFinder(real_ray)
    for name in [n for n in sys.modules if n == "ray" or n.startswith("ray.")]:
        if finder.serves(name):
            _displaced[name] = sys.modules.pop(name)
    sys.meta_path.insert(0, finder)
    user_modules.install()
    if finder.real_tune:  # Tune imported before (a trial actor unpickling its trainable)
        _overlay_the_imported_modules()
    os.environ[ENV_VAR] = "ray" if real_ray else "1"
    _set_pythonpath([STARTUP_DIR, *_pythonpath()])


def uninstall() -> None:
    """Removes the finder and the stand-in modules it made, and puts back the installed Ray's
    modules that `install()` displaced (the notebook switch, off)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, RLlibFinder)]
    user_modules.uninstall()
    for name, module in list(sys.modules.items()):
        if (name == "ray" or name.startswith("ray.")) and isinstance(module, RLlibStandIn):
            del sys.modules[name]
        elif isinstance(module, TuneOverlay):  # Tune's own module, back in its place
            _bind_module(name, module.__localrl_real__)
    sys.modules.update(_displaced)  # the installed Ray's modules, as they were
    _displaced.clear()
    _unbind_stand_ins()
    os.environ.pop(ENV_VAR, None)
    _set_pythonpath(_pythonpath())


def _pythonpath() -> list[str]:
    """PYTHONPATH's entries, the startup folder's left out."""
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return [e for e in entries if e and os.path.abspath(e) != STARTUP_DIR]


def _set_pythonpath(entries: list[str]) -> None:
    if entries:
        os.environ["PYTHONPATH"] = os.pathsep.join(entries)
    else:
        os.environ.pop("PYTHONPATH", None)


def _unbind_stand_ins() -> None:
    """The import system made each stand-in an attribute of its parent package; where that
    parent is the installed Ray's (`install(real_ray=True)`, or a module displaced and put
    back), the attribute outlives the stand-in: `import ray.rllib.x.y as z` would then walk
    into this project's modules. Each such attribute becomes the installed module of that
    path again, or goes."""
    for name, module in list(sys.modules.items()):
        if not (name == "ray" or name.startswith("ray.")) or isinstance(module, RLlibStandIn):
            continue
        for attribute, value in list(vars(module).items()):
            if isinstance(value, RLlibStandIn):
                installed = sys.modules.get(f"{name}.{attribute}")
                if installed is not None:
                    setattr(module, attribute, installed)
                else:
                    delattr(module, attribute)


def install_from_environment() -> None:
    """In a process started by a launched script: the same hook as its parent's. Not where
    the installed Ray is imported already under a script run on Ray's stand-in (a Ray worker,
    or Ray Serve's `serve run`): the stand-in cannot replace a Ray that runs. Such a process
    takes the hook on the installed Ray at its first import of `ray.rllib`
    (`trainer/launcher/startup/sitecustomize.py`)."""
    mode = os.environ.get(ENV_VAR)
    if not mode or (mode != "ray" and _installed_ray_imported()):
        return
    install(real_ray=(mode == "ray"))


def _installed_ray_imported() -> bool:
    module = sys.modules.get("ray")
    return module is not None and not isinstance(module, RLlibStandIn)
