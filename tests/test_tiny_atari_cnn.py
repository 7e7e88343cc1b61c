"""RLlib's `TinyAtariCNN` example module (`trainer.examples.rl_modules.classes.tiny_atari_cnn_rlm`)
against RLlib's architecture, and torch PPO training it on Atari-wrapped frames, (B, 42, 42, 4)
float32, set up as RLlib's `custom_cnn_rl_module.py` sets it up, in an EnvRunner process."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import trainer  # noqa: F401 - registers localrl/TinyCatch-v0
from trainer import PPOConfig, RLModuleSpec, register_env
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import TARGET_NETWORK_ACTION_DIST_INPUTS
from trainer.env.wrappers.atari_wrappers import wrap_atari_for_new_api_stack
from trainer.examples.rl_modules.classes.tiny_atari_cnn_rlm import TinyAtariCNN

FRAMES = gym.spaces.Box(-1.0, 1.0, (42, 42, 4), np.float32)
#: The example script's stack (RLlib's default for the module as well).
CONV_FILTERS = [[16, 4, 2, "same"], [32, 4, 2, "same"], [256, 11, 1, "valid"]]


def tiny_cnn(actions: int = 4, model_config: dict | None = None) -> TinyAtariCNN:
    return TinyAtariCNN(
        observation_space=FRAMES,
        action_space=gym.spaces.Discrete(actions),
        model_config={} if model_config is None else model_config,
    )


def test_layers_are_rllibs_tiny_atari_cnn():
    torch.manual_seed(0)
    module = tiny_cnn()
    # RLlib's layers, by state-dict key: the padding of each "same" layer comes first.
    shapes = {key: tuple(value.shape) for key, value in module.state_dict().items()}
    assert shapes == {
        "_base_cnn_stack.1.weight": (16, 4, 4, 4),
        "_base_cnn_stack.1.bias": (16,),
        "_base_cnn_stack.4.weight": (32, 16, 4, 4),
        "_base_cnn_stack.4.bias": (32,),
        "_base_cnn_stack.6.weight": (256, 32, 11, 11),
        "_base_cnn_stack.6.bias": (256,),
        "_logits.1.weight": (4, 256, 1, 1),
        "_logits.1.bias": (4,),
        "_values.weight": (1, 256),
        "_values.bias": (1,),
    }
    assert sum(p.numel() for p in module.parameters()) == 1_002_037  # RLlib's docstring case
    # TensorFlow's "same" padding (kernel 4, stride 2): 42 -> 21 pads 1 and 1, 21 -> 11 pads 1
    # before and 2 after; the "valid" 11x11 layer leaves 1x1.
    assert module._base_cnn_stack[0].padding == (1, 1, 1, 1)
    assert module._base_cnn_stack[3].padding == (1, 2, 1, 2)
    # Initialisation: zero biases; the value head normc with std 0.01 per row.
    assert all(not b.any() for k, b in module.state_dict().items() if k.endswith("1.bias"))
    assert math.isclose(float(module._values.weight.detach().norm()), 0.01, rel_tol=1e-5)
    assert tiny_cnn(model_config={"conv_filters": CONV_FILTERS}).state_dict().keys() == (
        module.state_dict().keys()
    )


def test_forward_passes_logits_embeddings_and_values():
    module = tiny_cnn(actions=6)
    obs = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, (5, 42, 42, 4)).astype("f4"))
    train = module.forward_train({Columns.OBS: obs})
    assert train[Columns.ACTION_DIST_INPUTS].shape == (5, 6)
    assert train[Columns.EMBEDDINGS].shape == (5, 256)
    for forward in (module.forward_inference, module.forward_exploration):
        out = forward({Columns.OBS: obs})
        assert set(out) == {Columns.ACTION_DIST_INPUTS}
        torch.testing.assert_close(out[Columns.ACTION_DIST_INPUTS], train["action_dist_inputs"])
    values = module.compute_values({Columns.OBS: obs})
    assert values.shape == (5,)
    torch.testing.assert_close(
        values, module.compute_values({Columns.OBS: obs}, embeddings=train[Columns.EMBEDDINGS])
    )
    # The image layout matters: a transposed image gives other logits.
    swapped = module.forward_inference({Columns.OBS: obs.transpose(1, 2)})
    assert not torch.allclose(swapped[Columns.ACTION_DIST_INPUTS], train["action_dist_inputs"])


def test_target_networks_are_frozen_copies():
    module = tiny_cnn()
    module.make_target_networks()
    obs = torch.zeros(2, 42, 42, 4)
    target = module.forward_target({Columns.OBS: obs})[TARGET_NETWORK_ACTION_DIST_INPUTS]
    logits = module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    torch.testing.assert_close(target, logits)
    pairs = module.get_target_network_pairs()
    assert [main for main, _ in pairs] == [module._base_cnn_stack, module._logits]
    assert all(not p.requires_grad for _, net in pairs for p in net.parameters())


def _make_wrapped_catch(config):
    """As RLlib's custom_cnn_rl_module.py makes its env, on TinyCatch."""
    return wrap_atari_for_new_api_stack(
        gym.make("localrl/TinyCatch-v0", **config), dim=42, framestack=4
    )


@pytest.mark.slow
def test_ppo_trains_tiny_atari_cnn_on_wrapped_frames_in_an_env_runner_process():
    register_env("tiny-catch-wrapped", _make_wrapped_catch)
    config = (
        PPOConfig()
        .environment(
            "tiny-catch-wrapped",
            env_config={
                "frameskip": 1,
                "full_action_space": False,
                "repeat_action_probability": 0.0,
            },
        )
        .env_runners(num_env_runners=1, rollout_fragment_length=64)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=TinyAtariCNN, model_config={"conv_filters": CONV_FILTERS}
            )
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        before = algo.get_module().get_state()
        result = algo.train()
        module = algo.get_module()
        assert isinstance(module, TinyAtariCNN)
        # The frames' shape reaches the module (its space's bounds are not recorded here).
        assert module.observation_space.shape == FRAMES.shape
        assert module.observation_space.dtype == np.float32
        assert result["num_env_steps_sampled_lifetime"] >= 64
        stats = result["learners"]["default_policy"]
        assert np.isfinite(stats["total_loss"]) and np.isfinite(stats["vf_loss"])
        after = module.get_state()
        assert not np.array_equal(before["_values.weight"], after["_values.weight"])
        # The EnvRunner samples with the trained weights.
        runner_weights = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.module.get_state()["_logits.1.weight"], local_env_runner=False
        )
        np.testing.assert_array_equal(runner_weights[0], after["_logits.1.weight"])
    finally:
        algo.stop()
