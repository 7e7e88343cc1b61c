"""The EnvRunners' numpy step of PPO's default torch module with `use_lstm`
(`trainer.torch_rl.numpy_inference.NumpyLSTMEncoder`, used by
`TorchModuleView.dist_inputs_and_state`): the torch forward's distribution inputs and states
(to float32 rounding) step after step, without calling the torch forward; new weights are used
at the next step; a module with a forward hook, a subclass, or a step with previous actions
runs its own torch forward; and a PPO run samples with it in its EnvRunner processes."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer import PPOConfig  # noqa: E402
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.models import SpaceInfo  # noqa: E402
from trainer.torch_rl.runner_view import build_torch_module  # noqa: E402

OBS = gym.spaces.Box(-4.0, 4.0, (4,), np.float32)
ATOL = 2e-5


def _view(action_space: gym.Space, model_config: dict, module_class=DefaultPPOTorchRLModule):
    config = {"use_lstm": True, "lstm_cell_size": 32, "fcnet_hiddens": [16], **model_config}
    return build_torch_module(
        module_class, SpaceInfo.from_spaces(OBS, action_space), config, seed=0
    )


def _initial_states(view, rows: int) -> Any:
    state = view.rl_module.get_initial_state()
    return {
        key: (
            {k: np.repeat(np.asarray(v)[None], rows, axis=0) for k, v in value.items()}
            if isinstance(value, dict)
            else np.repeat(np.asarray(value)[None], rows, axis=0)
        )
        for key, value in state.items()
    }


def _torch_step(view, obs: np.ndarray, state: Any) -> tuple[np.ndarray, Any]:
    batch = {
        Columns.OBS: torch.as_tensor(obs[:, None]),
        Columns.STATE_IN: _tensors(state),
    }
    with torch.no_grad():
        out = view.rl_module.forward_exploration(batch)
    inputs = out[Columns.ACTION_DIST_INPUTS].numpy()
    return inputs.reshape(len(obs), -1), _arrays(out[Columns.STATE_OUT])


def _tensors(state: Any) -> Any:
    if isinstance(state, dict):
        return {key: _tensors(value) for key, value in state.items()}
    return torch.as_tensor(np.asarray(state))


def _arrays(state: Any) -> Any:
    if isinstance(state, dict):
        return {key: _arrays(value) for key, value in state.items()}
    return np.asarray(state)


def _assert_close(a: Any, b: Any) -> None:
    if isinstance(a, dict):
        assert sorted(a) == sorted(b)
        for key in a:
            _assert_close(a[key], b[key])
        return
    assert np.asarray(a).shape == np.asarray(b).shape
    np.testing.assert_allclose(a, b, atol=ATOL, rtol=1e-5)


def _forbid_torch_forward(monkeypatch, view) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the torch forward ran")

    monkeypatch.setattr(view.rl_module, "_forward", refuse)


CASES = [
    ("Discrete, separate encoders", gym.spaces.Discrete(2), {"vf_share_layers": False}),
    ("Discrete, shared encoder", gym.spaces.Discrete(3), {"vf_share_layers": True}),
    (
        "Box, separate encoders, relu",
        gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
        {"vf_share_layers": False, "fcnet_activation": "relu", "fcnet_hiddens": [16, 8]},
    ),
    ("Box, free log std", gym.spaces.Box(-1.0, 1.0, (2,), np.float32), {"free_log_std": True}),
]


@pytest.mark.parametrize("name,action_space,model_config", CASES, ids=[c[0] for c in CASES])
def test_steps_in_numpy_follow_the_torch_forward(monkeypatch, name, action_space, model_config):
    view = _view(action_space, model_config)
    rng = np.random.default_rng(0)
    # Random weights (large enough that the gates saturate now and then).
    view.set_weights(
        {k: rng.normal(0, 0.8, v.shape).astype(np.float32) for k, v in view.get_weights().items()}
    )
    rows = 5
    torch_state = numpy_state = _initial_states(view, rows)
    for step in range(6):
        obs = rng.normal(0, 2.0, (rows, 4)).astype(np.float32)
        expected, torch_state = _torch_step(view, obs, torch_state)
        with monkeypatch.context() as patch:
            _forbid_torch_forward(patch, view)
            inputs, numpy_state = view.dist_inputs_and_state(obs, numpy_state)
        assert inputs.dtype == np.float32
        np.testing.assert_allclose(inputs, expected, atol=ATOL, rtol=1e-5, err_msg=f"step {step}")
        _assert_close(numpy_state, torch_state)
    assert view.module_extras is None


def test_new_weights_are_used_at_the_next_step():
    view = _view(gym.spaces.Discrete(2), {})
    obs = np.ones((2, 4), np.float32)
    state = _initial_states(view, 2)
    before, _ = view.dist_inputs_and_state(obs, state)
    with torch.no_grad():
        view.rl_module.pi.net.mlp[0].bias.add_(1.0)  # (an in-place write: version counter)
    after, _ = view.dist_inputs_and_state(obs, state)
    expected, _ = _torch_step(view, obs, state)
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, expected, atol=ATOL, rtol=1e-5)


def test_a_hooked_module_a_subclass_and_previous_actions_run_in_torch():
    view = _view(gym.spaces.Discrete(2), {})
    calls = []
    handle = view.rl_module.pi.register_forward_hook(lambda *args: calls.append(1))
    obs, state = np.ones((2, 4), np.float32), _initial_states(view, 2)
    view.dist_inputs_and_state(obs, state)
    assert calls == [1]
    handle.remove()

    class MyModule(DefaultPPOTorchRLModule):
        """A user's subclass: it overrides nothing, and still steps in torch."""

    mine = _view(gym.spaces.Discrete(2), {}, module_class=MyModule)
    assert mine._numpy_recurrent() is None
    with_prev = _view(gym.spaces.Discrete(2), {"lstm_use_prev_action": True})
    assert with_prev._numpy_recurrent() is None


@pytest.mark.slow
def test_a_ppo_lstm_run_samples_in_numpy_in_its_env_runner_processes():
    from trainer.examples.envs.classes.stateless_cartpole import StatelessCartPole

    config = (
        PPOConfig()
        .framework("torch")
        .environment(StatelessCartPole)
        .env_runners(num_env_runners=1)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"use_lstm": True, "lstm_cell_size": 16, "max_seq_len": 10})
        .debugging(seed=0)
    )
    with config.build() as algo:
        results = [algo.train() for _ in range(2)]
        kinds = algo.env_runner_group.foreach_env_runner(
            lambda runner: type(runner.module._numpy_step).__name__, local_env_runner=False
        )
    assert kinds == ["NumpyInference"]
    assert results[-1]["env_runners"]["num_env_steps_sampled"] >= 200
    assert np.isfinite(results[-1]["learners"]["default_policy"]["total_loss"])
