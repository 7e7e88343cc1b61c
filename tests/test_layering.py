"""The package's layers, checked from the source: a module imports only its own package and the
layers below it, and only at module level, so the package graph has no circles and what a module
needs is written at its top.

`LAYERS` declares the order, bottom to top. A unit (a package, or one module or subpackage named
on its own) may import its own modules and the units of lower layers, never a unit of its own
layer or of a layer above. The unit of a module is the longest name in `LAYERS` it lies in.

Where the code differs from the plain package order, and why:
- `trainer.compat` is two things. Most of it is the RLlib surface (the conformance check, moved
  module names, the numpy stand-ins): top layer. But RLlib's annotations and column names
  (`rllib_utils`), the older method names (`old_names`, mixins the Algorithm, the config and the
  EnvRunnerGroup inherit), the older callback forms (`old_callbacks`) and the older config and
  result keys (`old_api`, `rllib_settings`) are vocabulary every layer speaks: they sit low,
  next to `trainer.util` (`old_api` above the metric names it maps). RLlib's batch containers
  (`sample_batch`, above `trainer.core`'s module ids) and Ray Data's local readers
  (`ray_data`, above `trainer.offline`'s files) sit below `trainer.algorithms`, whose offline
  data pipeline hands out those batches of those readers' rows.
- `trainer.core.spaces` (gymnasium and numpy only) is the spaces vocabulary the checkpoint
  format, the episodes and the buffers spell spaces with: it sits below `trainer.checkpoints`,
  which in turn sits below the rest of `trainer.core` (module checkpoints use it). The numpy
  building blocks (`core.blas`, `core.nn`, `core.initializers`) sit as low: RLlib's torch-less
  `nn.init` (`compat.rllib_utils`) names the initializers.
- `trainer.env` sits above `trainer.core`: episodes name the modules' ids and spaces.
- RLlib's default connector pieces for a user's own env loop (`trainer.connectors.batching`,
  `.module_to_env`) read the episodes' recurrent records and the modules' action scaling, and
  the pipelines' checkpoint directories (`trainer.connectors.checkpoint`) the checkpoint
  format: they sit above `trainer.core` and `trainer.checkpoints`, not with the pieces the
  EnvRunners run.
- `trainer.callbacks` sits below `trainer.runners` (the runners fire the callbacks; a callback
  gets the runner as an argument and never imports it).
- `trainer.env.env_runner` is the EnvRunner's earlier import path (it re-exports
  `trainer.runners.env_runner`) and `trainer.core.testing` is RLlib's test modules for torch:
  both sit with the RLlib surface, not with the package they are named after.
- `trainer.examples.envs.classes` (RLlib's example envs) sits below the test helpers that run
  them; the example scripts and their helpers (`trainer.examples`) sit on top.
- `trainer` itself (the package's front, which re-exports the API) sits below the CLI and the
  examples, which import from it; `trainer.result_grid` (Tune's results read back from a run
  folder) needs only the checkpoints.

Every import counts for the layers (relative ones, and those inside functions), except those
under `if TYPE_CHECKING:`, which only annotations read and Python never runs. A function-level
import of a `trainer` module is refused: a module that needs another at run time imports it at
its top. Where a module must build or call what sits above it, that is handed down (a base class
passed in, a spec class that registers itself with the config format) or named by a dotted path
it declares and resolves with `importlib` (EnvRunnerGroup's default config class,
MultiAgentEnv's agent-groups wrapper, RLModule's MultiRLModule and module checkpoints,
Algorithm's Tune resource request, the worker a forked child runs, the config's algorithm
registry, an algorithm's learners and modules: its config's `_CLASSES`, whose learners read
their settings off that config). Optional dependencies (torch, ray, ...) are not `trainer`
modules and may be imported late, and so may a trainer module that imports one at its top (the
torch backend, the Tune front), so that `import trainer` imports neither.

Nor do the modules' top-level imports form a circle, anywhere, the imports under
`if TYPE_CHECKING:` counted (`module_circles`): a circle the type checker reads is a circle of
the code's design all the same. Where a module must name the type of one that imports it, it
types against what it reads of it instead, declared where it reads it: a `Protocol` (the
`Algorithm` a config builds, `BuiltAlgorithm`; the one a checkpoint saves, `SavedAlgorithm`; a
config class to the settings table, `ConfigClass`; a config to `MultiAgentSetup`,
`MultiAgentConfig`; a config to IMPALA's learner; a torch learner to its numpy update), a
section's declarations of what it reads of the others, or `Any` where an override must be free to
name the class (the callbacks' `algorithm`, `env_runner`, `env_runner_group`).

Within a folder, not even with the function-level imports counted (`folder_circles`): a late
import of a module that imports torch keeps `import trainer` light, but a circle it closes is a
circle all the same; what two modules share lives in a third one both import.

`KNOWN_UPWARD`, `KNOWN_LATE` and `KNOWN_CIRCLES` list what breaks these rules today, each with
why; they only shrink (an entry that no longer matches fails the test).

Also: the EnvRunner's import path of earlier releases names the same classes as its home.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

#: The directory that holds the `trainer` package.
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path, root: Path = SOURCE_ROOT) -> str:
    """The dotted name of the module in the file at `path` under `root`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Import:
    """One name an import statement brings in: `from X import Y` gives `X` and `X.Y` (Y may be
    a submodule). `late`: inside a function; `typing_only`: under `if TYPE_CHECKING:`."""

    line: int
    name: str
    late: bool = False
    typing_only: bool = False


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path, module: str) -> list[Import]:
    """Every import in the file at `path`, whose module is `module`, in source order."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(nodes: list[ast.AST], late: bool, typing_only: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend(Import(node.lineno, a.name, late, typing_only) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: `from ..x import y` climbs level - 1 packages
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                found.append(Import(node.lineno, base, late, typing_only))
                found.extend(
                    Import(node.lineno, f"{base}.{a.name}", late, typing_only)
                    for a in node.names
                    if a.name != "*"
                )
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.body, late, True)
                visit(node.orelse, late, typing_only)
                continue
            inner = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(list(ast.iter_child_nodes(node)), late or inner, typing_only)

    visit(ast.parse(path.read_text(), filename=str(path)).body, False, False)
    return found


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, absolute name) of every import in the file at `path`, whose module is `module`;
    `from X import Y` gives `X` and `X.Y` (Y may be a submodule)."""
    return [(found.line, found.name) for found in imports(path, module)]


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def violations(package: str, allowed: Callable[[str], bool], root: Path = SOURCE_ROOT) -> list[str]:
    """Every import of `trainer` in the modules of `package` (under `root`) that `allowed`
    refuses, as "path:line imports name"."""
    found = []
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        for line, name in imported_modules(path, module_name(path, root)):
            if within(name, "trainer") and not allowed(name):
                found.append(f"{path.relative_to(root)}:{line} imports {name}")
    return found


