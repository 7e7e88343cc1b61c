"""Running a script as `python SCRIPT ARGS` would, with the RLlib hook installed."""

from __future__ import annotations

import ast
import importlib
import json
import os
import runpy
import sys
import traceback

from trainer.launcher import table, tune_api, user_modules
from trainer.launcher.finder import install, real_tune_available

#: When set to a file path, `run_script` writes there how the script ended (JSON: "outcome"
#: "ok" | "exit" | "error", "code", and for errors "type", "message", "capability" (that of a
#: `trainer.errors.NotSupported`: RLlibNotAvailable, UnsupportedSetting, ...; else null)).
#: `bench/rllib_examples.py` reads it.
REPORT_ENV_VAR = "LOCALRL_LAUNCHER_REPORT"


#: Names Ray's stand-in has only to refuse them (`register_trainable`: Tune's registry).
_NEEDS_TUNE = frozenset(("register_trainable",))
#: At most this many of the script's own modules are read to find Tune's runner in them.
MAX_SCRIPT_MODULES = 200


def is_tune_runner_path(path: str) -> bool:
    """Whether a dotted `ray...` path names part of Tune's experiment runner: anything of
    `ray.train`, of `ray.tune` and of `ray.air` except what Ray's stand-in serves (the
    registry, `grid_search`, the result keys: `trainer.launcher.tune_api`)."""
    parts = path.split(".")
    if parts[0] != "ray" or len(parts) < 2:
        return False
    if parts[1] == "train":
        return True
    if parts[1] not in ("tune", "air") or len(parts) < 3:
        return False
    name = parts[2]
    if name in _NEEDS_TUNE:
        return True
    served = table.MODULES.get(".".join(parts[:3]), ())
    if len(parts) > 3 and served and parts[1] == "tune" and name not in ("registry", "result"):
        # a module Ray's stand-in serves in part (ray.tune.logger: pretty_print)
        return not any(hasattr(importlib.import_module(m), parts[3]) for m in served)
    if parts[1] == "air":
        return name != "constants" and not hasattr(tune_api, name)
    return name not in ("registry", "result") and not hasattr(tune_api, name)


