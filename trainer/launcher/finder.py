"""The import hook behind the RLlib launcher: a finder on `sys.meta_path` that answers
`import ray...` with stand-in modules built from `trainer.launcher.table`.

A stand-in module has no names of its own: an attribute is looked up in the table's target
modules (in order), then as a submodule, then in `UNAVAILABLE_NAMES`; a name found nowhere
raises `RLlibNotAvailable`, an `ImportError`, so `from ray.rllib.x import Name` fails at the
import with the RLlib name, the capability it needs and what to use instead. Names and modules
marked `at="use"` (RLlib's other algorithms, Tune's experiment runner) import as placeholders
that raise the same error when used (`placeholder`). Classes and
functions are this project's own objects (`ray.rllib.algorithms.ppo.PPOConfig is
trainer.PPOConfig`), so they pickle by their real module paths and EnvRunner processes need no
hook to load them.
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
import types
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from trainer.errors import RemovedFromRLlib
from trainer.errors import RLlibNotAvailable as RLlibNotAvailable
from trainer.launcher import table
from trainer.launcher.table import Unavailable

#: Set in the environment by `install()` so that processes started by the script (EnvRunner
#: workers, Tune's trial actors, anything that imports `trainer`) install the same hook: "1"
#: (Ray's stand-in), "ray" (real Ray; only `ray.rllib`, and `ray.tune`/`ray.air`/`ray.train`
#: as `real_tune_available()` decides, mapped).
ENV_VAR = "LOCALRL_RLLIB_LAUNCHER"
#: With real Ray, these top-level `ray.*` packages are still mapped (the rest is real Ray's);
#: with Ray Tune installed too, only `ray.rllib` (and Tune's `TUNE_OVERLAYS`).
MAPPED_WITH_REAL_RAY = ("rllib", "tune", "air")
#: What Ray Tune needs besides Ray (its `__init__` imports them): without them, no Tune.
TUNE_REQUIREMENTS = ("pandas", "pyarrow", "fsspec", "requests")
TABLE_FILE = RLlibNotAvailable.table_file


@dataclass(frozen=True)
class Plan:
    """How one module path is served: "map" (stand-in over `targets`), "namespace" (a package
    that only holds mapped submodules; with `why`, its other names fail with it), "on_use"
    (one of RLlib's modules whose names are placeholders that fail with `why` when used),
    "unavailable" (`why`), or "unknown"."""

    kind: str
    targets: tuple[str, ...] = ()
    why: Unavailable | None = None
    detail: str = ""


def _refusal(rllib_name: str, why: Unavailable, used: str = "") -> RLlibNotAvailable:
    detail = f"used: {used}" if used else ""
    return RLlibNotAvailable(rllib_name, why.capability, why.instead, detail=detail)


class _RefusedOnUse(type):
    """The metaclass of placeholders: making an instance (of the placeholder or of a subclass)
    or reading a public attribute the class does not define raises the placeholder's
    `RLlibNotAvailable`."""

    __localrl_unavailable__: Unavailable
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


_placeholders: dict[str, Any] = {}


def placeholder(rllib_name: str, why: Unavailable) -> Any:
    """The stand-in for an RLlib name that fails when used (`Unavailable(at="use")`): for a
    capitalized name, a class that can be subclassed and used in `isinstance`, whose instances
    (and its subclasses') cannot be made and whose attributes cannot be read; for another name,
    a function that fails when called. Either raises `RLlibNotAvailable` naming `rllib_name`
    and the capability. The same object for the same name (so it pickles by reference)."""
    if rllib_name in _placeholders:
        return _placeholders[rllib_name]
    module, _, short = rllib_name.rpartition(".")
    if short[:1].islower():

        def function(*args: Any, **kwargs: Any) -> Any:
            raise _refusal(rllib_name, why, f"{short}()")

        function.__name__ = function.__qualname__ = short
        function.__module__ = module
        function.__doc__ = f"RLlib's {rllib_name}: needs {why.capability} (fails when used)."
        made: Any = function
    else:
        made = _RefusedOnUse(
            short,
            (),
            {
                "__module__": module,
                "__localrl_rllib_name__": rllib_name,
                "__localrl_unavailable__": why,
                "__doc__": f"RLlib's {rllib_name}: needs {why.capability} (fails when used).",
            },
        )
    _placeholders[rllib_name] = made
    return made


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
    unavailable = _longest_prefix(fullname, table.UNAVAILABLE_MODULES)
    if unavailable is not None:
        why = table.UNAVAILABLE_MODULES[unavailable]
        if why.at == "use":
            if _ray_wheel_dir() is None or _rllib_source_has(fullname):
                return Plan("on_use", why=why)  # imports; RLlib's names in it fail when used
            return Plan("unknown", detail=f"RLlib 2.60 has no {fullname} either")
        if _is_parent_of_table_entry(fullname):  # holds more specific rows: importable, its
            return Plan("namespace", why=why)  # own names fail with `why`
        return Plan("unavailable", why=why)
    if _is_parent_of_table_entry(fullname):
        return Plan("namespace")
    if generic_target is not None:
        return Plan(
            "unknown",
            detail=f"{generic_target} does not exist (RLlib's example "
            f"modules map to trainer.examples by the same path)",
        )
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
        or _rllib_source_has(fullname)
    ):
        return True
    generic = _longest_prefix(fullname, table.GENERIC_PREFIXES)
    return generic is not None and _module_exists(
        table.GENERIC_PREFIXES[generic] + fullname[len(generic) :]
    )


@functools.cache
def _ray_wheel_dir() -> str | None:
    """The installed Ray package's folder (None without Ray: it is an optional dependency)."""
    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(list(spec.submodule_search_locations)[0])


def _rllib_source_file(fullname: str) -> str | None:
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


def _rllib_source_has(fullname: str) -> bool:
    """Whether the installed Ray wheel has this module."""
    return _rllib_source_file(fullname) is not None


@functools.cache
def _rllib_module_names(fullname: str) -> frozenset[str] | None:
    """The names RLlib's (or Ray's) module binds at its top level, read from the installed
    wheel's source; None where there is no wheel to read (any name is taken then)."""
    if _ray_wheel_dir() is None:
        return None
    path = _rllib_source_file(fullname)
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


def _rllib_origin(module: str, name: str) -> str:
    """The dotted name where RLlib defines `module.name`, following its re-exports (`from
    ray.rllib.algorithms.sac.sac import SACConfig` in the package's `__init__`), so that the
    placeholders of both paths are the same object, as RLlib's class is."""
    for _ in range(8):  # re-export chains are short; a cycle stops here
        path = _rllib_source_file(module)
        if path is None:
            break
        origin = _reexported_from(path, module, name)
        if origin is None:
            break
        module = origin
    return f"{module}.{name}"


@functools.cache
def _reexports(path: str, module: str) -> dict[str, tuple[str, str]]:
    """Name -> (module, name there) of a module's top-level `from X import name` bindings."""
    with open(path, encoding="utf-8", errors="replace") as file:
        try:
            tree = ast.parse(file.read())
        except SyntaxError:
            return {}
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found: dict[str, tuple[str, str]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module is not None:
            source = statement.module
            if statement.level:  # relative: from .sac import SACConfig
                base = (
                    package.rsplit(".", statement.level - 1)[0] if statement.level > 1 else package
                )
                source = f"{base}.{source}"
            for alias in statement.names:
                found[alias.asname or alias.name] = (source, alias.name)
    return found


def _reexported_from(path: str, module: str, name: str) -> str | None:
    origin = _reexports(path, module).get(name)
    if origin is None or origin[1] != name or not origin[0].startswith("ray."):
        return None
    return origin[0]


def rllib_has_name(module: str, name: str) -> bool:
    """Whether RLlib's `module` has `name` (a top-level binding or a submodule); True where no
    Ray wheel is installed to tell."""
    names = _rllib_module_names(module)
    return names is None or name in names or _rllib_source_has(f"{module}.{name}")


class RLlibStandIn(types.ModuleType):
    """A module at an RLlib path whose names are looked up in this project's modules."""

    __localrl_targets__: tuple[str, ...] = ()
    __localrl_unavailable__: Unavailable | None = None
    __localrl_shim__: bool = False
    __all__: list[str]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        module_name = self.__name__
        for target in self.__localrl_targets__:
            module = importlib.import_module(target)
            if hasattr(module, name):
                return getattr(module, name)
        submodule = f"{module_name}.{name}"
        names = table.UNAVAILABLE_NAMES.get(module_name, {})
        if name not in names and _is_module_path(submodule):
            return importlib.import_module(submodule)
        package_why = getattr(self, "__localrl_unavailable__", None)
        if package_why is not None and package_why.at == "use":
            if not name.startswith("_") and rllib_has_name(module_name, name):
                return placeholder(_rllib_origin(module_name, name), package_why)
            raise AttributeError(
                f"module {module_name!r} has no attribute {name!r} (nor has RLlib 2.60's)"
            )
        if package_why is not None:
            raise RLlibNotAvailable(submodule, package_why.capability, package_why.instead)
        why = names.get(name, names.get("*"))
        if why is not None and why.at == "use" and rllib_has_name(module_name, name):
            return placeholder(_rllib_origin(module_name, name), why)
        if why is not None and why.at != "use":
            raise RLlibNotAvailable(submodule, why.capability, why.instead)
        removed = table.REMOVED_NAMES.get(module_name, {}).get(name)
        if removed is not None:
            raise RemovedFromRLlib(submodule, removed.replacement, removed.removed_in)
        where = ", ".join(self.__localrl_targets__) or "no module of localrl"
        detail = f"{module_name} maps to {where}, which has no {name!r}"
        if not rllib_has_name(module_name, name):
            detail += f" (nor has RLlib 2.60's {module_name})"
        raise RLlibNotAvailable(submodule, None, detail=detail)

    def __reduce__(self) -> tuple:
        # By name, as pickle treats modules: a process that unpickles it imports the RLlib path
        # (EnvRunner processes of a launched script have the hook; see `ENV_VAR`).
        return importlib.import_module, (self.__name__,)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        for target in self.__localrl_targets__:
            names.update(n for n in dir(importlib.import_module(target)) if not n.startswith("_"))
        return sorted(names)


class _StandInLoader(importlib.abc.Loader):
    def __init__(self, plan: Plan):
        self.plan = plan

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return RLlibStandIn(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        plan, name = self.plan, module.__name__
        if not isinstance(module, RLlibStandIn):  # create_module made it
            raise TypeError(f"{name}: not a module this finder created")
        if plan.kind == "unavailable" and plan.why is not None:
            raise RLlibNotAvailable(name, plan.why.capability, plan.why.instead)
        if plan.kind == "unknown":
            raise RLlibNotAvailable(name, None, detail=plan.detail)
        if plan.kind == "removed":
            removed = table.REMOVED_MODULES[name]
            raise RemovedFromRLlib(name, removed.replacement, removed.removed_in)
        if plan.kind == "on_use":
            module.__localrl_unavailable__ = plan.why
            module.__path__ = []
            module.__localrl_shim__ = True
            module.__doc__ = f"RLlib's {name}: its names fail when used (see `placeholder`)"
            rllib_names = _rllib_module_names(name) or frozenset()
            module.__all__ = sorted(n for n in rllib_names if not n.startswith("_"))
            return
        module.__localrl_targets__ = plan.targets
        module.__localrl_unavailable__ = plan.why
        module.__path__ = []  # a package: its submodules come from this finder too
        module.__localrl_shim__ = True
        doc = f"RLlib's {name}, served by localrl from {', '.join(plan.targets) or 'its parts'}"
        module.__doc__ = doc
        exported: dict[str, None] = {}
        for target in plan.targets:
            found = importlib.import_module(target)  # a broken target fails here, not later
            # RLlib's modules mostly have no __all__: a star import takes every public name
            exported.update(dict.fromkeys(getattr(found, "__all__", ())))
            exported.update(
                dict.fromkeys(
                    n
                    for n, v in vars(found).items()
                    if not n.startswith("_") and not isinstance(v, types.ModuleType)
                )
            )
        module.__all__ = list(exported)  # what `from ray.rllib.x import *` takes


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
        return importlib.util.spec_from_loader(
            fullname, _StandInLoader(plan_for(fullname)), is_package=True
        )


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
    if finder.real_tune:  # Tune imported before (a trial actor unpickling its trainable)
        _overlay_the_imported_modules()
    os.environ[ENV_VAR] = "ray" if real_ray else "1"


def uninstall() -> None:
    """Removes the finder and the stand-in modules it made, and puts back the installed Ray's
    modules that `install()` displaced (the notebook switch, off)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, RLlibFinder)]
    for name, module in list(sys.modules.items()):
        if (name == "ray" or name.startswith("ray.")) and isinstance(module, RLlibStandIn):
            del sys.modules[name]
        elif isinstance(module, TuneOverlay):  # Tune's own module, back in its place
            _bind_module(name, module.__localrl_real__)
    sys.modules.update(_displaced)  # the installed Ray's modules, as they were
    _displaced.clear()
    os.environ.pop(ENV_VAR, None)


def install_from_environment() -> None:
    """In a process started by a launched script: the same hook as its parent's."""
    mode = os.environ.get(ENV_VAR)
    if mode:
        install(real_ray=(mode == "ray"))
