"""Each algorithm lives in its folder: nothing outside `trainer/algorithms/<name>/` names the
algorithm (its classes, its module path), except the registry's line for it and a short
allowlist, each entry with its reason. Names in comments and docstrings (prose) do not count;
code does: identifiers, imports and string constants (a class name as a string, a module path
inside a string)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.algorithms import registry

#: The directory that holds the `trainer` package.
SOURCE_ROOT = Path(__file__).resolve().parent.parent
TRAINER = SOURCE_ROOT / "trainer"

#: Files outside the folders that may name an algorithm, and why.
ALLOWED: dict[str, str] = {
    "trainer/algorithms/registry.py": "the registry's one line per algorithm: name -> package",
    "trainer/compat/moved_modules.py": "RLlib-compat shim: earlier releases' import paths "
    "(trainer.ppo_learner, ...) mapped to their homes in the folders",
    "trainer/example_scripts.py": "RLlib's add_rllib_example_script_args, whose --algo "
    "defaults to RLlib's 'PPO'",
    "trainer/algorithms/marwil/marwil.py": "RLlib's MARWIL trains PPO's default module "
    "(DefaultPPOTorchRLModule; here also its numpy twin, PolicyModule)",
    "trainer/algorithms/bc/bc.py": "RLlib's BC is MARWIL with beta=0: BCConfig and BC subclass "
    "MARWILConfig and MARWIL",
    "trainer/algorithms/cql/cql.py": "RLlib's CQLConfig subclasses SACConfig",
    "trainer/algorithms/cql/cql_learner.py": "RLlib's CQL learner is SAC's with the "
    "conservative critic term (CQLTorchLearner subclasses SACTorchLearner)",
    "trainer/algorithms/cql/torch_learner.py": "RLlib's CQLTorchLearner subclasses SACTorchLearner",
    "trainer/algorithms/cql/torch_module.py": "RLlib's DefaultCQLTorchRLModule subclasses "
    "DefaultSACTorchRLModule",
    "trainer/algorithms/iql/iql.py": "RLlib's IQLConfig subclasses MARWILConfig",
    "trainer/algorithms/iql/iql_learner.py": "IQL trains SAC's module plus a value network, "
    "with SAC's optimizers and target critics",
    "trainer/algorithms/iql/torch_learner.py": "IQL's torch learner shares SACTorchLearner's "
    "optimizers, target critics and per-optimizer gradients",
    "trainer/algorithms/iql/torch_module.py": "RLlib's DefaultIQLTorchRLModule subclasses "
    "DefaultSACTorchRLModule",
    "trainer/algorithms/impala/impala.py": "RLlib's IMPALA trains PPO's default module "
    "(DefaultPPOTorchRLModule; here its numpy twin, PolicyModule)",
    "trainer/algorithms/appo/appo.py": "RLlib's APPOConfig subclasses IMPALAConfig, APPO IMPALA",
    "trainer/algorithms/appo/appo_learner.py": "RLlib's APPOLearner subclasses IMPALALearner",
    "trainer/algorithms/appo/torch_learner.py": "RLlib's APPOTorchLearner subclasses "
    "IMPALATorchLearner",
    "trainer/algorithms/appo/differences.py": "APPO's rows are IMPALA's shared asynchronous ones",
    "trainer/algorithms/appo/__init__.py": "RLlib's APPO folder on IMPALA's",
}
#: Folders whose files are users' code written against RLlib's API (ports of RLlib's own
#: examples), which use the algorithms by their RLlib names as any user script does.
ALLOWED_FOLDERS = ("trainer/examples/",)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings or bare string statements."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for statement in body:
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    found.add(id(statement.value))
    return found


def folder_names(package: str) -> tuple[str, set[str]]:
    """The folder's module path and the names it defines: the registered name and the
    classes defined at the top of its modules."""
    folder = SOURCE_ROOT / package.replace(".", "/")
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                names.add(node.name)
    return package, names


def mentions(path: Path, package: str, names: set[str], root: Path = SOURCE_ROOT) -> list[str]:
    """Where the code in `path` (under `root`) names the algorithm: "path:line what"."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstrings(tree)
    found = []
    relative = path.relative_to(root)

    def within(module: str | None) -> bool:
        return module is not None and (module == package or module.startswith(package + "."))

    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Name) and node.id in names:
            what = node.id
        elif isinstance(node, ast.Attribute) and node.attr in names:
            what = node.attr
        elif isinstance(node, ast.ImportFrom) and within(node.module):
            what = f"from {node.module} import"
        elif isinstance(node, ast.Import) and any(within(a.name) for a in node.names):
            what = "import " + ", ".join(a.name for a in node.names)
        elif isinstance(node, ast.alias) and node.name in names:
            what = node.name
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and (node.value in names or re.search(rf"{re.escape(package)}(?![\w])", node.value))
        ):
            what = repr(node.value)
        if what is not None:
            found.append(f"{relative}:{getattr(node, 'lineno', '?')} {what}")
    return found


