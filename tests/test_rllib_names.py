"""RLlib 2.60's whole surface under the launcher: every module of the Ray 2.60 wheel's RLlib
imports, and every public name in it resolves to what this project serves (a constant with
RLlib's value, a class, a function) or to a placeholder that refuses when it is used, never at
the import. The record of RLlib's modules and names (`trainer.launcher.rllib_names`) is the
data the launcher reads without Ray; the first test checks it against the installed wheel."""

from __future__ import annotations

import importlib
import pickle

import pytest

from trainer import launcher
from trainer.compat.rllib_names_record import main
from trainer.errors import NotSupported
from trainer.launcher import finder
from trainer.launcher.rllib_names import CLASS, CONSTANT, FUNCTION, rllib_names


@pytest.fixture(scope="module")
def hook():
    launcher.install()
    try:
        yield
    finally:
        launcher.uninstall()


def _modules() -> list[str]:
    return rllib_names().modules()


@pytest.mark.slow
@pytest.mark.ray
def test_the_record_is_the_installed_wheels():
    pytest.importorskip("ray", reason="reads the Ray 2.60 wheel's source (the test extra)")
    assert main(["--check"]) == 0, "run: python -m trainer.compat.rllib_names_record"


def test_the_record_covers_rllibs_library_modules():
    names = rllib_names()
    assert names.ray_version == "2.60.0"
    modules = set(names.modules())
    assert len(modules) > 450
    for module in (
        "ray.rllib.algorithms.ppo.ppo",
        "ray.rllib.utils.spaces.simplex",
        "ray.rllib.algorithms.dqn.dqn_catalog",
        "ray.rllib.core.testing.testing_learner",
        "ray.rllib.offline",
        "ray.rllib.models.catalog",
        "ray.rllib.algorithms.dqn.dqn_tf_policy",
        "ray.rllib.examples.envs.classes.multi_agent",
    ):
        assert module in modules, module
    assert not any(".tests" in m or m.rpartition(".")[2].startswith("test_") for m in modules)


def test_every_module_imports_and_every_name_resolves(hook):
    """No module refuses at import; a name resolves to RLlib's constant value, or to a served
    or placeholder class or function of RLlib's kind."""
    names = rllib_names()
    problems = []
    for module_name in _modules():
        try:
            module = importlib.import_module(module_name)
        except BaseException as error:  # noqa: BLE001 - every failure is a finding
            problems.append(f"{module_name}: import raised {type(error).__name__}: {error}")
            continue
        for name in names.names(module_name):
            record = names.record(module_name, name)
            try:
                value = getattr(module, name)
            except BaseException as error:  # noqa: BLE001
                problems.append(f"{module_name}.{name}: {type(error).__name__}: {error}")
                continue
            if record.kind == CONSTANT and not finder.is_placeholder(value):
                if not _same(value, record.value):
                    problems.append(f"{module_name}.{name} = {value!r}; RLlib's: {record.value!r}")
            elif record.kind == CLASS and not (isinstance(value, type) or hasattr(value, "remote")):
                problems.append(f"{module_name}.{name}: RLlib's is a class, here {value!r}")
            elif record.kind == FUNCTION and not callable(value):
                problems.append(f"{module_name}.{name}: RLlib's is a function, here {value!r}")
    assert not problems, f"{len(problems)} findings:\n" + "\n".join(problems[:60])


def _same(value, expected) -> bool:
    if isinstance(expected, (list, tuple)) and isinstance(value, (list, tuple)):
        return list(value) == list(expected)
    return value == expected


def test_star_imports_take_rllibs_names(hook):
    namespace: dict = {}
    exec("from ray.rllib.utils.metrics import *", namespace)
    assert namespace["LEARNER_RESULTS"] == "learners"
    assert namespace["ENV_RUNNER_RESULTS"] == "env_runners"
    exec("from ray.rllib.algorithms.ppo import *", namespace)
    assert namespace["PPOConfig"].__module__.startswith("trainer.")


def test_rllibs_constants_have_rllibs_values_in_every_module_that_binds_them(hook):
    from ray.rllib.algorithms.appo.appo import LEARNER_RESULTS_CURR_KL_COEFF_KEY as appo_kl
    from ray.rllib.algorithms.impala.impala import LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY
    from ray.rllib.algorithms.iql.iql_learner import QF_TARGET_PREDS
    from ray.rllib.algorithms.ppo.ppo import LEARNER_RESULTS_CURR_KL_COEFF_KEY
    from ray.rllib.algorithms.ppo.ppo_learner import (
        LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY as ppo_entropy,
    )
    from ray.rllib.utils.torch_utils import FLOAT_MAX, FLOAT_MIN

    assert LEARNER_RESULTS_CURR_KL_COEFF_KEY == appo_kl == "curr_kl_coeff"
    assert LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY == ppo_entropy == "curr_entropy_coeff"
    assert QF_TARGET_PREDS == "qf_target_preds"
    assert FLOAT_MIN == -3.4e38 and FLOAT_MAX == 3.4e38


def test_a_placeholder_refuses_at_first_use_with_a_typed_error(hook):
    """Old-stack and tf modules a package imports but never uses: the import works; a call,
    an instance or an attribute read raises `RLlibNotAvailable` (a `NotSupported`) naming the
    RLlib name and what it needs."""
    from ray.rllib.algorithms.dqn.dqn_tf_policy import DQNTFPolicy
    from ray.rllib.models import ModelCatalog
    from ray.rllib.models.utils import get_initializer

    class MyPolicy(DQNTFPolicy):  # subclassing works; making one does not
        pass

    with pytest.raises(NotSupported, match=r"ray\.rllib\.models\.catalog\.ModelCatalog .*old API"):
        ModelCatalog.get_model_v2  # noqa: B018 - the read is the use
    with pytest.raises(NotSupported, match=r"get_initializer"):
        get_initializer(None)
    with pytest.raises(NotSupported, match=r"DQNTFPolicy"):
        MyPolicy()
    assert not isinstance(object(), ModelCatalog)
    # The same object wherever RLlib re-exports it, and it pickles by reference.
    from ray.rllib.models.catalog import ModelCatalog as from_catalog

    assert from_catalog is ModelCatalog
    assert pickle.loads(pickle.dumps(get_initializer)) is get_initializer


def test_a_name_rllib_does_not_have_fails_as_python_fails(hook):
    with pytest.raises(ImportError, match="cannot import name 'NoSuchThing'"):
        exec("from ray.rllib.algorithms.ppo import NoSuchThing", {})
    with pytest.raises(ModuleNotFoundError, match="RLlib 2.60.0 has no ray.rllib.no_such_module"):
        importlib.import_module("ray.rllib.no_such_module")
