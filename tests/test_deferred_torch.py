"""The default torch PPO run before torch (`trainer.algorithms.ppo.deferred_torch`): no
process imports torch until a torch object is asked for, and the run is the torch build's, bit
for bit, before and after the torch learner and modules are built."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest
from helpers import run_code, small_ppo

pytest.importorskip("torch")

from trainer.algorithms.ppo.deferred_torch import (  # noqa: E402
    DeferredPPOModuleView,
    DeferredPPOTorchLearner,
    deferred_torch_plan,
)
from trainer.algorithms.ppo.numpy_state import torch_names_of_numpy_parameters  # noqa: E402
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner  # noqa: E402
from trainer.core.models import SpaceInfo  # noqa: E402
from trainer.torch_rl.runner_view import TorchModuleView  # noqa: E402


def _spaces(env: str) -> SpaceInfo:
    made = gym.make(env)
    return SpaceInfo.from_spaces(made.observation_space, made.action_space)


@pytest.mark.slow
def test_a_default_torch_ppo_run_imports_torch_in_no_process_until_a_torch_object_is_asked():
    output = run_code(
        """
        import sys
        from helpers import run_code, small_ppo
        from trainer.callbacks import RLlibCallback

        class TorchSeen(RLlibCallback):
            def on_sample_end(self, *, metrics_logger=None, **kwargs):
                metrics_logger.log_value("torch_in_runner", float("torch" in sys.modules))

        config = small_ppo(1).framework("torch").callbacks(TorchSeen)  # (no seed)
        with config.build() as algo:
            result = algo.train()
            result = algo.train()
            print("torch" in sys.modules, result["env_runners"]["torch_in_runner"])
            module = algo.get_module()
            print(type(module).__name__, "torch" in sys.modules)
        """
    )
    assert output == ["False", "0.0", "DefaultPPOTorchRLModule", "True"]


def _pair(**training):
    """The same seeded torch config twice: as given (its learner and EnvRunner module stand
    in), and with the learner class named (the torch objects built at once)."""
    config = small_ppo(0, **training).framework("torch").debugging(seed=3)
    torch_config = config.copy(copy_frozen=False).training(learner_class=PPOTorchLearner)
    return config.build(), torch_config.build()


def _same(a, b, where=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, np.ndarray | float | int):
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where


@pytest.mark.parametrize(
    "training",
    [
        {},
        {"use_kl_loss": True, "entropy_coeff": 0.01},
        {"entropy_coeff": [[0, 0.02], [500, 0.0]]},
    ],
)
def test_the_stand_ins_train_as_the_torch_objects_before_and_after_they_are_built(training):
    deferred, built = _pair(**training)
    try:
        assert isinstance(deferred.learner, DeferredPPOTorchLearner)
        assert isinstance(deferred.env_runner.module, DeferredPPOModuleView)
        assert type(built.learner) is PPOTorchLearner
        assert isinstance(built.env_runner.module, TorchModuleView)
        for _ in range(2):
            ours, theirs = deferred.train(), built.train()
            _same(ours["learners"]["default_policy"], theirs["learners"]["default_policy"])
            assert (
                ours["env_runners"]["episode_return_mean"]
                == theirs["env_runners"]["episode_return_mean"]
            )
        assert not deferred.learner.materialized
        # RLlib's handle builds the torch learner, which holds what the updates gave.
        learner = deferred.learner_group._learner
        assert type(learner) is PPOTorchLearner and deferred.learner.materialized
        _same(learner.get_state(), built.learner.get_state())
        # The torch module the EnvRunner acts with: the weights it was sent.
        module = deferred.get_module()
        assert deferred.env_runner.module.materialized
        _same(module.get_state(), built.get_module().get_state())
        # Then every call goes to the torch objects: the runs stay the same.
        ours, theirs = deferred.train(), built.train()
        _same(ours["learners"]["default_policy"], theirs["learners"]["default_policy"])
        _same(deferred.learner.get_state(), built.learner.get_state())
    finally:
        deferred.stop()
        built.stop()


MODEL_CONFIGS = [
    ("CartPole-v1", {"fcnet_hiddens": [32], "fcnet_activation": "linear"}),
    ("CartPole-v1", {"fcnet_hiddens": [16, 8], "vf_share_layers": True}),
    ("CartPole-v1", {"fcnet_hiddens": [16], "head_fcnet_hiddens": [8, 4]}),
    ("Pendulum-v1", {"fcnet_hiddens": [16], "fcnet_activation": "relu"}),
    ("Pendulum-v1", {"fcnet_hiddens": [16], "free_log_std": True, "vf_share_layers": True}),
]


@pytest.mark.parametrize(("env", "model_config"), MODEL_CONFIGS)
def test_a_stand_in_module_names_and_computes_as_the_torch_view(env, model_config):
    config = (
        small_ppo(0, env=env)
        .rl_module(model_config=model_config)
        .framework("torch")
        .debugging(seed=0)
    )
    spaces = _spaces(env)
    plan = deferred_torch_plan(config, spaces)
    assert plan is not None
    module = config._build_torch_view(spaces, 0, False).rl_module
    assert plan.torch_names == {
        name: torch_name
        for name, torch_name in torch_names_of_numpy_parameters(plan.model_config, module).items()
    }
    assert list(plan.torch_names.values()) == list(module.state_dict())
    view = config._build_torch_view(spaces, 0, True)
    weights = {
        name: (np.random.default_rng(1).normal(size=value.shape) * 0.5).astype(np.float32)
        for name, value in view.get_weights().items()
    }
    assert list(weights) == list(plan.inference_names)
    view.set_weights(weights)
    stand_in = DeferredPPOModuleView(plan, lambda: pytest.fail("built"))
    stand_in.set_weights(weights)
    obs = np.random.default_rng(2).normal(size=(8, spaces.obs_dim)).astype(np.float32)
    np.testing.assert_array_equal(stand_in.dist_inputs(obs), view.dist_inputs(obs))
    _same(stand_in.get_weights(), view.get_weights())
    assert stand_in.dist is view.dist and stand_in.inference_dist is view.inference_dist


@pytest.mark.parametrize(
    ("model_config", "training"),
    [
        ({"fcnet_use_layernorm": True}, {}),
        ({"use_lstm": True}, {}),
        ({}, {"use_critic": False}),
        ({}, {"lr": [[0, 1e-3], [1000, 1e-4]]}),
        ({}, {"learner_connector": lambda *args, **kwargs: []}),
        ({}, {"optimizer": {"betas": (0.8, 0.99)}}),
    ],
)
def test_configs_the_stand_ins_do_not_compute_build_the_torch_objects(model_config, training):
    config = (
        small_ppo(0, **training)
        .rl_module(model_config={"fcnet_hiddens": [16], **model_config})
        .framework("torch")
        .debugging(seed=0)
    )
    assert deferred_torch_plan(config, _spaces("CartPole-v1")) is None
    assert config.runners_import_torch


def test_without_a_seed_a_script_that_imported_torch_gets_the_torch_objects():
    """Its module starts from torch's global generator, which the script may have seeded."""
    config = small_ppo(0).framework("torch")
    assert "torch" in sys.modules
    assert deferred_torch_plan(config, _spaces("CartPole-v1")) is None
    assert deferred_torch_plan(config.debugging(seed=1), _spaces("CartPole-v1")) is not None


