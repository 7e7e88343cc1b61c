"""A torch Algorithm's start-up: building it imports no more of torch than it uses, and
imports torch without the cyclic garbage collector's passes.

A torch optimizer's constructor and step import torch._dynamo (about 1 s of CPU, as much
again as `import torch`), which a learner's optimizers skip while nothing has imported it
(`trainer.torch_rl.dynamo_free`). The default optimizer of a torch learner
(`configure_optimizers_for_module`'s Adam) is built on its first use, not with the learner
(its build still costs a moment, and a script may import the compiler); until then its rate and state
are what a fresh Adam's would be, so nothing a user reads, saves or restores tells the two
apart, and the updates are the same (tests/test_bit_identical_weights.py holds the numbers).

While it waits for the worker template, the main process imports what it needs later, one
module at a time, up to the template's being ready. torch's import allocates some 200k objects,
and the collector ran a pass every few hundred of them (about 10% of the import's CPU): the
main process (`require_torch`) and the worker template (`import_in_order`, its `PRELOAD`)
import with the collector paused.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from test_torch_learner import (  # noqa: E402
    cartpole_episodes,
    make_config,
    make_module,
    same_weights,
    weights,
)

from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.checkpoints.codec import pack, unpack  # noqa: E402
from trainer.core.learner import DEFAULT_OPTIMIZER  # noqa: E402
from trainer.core.models import DEFAULT_MODULE_ID  # noqa: E402
from trainer.errors import StateError  # noqa: E402
from trainer.runners.worker_forkserver import import_in_order  # noqa: E402
from trainer.torch_rl.learner import adam_kernel  # noqa: E402


def _run(script: str) -> list[str]:
    """The words `script` prints, run in a fresh interpreter (tests/ and the project on its
    path): this one's tests have imported torch and torch._dynamo long since."""
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tests.parent)])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    ).stdout.split()


def _default_entry(learner: PPOTorchLearner):
    return learner._optimizers[DEFAULT_OPTIMIZER]


@pytest.mark.slow
def test_building_a_torch_algorithm_does_not_import_torch_dynamo():
    """The build (with an EnvRunner process: the worker template, and what the main process
    imports while it waits) imports torch, not torch._dynamo; nor does the optimizer's build
    (`trainer.torch_rl.dynamo_free`), which runs with the collector paused."""
    output = _run(
        """
        import gc, sys
        from helpers import small_ppo
        with small_ppo(1).framework("torch").build() as algo:
            built = "torch._dynamo" in sys.modules
            learner = algo.learner_group._learner  # (the torch learner, torch imported)
            passes = []
            gc.callbacks.append(lambda phase, info: passes.append(phase == "start"))
            optimizer = learner.get_optimizer()
            gc.callbacks.clear()
            print(built, type(optimizer).__name__, "torch._dynamo" in sys.modules, sum(passes))
        """
    )
    assert output[-4:-1] == ["False", "Adam", "False"]
    # (Hundreds with the collector on; one of the youngest generation may start as it is back.)
    assert int(output[-1]) <= 1


@pytest.mark.slow
def test_torch_is_imported_without_collector_passes_and_the_collector_stays_on():
    output = _run(
        """
        import gc
        from trainer.torch_rl import require_torch
        passes = []
        gc.callbacks.append(lambda phase, info: passes.append(phase == "start"))
        require_torch("this test")
        print(sum(passes), gc.isenabled(), "torch" in __import__("sys").modules)
        """
    )
    # (Hundreds of passes with the collector on; one of the youngest generation may start
    # as it is back on.)
    assert int(output[0]) <= 1 and output[1:] == ["True", "True"]


def test_validating_a_torch_config_finds_torch_without_importing_it():
    """A config's `validate()` (a Tune driver's, a script that only builds configs) checks
    that torch is installed without importing it: the import waits for the first torch
    object. Made unimportable, torch is still refused at the call, naming the extra."""
    output = _run(
        """
        import sys
        from trainer import DQNConfig, PPOConfig, SACConfig
        from trainer.errors import ConfigError
        for config in (
            PPOConfig().environment("CartPole-v1"),
            DQNConfig().environment("CartPole-v1"),
            SACConfig().environment("Pendulum-v1"),
        ):
            config.framework("torch").validate()
        print("torch" in sys.modules)
        sys.modules["torch"] = None
        try:
            PPOConfig().environment("CartPole-v1").framework("torch").validate()
        except Exception as error:
            print(isinstance(error, ConfigError), "needs torch, which is not installed" in str(error))
        """
    )
    assert output == ["False", "True", "True"]


