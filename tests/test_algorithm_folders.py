"""Each algorithm lives in its folder: nothing outside `trainer/algorithms/<name>/` names the
algorithm (its classes, its module path), except the registry's line for it and a short
allowlist, each entry with its reason. Names in comments and docstrings (prose) do not count;
code does: identifiers, imports and string constants (a class name as a string, a module path
inside a string).

Also by name alone: outside the folders and the places whose job is to name algorithms
(`NOT_WALKED`), no identifier, import or string constant has a registered algorithm's name as
a word (`NumpyPPOInference`, `_PPO_LEARNER_WORD`, `DQN_VARIANTS`), the messages in `MESSAGES`
aside: the generic layers hold no algorithm's code, even code its folder does not define."""

from __future__ import annotations

import ast
import functools
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
    "trainer/compat/rllib_member_gaps.py": "the gap table of RLlib's class members, keyed by "
    "RLlib's class names as the member record (RLlib's data) spells them",
    "trainer/example_scripts.py": "RLlib's add_rllib_example_script_args, whose --algo "
    "defaults to RLlib's 'PPO'",
    "trainer/algorithms/marwil/config.py": "RLlib's MARWIL trains PPO's default module "
    "(DefaultPPOTorchRLModule; here also its numpy twin, PolicyModule)",
    "trainer/algorithms/bc/config.py": "RLlib's BC is MARWIL with beta=0: BCConfig subclasses "
    "MARWILConfig",
    "trainer/algorithms/bc/bc.py": "RLlib's BC is MARWIL with beta=0: BC subclasses MARWIL",
    "trainer/algorithms/bc/catalog.py": "RLlib's BCCatalog, served as PPO's catalog (BC "
    "trains PPO's module here)",
    "trainer/algorithms/bc/torch_module.py": "RLlib's DefaultBCTorchRLModule, served as PPO's "
    "torch module (BC trains PPO's module here)",
    "trainer/algorithms/cql/config.py": "RLlib's CQLConfig subclasses SACConfig",
    "trainer/algorithms/cql/loss.py": "CQL's numpy loss is SAC's with the conservative critic "
    "term and behaviour cloning, on SAC's numpy module",
    "trainer/algorithms/cql/torch_loss.py": "CQL's torch loss reads SAC's module outputs and "
    "reports SAC's statistics (RLlib's CQLTorchLearner's loss)",
    "trainer/algorithms/cql/cql_learner.py": "RLlib's CQL learner is SAC's with the "
    "conservative critic term (CQLTorchLearner subclasses SACTorchLearner)",
    "trainer/algorithms/cql/torch_learner.py": "RLlib's CQLTorchLearner subclasses SACTorchLearner",
    "trainer/algorithms/cql/torch_module.py": "RLlib's DefaultCQLTorchRLModule subclasses "
    "DefaultSACTorchRLModule",
    "trainer/algorithms/iql/config.py": "RLlib's IQLConfig subclasses MARWILConfig",
    "trainer/algorithms/iql/loss.py": "IQL's loss reads SAC's critics' outputs and squashed "
    "Gaussian, under SAC's optimizer names and keys",
    "trainer/algorithms/iql/torch_loss.py": "IQL's torch loss reads SAC's critics' outputs, "
    "under SAC's keys",
    "trainer/algorithms/iql/iql_learner.py": "IQL trains SAC's module plus a value network, "
    "with SAC's optimizers and target critics",
    "trainer/algorithms/iql/torch_learner.py": "IQL's torch learner shares SACTorchLearner's "
    "optimizers, target critics and per-optimizer gradients",
    "trainer/algorithms/iql/torch_module.py": "RLlib's DefaultIQLTorchRLModule subclasses "
    "DefaultSACTorchRLModule",
    "trainer/algorithms/tqc/config.py": "RLlib's TQCConfig subclasses SACConfig",
    "trainer/algorithms/tqc/tqc.py": "RLlib's TQC subclasses SAC",
    "trainer/algorithms/tqc/loss.py": "TQC's numpy loss is SAC's policy and alpha terms and "
    "SAC's reparameterized draws, with quantile critics",
    "trainer/algorithms/tqc/torch_loss.py": "TQC's torch loss reports SAC's statistics under "
    "SAC's keys (RLlib's TQCTorchLearner's loss)",
    "trainer/algorithms/tqc/tqc_module.py": "TQC's numpy module is SAC's with quantile critics",
    "trainer/algorithms/tqc/tqc_learner.py": "RLlib's TQCLearner subclasses SACLearner",
    "trainer/algorithms/tqc/torch_learner.py": "RLlib's TQCTorchLearner subclasses SACTorchLearner",
    "trainer/algorithms/tqc/torch_module.py": "TQC's torch module is SAC's (RLlib's "
    "DefaultTQCTorchRLModule shares SAC's catalog and encoders)",
    "trainer/algorithms/tqc/state_conversion.py": "TQC's parameter names map as SAC's",
    "trainer/algorithms/tqc/presets.py": "TQC's MountainCarContinuous preset is SAC's there "
    "(rl-zoo's TQC entry is its SAC entry) with another entropy coefficient, gamma and buffer",
    "trainer/algorithms/impala/config.py": "RLlib's IMPALA trains PPO's default module "
    "(DefaultPPOTorchRLModule; here its numpy twin, PolicyModule)",
    "trainer/algorithms/appo/config.py": "RLlib's APPOConfig subclasses IMPALAConfig",
    "trainer/algorithms/appo/appo.py": "RLlib's APPO subclasses IMPALA",
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