#: trainer's units, bottom to top (see the module docstring for where and why the code differs
#: from the plain package order). A unit may import its own modules and those of lower layers.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("trainer.errors",),
    ("trainer.util",),
    ("trainer.capabilities", "trainer.core.blas"),
    ("trainer.core.nn",),
    ("trainer.core.initializers", "trainer.core.spaces"),
    (
        "trainer.compat.rllib_utils",
        "trainer.compat.old_callbacks",
        "trainer.compat.old_names",
    ),
    (
        "trainer.metrics",
        "trainer.named_objects",
        "trainer.connectors",
        "trainer.compat.rllib_settings",
    ),
    ("trainer.compat.old_api", "trainer.checkpoints"),
    ("trainer.core", "trainer.result_grid"),
    (
        "trainer.env",
        "trainer.offline",
        "trainer.connectors.batching",
        "trainer.compat.sample_batch",
    ),
    (
        "trainer.torch_rl",
        "trainer.compat.ray_data",
        "trainer.replay_buffers",
        "trainer.connectors.module_to_env",
        "trainer.connectors.checkpoint",
    ),
    ("trainer.callbacks",),
    ("trainer.runners",),
    ("trainer.algorithms",),
    ("trainer.tune", "trainer.export"),
    ("trainer.launcher",),
    (
        "trainer.compat",
        "trainer.env.env_runner",
        "trainer.core.testing",
        "trainer.example_scripts",
        "trainer.examples.envs.classes",
    ),
    ("trainer.test_utils_checks",),
    ("trainer.testing",),
    ("trainer", "trainer.checkpoints.__main__"),
    ("trainer.cli", "trainer.examples"),
    ("trainer.__main__",),
)
LAYER_OF = {unit: level for level, units in enumerate(LAYERS) for unit in units}

