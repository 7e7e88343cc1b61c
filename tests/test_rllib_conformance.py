"""RLlib 2.60's public API, checked against Ray 2.60 itself.

The installed Ray wheel's RLlib source is parsed (`trainer.compat.rllib_surface`) and compared
with this project name by name and parameter by parameter (`trainer.compat.conformance`). Every
public name and parameter of the classes and modules an RLlib user touches exists here with
RLlib's default, or stands in the deliberate-differences table (`trainer.compat.differences`,
rendered as docs/deliberate_differences.md); a table entry whose name now matches RLlib fails
too, so the table cannot go stale. One test per class or module: `-k MetricsLogger` runs one.
`python -m trainer.compat.conformance [NAME ...]` prints the same findings.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainer import AlgorithmConfig
from trainer.compat import differences
from trainer.compat.conformance import TARGETS, Checker, Finding, Target
from trainer.compat.differences import all_differences, api_keys, render
from trainer.compat.rllib_surface import UNEVALUATED, SurfaceReader, ray_version

#: Reads RLlib's source in the Ray 2.60 wheel (the test extra); skips where it is missing.
pytestmark = pytest.mark.ray

_ALGORITHM_CONFIG = "ray.rllib.algorithms.algorithm_config.AlgorithmConfig"


@pytest.fixture(scope="module")
def checker() -> Checker:
    return Checker()


@pytest.fixture(scope="module")
def findings_of(checker):
    """Target name -> its findings, each target checked once per module."""
    cache: dict[str, list[Finding]] = {}

    def findings(target: Target) -> list[Finding]:
        if target.name not in cache:
            cache[target.name] = checker.check(target)
        return cache[target.name]

    return findings


def test_the_reference_is_ray_2_60():
    assert ray_version() == "2.60.0"


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_every_rllib_name_is_here_or_a_deliberate_difference(target, findings_of):
    allowed = api_keys()
    missing = [f for f in findings_of(target) if f.key not in allowed]
    assert not missing, (
        f"{target.name} ({target.area}): {len(missing)} of RLlib 2.60's names are neither here "
        "(with RLlib's default) nor in the deliberate-differences table "
        "(trainer/compat/differences.py):\n" + "\n".join(f.line() for f in missing)
    )


@pytest.mark.slow
def test_no_table_entry_names_something_that_matches_rllib(findings_of):
    found = {f.key for target in TARGETS for f in findings_of(target)}
    stale = sorted(api_keys() - found)
    assert not stale, (
        "entries of the deliberate-differences table whose name now matches "
        "RLlib 2.60 (remove them from trainer/compat/differences.py):\n"
        + "\n".join(f"`{key}`" for key in stale)
    )


def test_the_table_names_each_difference_once_and_says_why():
    keys = [d.rllib for d in all_differences()]
    assert len(keys) == len(set(keys))
    assert all(
        d.here
        and d.why
        and d.kind
        in (differences.API, differences.TEST, differences.BEHAVIOUR, differences.UNIT_TEST)
        for d in all_differences()
    )


def test_the_docs_page_is_the_rendered_table():
    page = differences.PAGE.read_text()
    assert page == render(), (
        "docs/deliberate_differences.md is stale: run python -m trainer.compat.differences"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "trainer.compat.differences", "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout
    for d in all_differences():
        assert d.rllib.partition("::")[2] or d.rllib in page


# -- the extractor, on facts of RLlib 2.60's source -----------------------------------------
def test_reader_finds_builder_keywords_their_attributes_and_rllib_defaults():
    reader = SurfaceReader()
    members = reader.class_members(_ALGORITHM_CONFIG)
    training = members["training"]
    lr = next(p for p in training.parameters if p.name == "lr")
    assert (lr.kind, lr.default_source, lr.default) == ("keyword", "NotProvided", UNEVALUATED)
    stored = reader.keyword_attributes(training)
    assert (
        stored["lr"] == "lr"
        and stored["train_batch_size_per_learner"] == "_train_batch_size_per_learner"
    )
    assert members["lr"].value == 0.001 and members["lr"].on_instance
    # RLlib raises for these (deprecation_warning(error=True)): no working code passes them.
    env_runners = {p.name: p for p in members["env_runners"].parameters}
    assert env_runners["num_rollout_workers"].raises_when_given
    assert not env_runners["num_env_runners"].raises_when_given
    # `@Deprecated(error=True)` methods and `self.x = DEPRECATED_VALUE` are not the surface.
    assert "rollouts" not in members and "monitor" not in members
    assert members["is_multi_agent"].kind == "property"


def test_reader_follows_imports_into_base_classes_across_modules():
    reader = SurfaceReader()
    algorithm = reader.class_members("ray.rllib.algorithms.algorithm.Algorithm")
    assert algorithm["train_buffered"].owner == "ray.tune.trainable.trainable.Trainable"
    assert algorithm["save_to_path"].owner.endswith("Checkpointable")
    ppo = reader.class_members(
        "ray.rllib.algorithms.ppo.ppo.PPO",
        skip_owners=frozenset({"ray.rllib.algorithms.algorithm.Algorithm"}),
    )
    assert "training_step" in ppo and "train" not in ppo and "cleanup" not in ppo
    # A module's names: constants with their literal values, names re-exported in __all__.
    metrics = reader.module_members("ray.rllib.utils.metrics")
    assert metrics["ENV_RUNNER_RESULTS"].value == "env_runners"
    connectors = reader.module_members("ray.rllib.connectors.env_to_module")
    assert connectors["MeanStdFilter"].kind == "class"


class NarrowConfig(AlgorithmConfig):
    """A config that has lost RLlib's learners() keywords (as this project once had)."""

    @classmethod
    def _rllib_rules(cls):
        return {m: t for m, t in super()._rllib_rules().items() if m != "learners"}


