"""RLlib 2.60's modules and the names each binds, as data: what the launcher serves at RLlib's
paths without Ray installed.

For every module of the Ray 2.60 wheel's `ray/rllib` (its library modules: not its tests, and of
`rllib/examples` only the importable pieces under `classes/` and `utils/`, not the scripts), the
file `rllib_2_60_names.json` beside this one records each public name the module binds at its
top level, by kind:

- "c" / "f": a class / function defined there (served where this project has it, else a
  placeholder that refuses when used);
- "k": a constant whose value is a literal (`LEARNER_RESULTS_CURR_KL_COEFF_KEY = "curr_kl_coeff"`):
  served with RLlib's value (as repr, read back with `ast.literal_eval`); a name bound to a
  constant of another module is recorded with that value too;
- "a": a name imported from another `ray` module ("module" or "module:name" where it is named
  differently there), followed to where it is defined;
- "m": a module bound by name (`from ray.rllib.core import columns`);
- "v": anything else the module assigns (`torch, nn = try_import_torch()`, typing aliases);
- "all": the module's own `__all__`, where it has one.

Private names are recorded where the module defines them (scripts import a few), not where it
imports them. Names bound only for type checkers (`if TYPE_CHECKING:`) and names imported from outside `ray`
(`numpy`, `typing`) are not RLlib's and are left out.

The finder (`trainer.launcher.finder`) reads this data only; regenerating it needs the wheel
(`trainer.compat.rllib_names_record`):

    python -m trainer.compat.rllib_names_record           # writes it from the installed wheel
    python -m trainer.compat.rllib_names_record --check   # exit 1 when it differs
"""

from __future__ import annotations

import ast
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).with_name("rllib_2_60_names.json")

#: The kinds of a name's record (see the module docstring).
CLASS, FUNCTION, CONSTANT, ALIAS, MODULE, VALUE = "c", "f", "k", "a", "m", "v"


@dataclass(frozen=True)
class NameRecord:
    """One name of an RLlib module: its kind and, by kind, its value (a constant), its origin
    ("module:name", an alias) or its module path (a module)."""

    kind: str
    value: Any = None
    origin: tuple[str, str] | None = None
    module: str | None = None


class RLlibNames:
    """The data file, read: RLlib's modules and their names."""

    def __init__(self, data: dict[str, Any]):
        self.ray_version: str = data["ray_version"]
        self._modules: dict[str, dict[str, Any]] = data["modules"]
        self._packages = frozenset(data["packages"])

    def has_module(self, module: str) -> bool:
        return module in self._modules

    def holds_modules(self, package: str) -> bool:
        """Whether modules of RLlib's are recorded below `package` (a folder of RLlib's that
        is not a module of its own, such as one of example scripts)."""
        prefix = package + "."
        return any(module.startswith(prefix) for module in self._modules)

    def is_package(self, module: str) -> bool:
        return module in self._packages

    def modules(self) -> list[str]:
        return sorted(self._modules)

    def names(self, module: str, *, private: bool = False) -> list[str]:
        """The public names `module` binds (its `__all__` first, where it has one); with
        `private`, the private ones it defines too."""
        entry = self._modules.get(module, {})
        found: dict[str, None] = dict.fromkeys(entry.get("all", ()))
        for kind in (CLASS, FUNCTION, VALUE):
            found.update(dict.fromkeys(entry.get(kind, ())))
        for kind in (CONSTANT, ALIAS, MODULE):
            found.update(dict.fromkeys(entry.get(kind, {})))
        return [name for name in found if private or not name.startswith("_")]

    def star_names(self, module: str) -> list[str]:
        """What `from module import *` takes in RLlib: its `__all__`, else every public name."""
        entry = self._modules.get(module, {})
        return list(entry["all"]) if "all" in entry else self.names(module)

    def record(self, module: str, name: str) -> NameRecord | None:
        """The record of `module.name`, or None where RLlib's module does not bind it."""
        entry = self._modules.get(module)
        if entry is None:
            return None
        for kind in (CLASS, FUNCTION, VALUE):
            if name in entry.get(kind, ()):
                return NameRecord(kind)
        if name in entry.get(CONSTANT, {}):
            return NameRecord(CONSTANT, value=ast.literal_eval(entry[CONSTANT][name]))
        if name in entry.get(ALIAS, {}):
            origin_module, _, origin_name = entry[ALIAS][name].partition(":")
            return NameRecord(ALIAS, origin=(origin_module, origin_name or name))
        if name in entry.get(MODULE, {}):
            return NameRecord(MODULE, module=entry[MODULE][name])
        return None


@functools.cache
def rllib_names() -> RLlibNames:
    """The data file, read once per process (only when a name is looked up in it)."""
    with open(DATA_FILE, encoding="utf-8") as file:
        return RLlibNames(json.load(file))
