"""AlgorithmConfig is its sections: each builder method's settings live in its section module,
the config code imports no algorithm, and RLlib's other names are sorted in one pass at the
edge (`trainer.algorithms.config.rllib_names`)."""

from __future__ import annotations

import ast
import importlib
import logging
from pathlib import Path

import pytest

from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.algorithms.config import rllib_names
from trainer.util import deprecation

ROOT = Path(__file__).resolve().parents[1]
CONFIG_PACKAGE = ROOT / "trainer" / "algorithms" / "config"
#: Section module -> the name of its part of the settings table.
SECTION_TABLES = {
    "environment": "ENVIRONMENT_SETTINGS",
    "env_runners": "ENV_RUNNERS_SETTINGS",
    "exploration": "EXPLORATION_SETTINGS",
    "evaluation": "EVALUATION_SETTINGS",
    "training": "TRAINING_SETTINGS",
    "debugging": "DEBUGGING_SETTINGS",
    "reporting": "REPORTING_SETTINGS",
    "fault_tolerance": "FAULT_TOLERANCE_SETTINGS",
    "checkpointing": "CHECKPOINTING_SETTINGS",
    "python_environment": "PYTHON_ENVIRONMENT_SETTINGS",
    "multi_agent": "MULTI_AGENT_SETTINGS",
    "rl_module": "RL_MODULE_SETTINGS",
    "framework": "FRAMEWORK_SETTINGS",
    "experimental": "EXPERIMENTAL_SETTINGS",
    "api_stack": "API_STACK_SETTINGS",
    "offline_data": "OFFLINE_DATA_SETTINGS",
}


def _runtime_imports(path: Path) -> list[str]:
    """The modules a file imports when it runs (imports under `if TYPE_CHECKING:` left out)."""
    found: list[str] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.append(node.module)
                found.extend(f"{node.module}.{alias.name}" for alias in node.names)
            for field in ("body", "orelse", "handlers", "finalbody"):
                children = getattr(node, field, None)
                if isinstance(children, list):
                    visit([child for child in children if isinstance(child, ast.stmt)])

    visit(ast.parse(path.read_text()).body)
    return found


def test_each_section_holds_the_settings_of_its_builder_method():
    tables = {}
    for section, table_name in SECTION_TABLES.items():
        table = getattr(importlib.import_module(f"trainer.algorithms.config.{section}"), table_name)
        assert {setting.method for setting in table.values()} == {section}
        assert callable(getattr(AlgorithmConfig, section))
        tables.update(table)
    # The composed table is the sections' tables, in the order to_dict() and validate() use.
    assert list(AlgorithmConfig._BASE_SETTINGS) == list(tables)
    assert AlgorithmConfig._BASE_SETTINGS == tables


@pytest.mark.parametrize(
    "path",
    sorted([*CONFIG_PACKAGE.glob("*.py"), CONFIG_PACKAGE.parent / "algorithm_config.py"]),
    ids=lambda path: path.name,
)
def test_the_config_code_imports_no_algorithm(path):
    algorithms = (
        "trainer.algorithms.algorithm",
        "trainer.algorithms.ppo",
        "trainer.algorithms.dqn",
        "trainer.torch_rl.default_ppo_module",
        "trainer.torch_rl.default_dqn_module",
        "trainer.torch_rl.ppo_learner",
        "trainer.torch_rl.dqn_learner",
    )
    named = [
        name
        for name in _runtime_imports(path)
        if any(name == a or name.startswith(a + ".") for a in algorithms)
    ]
    assert named == []


def test_rllib_names_are_sorted_in_one_pass(monkeypatch, caplog):
    monkeypatch.setattr(deprecation, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="trainer"):
        sorted_ = rllib_names.sort_arguments(
            "env_runners",
            {"num_rollout_workers": 3, "num_cpus_per_env_runner": 2, "num_runners": 1},
            own=("num_env_runners", "num_envs_per_env_runner"),
            rllib_names=("num_cpus_per_env_runner",),
        )
    assert sorted_.renamed == {"num_env_runners": 3}
    assert sorted_.rllib == {"num_cpus_per_env_runner": 2}
    assert sorted_.unknown == {"num_runners": 1}
    assert "env_runners(num_rollout_workers=...)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="trainer"):
        rllib_names.sort_arguments(
            "env_runners", {"num_rollout_workers": 1}, ["num_env_runners"], ()
        )
    assert caplog.text == ""  # one warning per older name and process


def test_an_older_name_of_another_builder_is_unknown_there():
    # num_sgd_iter is training()'s older num_epochs: env_runners() does not take it.
    sorted_ = rllib_names.sort_arguments(
        "env_runners", {"num_sgd_iter": 3}, ["num_env_runners"], ()
    )
    assert sorted_.renamed == {} and sorted_.unknown == {"num_sgd_iter": 3}


def test_a_config_dict_gets_current_names_in_one_pass(monkeypatch):
    monkeypatch.setattr(deprecation, "_warned", set())
    given = {"num_workers": 2, "lambda": 0.9, "num_cpus_per_worker": 1, "lr": 0.1}
    assert rllib_names.current_names(given) == {"num_env_runners": 2, "lambda_": 0.9, "lr": 0.1}
    config = AlgorithmConfig().update_from_dict({"num_workers": 2, "num_sgd_iter": 4})
    assert (config.num_env_runners, config.num_epochs) == (2, 4)


def test_evaluation_config_overrides_update_those_given_before():
    """As RLlib's `evaluation(evaluation_config=...)`: a second call updates the overrides
    (nested dicts too), None clears them, and the evaluation config sees them all."""
    config = AlgorithmConfig().evaluation(
        evaluation_config={"explore": False, "env_config": {"a": 1, "b": 2}}
    )
    config.evaluation(evaluation_config={"env_config": {"b": 3}})
    assert config.evaluation_config == {"explore": False, "env_config": {"a": 1, "b": 3}}
    evaluation = config.get_evaluation_config_object()
    assert evaluation.explore is False and evaluation.env_config == {"a": 1, "b": 3}
    config.update_from_dict({"evaluation_config": {"gamma": 0.5}})
    assert config.evaluation_config["gamma"] == 0.5 and config.evaluation_config["explore"] is False
    config.evaluation(evaluation_config=None)
    assert config.evaluation_config is None


def test_learner_config_dict_updates_what_was_given_before():
    """As RLlib's `training(learner_config_dict=...)` / `learners(...)`: dict.update."""
    config = AlgorithmConfig().training(learner_config_dict={"a": 1, "b": {"x": 1}})
    config.learners(learner_config_dict={"b": {"y": 2}, "c": 3})
    assert config.learner_config_dict == {"a": 1, "b": {"y": 2}, "c": 3}
