"""Code named by its import path, "module:qualname": how a checkpoint's config records classes and
functions (`trainer.checkpoints.config_data`), and how a lower layer names a class of a higher
one that it builds (`trainer.runners.env_runner_group.DEFAULT_CONFIG_CLASS`)."""

from __future__ import annotations

import importlib
from typing import Any


def import_path(obj: Any) -> str | None:
    """ "module:qualname" of a class or function that importing gives back, else None."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if (
        not isinstance(module, str)
        or not isinstance(qualname, str)
        or module == "__main__"
        or "<" in qualname
    ):
        return None
    path = f"{module}:{qualname}"
    try:
        return path if resolve_import_path(path) is obj else None
    except Exception:  # noqa: BLE001 - any failure to re-import means "no path"
        return None


def resolve_import_path(path: str) -> Any:
    """The object "module:qualname" names (importing the module)."""
    module_name, _, qualname = path.partition(":")
    if not module_name or not qualname:
        raise ValueError(f"{path!r} is not a 'module:qualname' import path")
    value: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value
