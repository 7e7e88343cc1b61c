"""Running a script as `python SCRIPT ARGS` would, with the RLlib hook installed."""

from __future__ import annotations

import ast
import json
import os
import runpy
import sys
import traceback

from trainer.launcher import table
from trainer.launcher.finder import install, real_tune_available

#: When set to a file path, `run_script` writes there how the script ended (JSON: "outcome"
#: "ok" | "exit" | "error", "code", and for errors "type", "message", "capability" (from
#: `RLlibNotAvailable` or a `ConfigError` that names one, else null)). `bench/rllib_examples.py` reads it.
REPORT_ENV_VAR = "LOCALRL_LAUNCHER_REPORT"


#: Names of Tune's experiment runner: a script that uses one of them (from `ray.tune`,
#: `ray.air` or `ray.train`) runs on real Ray (Tune's trials are Ray actors).
TUNE_RUNNER_NAMES = frozenset((*table.TUNE_RUNNER_NAMES, *table.AIR_RUNNER_NAMES))
#: Tune's modules whose import alone means Tune's experiment runner (schedulers, searchers,
#: loggers, ...; not the registry and the result keys).
TUNE_RUNNER_MODULES = ("ray.tune.", "ray.train", "ray.air.integrations")
_NOT_RUNNER_MODULES = ("ray.tune.registry", "ray.tune.result")
_TUNE_PACKAGES = ("tune", "air", "train")


def _is_runner_module(module: str) -> bool:
    return module.startswith(TUNE_RUNNER_MODULES) and module not in _NOT_RUNNER_MODULES


def uses_tune_runner(source: str) -> bool:
    """Whether a script's source uses Tune's experiment runner (a static look at its imports
    and the `X.Name` uses of the names it binds to `ray.tune`, `ray.air`, `ray.train`):
    `Tuner`, `tune.run`, search spaces, schedulers, searchers, `RunConfig`, `ray.train`, ...
    The registry, `grid_search` and the result keys (which `run_rllib_example_script_experiment`
    runs without Tune under Ray's stand-in) do not count."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False  # Python reports it when the script runs
    aliases: set[str] = set()  # names bound to ray.tune / ray.air / ray.train
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if _is_runner_module(node.module):
                return True
            if node.module in (f"ray.{p}" for p in _TUNE_PACKAGES) and any(
                alias.name in TUNE_RUNNER_NAMES for alias in node.names
            ):
                return True
            if node.module == "ray":
                for alias in node.names:
                    if alias.name == "train":
                        return True
                    if alias.name in _TUNE_PACKAGES:
                        aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_runner_module(alias.name):
                    return True
                if alias.asname and alias.name in (f"ray.{p}" for p in _TUNE_PACKAGES):
                    aliases.add(alias.asname)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr in TUNE_RUNNER_NAMES):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in aliases:
            return True
        if (  # ray.tune.Tuner(...) written out
            isinstance(owner, ast.Attribute)
            and owner.attr in _TUNE_PACKAGES
            and isinstance(owner.value, ast.Name)
            and owner.value.id == "ray"
        ):
            return True
    return False


def wants_real_ray(script: str) -> bool:
    """The launcher's automatic choice: real Ray for a script that uses Tune's experiment
    runner, where Ray Tune is installed (without it the script stops on `RLlibNotAvailable`
    naming `pip install 'localrl[tune]'`)."""
    if not real_tune_available():
        return False
    with open(script, encoding="utf-8", errors="replace") as file:
        return uses_tune_runner(file.read())


def _exception_report(error: BaseException) -> dict:
    capability = None
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:  # the typed error may be a cause
        seen.add(id(cause))
        # RLlibNotAvailable, or an error of a value that needs a capability (ConfigError)
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
    """Runs `script` as `__main__` with `sys.argv = [script, *args]` and the script's folder
    first on `sys.path` (as `python script args` does). `real_ray`: keep the installed Ray for
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
        runpy.run_path(script, run_name="__main__")
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