class ShortBuffer(dict):
    """Stands in for an InfiniteLookbackBuffer that has almost nothing of RLlib's."""

    lookback = 3

    def __init__(self, data=None, lookback=1):
        super().__init__()


def test_checker_reports_missing_names_parameters_and_defaults_one_line_each():
    checker = Checker()
    narrow = Target(
        "AlgorithmConfig",
        _ALGORITHM_CONFIG,
        f"{__name__}.NarrowConfig",
        instance=NarrowConfig,
        builders=True,
    )
    lines = [f.line() for f in checker.check(narrow)]
    assert any(
        line.startswith(
            "`AlgorithmConfig.learners(num_learners=...)`: missing here "
            "(TypeError: NarrowConfig.learners() got an unknown setting "
            "num_learners=0"
        )
        for line in lines
    ), lines
    buffer = Target(
        "InfiniteLookbackBuffer",
        "ray.rllib.env.utils.infinite_lookback_buffer.InfiniteLookbackBuffer",
        f"{__name__}.ShortBuffer",
    )
    lines = [f.line() for f in checker.check(buffer)]
    assert "`InfiniteLookbackBuffer.get(indices=...)`: missing here" in lines  # dict.get
    assert "`InfiniteLookbackBuffer.append`: missing here" in lines
    assert "`InfiniteLookbackBuffer.lookback`: missing here" not in lines
    assert "`InfiniteLookbackBuffer(lookback=...)`: default 0 in RLlib, 1 here" in lines
    assert "`InfiniteLookbackBuffer(space=...)`: missing here" in lines
    missing_module = Target("Nowhere", _ALGORITHM_CONFIG, "trainer.no_such_module.Config")
    (finding,) = checker.check(missing_module)
    assert finding.line().startswith("`Nowhere`: missing here (no trainer.no_such_module.Config")


def test_checker_compares_defaults_by_value():
    checker = Checker()

    class DifferentDefaults(AlgorithmConfig):
        _DEFAULT_OVERRIDES = {"gamma": 0.5}

    sys.modules[__name__].DifferentDefaults = DifferentDefaults
    target = Target(
        "AlgorithmConfig",
        _ALGORITHM_CONFIG,
        f"{__name__}.DifferentDefaults",
        instance=DifferentDefaults,
        builders=True,
    )
    lines = [f.line() for f in checker.check(target)]
    assert "`AlgorithmConfig.training(gamma=...)`: default 0.99 in RLlib, 0.5 here" in lines


@pytest.mark.slow
def test_command_line_prints_open_findings_for_one_target():
    done = subprocess.run(
        [sys.executable, "-m", "trainer.compat.conformance", "PPO"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "findings not in the table" in done.stdout


@pytest.mark.slow
def test_the_extractor_never_imports_ray_rllib():
    # The extractor must work where ray.rllib cannot be imported (no dm-tree, torch).
    code = (
        "import sys; import trainer.compat.conformance as c; c.check_all(); "
        "print('ray.rllib' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().endswith("False"), done.stdout + done.stderr
