"""RLlib's model config: `DefaultModelConfig`, head layers and the initializer keys (torch's
initializer names, computed in numpy)."""

import math

import numpy as np
import pytest

from trainer import ConfigError, DefaultModelConfig, DQNConfig, PPOConfig
from trainer.core.initializers import INITIALIZERS, calculate_gain, make_initializer


def _draw(name, shape, **kwargs):
    init = make_initializer(
        name, kwargs, where="model_config", key="fcnet_kernel_initializer", for_bias=len(shape) == 1
    )
    return init(np.random.default_rng(0), shape)


@pytest.mark.parametrize(
    "name, kwargs, expected_std",
    [
        # torch's formulas for a (out=300, in=200) weight.
        ("xavier_uniform_", {"gain": 2.0}, 2.0 * math.sqrt(6 / 500) / math.sqrt(3)),
        ("xavier_normal_", {}, math.sqrt(2 / 500)),
        ("kaiming_uniform_", {"nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(200)),
        (
            "kaiming_normal_",
            {"mode": "fan_out", "nonlinearity": "relu"},
            math.sqrt(2) / math.sqrt(300),
        ),
        ("normal_", {"std": 0.3}, 0.3),
        ("uniform_", {"a": -1.0, "b": 1.0}, 1 / math.sqrt(3)),
    ],
)
def test_initializers_follow_torch_formulas(name, kwargs, expected_std):
    weight = _draw(name, (300, 200), **kwargs)
    assert weight.dtype == np.float32 and weight.shape == (300, 200)
    assert weight.std() == pytest.approx(expected_std, rel=0.03)


def test_orthogonal_constant_and_gain():
    weight = _draw("orthogonal_", (64, 16), gain=0.01)
    np.testing.assert_allclose(weight.T @ weight, 0.01**2 * np.eye(16), atol=1e-7)
    assert np.all(_draw("constant_", (5,), val=0.25) == 0.25)
    assert calculate_gain("tanh") == pytest.approx(5 / 3)
    assert calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    truncated = _draw("trunc_normal_", (4000,), std=1.0, a=-0.5, b=0.5)
    assert truncated.min() >= -0.5 and truncated.max() <= 0.5
    assert set(INITIALIZERS) >= {"xavier_uniform_", "orthogonal_", "kaiming_normal_", "zeros_"}


def _weights(config):
    algo = config.environment("CartPole-v1").env_runners(num_env_runners=0).build()
    try:
        return algo.get_module().get_weights(), algo
    finally:
        algo.stop()


def test_default_model_config_builds_rllib_architecture_with_initializers():
    weights, _ = _weights(
        PPOConfig().rl_module(
            model_config=DefaultModelConfig(
                fcnet_hiddens=[32],
                fcnet_activation="relu",
                fcnet_kernel_initializer="xavier_uniform_",
                fcnet_bias_initializer="constant_",
                fcnet_bias_initializer_kwargs={"val": 0.1},
                head_fcnet_hiddens=[16],
                head_fcnet_activation=None,
                head_fcnet_kernel_initializer="orthogonal_",
                head_fcnet_kernel_initializer_kwargs={"gain": 0.01},
            )
        )
    )
    # DefaultModelConfig's vf_share_layers=True: one encoder, then a policy and a value head
    # with one hidden layer each.
    assert {name: w.shape for name, w in weights.items()} == {
        "encoder.0.weight": (4, 32),
        "encoder.0.bias": (32,),
        "pi.0.weight": (32, 16),
        "pi.0.bias": (16,),
        "pi.1.weight": (16, 2),
        "pi.1.bias": (2,),
        "vf.0.weight": (32, 16),
        "vf.0.bias": (16,),
        "vf.1.weight": (16, 1),
        "vf.1.bias": (1,),
    }
    assert np.all(weights["encoder.0.bias"] == np.float32(0.1))
    assert np.abs(weights["encoder.0.weight"]).max() <= math.sqrt(6 / 36)
    head = weights["pi.0.weight"]
    np.testing.assert_allclose(head.T @ head, 1e-4 * np.eye(16), atol=1e-8)


def test_head_layers_in_unshared_networks_and_seeded_initializers():
    model = {
        "fcnet_hiddens": [8],
        "head_fcnet_hiddens": [4],
        "vf_share_layers": False,
        "fcnet_kernel_initializer": "kaiming_normal_",
    }
    first, _ = _weights(PPOConfig().rl_module(model_config=model).debugging(seed=3))
    again, _ = _weights(PPOConfig().rl_module(model_config=model).debugging(seed=3))
    assert [w.shape for w in first.values()] == [
        (4, 8),
        (8,),
        (8, 4),
        (4,),
        (4, 2),
        (2,),
        (4, 8),
        (8,),
        (8, 4),
        (4,),
        (4, 1),
        (1,),
    ]
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])


