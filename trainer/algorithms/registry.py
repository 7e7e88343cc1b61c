"""The algorithms' registry: one line per algorithm, its name -> the package of its folder.

Each algorithm lives in one folder, `trainer/algorithms/<name>/`, whose package declares a
module-level `ALGORITHM = AlgorithmEntry(...)`: its Algorithm and config classes (the config
class declares the algorithm's learners and default modules, `entry.classes`), its presets for
the main job, its deliberate differences from RLlib, and the RLlib module paths it serves
under the launcher. Everything generic (`get_trainable_cls`, the CLI's `--algo`, Ray Tune's
`Tuner("PPO")`, the presets, the differences page, the launcher's `ray.rllib.algorithms.<x>`
imports) reads the algorithms through `entry(name)` / `entries()` here, so adding an algorithm
is its folder plus one line in `ALGORITHM_PACKAGES`.

The packages are imported lazily, on the first `entry(name)`: importing `trainer` imports no
algorithm (and never torch; an algorithm's torch learner and module are imported when a config
asks for torch).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainer.capabilities import OTHER_ALGORITHMS
from trainer.checkpoints.rllib_layout import ModuleRead, RLlibModuleClass
from trainer.errors import UnsupportedValue

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm
    from trainer.algorithms.algorithm_config import AlgorithmConfig
    from trainer.algorithms.config.classes import AlgorithmClasses
    from trainer.algorithms.presets import Preset

#: Algorithm name (as RLlib registers it) -> the package of its folder, which defines `ALGORITHM`.
ALGORITHM_PACKAGES: dict[str, str] = {
    "PPO": "trainer.algorithms.ppo",
    "DQN": "trainer.algorithms.dqn",
    "VPG": "trainer.algorithms.vpg",
    "SAC": "trainer.algorithms.sac",
    "MARWIL": "trainer.algorithms.marwil",
    "BC": "trainer.algorithms.bc",
    "CQL": "trainer.algorithms.cql",
    "IQL": "trainer.algorithms.iql",
    "IMPALA": "trainer.algorithms.impala",
    "APPO": "trainer.algorithms.appo",
    "DreamerV3": "trainer.algorithms.dreamerv3",
    "TQC": "trainer.algorithms.tqc",
}
#: The algorithms' names, in registry order (`get_trainable_cls`, `--algo`, Tune's registry).
ALGORITHM_NAMES: tuple[str, ...] = tuple(ALGORITHM_PACKAGES)
#: The main job's algorithm when none is given (`python -m trainer`): the first registered.
DEFAULT_ALGORITHM = ALGORITHM_NAMES[0]

#: The other algorithms RLlib 2.60 registers (`ray.rllib.algorithms.registry`): asked for by
#: name, they are refused with `UnsupportedValue` (a typo stays a plain `ValueError`).
OTHER_RLLIB_ALGORITHM_NAMES: tuple[str, ...] = ()

#: The name of the module-level `AlgorithmEntry` in each algorithm's package.
ENTRY_ATTRIBUTE = "ALGORITHM"


# -- the deliberate differences' rows (`trainer.compat.differences` renders the table) --------
API = "api"
TEST = "test"
BEHAVIOUR = "behaviour"
#: A test of RLlib 2.60's own unit-test files (`bench/rllib_tests.py`) that RLlib passes and that
#: cannot pass here, keyed `rllib/<path>/test_x.py::Class::test`.
UNIT_TEST = "unit_test"


@dataclass(frozen=True)
class Difference:
    """One deliberate difference from RLlib 2.60: a row of the table an algorithm declares
    (`AlgorithmEntry.differences`) or the shared one (`trainer.compat.differences`)."""

    #: RLlib's name (an API key, or `tests/rllib/<file>::<case>`).
    rllib: str
    #: What happens here instead.
    here: str
    #: Why.
    why: str
    #: API, TEST, BEHAVIOUR or UNIT_TEST.
    kind: str = API


@dataclass(frozen=True)
class AlgorithmEntry:
    """What one algorithm's folder declares (its package's `ALGORITHM`): everything the generic
    code needs to know about it, as data."""

    #: The registered name (`get_trainable_cls(name)`, `--algo name`, `Tuner(name)`).
    name: str
    algorithm_cls: type[Algorithm]
    config_cls: type[AlgorithmConfig]
    #: The main job's presets: env name -> Preset (`python -m trainer --algo NAME --env ENV`).
    presets: Mapping[str, Preset] = field(default_factory=dict)
    #: Presets tuned here that solve sooner than the RLlib tuned example in `presets` for the
    #: same env: env name -> Preset. The main job's default (`--preset fast`).
    faster_presets: Mapping[str, Preset] = field(default_factory=dict)
    #: Its rows of the deliberate-differences table (`trainer.compat.differences`).
    differences: tuple[Difference, ...] = ()
    #: The launcher: RLlib module path -> this project's modules whose names it has
    #: (`trainer.launcher.table.MODULES`), e.g. `ray.rllib.algorithms.ppo` -> its package.
    rllib_modules: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: The launcher: RLlib module paths (and everything below them) that have no counterpart,
    #: path -> (capability, what to use instead) (`trainer.launcher.table.UNAVAILABLE_MODULES`).
    rllib_unavailable: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    #: RLlib's module checkpoints (`trainer.compat.rllib_checkpoint`): this folder's module
    #: classes ("module:qualname") -> how RLlib names and builds them, for `export --format
    #: rllib`.
    rllib_module_classes: Mapping[str, RLlibModuleClass] = field(default_factory=dict)
    #: RLlib's module classes (import paths) that this folder's modules read under other names.
    rllib_module_reads: Mapping[str, ModuleRead] = field(default_factory=dict)

    @property
    def classes(self) -> AlgorithmClasses | None:
        """Its learners and default modules, by import path: what its config class declares
        (`_CLASSES`), from which the base config and the base Algorithm build them."""
        return self.config_cls._CLASSES


_loaded: dict[str, AlgorithmEntry] = {}


def entry(name: str) -> AlgorithmEntry:
    """The registered algorithm `name`'s entry, importing its package on first use. Raises
    UnsupportedValue for RLlib's other algorithms, ValueError for an unknown name."""
    if name not in ALGORITHM_PACKAGES:
        if name in OTHER_RLLIB_ALGORITHM_NAMES:
            raise UnsupportedValue(
                f"get_trainable_cls({name!r}): RLlib's {name} is not available in localrl "
                f"({OTHER_ALGORITHMS}); the algorithms here are {sorted(ALGORITHM_NAMES)}",
                OTHER_ALGORITHMS,
            )
        raise ValueError(
            f"get_trainable_cls({name!r}): the algorithms here are {sorted(ALGORITHM_NAMES)}"
        )
    if name not in _loaded:
        declared = getattr(importlib.import_module(ALGORITHM_PACKAGES[name]), ENTRY_ATTRIBUTE)
        if not isinstance(declared, AlgorithmEntry) or declared.name != name:
            raise TypeError(
                f"{ALGORITHM_PACKAGES[name]}.{ENTRY_ATTRIBUTE} must be an AlgorithmEntry named "
                f"{name!r}, not {declared!r}"
            )
        _loaded[name] = declared
    return _loaded[name]