#: (importing file, imported module) of the imports that go up a layer today; each says why it
#: is still there. Only shrinks.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}

#: (importing file, imported module) of the function-level imports of trainer modules left
#: today; each says why it is still there. Only shrinks.
KNOWN_LATE: dict[tuple[str, str], str] = {}


#: Optional dependencies: a trainer module that imports one at its top (the torch backend, the
#: Tune front) may be imported inside a function, so that `import trainer` does not import them.
OPTIONAL_DEPENDENCIES = ("torch", "ray", "tensorboard", "tensorboardX", "pettingzoo", "tree")


def wraps_optional_dependency(path: Path, module: str) -> bool:
    """Whether the module in the file at `path` imports an optional dependency at its top."""
    return any(
        not item.late and not item.typing_only and within(item.name, dependency)
        for item in imports(path, module)
        for dependency in OPTIONAL_DEPENDENCIES
    )


def trainer_modules(root: Path = SOURCE_ROOT) -> set[str]:
    return {module_name(path, root) for path in (root / "trainer").rglob("*.py")}


def unit_of(module: str) -> str:
    """The unit of `module`: the longest name in `LAYERS` that it lies in."""
    return max((unit for unit in LAYER_OF if within(module, unit)), key=len)


def module_imports(root: Path = SOURCE_ROOT) -> Iterator[tuple[str, str, Import]]:
    """(file, importing module, import) of every import of a trainer module, the name made the
    module it imports (`from trainer import errors` imports `trainer.errors`, not `trainer`)."""
    modules = trainer_modules(root)
    for path in sorted((root / "trainer").rglob("*.py")):
        module = module_name(path, root)
        found = imports(path, module)
        submodule_lines = {
            (item.line, item.name.rpartition(".")[0]) for item in found if item.name in modules
        }
        for item in found:
            if not within(item.name, "trainer"):
                continue
            if (item.line, item.name) in submodule_lines:
                continue  # `from trainer import errors` imports trainer.errors (and its package)
            name = item.name
            while name not in modules:
                name = name.rpartition(".")[0]
            yield (
                str(path.relative_to(root)),
                module,
                Import(item.line, name, item.late, item.typing_only),
            )


def upward_imports(root: Path = SOURCE_ROOT) -> dict[tuple[str, str], list[int]]:
    """(file, imported module) -> lines, of every import of a unit not below the importer's."""
    found: dict[tuple[str, str], list[int]] = {}
    for path, module, item in module_imports(root):
        unit, target = unit_of(module), unit_of(item.name)
        if item.typing_only or unit == target or LAYER_OF[target] < LAYER_OF[unit]:
            continue
        found.setdefault((path, item.name), []).append(item.line)
    return found


def module_path(module: str, root: Path = SOURCE_ROOT) -> Path:
    path = root / module.replace(".", "/")
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def late_imports(root: Path = SOURCE_ROOT) -> dict[tuple[str, str], list[int]]:
    """(file, imported module) -> lines, of every function-level import of a trainer module
    that imports no optional dependency at its top."""
    found: dict[tuple[str, str], list[int]] = {}
    for path, _, item in module_imports(root):
        if item.late and not wraps_optional_dependency(module_path(item.name, root), item.name):
            found.setdefault((path, item.name), []).append(item.line)
    return found


def test_every_package_has_a_layer():
    """Each of trainer's packages and top-level modules is in `LAYERS`, once, and each unit
    there is a module of trainer (none left over from a move)."""
    modules = trainer_modules()
    units = [unit for layer in LAYERS for unit in layer]
    assert len(units) == len(set(units))
    assert sorted(set(units) - modules) == []
    assert sorted(m for m in modules if m.count(".") <= 1 and m not in LAYER_OF) == []


@pytest.mark.slow
def test_no_unit_imports_its_own_layer_or_one_above():
    found = upward_imports()
    new = {
        f"{path}:{lines} imports {name}"
        for (path, name), lines in found.items()
        if (path, name) not in KNOWN_UPWARD
    }
    assert sorted(new) == []
    assert sorted(set(KNOWN_UPWARD) - set(found)) == [], "fixed: remove from KNOWN_UPWARD"


@pytest.mark.slow
def test_no_function_level_import_of_a_trainer_module():
    found = late_imports()
    new = {
        f"{path}:{lines} imports {name}"
        for (path, name), lines in found.items()
        if (path, name) not in KNOWN_LATE
    }
    assert sorted(new) == []
    assert sorted(set(KNOWN_LATE) - set(found)) == [], "fixed: remove from KNOWN_LATE"