@functools.cache
def code_references(path: Path) -> tuple[tuple[int, str, str], ...]:
    """What the code in `path` names, read once per file (every algorithm's check reads it):
    `(line, kind, text)` with kind "name" (an identifier, an attribute, an imported name),
    "from" (the module of a `from ... import`), "import" (the modules of an `import`, joined
    by ", ") or "string" (a string constant, docstrings left out)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            found.append((line, "name", node.id))
        elif isinstance(node, ast.Attribute):
            found.append((line, "name", node.attr))
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.append((line, "from", node.module))
        elif isinstance(node, ast.Import):
            found.append((line, "import", ", ".join(alias.name for alias in node.names)))
        elif isinstance(node, ast.alias):
            found.append((line, "name", node.name))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found.append((line, "string", node.value))
    return tuple(found)


def mentions(path: Path, package: str, names: set[str], root: Path = SOURCE_ROOT) -> list[str]:
    """Where the code in `path` (under `root`) names the algorithm: "path:line what"."""
    relative = path.relative_to(root)
    in_string = re.compile(rf"{re.escape(package)}(?![\w])")
    found = []

    def within(module: str) -> bool:
        return module == package or module.startswith(package + ".")

    for line, kind, text in code_references(path):
        if kind == "name" and text in names:
            found.append(f"{relative}:{line or '?'} {text}")
        elif kind == "from" and within(text):
            found.append(f"{relative}:{line or '?'} from {text} import")
        elif kind == "import" and any(within(module) for module in text.split(", ")):
            found.append(f"{relative}:{line or '?'} import {text}")
        elif kind == "string" and (text in names or in_string.search(text)):
            found.append(f"{relative}:{line or '?'} {text!r}")
    return found


@pytest.mark.slow
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


# -- no algorithm's code below the folders -------------------------------------------------------

#: The registered algorithms' names as words (`words`): a word of an identifier, an import or a
#: string constant that is one of these names an algorithm.
ALGORITHM_WORDS = frozenset(name.lower() for name in registry.ALGORITHM_NAMES)

#: Places outside the folders that the walk skips, because naming algorithms is their job.
NOT_WALKED: dict[str, str] = {
    "trainer/algorithms/registry.py": "the registry: one line per algorithm, name -> package",
    "trainer/algorithms/presets.py": "the main job's presets, looked up by algorithm name",
    "trainer/compat/": "RLlib's surface: earlier import paths, RLlib's names, the differences",
    "trainer/launcher/": "runs RLlib scripts: maps ray.rllib.algorithms.<name> to the folders",
    "trainer/examples/": "ports of RLlib's examples: users' code, which names its algorithm",
    "trainer/cli/": "the command line: --algo NAME and its help",
    "trainer/example_scripts.py": "RLlib's add_rllib_example_script_args: --algo defaults to PPO",
    "trainer/core/testing/": "RLlib's rllib.core.testing: its toy BC learner and modules are "
    "RLlib's names for a test learner, not the BC folder's code",
}

#: Messages (string constants a person reads) outside the folders that mention algorithms:
#: path -> (why, pieces of the messages' text). A piece that matches no string fails.
MESSAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "trainer/core/catalog.py": (
        "RLlib's Catalog refusing a setting names the catalogs and module to use instead",
        ("PPOCatalog / DQNCatalog", "module_class=PPOTorchRLModule"),
    ),
    "trainer/core/policy_description.py": (
        "the export's refusal lists the modules the export describes",
        ("the default PPO, APPO/IMPALA-style actor-critic, DQN and SAC modules",),
    ),
    "trainer/torch_rl/export_layers.py": (
        "the export's refusal of a module says which default modules it describes",
        ("(not a default PPO, DQN or SAC torch module)",),
    ),
    "trainer/algorithms/learner_group.py": (
        "the refusal of a numpy whole-module learner names an algorithm's config as the way",
        ("(PPOConfig().build_learner(...))",),
    ),
    "trainer/algorithms/algorithm.py": (
        "the refusal of learner pieces names the algorithms that run them",
        ("(PPO, IMPALA and ",),
    ),
    "trainer/algorithms/config/offline_data.py": (
        "the refusal of recorded data names the algorithms that learn from it",
        ("(BC, MARWIL, CQL, IQL)",),
    ),
    "trainer/algorithms/config/training.py": (
        "the settings' help and refusals name RLlib's learners and the algorithms that take them",
        (
            "PPOTorchLearner or DQNTorchLearner",
            "(PPOTorchLearner)",
            "PPO, IMPALA, APPO",
            "learner connectors run with PPO, ",
        ),
    ),
    "trainer/tune/trainable.py": (
        "the refusal of a config without algo_class names algorithms' configs as examples",
        ("(PPOConfig(), DQNConfig(), ...)",),
    ),
}


def words(text: str) -> set[str]:
    """The lower-cased words of an identifier, a dotted path or a sentence: split at what is not
    a letter or digit and where the case changes (`NumpyPPOInference` -> numpy, ppo, inference;
    `_PPO_LEARNER_WORD` -> ppo, learner, word; `ABC` stays abc)."""
    found: set[str] = set()
    for part in re.split(r"[^A-Za-z0-9]+", text):
        found.update(
            word.lower()
            for word in re.findall(r"[A-Z]+(?=[A-Z][a-z]|[0-9]|$)|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", part)
        )
    return found


def algorithm_names(path: Path, root: Path = SOURCE_ROOT) -> list[tuple[int, str, str]]:
    """Where the code in `path` names a registered algorithm: (line, "identifier", "import"
    or "string", the text). Identifiers are names, attributes, definitions, arguments and
    keywords; imports are the modules imported from and the names imported; strings are the
    string constants that are not docstrings."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        texts: list[tuple[str, str]] = []
        if isinstance(node, ast.Name):
            texts = [("identifier", node.id)]
        elif isinstance(node, ast.Attribute):
            texts = [("identifier", node.attr)]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            texts = [("identifier", node.name)]
        elif isinstance(node, ast.arg):
            texts = [("identifier", node.arg)]
        elif isinstance(node, ast.keyword) and node.arg is not None:
            texts = [("identifier", node.arg)]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            texts = [("import", node.module)]
        elif isinstance(node, ast.alias):
            texts = [("import", node.name)] + ([("import", node.asname)] if node.asname else [])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            texts = [("identifier", name) for name in node.names]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            texts = [("string", node.value)]
        found += [
            (getattr(node, "lineno", 0), kind, text)
            for kind, text in texts
            if words(text) & ALGORITHM_WORDS
        ]
    return sorted(found)


