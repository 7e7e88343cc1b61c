"""A user's own modules named `trainer`, `callbacks` or `checkpoints` win for the user's code.

This project's public import paths are the top-level packages `trainer`, `callbacks` and
`checkpoints`; RL projects often have a `trainer.py`, `callbacks.py` or `checkpoints.py` (or a
package of that name) of their own. Under the launcher (`python -m trainer run`, `localrl run`,
`trainer.launcher.install()`), and in the processes it starts, the user's module is the one the
user's code imports, wherever it is (beside the script, on `PYTHONPATH`, installed), and this
project keeps working:

- `callbacks`, `checkpoints`: this project's own code never imports these two (they are public
  aliases of `trainer.callbacks` and `trainer.checkpoints`; `tests/test_layering.py` holds it
  to that), so a user's module of that name simply takes the name in the process: a finder
  first on `sys.meta_path` (`UserFirst`) looks for it on `sys.path` outside this project's
  folders before anything else does. It is then an ordinary module: pickled by reference,
  found again by name in a worker process.
- `trainer`: this project's package keeps the name in `sys.modules` (its own code imports
  itself by it everywhere). Each `import` statement of the user's code that names `trainer`
  (absolute, or relative inside the user's own `trainer` package) goes, through a wrapper of
  `builtins.__import__` (`_route`), to the user's module, imported on first use and kept in
  `sys.modules` as `localrl_users.trainer` (its submodules likewise): that is its `__name__`
  and its classes' `__module__`, so pickle (by name, into worker processes too),
  `typing.get_type_hints` and dataclasses find it. "The user's code" is any importing module
  whose file is neither this project's nor an installed library's (pickle and cloudpickle
  import classes by name on this project's behalf).

Where no user module of a name exists, every import gets this project's, as without the
launcher. Imports through `importlib.import_module` are not routed: they name the module the
way `sys.modules` holds it.
"""

from __future__ import annotations

import builtins
import functools
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Mapping, Sequence

#: Top-level names a user's module takes in the whole process (this project never imports them).
USER_FIRST = ("callbacks", "checkpoints")
#: The top-level name this project keeps, routed to a user's module for the user's code only.
ROUTED = "trainer"
NAMES = (ROUTED, *USER_FIRST)

_HERE = os.path.dirname(os.path.abspath(__file__))
#: The folder holding this project's top-level packages (site-packages, or the checkout).
PROJECT_ROOT = os.path.dirname(os.path.dirname(_HERE))
#: This project's package folders, each ending in a separator.
PROJECT_FOLDERS = tuple(os.path.join(PROJECT_ROOT, name) + os.sep for name in NAMES)


def is_project_file(path: object) -> bool:
    """Whether `path` is a file of this project's packages."""
    return isinstance(path, str) and os.path.abspath(path).startswith(PROJECT_FOLDERS)


def find_user_spec(
    name: str, path: Sequence[str] | None = None
) -> importlib.machinery.ModuleSpec | None:
    """The spec of the first module `name` on `path` (default `sys.path`) that is not this
    project's, or None."""
    for entry in sys.path if path is None else path:
        spec = importlib.machinery.PathFinder.find_spec(name, [entry])
        if spec is None:
            continue
        origin = spec.origin if spec.has_location else None
        locations = list(spec.submodule_search_locations or ())
        if is_project_file(origin) or any(
            is_project_file(os.path.join(p, "__init__.py")) for p in locations
        ):
            continue
        return spec
    return None


class UserFirst:
    """First on `sys.meta_path`: a user's own `callbacks` / `checkpoints` (not this project's
    package of that name) is found before the rest of `sys.meta_path` and `sys.path` look."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in USER_FIRST:
            return None
        return find_user_spec(fullname)


class ProjectFirst:
    """First on `sys.meta_path`: the process's first import of `trainer` is this project's
    package, even where the user's folder comes first on `sys.path` (a Ray worker puts the
    driver's script folder and working folder there). The user's code gets the user's
    `trainer` through `_route` all the same."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != ROUTED:  # asked again only while `trainer` is not imported
            return None
        package = os.path.join(PROJECT_ROOT, ROUTED)
        return importlib.util.spec_from_file_location(
            ROUTED, os.path.join(package, "__init__.py"), submodule_search_locations=[package]
        )