def entries() -> tuple[AlgorithmEntry, ...]:
    """Every registered algorithm's entry (importing every algorithm's package)."""
    return tuple(entry(name) for name in ALGORITHM_NAMES)


def get_trainable_cls(name: str) -> type[Algorithm]:
    """The Algorithm class registered under `name`, as Tune's `get_trainable_cls` returns it
    (RLlib's example scripts call `get_trainable_cls(args.algo).get_default_config()`)."""
    return entry(name).algorithm_cls


def exported_class(attribute: str) -> type | None:
    """`trainer.<attribute>` for a registered algorithm's class: `NAME` (the Algorithm) or
    `NAMEConfig` (its config); None for any other attribute (and nothing imported)."""
    if attribute in ALGORITHM_PACKAGES:
        return entry(attribute).algorithm_cls
    name = attribute.removesuffix("Config")
    if name != attribute and name in ALGORITHM_PACKAGES:
        return entry(name).config_cls
    return None


#: `exported_class`'s names: what `trainer` exports for the registered algorithms.
EXPORTED_NAMES: tuple[str, ...] = tuple(
    exported for name in ALGORITHM_NAMES for exported in (name, f"{name}Config")
)

__all__ = [
    "ALGORITHM_NAMES",
    "ALGORITHM_PACKAGES",
    "DEFAULT_ALGORITHM",
    "AlgorithmEntry",
    "Difference",
    "OTHER_RLLIB_ALGORITHM_NAMES",
    "entries",
    "entry",
    "get_trainable_cls",
]