def module_graph(root: Path = SOURCE_ROOT, late: bool = False) -> dict[str, set[str]]:
    """Module -> the modules its top-level imports name, those under `if TYPE_CHECKING:`
    included; with `late`, its function-level imports too."""
    graph: dict[str, set[str]] = {}
    for _, module, item in module_imports(root):
        if (late or not item.late) and item.name != module:
            graph.setdefault(module, set()).add(item.name)
    return graph


def module_circle(root: Path = SOURCE_ROOT) -> list[str]:
    """A circle of modules' top-level imports, typing-only ones included (the first module
    again at its end), or []."""
    try:
        tuple(TopologicalSorter(module_graph(root)).static_order())
    except CycleError as error:
        return list(error.args[1])
    return []


def module_circles(root: Path = SOURCE_ROOT, late: bool = False) -> set[frozenset[str]]:
    """Every set of modules whose top-level imports (typing-only ones included; with `late`,
    function-level ones too) go round: the strongly connected components of `module_graph` of
    more than one module."""
    graph = module_graph(root, late)
    reach: dict[str, set[str]] = {}
    for start in graph:  # what each module reaches (a few hundred modules: plain search)
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph.get(module, ()))
        reach[start] = seen
    return {
        frozenset({module} | {other for other in reach[module] if module in reach.get(other, ())})
        for module in graph
        if module in reach[module]
    }


#: The circles of modules left today (`module_circles`), each with why. Only shrinks.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


@pytest.mark.slow
def test_no_circle_among_modules():
    """No modules' top-level imports go round, those under `if TYPE_CHECKING:` included (a
    circle of `import x` statements imports, but the first module of it runs with the others
    half made; one the type checker reads ties the modules together just as much)."""
    found = module_circles()
    assert sorted(sorted(circle) for circle in found - set(KNOWN_CIRCLES)) == []
    assert sorted(sorted(circle) for circle in set(KNOWN_CIRCLES) - found) == [], (
        "fixed: remove from KNOWN_CIRCLES"
    )


def folder_of(circle: frozenset[str], root: Path = SOURCE_ROOT) -> str:
    """The innermost folder (package) under `root` that holds every module of `circle`."""
    packages = [
        module if module_path(module, root).name == "__init__.py" else module.rpartition(".")[0]
        for module in circle
    ]
    common = packages[0].split(".")
    for package in packages[1:]:
        parts = package.split(".")
        while parts[: len(common)] != common:
            common.pop()
    return "/".join(common)


def folder_circles(root: Path = SOURCE_ROOT) -> dict[str, list[list[str]]]:
    """Folder -> the circles among its own modules (those of its subfolders included), every
    import counted: top-level, under `if TYPE_CHECKING:` and inside functions."""
    found: dict[str, list[list[str]]] = {}
    for circle in module_circles(root, late=True):
        found.setdefault(folder_of(circle, root), []).append(sorted(circle))
    return {folder: sorted(circles) for folder, circles in sorted(found.items())}


@pytest.mark.slow
def test_no_folder_has_an_import_circle():
    """No folder under trainer/ (a package, its subpackages included) has modules that import
    each other round in a circle, counting every import: top-level ones, those under
    `if TYPE_CHECKING:`, and the function-level (deferred) ones too.

    Top-level circles are refused anywhere by `test_no_circle_among_modules`; this test adds
    the deferred imports. A function-level import of a module that imports an optional
    dependency (torch) is allowed, to keep `import trainer` light
    (`test_no_function_level_import_of_a_trainer_module`), but it only delays the import: if
    the imported module imports the first one back, the two still need each other, and the
    deferral merely hides the circle. So a circle is a circle here, deferred or not; what two
    modules of a folder share lives in a third module both import (e.g. `ppo.numpy_state`,
    which the numpy `PolicyModule` and the torch `DefaultPPOTorchRLModule` both import;
    `core.testing.base_learner`; `export.describers`), not in one of the two."""
    assert folder_circles() == {}


