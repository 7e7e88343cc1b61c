"""The EnvRunners' numpy forward pass of the default torch modules
(`trainer.torch_rl.numpy_inference`, used by `TorchModuleView.dist_inputs`): an inference-only
default PPO or DQN module gives the torch forward's distribution inputs (to float32 rounding)
and so the same actions, without calling its torch forward; new weights (the view's
`set_weights`, a `set_state` on the module itself as a multi-agent module gets them, any
in-place write to a parameter) are used at the next call; every other module (a subclass, a
user's module, one with a forward hook, a learner's full module, a module cast to float64)
runs its own torch forward."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tests.torch_modules import TwoHeadedTorchModule
from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns
from trainer.core.models import SpaceInfo
from trainer.torch_rl.runner_view import build_torch_module, torch_view

CARTPOLE_OBS = gym.spaces.Box(-4.0, 4.0, (4,), np.float32)
TWO_ACTIONS = gym.spaces.Discrete(2)
BOX_ACTIONS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ATOL = 1e-5


def _spaces(obs_space: gym.Space, action_space: gym.Space) -> SpaceInfo:
    return SpaceInfo.from_spaces(obs_space, action_space)


def _view(module_class, obs_space, action_space, model_config, *, inference_only=True, seed=0):
    return build_torch_module(
        module_class,
        _spaces(obs_space, action_space),
        model_config,
        inference_only=inference_only,
        seed=seed,
    )


def _random_weights(view, seed: int) -> dict[str, np.ndarray]:
    """Weights of the view's inference-only state's shapes, drawn at random (large enough
    that the log-std clipping and every activation's range are reached)."""
    rng = np.random.default_rng(seed)
    return {
        key: rng.normal(0.0, 1.5, value.shape).astype(np.float32)
        for key, value in view.get_weights().items()
    }


def _observation_rows(view, n: int = 8, seed: int = 1) -> np.ndarray:
    """A batch of preprocessed observation rows, as the EnvRunners feed the view."""
    space = view.observation_space
    space.seed(seed)
    return view.spaces.preprocess(np.stack([space.sample() for _ in range(n)]))


def _torch_inputs(view, obs: np.ndarray, explore: bool = True) -> np.ndarray:
    module = view.rl_module
    batch = {Columns.OBS: torch.as_tensor(view.module_observations(obs))}
    with torch.no_grad():
        out = module.forward_exploration(batch) if explore else module.forward_inference(batch)
    return out[Columns.ACTION_DIST_INPUTS].numpy()


def _forbid_torch_forward(monkeypatch, view) -> None:
    """Makes the module's torch forward fail: what still works runs in numpy."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the torch forward ran")

    monkeypatch.setattr(view.rl_module, "_forward", refuse)


PPO_CASES = [
    pytest.param(CARTPOLE_OBS, TWO_ACTIONS, {"fcnet_hiddens": [32], "fcnet_activation": "linear",
                                             "vf_share_layers": True}, id="cartpole-tuned"),
    pytest.param(CARTPOLE_OBS, TWO_ACTIONS, {}, id="defaults-256x256-tanh"),
    pytest.param(CARTPOLE_OBS, BOX_ACTIONS, {"fcnet_hiddens": [16, 8],
                                             "fcnet_activation": "relu",
                                             "head_fcnet_hiddens": [8],
                                             "head_fcnet_activation": "silu"}, id="gaussian"),
    pytest.param(CARTPOLE_OBS, BOX_ACTIONS, {"fcnet_hiddens": [8], "fcnet_activation": "elu",
                                             "free_log_std": True}, id="free-log-std"),
    pytest.param(gym.spaces.Discrete(5), TWO_ACTIONS, {"fcnet_hiddens": [8],
                                                       "fcnet_activation": "sigmoid"},
                 id="one-hot-obs"),
    pytest.param(gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32), TWO_ACTIONS,
                 {"fcnet_hiddens": []}, id="2d-box-no-encoder-layers"),
]  # fmt: skip


@pytest.mark.parametrize(("obs_space", "action_space", "model_config"), PPO_CASES)
def test_default_ppo_module_infers_in_numpy_as_torch(
    monkeypatch, obs_space, action_space, model_config
):
    view = _view(DefaultPPOTorchRLModule, obs_space, action_space, model_config)
    view.set_weights(_random_weights(view, seed=2))
    obs = _observation_rows(view)
    expected = {explore: _torch_inputs(view, obs, explore) for explore in (True, False)}
    _forbid_torch_forward(monkeypatch, view)
    for explore in (True, False):
        inputs = view.dist_inputs(obs, explore=explore)
        assert inputs.dtype == np.float32
        np.testing.assert_allclose(inputs, expected[explore], rtol=ATOL, atol=ATOL)
    if isinstance(action_space, gym.spaces.Box):  # clipped at +-log_std_clip_param (20)
        assert np.abs(inputs[:, 3:]).max() <= 20.0
    # The same draws from the same generator: the same actions and log-probabilities.
    numpy_actions, numpy_logp = view.dist.act(inputs, np.random.default_rng(7), True)
    torch_actions, torch_logp = view.dist.act(expected[True], np.random.default_rng(7), True)
    if isinstance(action_space, gym.spaces.Discrete):
        np.testing.assert_array_equal(numpy_actions, torch_actions)
    else:
        np.testing.assert_allclose(numpy_actions, torch_actions, rtol=ATOL, atol=ATOL)
    np.testing.assert_allclose(numpy_logp, torch_logp, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dueling", [True, False])
@pytest.mark.parametrize("num_atoms", [1, 9])
def test_default_dqn_module_infers_q_values_in_numpy_as_torch(monkeypatch, dueling, num_atoms):
    model_config = {
        "fcnet_hiddens": [16, 16],
        "fcnet_activation": "relu",
        "dueling": dueling,
        # Distributional: the expected values over the support.
        "num_atoms": num_atoms,
        "v_min": -2.0,
        "v_max": 5.0,
    }
    view = _view(DefaultDQNTorchRLModule, CARTPOLE_OBS, gym.spaces.Discrete(3), model_config)
    view.set_weights(_random_weights(view, seed=3))
    obs = _observation_rows(view, n=16)
    expected = _torch_inputs(view, obs)
    _forbid_torch_forward(monkeypatch, view)
    q_values = view.dist_inputs(obs)
    np.testing.assert_allclose(q_values, expected, rtol=ATOL, atol=ATOL)
    np.testing.assert_array_equal(q_values.argmax(axis=1), expected.argmax(axis=1))


def test_new_weights_reach_the_numpy_forward():
    view = _view(DefaultPPOTorchRLModule, CARTPOLE_OBS, TWO_ACTIONS, {"fcnet_hiddens": [8]})
    obs = _observation_rows(view)
    view.set_weights(_random_weights(view, seed=4))
    first = view.dist_inputs(obs)
    np.testing.assert_allclose(first, _torch_inputs(view, obs), rtol=ATOL, atol=ATOL)
    # The view's set_weights (a single-agent EnvRunner's weight sync).
    view.set_weights(_random_weights(view, seed=5))
    second = view.dist_inputs(obs)
    assert not np.allclose(first, second)
    np.testing.assert_allclose(second, _torch_inputs(view, obs), rtol=ATOL, atol=ATOL)
    # The module's own set_state (a multi-agent EnvRunner sets its MultiRLModule's state).
    view.rl_module.set_state(_random_weights(view, seed=6))
    third = view.dist_inputs(obs)
    assert not np.allclose(second, third)
    np.testing.assert_allclose(third, _torch_inputs(view, obs), rtol=ATOL, atol=ATOL)
    # Any in-place write to a parameter.
    with torch.no_grad():
        view.rl_module.pi.net.mlp[0].bias.add_(1.0)
    fourth = view.dist_inputs(obs)
    assert not np.allclose(third, fourth)
    np.testing.assert_allclose(fourth, _torch_inputs(view, obs), rtol=ATOL, atol=ATOL)


def test_a_module_cast_to_float64_runs_in_torch():
    view = _view(DefaultPPOTorchRLModule, CARTPOLE_OBS, TWO_ACTIONS, {"fcnet_hiddens": [8]})
    view.set_weights(_random_weights(view, seed=4))
    obs = _observation_rows(view)
    view.dist_inputs(obs)
    view.rl_module.double()  # every parameter's memory replaced, float64 now
    with torch.no_grad():
        expected = view.rl_module.forward_exploration({Columns.OBS: torch.as_tensor(obs)})
    np.testing.assert_array_equal(
        view.dist_inputs(obs), expected[Columns.ACTION_DIST_INPUTS].numpy().astype(np.float32)
    )


class DoubledLogits(DefaultPPOTorchRLModule):
    """A subclass of the default module with a forward of its own."""

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        out = super()._forward(batch, **kwargs)
        return {Columns.ACTION_DIST_INPUTS: 2.0 * out[Columns.ACTION_DIST_INPUTS]}


def _count_forwards(view) -> list[int]:
    calls = [0]
    forward = view.rl_module._forward

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return forward(*args, **kwargs)

    view.rl_module._forward = counted
    return calls


@pytest.mark.parametrize(
    "make_view",
    [
        pytest.param(
            lambda: _view(DoubledLogits, CARTPOLE_OBS, TWO_ACTIONS, {"fcnet_hiddens": [8]}),
            id="subclass-of-the-default",
        ),
        pytest.param(
            lambda: torch_view(
                TwoHeadedTorchModule(
                    observation_space=CARTPOLE_OBS,
                    action_space=TWO_ACTIONS,
                    inference_only=True,
                    model_config={"hidden": 8},
                )
            ),
            id="user-module",
        ),
        pytest.param(
            lambda: _view(
                DefaultPPOTorchRLModule,
                CARTPOLE_OBS,
                TWO_ACTIONS,
                {"fcnet_hiddens": [8]},
                inference_only=False,
            ),
            id="learner-full-module",
        ),
    ],
)
def test_other_modules_run_their_own_torch_forward(make_view):
    view = make_view()
    obs = _observation_rows(view)
    expected = _torch_inputs(view, obs)
    calls = _count_forwards(view)
    np.testing.assert_array_equal(view.dist_inputs(obs), expected)
    assert calls[0] == 1


def test_a_forward_hook_sends_the_module_back_to_torch():
    view = _view(DefaultPPOTorchRLModule, CARTPOLE_OBS, TWO_ACTIONS, {"fcnet_hiddens": [8]})
    view.set_weights(_random_weights(view, seed=4))
    obs = _observation_rows(view)
    calls = _count_forwards(view)
    view.dist_inputs(obs)
    assert calls[0] == 0  # in numpy
    view.rl_module.pi.register_forward_hook(lambda module, args, out: out * 0.0)
    view.set_weights(_random_weights(view, seed=4))  # the views are built again
    np.testing.assert_array_equal(view.dist_inputs(obs), np.zeros((len(obs), 2), np.float32))
    assert calls[0] == 1