#: The package under which the user's own `trainer` and its submodules are in `sys.modules`
#: (`localrl_users.trainer`, `localrl_users.trainer.config`): their real names are this
#: project's there.
ALIAS_ROOT = "localrl_users"
_ALIAS_PREFIX = ALIAS_ROOT + "."


def alias_of(fullname: str) -> str:
    """`trainer.config` -> `localrl_users.trainer.config`."""
    return _ALIAS_PREFIX + fullname


def real_name_of(alias: str) -> str:
    """`localrl_users.trainer.config` -> `trainer.config`."""
    return alias[len(_ALIAS_PREFIX) :]


class UserModules:
    """The user's own `trainer` module or package and its submodules, imported on first use
    and kept in `sys.modules` under `ALIAS_ROOT` (`sys.modules["trainer"]` is this project's):
    so pickle, `typing.get_type_hints` and dataclasses find them by their classes'
    `__module__`."""

    def __init__(self) -> None:
        #: `sys.path` when no user `trainer` was last found on it.
        self.absent_on: tuple[str, ...] | None = None
        self.lock = threading.RLock()

    def has_top(self) -> bool:
        """Whether the user has a `trainer` module (found now, or imported before)."""
        if alias_of(ROUTED) in sys.modules:
            return True
        key = tuple(sys.path)
        if key == self.absent_on:
            return False
        if find_user_spec(ROUTED) is None:
            self.absent_on = key
            return False
        return True

    def load(self, fullname: str) -> types.ModuleType:
        """The user's module `fullname` (`trainer` or under it), imported on first use."""
        alias = alias_of(fullname)
        with self.lock:
            module = sys.modules.get(alias)
            if module is not None:
                return module
            parent_name, _, child = fullname.rpartition(".")
            parent = self.load(parent_name) if parent_name else _alias_root()
            if not parent_name:
                spec = find_user_spec(fullname)
            else:
                search = getattr(parent, "__path__", None)
                if search is None:
                    raise ModuleNotFoundError(
                        f"No module named {fullname!r}; {parent_name!r} is not a package",
                        name=fullname,
                    )
                spec = importlib.machinery.PathFinder.find_spec(fullname, list(search))
            if spec is None:
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
            module = _module_for(alias, spec)
            sys.modules[alias] = module
            try:
                if spec.origin is not None and spec.has_location:
                    assert module.__spec__ is not None and module.__spec__.loader is not None
                    module.__spec__.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(alias, None)
                raise
            setattr(parent, child or fullname, module)
            return module


def _alias_root() -> types.ModuleType:
    """The (empty) package `localrl_users` in `sys.modules`."""
    root = sys.modules.get(ALIAS_ROOT)
    if root is None:
        root = types.ModuleType(
            ALIAS_ROOT, "The user's own modules that share this project's names."
        )
        root.__path__ = []
        sys.modules[ALIAS_ROOT] = root
    return root


def _module_for(alias: str, found: importlib.machinery.ModuleSpec) -> types.ModuleType:
    """A module named `alias` for the file (or namespace package) `found` names."""
    locations = found.submodule_search_locations
    if found.origin is None or not found.has_location:  # a namespace package
        module = types.ModuleType(alias)
        module.__path__ = list(locations or ())
        module.__package__ = alias
        return module
    spec = importlib.util.spec_from_file_location(
        alias,
        found.origin,
        submodule_search_locations=list(locations) if locations is not None else None,
    )
    assert spec is not None
    return importlib.util.module_from_spec(spec)


_user = UserModules()
_original_import: Callable[..., types.ModuleType] | None = None


def _absolute(name: str, globals_: Mapping[str, object] | None, level: int) -> str:
    if level == 0:
        return name
    package = (globals_ or {}).get("__package__")
    if not package:
        spec = (globals_ or {}).get("__spec__")
        package = getattr(spec, "parent", None) or ""
    return importlib.util.resolve_name("." * level + name, str(package))


def _library_folders() -> tuple[str, ...]:
    """The installed libraries' folders (the standard library, site-packages): code there
    imports on this project's behalf (pickle and cloudpickle look classes up by name)."""
    paths = sysconfig.get_paths()
    folders = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    folders.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    folders.add(site.getusersitepackages())
    return tuple(os.path.join(os.path.abspath(folder), "") for folder in folders if folder)


_LIBRARIES = _library_folders()


def is_library_folder(folder: str) -> bool:
    """Whether `folder` is (inside) an installed library's folder."""
    return os.path.join(os.path.abspath(folder), "").startswith(_LIBRARIES)