def test_the_template_imports_without_collector_passes(tmp_path, monkeypatch):
    """`import_in_order` (the worker template's imports, the main process's while it waits
    for the template) imports with the collector off, and turns it back on."""
    (tmp_path / "collector_seen.py").write_text("import gc\ncollector_on = gc.isenabled()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        imported = import_in_order(["collector_seen", "no_such_module_here", "json"])
        assert not sys.modules["collector_seen"].collector_on
    finally:
        sys.modules.pop("collector_seen", None)
    assert imported == ["collector_seen"]  # up to the first that fails
    assert gc.isenabled()


def test_the_default_adam_built_on_first_use_is_the_one_built_eagerly_before():
    learner = PPOTorchLearner(make_config(lr=3e-4, optimizer={"eps": 1e-5}), make_module(0))
    assert not _default_entry(learner).built
    optimizer = learner.get_optimizer()
    assert _default_entry(learner).built
    assert optimizer is learner.optimizer is learner.get_optimizer(DEFAULT_MODULE_ID)
    params = list(learner.rl_module.parameters())
    eager = torch.optim.Adam(params, **adam_kernel(params), betas=(0.9, 0.999), eps=1e-5)
    eager.param_groups[0]["lr"] = 3e-4
    assert isinstance(optimizer, torch.optim.Adam)
    assert optimizer.state_dict() == eager.state_dict()  # settings, fused kernel, rate, order
    assert optimizer.param_groups[0]["params"] == params


def test_the_rate_schedule_applies_before_the_optimizer_is_built():
    learner = PPOTorchLearner(make_config(lr=[[0, 1e-3], [1000, 1e-4]]), make_module(0))
    learner.apply_lr_schedule(500)
    assert not _default_entry(learner).built
    assert learner.current_lr == pytest.approx(5.5e-4)
    assert learner.get_optimizer().param_groups[0]["lr"] == pytest.approx(5.5e-4)


def test_a_state_saved_before_the_first_step_is_a_fresh_adams_and_restores_it():
    lazy = PPOTorchLearner(make_config(lr=2e-3), make_module(0))
    eager = PPOTorchLearner(make_config(lr=2e-3), make_module(0))
    eager.get_optimizer()
    saved = lazy.get_state()
    assert not _default_entry(lazy).built
    assert unpack(pack(saved))["optimizer"] == unpack(pack(eager.get_state()))["optimizer"]

    # Restored into a learner that has stepped: its Adam forgets its moments, as torch's would.
    stepped = PPOTorchLearner(make_config(lr=2e-3), make_module(1))
    episodes = cartpole_episodes(stepped.rl_module, 96, seed=2)
    stepped.update(episodes)
    stepped.set_state(unpack(pack(saved)))
    assert stepped.get_state()["optimizer"] == saved["optimizer"]
    assert stepped.update(episodes) == lazy.update(episodes)
    assert same_weights(weights(stepped), weights(lazy))


def test_a_trained_state_restores_into_a_learner_whose_optimizer_is_not_built():
    original = PPOTorchLearner(make_config(lr=1e-3), make_module(0))
    episodes = cartpole_episodes(original.rl_module, 96, seed=3)
    original.update(episodes)
    state = unpack(pack(original.get_state()))
    restored = PPOTorchLearner(make_config(lr=1e-3), make_module(4))
    restored.set_state(state)
    assert _default_entry(restored).built
    moments = restored.get_state()["optimizer"][DEFAULT_OPTIMIZER]["param_state"]
    assert moments.keys() == state["optimizer"][DEFAULT_OPTIMIZER]["param_state"].keys()
    assert original.update(episodes) == restored.update(episodes)
    assert same_weights(weights(original), weights(restored))

    # A rate list that does not fit is refused before anything is built.
    fresh = PPOTorchLearner(make_config(lr=1e-3), make_module(0))
    bad = fresh.get_state()
    bad["optimizer"][DEFAULT_OPTIMIZER]["lr"] = [1e-3, 1e-3]
    with pytest.raises(StateError, match="one per parameter group"):
        fresh.check_state(bad)
    assert not _default_entry(fresh).built
    assert np.isfinite(fresh.current_lr)