def walked_files() -> list[Path]:
    """The `trainer` files outside the algorithms' folders and `NOT_WALKED`."""
    folders = tuple(
        package.replace(".", "/") + "/" for package in registry.ALGORITHM_PACKAGES.values()
    )
    return [
        path
        for path in sorted(TRAINER.rglob("*.py"))
        if not path.relative_to(SOURCE_ROOT).as_posix().startswith(folders + tuple(NOT_WALKED))
    ]


def test_no_algorithm_is_named_outside_its_folder_in_the_layers_below() -> None:
    """The generic layers (torch_rl, util, core, connectors, replay_buffers, metrics, the
    runners, the algorithms' base modules, ...) hold no algorithm's code: no import from a
    folder, no identifier with an algorithm's name as a word, no string constant naming one
    but the messages in `MESSAGES`. Docstrings and comments are prose, not code."""
    found = []
    matched = set()
    for path in walked_files():
        relative = path.relative_to(SOURCE_ROOT).as_posix()
        pieces = MESSAGES.get(relative, ("", ()))[1]
        for line, kind, text in algorithm_names(path):
            piece = next((p for p in pieces if kind == "string" and p in text), None)
            if piece is not None:
                matched.add((relative, piece))
                continue
            found.append(f"{relative}:{line} {kind} {text!r}")
    stale = [
        f"{path}: {piece!r}"
        for path, (_, pieces) in MESSAGES.items()
        for piece in pieces
        if (path, piece) not in matched
    ]
    assert found == [], "algorithm-specific code outside the folders:\n" + "\n".join(found)
    assert stale == [], "MESSAGES entries that match no message any more:\n" + "\n".join(stale)


def test_the_walk_finds_an_algorithms_name(tmp_path: Path) -> None:
    """The check itself: a class, a constant, an import and a string naming an algorithm
    count; a docstring, a comment and a word that only contains a name (ABC) do not."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""PPO in prose is fine."""\n'
        "import abc  # so is DQN in a comment\n"
        "from trainer.algorithms.dqn.torch_module import Thing\n"
        "_PPO_LEARNER_WORD = 7\n"
        "class NumpySACInference(abc.ABC):\n"
        '    """SAC again in prose."""\n'
        "x = 'APPO'\n"
        "def f(appointment): return appointment\n"
    )
    found = [(line, kind, text) for line, kind, text in algorithm_names(probe, tmp_path)]
    assert found == [
        (3, "import", "trainer.algorithms.dqn.torch_module"),
        (4, "identifier", "_PPO_LEARNER_WORD"),
        (5, "identifier", "NumpySACInference"),
        (7, "string", "APPO"),
    ], found