def _dotted(node: ast.expr) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"], or None for an expression that is not a dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _ray_bindings(tree: ast.Module) -> tuple[dict[str, str], bool]:
    """The names a module's imports bind to `ray...` paths (`from ray.tune import Tuner as T`:
    T -> ray.tune.Tuner; `import ray.tune.logger`: ray -> ray), and whether it star-imports
    from Tune's runner (whose names cannot be followed)."""
    bindings: dict[str, str] = {}
    star_from_runner = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module != "ray" and not node.module.startswith("ray."):
                continue
            for alias in node.names:
                if alias.name == "*":
                    star_from_runner |= is_tune_runner_path(node.module + ".*")
                else:
                    bindings[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name != "ray" and not alias.name.startswith("ray."):
                    continue
                if alias.asname:
                    bindings[alias.asname] = alias.name
                else:
                    bindings["ray"] = "ray"
    return bindings, star_from_runner


def uses_tune_runner(source: str) -> bool:
    """Whether a module's source uses Tune's experiment runner (a static look): a name it
    imports from `ray.tune`, `ray.air` or `ray.train`, or reaches through them
    (`tune.Tuner`, `ray.tune.run`, `schedulers.ASHAScheduler`), is used in its code, and is
    not one Ray's stand-in serves (`is_tune_runner_path`). An import alone does not count
    (under Ray's stand-in every runner name imports and fails only when used); the registry,
    `grid_search` and the result keys (which `run_rllib_example_script_experiment` runs
    without Tune under Ray's stand-in) do not count."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False  # Python reports it when the script runs
    return _tree_uses_tune_runner(tree)


def _tree_uses_tune_runner(tree: ast.Module) -> bool:
    """`uses_tune_runner` of a parsed module."""
    bindings, star_from_runner = _ray_bindings(tree)
    if star_from_runner:
        return True
    # Whole dotted names only: `ray.tune.logger` inside `ray.tune.logger.pretty_print` is not
    # a use of its own.
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Attribute, ast.Name)) or id(node) in inner:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            continue
        parts = _dotted(node)
        if parts is None or parts[0] not in bindings:
            continue
        if is_tune_runner_path(".".join([bindings[parts[0]], *parts[1:]])):
            return True
    return False


def _local_module_files(
    tree: ast.Module, roots: list[str], module: str, is_package: bool
) -> list[tuple[str, str]]:
    """(file, root) of the modules `tree` imports from `roots` (the script's own modules: its
    folder is first on `sys.path`, then `PYTHONPATH`'s folders), for `module` (its dotted name
    under its root, "" for the script)."""
    package = module if is_package else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative, inside one of the script's packages
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            if base:
                names.append(base)
            names += [f"{base}.{a.name}" if base else a.name for a in node.names if a.name != "*"]
    files = []
    for name in names:
        parts = name.split(".")
        for root in roots:
            found = False
            for depth in range(1, len(parts) + 1):  # a package's __init__ runs too
                base = os.path.join(root, *parts[:depth])
                for path in (base + ".py", os.path.join(base, "__init__.py")):
                    if os.path.isfile(path):
                        files.append((path, root))
                        found = True
            if found:  # the first folder that has it, as Python finds it
                break
    return files


def _script_roots(script: str) -> list[str]:
    """Where the script's own modules are found: its folder, then `PYTHONPATH`'s folders (not
    this project's own folder, nor an installed library's)."""
    roots = [os.path.dirname(os.path.abspath(script))]
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        entry = os.path.abspath(entry) if entry else ""
        if (
            entry
            and os.path.isdir(entry)
            and entry not in roots
            and entry != user_modules.PROJECT_ROOT
            and not user_modules.is_library_folder(entry)
        ):
            roots.append(entry)
    return roots


def script_uses_tune_runner(script: str) -> bool:
    """`uses_tune_runner` over the script and the modules of its own (in its folder, or in a
    `PYTHONPATH` folder) that it imports (and that they import), as Python would find them
    with the folder first on `sys.path`."""
    roots = _script_roots(script)
    queue = [(os.path.abspath(script), "", False)]
    seen: set[str] = set()
    while queue and len(seen) < MAX_SCRIPT_MODULES:
        path, module, is_package = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        with open(path, encoding="utf-8", errors="replace") as file:
            source = file.read()
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # Python reports it when the module runs
        if _tree_uses_tune_runner(tree):
            return True
        for found, root in _local_module_files(tree, roots, module, is_package):
            relative = os.path.relpath(found, root)[: -len(".py")].split(os.sep)
            found_is_package = relative[-1] == "__init__"
            dotted = ".".join(relative[:-1] if found_is_package else relative)
            queue.append((found, dotted, found_is_package))
    return False


def wants_real_ray(script: str) -> bool:
    """The launcher's automatic choice: real Ray for a script that uses Tune's experiment
    runner (`script_uses_tune_runner`: in the script or in a module of its own folder), where
    Ray Tune is installed (without it the script stops, when it uses the runner, on
    `RLlibNotAvailable` naming `pip install 'localrl[tune]'`)."""
    if not real_tune_available():
        return False
    return script_uses_tune_runner(script)


def _exception_report(error: BaseException) -> dict:
    capability = None
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:  # the typed error may be a cause
        seen.add(id(cause))
        # a NotSupported (RLlibNotAvailable, UnsupportedSetting, ...), or what carries one
        capability = getattr(cause, "capability", None)
        if capability is not None:
            break
        cause = cause.__cause__ or cause.__context__
    first_line = (str(error).strip().splitlines() or [""])[0]
    return {
        "outcome": "error",
        "code": 1,
        "type": type(error).__name__,
        "message": first_line,
        "capability": capability,
    }


def _print_script_traceback(error: BaseException) -> None:
    """The traceback as `python SCRIPT` prints it: from the script's frame on (the launcher's
    and runpy's frames left out)."""
    tb = error.__traceback__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__)
        or tb.tb_frame.f_code.co_filename.startswith("<frozen runpy")
    ):
        tb = tb.tb_next
    traceback.print_exception(type(error), error, tb or error.__traceback__)


def _write_report(report: dict) -> None:
    path = os.environ.get(REPORT_ENV_VAR)
    if path:
        with open(path, "w", encoding="utf-8") as file:
            json.dump(report, file)


def run_script(script: str, args: list[str], *, real_ray: bool | None = None) -> int:
    """Runs `script` as `__main__` with `sys.argv = [script, *args]`, its absolute path as
    `__file__` and its folder first on `sys.path` (as `python script args` does). `real_ray`: keep the installed Ray for
    `import ray` (True), serve Ray's stand-in (False), or choose (None: real Ray for a script
    that uses Tune's experiment runner, `wants_real_ray`). Returns the exit status: 0, the
    code of the script's `SystemExit`, or 1 after printing the traceback of an exception (130
    on Ctrl-C)."""
    if not os.path.isfile(script):
        print(f"run: no such script: {script}", file=sys.stderr)
        return 2
    if real_ray is None:
        real_ray = wants_real_ray(script)
    install(real_ray=real_ray)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        # `__file__` absolute, as Python (3.9+) gives a script run by a relative path: RLlib's
        # examples find their data from Path(__file__).parents[3].
        runpy.run_path(os.path.abspath(script), run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code
        else:  # sys.exit("message"): Python prints it and exits 1
            print(code, file=sys.stderr)
            status = 1
        _write_report({"outcome": "exit" if status else "ok", "code": status})
        return status
    except KeyboardInterrupt as error:
        _print_script_traceback(error)
        _write_report(
            {
                "outcome": "error",
                "code": 130,
                "type": "KeyboardInterrupt",
                "message": "",
                "capability": None,
            }
        )
        return 130
    except BaseException as error:  # noqa: BLE001 (the script's own error, reported as Python would)
        _print_script_traceback(error)
        _write_report(_exception_report(error))
        return 1
    _write_report({"outcome": "ok", "code": 0})
    return 0