def test_a_circle_through_a_function_level_import_is_found_with_its_folder(tmp_path):
    package = tmp_path / "trainer" / "algorithms" / "x"
    (package / "torch").mkdir(parents=True)
    for init in ("trainer", "trainer/algorithms", "trainer/algorithms/x"):
        (tmp_path / init / "__init__.py").write_text("")
    (package / "torch" / "__init__.py").write_text("")
    (package / "module.py").write_text(
        "def state():\n    from trainer.algorithms.x.conversion import convert\n"
    )
    (package / "conversion.py").write_text("from trainer.algorithms.x.torch.net import Net\n")
    (package / "torch" / "net.py").write_text(
        "import torch\n\nfrom trainer.algorithms.x.module import PolicyModule\n"
    )
    assert module_circles(tmp_path) == set()  # top-level imports alone: no circle
    assert folder_circles(tmp_path) == {
        "trainer/algorithms/x": [
            [
                "trainer.algorithms.x.conversion",
                "trainer.algorithms.x.module",
                "trainer.algorithms.x.torch.net",
            ]
        ]
    }


def test_a_circle_of_modules_is_found(tmp_path):
    package = tmp_path / "trainer" / "util"
    package.mkdir(parents=True)
    (package / "a.py").write_text("import trainer.util.b\n")
    (package / "b.py").write_text("from trainer.util import a\n")
    (package / "c.py").write_text("from trainer.util import a\n")
    assert sorted(module_circle(tmp_path)[:2]) == ["trainer.util.a", "trainer.util.b"]
    assert module_circles(tmp_path) == {frozenset({"trainer.util.a", "trainer.util.b"})}


def test_a_typing_only_circle_of_modules_is_found(tmp_path):
    package = tmp_path / "trainer" / "util"
    package.mkdir(parents=True)
    (package / "a.py").write_text("from trainer.util.b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from trainer.util.a import A\n"
    )
    assert sorted(module_circle(tmp_path)[:2]) == ["trainer.util.a", "trainer.util.b"]
    assert module_circles(tmp_path) == {frozenset({"trainer.util.a", "trainer.util.b"})}


def test_util_imports_only_util_and_errors():
    assert (
        violations(
            "trainer.util",
            lambda name: within(name, "trainer.util") or within(name, "trainer.errors"),
        )
        == []
    )


def test_checkpoints_do_not_import_algorithms():
    assert (
        violations("trainer.checkpoints", lambda name: not within(name, "trainer.algorithms")) == []
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import trainer.checkpoints.codec\n", ["trainer.checkpoints.codec"]),
        (
            "def f():\n    from trainer.algorithms import algorithm\n",
            ["trainer.algorithms", "trainer.algorithms.algorithm"],
        ),
        (
            "from ..algorithms.ppo import PPO\n",
            ["trainer.algorithms.ppo", "trainer.algorithms.ppo.PPO"],
        ),
        ("from . import rng\n", ["trainer.util", "trainer.util.rng"]),
        ("from trainer import *\n", ["trainer"]),
    ],
)
def test_the_import_reader_sees_every_kind_of_import(tmp_path, source, expected):
    probe = tmp_path / "trainer" / "util" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(source)
    assert module_name(probe, tmp_path) == "trainer.util.probe"
    assert [name for _, name in imported_modules(probe, "trainer.util.probe")] == expected


def test_a_violation_is_reported_with_its_place(tmp_path):
    probe = tmp_path / "trainer" / "util" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("import os\n\n\ndef f():\n    from trainer.checkpoints import codec\n")
    assert violations("trainer.util", lambda name: within(name, "trainer.util"), tmp_path) == [
        "trainer/util/probe.py:5 imports trainer.checkpoints",
        "trainer/util/probe.py:5 imports trainer.checkpoints.codec",
    ]


def test_the_env_runner_keeps_its_earlier_import_path():
    import trainer
    from trainer.env import env_runner as earlier
    from trainer.runners import env_runner as home

    assert earlier.EnvRunner is home.EnvRunner is trainer.EnvRunner
    assert earlier.SingleAgentEnvRunner is home.SingleAgentEnvRunner
    assert earlier.StepFailedRecreateEnvError is trainer.StepFailedRecreateEnvError


