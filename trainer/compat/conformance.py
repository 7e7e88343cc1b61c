"""RLlib 2.60's public API, compared with this project's, name by name.

The RLlib side is read from the installed Ray wheel's source (`trainer.compat.rllib_surface`);
this side is imported and inspected. For every public name of every target (a class or module an
RLlib user touches) and every parameter of every public method, a *finding* is made when it is
missing here, its default differs from RLlib's, or RLlib's default value is refused here. Each
finding has a key spelled as the user would write the name:

    `AlgorithmConfig.training(lr=...)`     a parameter (of a builder method: a setting)
    `Algorithm.compute_actions`            a method, property or attribute
    `metrics.ENV_RUNNER_RESULTS`           a module-level name

`tests/test_rllib_conformance.py` requires every finding to stand in the deliberate-differences
table (`trainer.compat.differences`) and every API entry of that table to still be a finding.

`python -m trainer.compat.conformance [NAME ...]` prints the findings that the table does not
name, one line each, grouped by target.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import logging
import math
import sys
import textwrap
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from trainer.algorithms.registry import ALGORITHM_PACKAGES, AlgorithmEntry, entries
from trainer.compat.differences import api_keys
from trainer.compat.rllib_surface import UNEVALUATED, Member, Parameter, SurfaceReader
from trainer.util import deprecation
from trainer.util.rllib_members import is_refusal

_RLLIB = "ray.rllib"


@dataclass(frozen=True)
class Target:
    """An RLlib class or module and its counterpart here."""

    #: Short name used in findings and test ids (`AlgorithmConfig`, `metrics`).
    name: str
    #: RLlib's qualified name (`ray.rllib.algorithms.algorithm_config.AlgorithmConfig`).
    rllib: str
    #: Our counterpart's dotted path (`trainer.algorithms.algorithm_config.AlgorithmConfig`).
    here: str
    #: "class" or "module".
    kind: str = "class"
    #: Makes a fresh instance (cheap classes only): instance attributes and their values are
    #: read from it. Without one, instance attributes are found in the class's source.
    instance: Callable[[], Any] | None = field(default=None, compare=False)
    #: The class's builder methods are probed by calling them (config classes).
    builders: bool = False
    #: Who closes this target's gaps when not this project's config/Algorithm work (a note
    #: printed with its findings, so gaps in parallel work are told apart).
    area: str = "config and Algorithm"


def _config(cls_path: str) -> Callable[[], Any]:
    def make() -> Any:
        module, _, name = cls_path.rpartition(".")
        return getattr(importlib.import_module(module), name)()

    return make


def _rllib_home(entry: AlgorithmEntry) -> str:
    """RLlib's module of the algorithm's classes: the entry's launcher row that serves its
    config's module (`ray.rllib.algorithms.<x>.<x>` for RLlib's own algorithms,
    `ray.rllib.examples.algorithms.classes.<x>` for one of RLlib's example algorithms)."""
    home = entry.config_cls.__module__
    return next(path for path, modules in entry.rllib_modules.items() if modules[0] == home)


#: The registered algorithms, by name: RLlib's module of the Algorithm and its config, compared
#: with the algorithm's package here.
RLLIB_ALGORITHM_MODULES: dict[str, str] = {entry.name: _rllib_home(entry) for entry in entries()}

_METRICS = "metrics and stats"
_BUFFERS = "replay buffers"
_GROUP = "EnvRunnerGroup"
_EXAMPLES = "example-script helpers"
_MODULES = "RLModules"

