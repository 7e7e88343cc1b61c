"""Running a script as `python SCRIPT ARGS` would, with the RLlib hook installed."""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

from trainer.launcher.finder import install

#: When set to a file path, `run_script` writes there how the script ended (JSON: "outcome"
#: "ok" | "exit" | "error", "code", and for errors "type", "message", "capability" (from
#: `RLlibNotAvailable` or a `ConfigError` that names one, else null)). `bench/rllib_examples.py` reads it.
REPORT_ENV_VAR = "LOCALRL_LAUNCHER_REPORT"


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


def run_script(script: str, args: list[str], *, real_ray: bool = False) -> int:
    """Runs `script` as `__main__` with `sys.argv = [script, *args]` and the script's folder
    first on `sys.path` (as `python script args` does). Returns the exit status: 0, the code of
    the script's `SystemExit`, or 1 after printing the traceback of an exception (130 on
    Ctrl-C)."""
    if not os.path.isfile(script):
        print(f"run: no such script: {script}", file=sys.stderr)
        return 2
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