@pytest.mark.parametrize("name", registry.ALGORITHM_NAMES)
def test_nothing_outside_an_algorithms_folder_names_it(name):
    package, names = folder_names(registry.ALGORITHM_PACKAGES[name])
    names.add(name)
    folder = package.replace(".", "/") + "/"
    found = []
    for path in sorted(TRAINER.rglob("*.py")):
        relative = path.relative_to(SOURCE_ROOT).as_posix()
        if relative.startswith(folder) or relative.startswith(ALLOWED_FOLDERS):
            continue
        if relative in ALLOWED:
            continue
        found += mentions(path, package, names)
    assert found == [], "\n".join(found)


def test_the_check_finds_a_mention(tmp_path):
    """The check itself: an import, a class used in code and a module path in a string count;
    a docstring does not."""
    text = (
        '"""PPO in prose is fine."""\n'
        "from trainer.algorithms.ppo.ppo import PPOConfig\n"
        "x = PPOConfig\n"
        "y = 'trainer.algorithms.ppo.torch_module'\n"
    )
    tree_path = tmp_path / "trainer"
    tree_path.mkdir()
    probe = tree_path / "probe.py"
    probe.write_text(text)
    found = mentions(probe, "trainer.algorithms.ppo", {"PPOConfig", "PPO"}, root=tmp_path)
    assert sorted(f.split(" ", 1)[1] for f in found) == sorted(
        [
            "from trainer.algorithms.ppo.ppo import",
            "PPOConfig",  # the imported name
            "PPOConfig",  # its use
            "'trainer.algorithms.ppo.torch_module'",
        ]
    ), found


def test_importing_trainer_imports_no_algorithm_until_one_is_asked_for():
    """The registry imports an algorithm's package on first use: `import trainer` imports none
    (and no torch); `trainer.PPOConfig` imports PPO's package only."""
    code = (
        "import sys, trainer\n"
        "def loaded():\n"
        "    return sorted(p for p in trainer.algorithms.registry.ALGORITHM_PACKAGES.values()\n"
        "                  if p in sys.modules)\n"
        "print(loaded(), 'torch' in sys.modules)\n"
        "trainer.PPOConfig\n"
        "print(loaded(), 'torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=SOURCE_ROOT, check=True
    )
    before, after = done.stdout.splitlines()
    assert before == "[] False"
    assert after == f"[{registry.ALGORITHM_PACKAGES['PPO']!r}] False"


def test_an_entry_names_its_registered_name_and_classes():
    for name in registry.ALGORITHM_NAMES:
        entry = registry.entry(name)
        assert entry.name == name and entry.algorithm_cls.__name__ == name
        assert entry.config_cls().algo_class is entry.algorithm_cls
        assert registry.get_trainable_cls(name) is entry.algorithm_cls