#: Every class and module the conformance test covers, in the order findings are printed.
TARGETS: tuple[Target, ...] = (
    Target(
        "AlgorithmConfig",
        f"{_RLLIB}.algorithms.algorithm_config.AlgorithmConfig",
        "trainer.algorithms.algorithm_config.AlgorithmConfig",
        instance=_config("trainer.algorithms.algorithm_config.AlgorithmConfig"),
        builders=True,
    ),
    *(
        Target(
            f"{name}Config",
            f"{rllib_module}.{name}Config",
            f"{ALGORITHM_PACKAGES[name]}.{name}Config",
            instance=_config(f"{ALGORITHM_PACKAGES[name]}.{name}Config"),
            builders=True,
        )
        for name, rllib_module in RLLIB_ALGORITHM_MODULES.items()
    ),
    Target(
        "Algorithm",
        f"{_RLLIB}.algorithms.algorithm.Algorithm",
        "trainer.algorithms.algorithm.Algorithm",
    ),
    *(
        Target(name, f"{rllib_module}.{name}", f"{ALGORITHM_PACKAGES[name]}.{name}")
        for name, rllib_module in RLLIB_ALGORITHM_MODULES.items()
    ),
    Target(
        "SingleAgentEnvRunner",
        f"{_RLLIB}.env.single_agent_env_runner.SingleAgentEnvRunner",
        "trainer.runners.env_runner.SingleAgentEnvRunner",
        area="EnvRunner",
    ),
    Target(
        "EnvRunnerGroup",
        f"{_RLLIB}.env.env_runner_group.EnvRunnerGroup",
        "trainer.runners.env_runner_group.EnvRunnerGroup",
        area=_GROUP,
    ),
    Target(
        "SingleAgentEpisode",
        f"{_RLLIB}.env.single_agent_episode.SingleAgentEpisode",
        "trainer.env.episode.SingleAgentEpisode",
        area="episodes",
    ),
    Target(
        "InfiniteLookbackBuffer",
        f"{_RLLIB}.env.utils.infinite_lookback_buffer.InfiniteLookbackBuffer",
        "trainer.env.lookback_buffer.InfiniteLookbackBuffer",
        area="episodes",
    ),
    Target(
        "MultiAgentEpisode",
        f"{_RLLIB}.env.multi_agent_episode.MultiAgentEpisode",
        "trainer.env.multi_agent_episode.MultiAgentEpisode",
        area="episodes",
    ),
    Target(
        "MetricsLogger",
        f"{_RLLIB}.utils.metrics.metrics_logger.MetricsLogger",
        "trainer.metrics.metrics_logger.MetricsLogger",
        area=_METRICS,
    ),
    *(
        Target(
            name,
            f"{_RLLIB}.utils.metrics.stats.{module}.{name}",
            f"trainer.metrics.stats.{name}",
            area=_METRICS,
        )
        for module, name in (
            ("base", "StatsBase"),
            ("series", "SeriesStats"),
            ("ema", "EmaStats"),
            ("item", "ItemStats"),
            ("item_series", "ItemSeriesStats"),
            ("lifetime_sum", "LifetimeSumStats"),
            ("max", "MaxStats"),
            ("mean", "MeanStats"),
            ("min", "MinStats"),
            ("percentiles", "PercentilesStats"),
            ("sum", "SumStats"),
        )
    ),
    Target("metrics", f"{_RLLIB}.utils.metrics", "trainer.metrics", kind="module", area=_METRICS),
    Target(
        "EpisodeReplayBuffer",
        f"{_RLLIB}.utils.replay_buffers.episode_replay_buffer.EpisodeReplayBuffer",
        "trainer.replay_buffers.EpisodeReplayBuffer",
        area=_BUFFERS,
    ),
    Target(
        "PrioritizedEpisodeReplayBuffer",
        f"{_RLLIB}.utils.replay_buffers.prioritized_episode_buffer.PrioritizedEpisodeReplayBuffer",
        "trainer.replay_buffers.PrioritizedEpisodeReplayBuffer",
        area=_BUFFERS,
    ),
    Target(
        "ConnectorV2",
        f"{_RLLIB}.connectors.connector_v2.ConnectorV2",
        "trainer.connectors.ConnectorV2",
        area="connectors",
    ),
    Target(
        "env_to_module",
        f"{_RLLIB}.connectors.env_to_module",
        "trainer.connectors.env_to_module",
        kind="module",
        area="connectors",
    ),
    # RLlib's FlattenObservations and FrameStackingEnvToModule are partials of the classes in
    # `connectors.common` (with as_learner_connector=False).
    *(
        Target(
            name,
            f"{_RLLIB}.connectors.{module}",
            f"trainer.connectors.env_to_module.{name}",
            area="connectors",
        )
        for module, name in (
            ("env_to_module.env_to_module_pipeline.EnvToModulePipeline", "EnvToModulePipeline"),
            ("common.flatten_observations.FlattenObservations", "FlattenObservations"),
            ("common.frame_stacking.FrameStacking", "FrameStackingEnvToModule"),
            ("env_to_module.mean_std_filter.MeanStdFilter", "MeanStdFilter"),
            (
                "env_to_module.observation_preprocessor.ObservationPreprocessor",
                "ObservationPreprocessor",
            ),
            (
                "env_to_module.prev_actions_prev_rewards.PrevActionsPrevRewards",
                "PrevActionsPrevRewards",
            ),
        )
    ),
    Target(
        "RLlibCallback",
        f"{_RLLIB}.callbacks.callbacks.RLlibCallback",
        "trainer.callbacks.RLlibCallback",
        area="callbacks",
    ),
    Target(
        "test_utils", f"{_RLLIB}.utils.test_utils", "trainer.testing", kind="module", area=_EXAMPLES
    ),
    Target(
        "RLModule",
        f"{_RLLIB}.core.rl_module.rl_module.RLModule",
        "trainer.core.rl_module.RLModule",
        area=_MODULES,
    ),
    Target(
        "RLModuleSpec",
        f"{_RLLIB}.core.rl_module.rl_module.RLModuleSpec",
        "trainer.core.rl_module.RLModuleSpec",
        area=_MODULES,
    ),
    Target(
        "MultiRLModule",
        f"{_RLLIB}.core.rl_module.multi_rl_module.MultiRLModule",
        "trainer.core.multi_rl_module.MultiRLModule",
        area=_MODULES,
    ),
    Target(
        "MultiRLModuleSpec",
        f"{_RLLIB}.core.rl_module.multi_rl_module.MultiRLModuleSpec",
        "trainer.core.multi_rl_module.MultiRLModuleSpec",
        area=_MODULES,
    ),
    Target(
        "PolicySpec",
        f"{_RLLIB}.policy.policy.PolicySpec",
        "trainer.core.policy_spec.PolicySpec",
        area=_MODULES,
    ),
)