def _is_users(globals_: Mapping[str, object] | None) -> bool:
    """Whether an import is made by the user's code: a module of the user's own `trainer`, or
    one whose file is neither this project's nor an installed library's (the user's script and
    modules); code without a file only as `__main__` (`python -c`, a notebook)."""
    if globals_ is None:
        return False
    name = globals_.get("__name__")
    if isinstance(name, str) and name.startswith(_ALIAS_PREFIX):
        return True
    file = globals_.get("__file__")
    if not isinstance(file, str):
        return name == "__main__"
    return _is_user_file(file)


@functools.lru_cache(maxsize=4096)
def _is_user_file(file: str) -> bool:
    """Whether a module's file is neither this project's nor an installed library's (asked
    at each routed import, some of them in functions that run every step)."""
    path = os.path.abspath(file)
    return not path.startswith(PROJECT_FOLDERS) and not path.startswith(_LIBRARIES)


def _is_routed(name: str) -> bool:
    return name == ROUTED or name.startswith(ROUTED + ".")


def _route(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> types.ModuleType:
    """`builtins.__import__`, with the user's imports of `trainer...` sent to the user's own
    `trainer` where there is one, and any import of its `localrl_users.trainer...` names
    (pickle's, in a worker process) to the same modules."""
    original = _original_import or builtins.__import__
    if level == 0:
        if name.startswith(_ALIAS_PREFIX):
            fullname = real_name_of(name)
            _user.load(fullname)
            return _user_import_result(name, fullname, fromlist)
        if not _is_routed(name):
            return original(name, globals, locals, fromlist, level)
    else:
        package = str((globals or {}).get("__package__") or "")
        if not _is_routed(package) and not package.startswith(_ALIAS_PREFIX):
            return original(name, globals, locals, fromlist, level)
    if not _is_users(globals) or not _user.has_top():
        return original(name, globals, locals, fromlist, level)
    absolute = _absolute(name, globals, level)
    fullname = real_name_of(absolute) if absolute.startswith(_ALIAS_PREFIX) else absolute
    _user.load(fullname)
    if level:  # a relative import always names the module it imports from (or its fromlist)
        return _user_import_result(fullname, fullname, fromlist or ("",))
    return _user_import_result(name, fullname, fromlist)


def _user_import_result(
    name: str, fullname: str, fromlist: Sequence[str] | None
) -> types.ModuleType:
    """What `__import__(name, fromlist=...)` returns for the user's module `fullname`: the
    module itself with a fromlist (its submodules named there imported), else the first part
    of `name` (the user's top-level `trainer`, or the `localrl_users` package)."""
    module = _user.load(fullname)
    if fromlist:
        names = list(fromlist)
        if "*" in names:
            names += [n for n in getattr(module, "__all__", ()) if isinstance(n, str)]
        for item in names:
            if item in ("*", "") or hasattr(module, item) or not hasattr(module, "__path__"):
                continue
            try:
                _user.load(f"{fullname}.{item}")
            except ModuleNotFoundError as error:
                if error.name != f"{fullname}.{item}":
                    raise
        return module
    if name.startswith(_ALIAS_PREFIX):
        return _alias_root()
    return _user.load(fullname.partition(".")[0])


_finders = (UserFirst(), ProjectFirst())


def install() -> None:
    """Puts the finders first on `sys.meta_path` and the import wrapper in `builtins`
    (idempotent). Also run by the launcher's start-up module in every process a launched
    script starts (`trainer/launcher/startup/sitecustomize.py`), before anything imports
    `trainer` there."""
    global _original_import
    for finder in _finders:
        if finder not in sys.meta_path:
            sys.meta_path.insert(0, finder)
    if builtins.__import__ is not _route:
        _original_import = builtins.__import__
        builtins.__import__ = _route


def uninstall() -> None:
    """Takes both away; the user's modules imported so far stay as they are."""
    global _original_import
    sys.meta_path[:] = [f for f in sys.meta_path if f not in _finders]
    if builtins.__import__ is _route and _original_import is not None:
        builtins.__import__ = _original_import
    _original_import = None


def user_module(fullname: str) -> types.ModuleType | None:
    """The user's `trainer` module of that name (`trainer`, `trainer.config`), if imported."""
    return sys.modules.get(alias_of(fullname))