def test_weights_a_stand_in_does_not_take_go_to_the_torch_view_and_its_refusal():
    config = small_ppo(0).framework("torch").debugging(seed=0)
    spaces = _spaces("CartPole-v1")
    plan = deferred_torch_plan(config, spaces)
    assert plan is not None
    stand_in = DeferredPPOModuleView(plan, lambda: config._build_torch_view(spaces, 0, True))
    weights = config._build_torch_view(spaces, 0, True).get_weights()
    bad = {
        **weights,
        plan.inference_names[0]: np.full_like(weights[plan.inference_names[0]], np.nan),
    }
    with pytest.raises(ValueError, match="finite|NaN|nan"):
        stand_in.set_weights(bad)
    assert stand_in.materialized


def test_a_checkpoint_of_a_stand_in_run_resumes_exactly(tmp_path):
    """Saved before the torch objects exist (the save builds them), restored into a fresh
    build (whose stand-ins the restore builds too): the next iteration is the one the first
    run takes."""
    from trainer import Algorithm

    config = small_ppo(0).framework("torch").debugging(seed=5)
    with config.build() as algo:
        algo.train()
        assert not algo.learner.materialized
        path = algo.save_to_path(str(tmp_path / "ckpt"))
        assert algo.learner.materialized
        expected = algo.train()["learners"]["default_policy"]
        weights = algo.learner.get_state()["module"]
    with Algorithm.from_checkpoint(path) as restored:
        _same(restored.train()["learners"]["default_policy"], expected)
        _same(restored.learner.get_state()["module"], weights)


def test_calls_off_the_sampling_and_update_paths_build_the_torch_objects():
    config = small_ppo(0).framework("torch").debugging(seed=0)
    with config.build() as algo:
        runner = algo.env_runner
        # A runner state with the weights it holds: checked without torch.
        runner.set_state(runner.get_state())
        assert not runner.module.materialized
        # RLlib's update on a column batch is the torch learner's.
        with pytest.raises(TypeError):
            algo.learner.update(batch={})
        assert algo.learner.materialized
        assert type(algo.learner.module.rl_module).__name__ == "DefaultPPOTorchRLModule"