def test_dqn_heads_take_head_initializers():
    weights, _ = _weights(
        DQNConfig().rl_module(
            model_config={
                "fcnet_hiddens": [8],
                "head_fcnet_hiddens": [],
                "head_fcnet_bias_initializer": "ones_",
            }
        )
    )
    assert np.all(weights["advantage.0.bias"] == 1.0) and np.all(weights["value.0.bias"] == 1.0)


def test_a_callable_initializer_runs_with_torch_calling_convention():
    def fill_with_sevens(tensor, scale=1.0):
        tensor[...] = 7.0 * scale

    weights, _ = _weights(
        PPOConfig().rl_module(
            model_config={
                "fcnet_hiddens": [3],
                "fcnet_kernel_initializer": fill_with_sevens,
                "fcnet_kernel_initializer_kwargs": {"scale": 2.0},
            }
        )
    )
    # RLlib's PPO default for a dict: a policy encoder and a value encoder, both initialized so.
    assert np.all(weights["pi.0.weight"] == 14.0) and np.all(weights["vf.0.weight"] == 14.0)


@pytest.mark.parametrize(
    "model, message",
    [
        (
            {"fcnet_kernel_initializer": "xavier_uniform"},
            r"in-place initializer name.*'xavier_uniform_'",
        ),
        ({"fcnet_kernel_initializer": "glorot_"}, r"unknown initializer; allowed are"),
        ({"head_fcnet_bias_initializer": "xavier_normal_"}, r"a bias is 1-D"),
        (
            {
                "fcnet_kernel_initializer": "kaiming_uniform_",
                "fcnet_kernel_initializer_kwargs": {"mode": "fan_avg"},
            },
            r"mode='fan_avg'",
        ),
        (
            {"fcnet_kernel_initializer": "normal_", "fcnet_kernel_initializer_kwargs": {"sd": 1.0}},
            r"do not fit normal_",
        ),
        ({"use_lstm": True, "max_seq_len": 0}, r"max_seq_len'\]=0: must be an int >= 1"),
        ({"conv_filters": [[16, 4]]}, r"conv_filters.*\[16, 4\].*not valid"),
        ({"conv_activation": "gelu-ish"}, r"conv_activation.*allowed values"),
        ({"conv_kernel_initializer": "glorot_"}, r"conv_kernel_initializer.*unknown initializer"),
    ],
)
def test_bad_model_configs_fail_at_the_call(model, message):
    with pytest.raises(ConfigError, match=message):
        PPOConfig().rl_module(model_config=model)


def test_rl_module_replaces_the_model_config_as_in_rllib():
    config = PPOConfig().rl_module(model_config={"fcnet_hiddens": [8], "vf_share_layers": True})
    config.rl_module(model_config={"fcnet_activation": "relu"})
    assert config.model_config["fcnet_hiddens"] == [256, 256]
    # Replaced: PPO's own default again (RLlib's `_model_config_auto_includes`).
    assert config.model_config["vf_share_layers"] is False
    assert config.model_config["fcnet_activation"] == "relu"