@dataclass(frozen=True)
class Finding:
    """A name of RLlib's that is missing here or differs."""

    target: str
    #: The name as a user writes it (`AlgorithmConfig.training(lr=...)`).
    key: str
    #: What differs, one line.
    problem: str

    def line(self) -> str:
        return f"`{self.key}`: {self.problem}"


@dataclass
class Coverage:
    """What a check looked at: names and parameters compared, defaults compared by value."""

    names: int = 0
    parameters: int = 0
    defaults_compared: int = 0


def _import(path: str) -> Any:
    """The object at dotted `path` (a module, or an attribute of one)."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)


def _same(ours: Any, theirs: Any) -> bool:
    """Equal as RLlib's default would behave: numbers by value (NaN equals NaN), sequences item
    by item whether list or tuple, dicts key by key."""
    if isinstance(theirs, (list, tuple)) and isinstance(ours, (list, tuple)):
        return len(ours) == len(theirs) and all(map(_same, ours, theirs))
    if isinstance(theirs, dict) and isinstance(ours, dict):
        return ours.keys() == theirs.keys() and all(_same(ours[k], theirs[k]) for k in theirs)
    if isinstance(theirs, float) and isinstance(ours, float) and math.isnan(theirs):
        return math.isnan(ours)
    if isinstance(theirs, bool) or isinstance(ours, bool):
        return type(ours) is type(theirs) and ours == theirs
    try:
        return bool(ours == theirs)
    except Exception:  # arrays and objects without a plain ==
        return False


def _named_like(value: Any, source: str | None) -> bool:
    """Whether a default here matches a non-literal RLlib default by name (`NotProvided`,
    `RLlibCallback`, `DEFAULT_MODULE_ID`)."""
    if source is None:  # RLlib's default has no source text
        return False
    wanted = source.rsplit(".", 1)[-1]
    names = {
        repr(value),
        getattr(value, "__name__", None),
        getattr(value, "__qualname__", None),
        type(value).__name__.lstrip("_"),
    }
    return wanted in names


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _instance_attribute_names(cls: type) -> set[str]:
    """`self.<name> = ...` anywhere in the source of `cls` and its bases (this project's)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in ("trainer", "callbacks", "checkpoints"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else ([node.target] if isinstance(node, ast.AnnAssign) else [])
            )
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    names.add(target.attr)
    return names


@contextlib.contextmanager
def _quietly() -> Iterator[None]:
    """Builder probes pass RLlib's older names too: their once-per-process deprecation logs
    are neither shown nor used up (a later real use still logs its warning)."""
    warned = set(deprecation._warned)
    logger = logging.getLogger("trainer")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ignored settings warn too
            yield
    finally:
        logger.setLevel(level)
        deprecation._warned.clear()
        deprecation._warned.update(warned)


class _NoValue:
    """An attribute that is not there (None can be a real value)."""

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _NoValue()