def test_what_lower_layers_name_by_import_path_is_there():
    """A lower layer names the class of a higher one it builds by its import path; each path
    gives the class the lower layer expects."""
    from trainer.algorithms import algorithm, registry
    from trainer.algorithms.algorithm_config import AlgorithmConfig
    from trainer.algorithms.config.base import algorithm_registry
    from trainer.env.multi_agent_env import AGENT_GROUPS_WRAPPER, MultiAgentEnv
    from trainer.runners import worker_template
    from trainer.runners.env_runner_group import DEFAULT_CONFIG_CLASS
    from trainer.runners.worker_forkserver import PRELOAD
    from trainer.util.import_paths import resolve_import_path

    assert resolve_import_path(DEFAULT_CONFIG_CLASS) is AlgorithmConfig
    assert issubclass(resolve_import_path(AGENT_GROUPS_WRAPPER), MultiAgentEnv)
    assert module_path(algorithm.TUNE_TRAINABLE_MODULE).is_file()  # Tune itself may be missing
    assert worker_template.WORKER_MODULE in PRELOAD  # the template imports it before forking
    assert algorithm_registry() is registry
    for entry in registry.entries():  # an algorithm's config names its learners and modules
        classes = entry.classes
        assert classes is not None, entry.name
        config = entry.config_cls().framework("numpy")
        if classes.numpy_learner is not None:
            learner = resolve_import_path(classes.numpy_learner)
            assert learner is config.get_default_learner_class()
        if classes.numpy_module is not None:
            assert resolve_import_path(classes.numpy_module) is config.default_module_class()
        for role in ("torch_learner", "torch_module"):  # named, not imported: torch stays lazy
            path = getattr(classes, role)
            assert path is None or module_path(path.partition(":")[0]).is_file(), path


def test_the_runners_see_the_launchers_stand_in_for_ray(monkeypatch):
    """The runners ask the finders on `sys.meta_path` whether `ray` is a stand-in, by the
    attribute the launcher's finder has."""
    import sys

    from trainer.launcher.finder import RLlibFinder
    from trainer.runners.ray_runner import RAY_STAND_IN, ray_is_stand_in

    assert getattr(RLlibFinder(), RAY_STAND_IN) is True
    assert getattr(RLlibFinder(real_ray=True), RAY_STAND_IN) is False
    monkeypatch.setattr(sys, "meta_path", [RLlibFinder(), *sys.meta_path])
    assert ray_is_stand_in()
    monkeypatch.setattr(sys, "meta_path", [RLlibFinder(real_ray=True), *sys.meta_path[1:]])
    assert not ray_is_stand_in()


def test_a_spec_class_registers_with_the_config_format():
    from trainer.checkpoints.config_data import SPEC_CLASSES
    from trainer.core.multi_rl_module import MultiRLModuleSpec
    from trainer.core.policy_spec import PolicySpec
    from trainer.core.rl_module import RLModuleSpec

    assert {RLModuleSpec, MultiRLModuleSpec, PolicySpec} <= set(SPEC_CLASSES)


def test_an_upward_and_a_late_import_are_found(tmp_path):
    for module in (
        "trainer/util/probe.py",
        "trainer/checkpoints/codec.py",
        "trainer/torch_rl/nets.py",
    ):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    (tmp_path / "trainer/torch_rl/nets.py").write_text("import torch\n")
    (tmp_path / "trainer/util/probe.py").write_text(
        "from trainer.errors import X\n\n\ndef f():\n    from trainer.checkpoints import codec\n"
        "    from trainer.torch_rl import nets\n"
    )
    (tmp_path / "trainer/errors.py").write_text("X = 1\n")
    assert upward_imports(tmp_path) == {
        ("trainer/util/probe.py", "trainer.checkpoints.codec"): [5],
        ("trainer/util/probe.py", "trainer.torch_rl.nets"): [6],
    }
    # nets imports torch at its top: importing it late keeps torch lazy
    assert late_imports(tmp_path) == {("trainer/util/probe.py", "trainer.checkpoints.codec"): [5]}


def test_no_trainer_module_imports_the_top_level_callbacks_or_checkpoints():
    """`callbacks` and `checkpoints` are public aliases only: under the launcher a user's own
    module of either name takes the name in the process (trainer.launcher.user_modules), so
    this project's code imports `trainer.callbacks` and `trainer.checkpoints` instead. RLlib's
    ported examples are user code, as RLlib wrote them."""
    found = [
        f"{path.relative_to(SOURCE_ROOT)}:{item.line} imports {item.name}"
        for path in sorted((SOURCE_ROOT / "trainer").rglob("*.py"))
        if "examples" not in path.relative_to(SOURCE_ROOT).parts
        for item in imports(path, module_name(path))
        if within(item.name, "callbacks") or within(item.name, "checkpoints")
    ]
    assert found == []
