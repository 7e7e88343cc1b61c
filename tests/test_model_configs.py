"""RLlib's model configs for a user's own module (`ray.rllib.core.models.configs`:
`MLPEncoderConfig`, `MLPHeadConfig`; `ray.rllib.core.models.base.ENCODER_OUT`): the layers,
their initializers and the state-dict keys are RLlib 2.60's; bad values raise naming the field;
RLlib's import paths serve them through the launcher."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from trainer import launcher
from trainer.core.model_configs import ENCODER_OUT, MLPEncoderConfig, MLPHeadConfig
from trainer.util.seeding import update_global_seed_if_necessary

torch = pytest.importorskip("torch", reason="the networks are torch's")
nn = torch.nn

REPO = Path(__file__).resolve().parent.parent


def layer_kinds(model) -> list[str]:
    return [type(layer).__name__ for layer in model.net.mlp]


def test_an_encoder_is_rllibs_stack_and_returns_encoder_out():
    encoder = MLPEncoderConfig(
        input_dims=[2],
        hidden_layer_dims=[8, 8],
        hidden_layer_activation="silu",
        hidden_layer_use_layernorm=True,
        hidden_layer_use_bias=False,
        output_layer_dim=4,
        output_layer_activation="tanh",
        output_layer_use_bias=False,
    ).build(framework="torch")
    # RLlib's docstring example: Linear, LayerNorm, SiLU twice, then Linear and Tanh.
    assert layer_kinds(encoder) == [
        "Linear", "LayerNorm", "SiLU", "Linear", "LayerNorm", "SiLU", "Linear", "Tanh",
    ]  # fmt: skip
    assert all(layer.bias is None for layer in encoder.net.mlp if isinstance(layer, nn.Linear))
    out = encoder({"obs": torch.ones(3, 2)})
    assert list(out) == [ENCODER_OUT] and out[ENCODER_OUT].shape == (3, 4)
    assert float(out[ENCODER_OUT].detach().abs().max()) <= 1.0  # after the tanh


def test_without_an_output_layer_the_last_hidden_layer_is_the_output():
    config = MLPEncoderConfig(input_dims=[4], hidden_layer_dims=[16])
    assert config.output_dims == (16,)
    assert layer_kinds(config.build()) == ["Linear", "ReLU"]


def test_a_head_names_its_state_as_rllib_and_clips_log_stds():
    head = MLPHeadConfig(
        input_dims=[3],
        hidden_layer_dims=[],
        output_layer_dim=4,
        clip_log_std=True,
        log_std_clip_param=0.5,
        output_layer_weights_initializer=nn.init.zeros_,
        output_layer_bias_initializer="constant_",
        output_layer_bias_initializer_config={"val": 2.0},
    ).build(framework="torch")
    assert sorted(head.state_dict()) == [
        "log_std_clip_param_const",
        "net.mlp.0.bias",
        "net.mlp.0.weight",
    ]
    out = head(torch.zeros(5, 3))
    # means 2.0 as initialized, log-stds clipped from 2.0 to 0.5
    np.testing.assert_allclose(out.detach().numpy(), [[2.0, 2.0, 0.5, 0.5]] * 5)


def test_rllibs_zero_initialized_value_head_starts_at_zero():
    # What RLlib's BC-then-PPO example adds to a trained BC module: a value branch that
    # changes nothing at first.
    vf = MLPHeadConfig(
        input_dims=[8],
        hidden_layer_dims=[8],
        hidden_layer_weights_initializer=nn.init.zeros_,
        hidden_layer_bias_initializer=nn.init.zeros_,
        output_layer_dim=1,
        output_layer_weights_initializer=nn.init.zeros_,
        output_layer_bias_initializer=nn.init.zeros_,
    ).build(framework="torch")
    assert float(vf(torch.randn(4, 8)).detach().abs().max()) == 0.0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"input_dims": [4, 4]}, r"input_dims=\[4, 4\]\): an MLP's input_dims is one positive"),
        ({"input_dims": None}, r"input_dims=None"),
        ({"hidden_layer_dims": [], "output_layer_dim": None}, r"at least one hidden layer"),
        ({"hidden_layer_dims": [0]}, r"hidden_layer_dims=\[0\]\): each layer's size"),
        ({"output_layer_dim": 1.5}, r"output_layer_dim=1.5\): a positive int or None"),
        ({"hidden_layer_activation": "relu6x"}, r"hidden_layer_activation='relu6x'"),
        ({"hidden_layer_weights_initializer": "xavier_uniform"}, r"ending in '_'"),
    ],
)
def test_bad_values_are_refused_naming_the_field(settings, message):
    config = MLPHeadConfig(**{"input_dims": [4], "hidden_layer_dims": [8], **settings})
    with pytest.raises(ValueError, match=message):
        config.build(framework="torch")


def test_other_frameworks_are_refused_naming_torch():
    with pytest.raises(ValueError, match=r"build\(framework='tf2'\): the networks here are torch"):
        MLPEncoderConfig(input_dims=[4]).build(framework="tf2")


def test_update_global_seed_if_necessary_seeds_random_numpy_and_torch():
    update_global_seed_if_necessary("torch", 7)
    first = (np.random.random(), float(torch.rand(1)))
    update_global_seed_if_necessary("torch", 7)
    assert (np.random.random(), float(torch.rand(1))) == first
    update_global_seed_if_necessary("torch", None)  # no seed: nothing happens
    with pytest.raises(ValueError, match="TensorFlow is not here"):
        update_global_seed_if_necessary("tf2", 1)


@pytest.mark.slow
@pytest.mark.cli
def test_rllibs_import_paths_serve_them_through_the_launcher(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import torch\n"
        "from ray.rllib.core.models.base import ENCODER_OUT\n"
        "from ray.rllib.core.models.configs import MLPEncoderConfig, MLPHeadConfig\n"
        "from ray.rllib.utils.debug.deterministic import update_global_seed_if_necessary\n"
        "update_global_seed_if_necessary(framework='torch', seed=1)\n"
        "enc = MLPEncoderConfig(input_dims=[4], hidden_layer_dims=[8]).build(framework='torch')\n"
        "pi = MLPHeadConfig(input_dims=[8], hidden_layer_dims=[], output_layer_dim=2).build()\n"
        "print('logits', tuple(pi(enc({'obs': torch.zeros(3, 4)})[ENCODER_OUT]).shape))\n"
        "from ray.rllib.core.models.configs import MultiStreamEncoderConfig\n"
        "print('imported')\n"
        "MultiStreamEncoderConfig()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(launcher.ENV_VAR, None)
    completed = subprocess.run(
        [sys.executable, "-m", "trainer", "run", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = completed.stdout + completed.stderr
    assert "logits (3, 2)" in output, output[-3000:]
    assert "imported" in output  # refused when used, not at the import
    assert (
        "ray.rllib.core.models.configs.MultiStreamEncoderConfig is not available in localrl"
    ) in output and "Use instead: MLPEncoderConfig, MLPHeadConfig" in output