class Checker:
    """Compares one target's RLlib surface with this project's."""

    def __init__(self, reader: SurfaceReader | None = None):
        self.reader = reader or SurfaceReader()
        self.coverage = Coverage()

    # -- entry points ------------------------------------------------------------------------
    def check(self, target: Target) -> list[Finding]:
        try:
            ours = _import(target.here)
        except (ImportError, AttributeError) as error:
            return [
                Finding(
                    target.name,
                    target.name,
                    f"missing here (no {target.here}: {type(error).__name__}: {error})",
                )
            ]
        if target.kind == "module":
            return self._check_module(target, ours)
        return self._check_class(target, ours)

    # -- classes -----------------------------------------------------------------------------
    def _covered_elsewhere(self, target: Target) -> frozenset[str]:
        """RLlib classes with their own target: their members are checked there, not again
        for each subclass."""
        return frozenset(t.rllib for t in TARGETS if t.kind == "class" and t is not target)

    def _check_class(self, target: Target, ours: type) -> list[Finding]:
        members = self.reader.class_members(
            target.rllib, skip_owners=self._covered_elsewhere(target)
        )
        everything = self.reader.class_members(target.rllib)
        instance = target.instance() if target.instance else None
        instance_names = _instance_attribute_names(ours) if instance is None else set()
        keyword_targets: set[str] = set()
        findings: list[Finding] = []
        if target.builders:
            for member in members.values():
                if member.kind == "method" and self._is_builder(member):
                    attributes = self.reader.keyword_attributes(member)
                    keyword_targets |= {a.lstrip("_") for a in attributes.values()}
        for name in sorted(members):
            member = members[name]
            if member.kind == "constructor":
                findings += self._check_parameters(target, target.name, member, ours)
                continue
            self.coverage.names += 1
            key = f"{target.name}.{name}"
            if instance is not None:
                present = hasattr(instance, name)
            else:
                present = hasattr(ours, name) or name in instance_names
            if not present:
                findings.append(Finding(target.name, key, "missing here"))
                continue
            if member.kind == "method":
                here = getattr(ours, name)
                if not callable(here):
                    findings.append(
                        Finding(target.name, key, "a method in RLlib, not callable here")
                    )
                    continue
                if target.builders and self._is_builder(member):
                    findings += self._check_builder(target, member, everything)
                else:
                    findings += self._check_parameters(target, key, member, here)
            elif member.kind == "attribute" and name not in keyword_targets:
                source = (
                    instance if instance is not None else (None if member.on_instance else ours)
                )
                if isinstance(inspect.getattr_static(ours, name, None), property):
                    source = None  # a property here: its value needs an instance
                if source is not None:
                    findings += self._check_value(
                        target, key, member, getattr(source, name, _MISSING)
                    )
        return findings

    @staticmethod
    def _is_builder(member: Member) -> bool:
        return any(p.default_source == "NotProvided" for p in member.parameters)

    def _check_builder(
        self, target: Target, method: Member, everything: dict[str, Member]
    ) -> list[Finding]:
        """Each keyword is passed to the builder method of a fresh config: taken or rejected as
        unknown; its default is RLlib's initial value of the attribute the keyword sets."""
        if target.instance is None:
            raise ValueError(f"{target.name}: a target with builders needs `instance`")
        findings = []
        attributes = self.reader.keyword_attributes(method)
        for param in method.parameters:
            if param.kind in ("var_positional", "var_keyword") or param.raises_when_given:
                continue
            self.coverage.parameters += 1
            key = f"{target.name}.{method.name}({param.name}=...)"
            attribute = attributes.get(param.name, param.name)
            rllib_attr = everything.get(attribute) or everything.get(attribute.lstrip("_"))
            rllib_default = rllib_attr.value if rllib_attr is not None else UNEVALUATED
            if (
                param.default_source not in ("NotProvided", "DEPRECATED_VALUE")
                and param.default is not UNEVALUATED
            ):
                rllib_default = param.default
            config = target.instance()
            here_name = attribute.lstrip("_")
            current = getattr(config, here_name, getattr(config, param.name, _MISSING))
            probe = (
                rllib_default
                if rllib_default is not UNEVALUATED
                else (None if current is _MISSING else current)
            )
            try:
                with _quietly():
                    getattr(config, method.name)(**{param.name: probe})
            except TypeError as error:
                findings.append(
                    Finding(target.name, key, f"missing here (TypeError: {str(error)[:100]})")
                )
                continue
            except Exception as error:
                if rllib_default is not UNEVALUATED:
                    findings.append(
                        Finding(
                            target.name,
                            key,
                            f"RLlib's default {_shown(rllib_default)} is refused "
                            f"here ({type(error).__name__}: {str(error)[:100]})",
                        )
                    )
                continue
            if rllib_default is UNEVALUATED or param.default_source == "DEPRECATED_VALUE":
                continue
            self.coverage.defaults_compared += 1
            if current is _MISSING:
                findings.append(
                    Finding(target.name, key, f"not readable here as config.{here_name}")
                )
            elif not _same(current, rllib_default):
                findings.append(
                    Finding(
                        target.name,
                        key,
                        f"default {_shown(rllib_default)} in RLlib, {_shown(current)} here",
                    )
                )
        return findings

    def _check_parameters(
        self, target: Target, key: str, member: Member, here: Callable
    ) -> list[Finding]:
        if is_refusal(here):
            # A member that refuses when called (`trainer.util.rllib_members.refuse`): it
            # takes RLlib's parameters by name; no default of it is ever used.
            return []
        try:
            signature = inspect.signature(here)
        except (TypeError, ValueError):
            return []
        params = dict(signature.parameters)
        first = next(iter(params), None)
        if first in ("self", "cls"):
            params.pop(first)
        findings = []
        for param in member.parameters:
            if (
                param.kind in ("var_positional", "var_keyword")
                or param.raises_when_given
                or param.name.startswith("_")
            ):  # RLlib-internal (`_ignore_last_ts=`)
                continue
            self.coverage.parameters += 1
            param_key = f"{key}({param.name}=...)"
            mine = params.get(param.name)
            if mine is None:
                findings.append(Finding(target.name, param_key, "missing here"))
                continue
            findings += self._compare_default(target, param_key, param, mine)
        return findings

    def _compare_default(
        self, target: Target, key: str, param: Parameter, mine: inspect.Parameter
    ) -> list[Finding]:
        if not param.has_default or param.default_source == "DEPRECATED_VALUE":
            return []
        if mine.default is inspect.Parameter.empty:
            return [
                Finding(
                    target.name, key, f"required here; RLlib's default is {param.default_source}"
                )
            ]
        self.coverage.defaults_compared += 1
        if param.default is not UNEVALUATED:
            same = _same(mine.default, param.default)
        else:
            same = _named_like(mine.default, param.default_source)
        if same:
            return []
        return [
            Finding(
                target.name,
                key,
                f"default {param.default_source} in RLlib, {_shown(mine.default)} here",
            )
        ]

    def _check_value(self, target: Target, key: str, member: Member, value: Any) -> list[Finding]:
        if member.value is UNEVALUATED or value is _MISSING:
            return []
        self.coverage.defaults_compared += 1
        if _same(value, member.value):
            return []
        return [Finding(target.name, key, f"{_shown(member.value)} in RLlib, {_shown(value)} here")]

    # -- modules -----------------------------------------------------------------------------
    def _check_module(self, target: Target, ours: Any) -> list[Finding]:
        findings = []
        for name, member in sorted(self.reader.module_members(target.rllib).items()):
            self.coverage.names += 1
            key = f"{target.name}.{name}"
            here = getattr(ours, name, _MISSING)
            if isinstance(here, _NoValue):
                findings.append(Finding(target.name, key, "missing here"))
            elif member.kind == "function":
                findings += self._check_parameters(target, key, member, here)
            elif member.kind == "constant":
                findings += self._check_value(target, key, member, here)
        return findings


def check_all(targets: tuple[Target, ...] = TARGETS) -> tuple[list[Finding], Coverage]:
    checker = Checker()
    findings = []
    for target in targets:
        findings += checker.check(target)
    return findings, checker.coverage


def main(argv: list[str] | None = None) -> int:
    """Prints the findings the deliberate-differences table does not name (all targets, or
    those named on the command line), grouped by target with the area that closes them."""
    names = set(argv if argv is not None else sys.argv[1:])
    allowed = api_keys()
    checker = Checker()
    open_count = 0
    for target in TARGETS:
        if names and target.name not in names:
            continue
        open_findings = [f for f in checker.check(target) if f.key not in allowed]
        if open_findings:
            print(f"{target.name} ({target.area}): {len(open_findings)} not in the table")
            for finding in open_findings:
                print(f"  {finding.line()}")
            open_count += len(open_findings)
    coverage = checker.coverage
    print(
        f"{coverage.names} names, {coverage.parameters} parameters, "
        f"{coverage.defaults_compared} defaults compared; {open_count} findings not in the "
        "table"
    )
    return 1 if open_count else 0


if __name__ == "__main__":
    sys.exit(main())
