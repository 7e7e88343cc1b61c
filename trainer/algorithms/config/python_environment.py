"""The `python_environment()` section: environment variables of the main and worker processes."""

from __future__ import annotations

import sys
from typing import Any

from trainer.algorithms.config.base import ConfigBase, NotProvided
from trainer.algorithms.settings import Setting, settings_of

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


def _is_str_dict(v: Any) -> str | None:
    allowed = "a dict of environment variable names to values"
    if not isinstance(v, dict):
        return allowed
    for name, value in v.items():
        # What os.environ takes: the value is set as str(value), as RLlib sets it.
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            return f"{allowed}; {name!r} is no variable name (a non-empty str without '=')"
        if "\0" in str(value):
            return f"{allowed}; the value of {name!r} holds a NUL character"
    return None


#: The settings of `python_environment()`, as `name: (default, check, doc[, UsualRange])`: this
#: section's part of the settings table (`trainer.algorithms.settings`).
PYTHON_ENVIRONMENT_SETTINGS: dict[str, Setting] = settings_of(
    "python_environment",
    {
        "extra_python_environs_for_driver": (
            {},
            _is_str_dict,
            "environment variables set in the main process when the Algorithm is built",
        ),
        "extra_python_environs_for_worker": (
            {},
            _is_str_dict,
            "environment variables set in each EnvRunner worker process before its envs are made",
        ),
    },
)


class PythonEnvironmentSection(ConfigBase):
    """Environment variables (`python_environment()`)."""

    extra_python_environs_for_driver: dict[str, str]
    extra_python_environs_for_worker: dict[str, str]

    def python_environment(
        self,
        *,
        extra_python_environs_for_driver: dict = NotProvided,
        extra_python_environs_for_worker: dict = NotProvided,
        **unknown: Any,
    ) -> Self:
        """Environment variables for the main process (set when the Algorithm is built) and
        for each EnvRunner worker process (set before its envs are made)."""
        values = {
            "extra_python_environs_for_driver": extra_python_environs_for_driver,
            "extra_python_environs_for_worker": extra_python_environs_for_worker,
        }
        self._reject_unknown("python_environment", unknown, values)
        return self._set("python_environment", values)
