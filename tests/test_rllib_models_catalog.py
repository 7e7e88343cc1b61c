"""RLlib's model configs (CNN, transposed CNN, recurrent, free-log-std heads), `ModelChecker`,
the base Catalog's encoder configs, the old stack's MODEL_DEFAULTS, the LayerNorm keys and
TorchCompileConfig (tests/rllib_tests: rllib/core/models/tests)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from trainer import PPOConfig
from trainer.compat.old_model_defaults import MODEL_DEFAULTS
from trainer.core.catalog import Catalog
from trainer.core.model_configs import (
    CNNEncoderConfig,
    MLPEncoderConfig,
    RecurrentEncoderConfig,
    get_filter_config,
)
from trainer.core.models import DefaultModelConfig, check_model_config, refuse_torch_only_keys
from trainer.errors import UnsupportedValue

torch = pytest.importorskip("torch")

from trainer.core.model_configs import (  # noqa: E402
    CNNTransposeHeadConfig,
    FreeLogStdMLPHeadConfig,
)
from trainer.testing import ModelChecker  # noqa: E402


def test_cnn_encoder_config_computes_its_output_dims_as_built() -> None:
    for dims, specs in [
        ([42, 42, 3], [[16, 4, 2, "same"], [32, 4, 2], [256, 11, 1, "valid"]]),
        ([10, 10, 3], get_filter_config([10, 10, 3])),
    ]:
        config = CNNEncoderConfig(
            input_dims=dims, cnn_filter_specifiers=specs, cnn_use_layernorm=True
        )
        checker = ModelChecker(config)
        out = checker.add(framework="torch")
        assert out["encoder_out"].shape == (1, config.output_dims[0])
        checker.check()


def test_cnn_transpose_head_grows_the_image_by_its_strides() -> None:
    config = CNNTransposeHeadConfig(
        input_dims=[8],
        initial_image_dims=[4, 4, 16],
        cnn_transpose_filter_specifiers=[[8, 4, 2], [3, 4, 2]],
        cnn_transpose_use_layernorm=True,
        cnn_transpose_use_bias=False,
    )
    out = ModelChecker(config).add(framework="torch", obs=False)
    assert tuple(out.shape) == (1, 16, 16, 3)


def test_free_log_std_head_and_recurrent_encoders() -> None:
    head = FreeLogStdMLPHeadConfig(input_dims=[3], hidden_layer_dims=[4], output_layer_dim=6)
    out = ModelChecker(head).add(framework="torch", obs=False)
    assert out.shape == (1, 6)
    with pytest.raises(ValueError, match="even"):
        FreeLogStdMLPHeadConfig(input_dims=[3], output_layer_dim=5).build("torch")
    for kind, state in [("gru", ["h"]), ("lstm", ["h", "c"])]:
        config = RecurrentEncoderConfig(
            input_dims=[5], recurrent_layer_type=kind, hidden_dim=7, num_layers=2
        )
        checker = ModelChecker(config)
        out = checker.add(framework="torch", state={k: np.array([2, 7]) for k in state})
        assert out["encoder_out"].shape == (1, 1, 7)
        assert {k: tuple(v.shape) for k, v in out["state_out"].items()} == {
            k: (1, 2, 7) for k in state
        }
        checker.check()
        assert checker.param_counts["torch"][0] > 0


def test_base_catalog_gives_rllibs_encoder_configs() -> None:
    box = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
    catalog = Catalog(box, gym.spaces.Discrete(2), {"fcnet_hiddens": [8, 6]})
    config = catalog._get_encoder_config(box, {"fcnet_hiddens": [8, 6]})
    assert type(config) is MLPEncoderConfig
    assert (list(config.hidden_layer_dims), config.output_layer_dim) == ([8], 6)
    assert catalog.latent_dims == (6,)
    assert catalog.build_encoder("torch")({"obs": torch.zeros(2, 5)})["encoder_out"].shape == (
        2,
        6,
    )
    image = gym.spaces.Box(0.0, 1.0, (84, 84, 1), np.float32)
    assert type(Catalog._get_encoder_config(image, {})) is CNNEncoderConfig
    lstm = Catalog._get_encoder_config(box, {"use_lstm": True, "lstm_cell_size": 4})
    assert type(lstm) is RecurrentEncoderConfig and lstm.output_dims == (4,)
    with pytest.raises(ValueError, match="This is the default atari obs shape."):
        Catalog(gym.spaces.Box(0.0, 1.0, (210, 160, 3), np.float32), box, {})
    with pytest.raises(ValueError, match="No default encoder config"):
        Catalog(gym.spaces.Dict({"a": box}), box, {})


def test_old_stack_model_defaults_are_accepted_at_their_values_only() -> None:
    assert MODEL_DEFAULTS["post_fcnet_hiddens"] == [] and MODEL_DEFAULTS["dim"] == 84
    merged = check_model_config(dict(MODEL_DEFAULTS))
    assert "custom_model" not in merged and merged["fcnet_hiddens"] == [256, 256]
    with pytest.raises(ValueError, match="'custom_model'.*old API stack key"):
        check_model_config({"custom_model": "my_model"})


def test_layernorm_keys_build_torch_layernorms_and_numpy_refuses_them() -> None:
    config = DefaultModelConfig(fcnet_use_layernorm=True, fcnet_hiddens=[4, 4])
    box = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    encoder = Catalog(box, box, config).build_encoder("torch")
    assert sum(isinstance(m, torch.nn.LayerNorm) for m in encoder.modules()) == 2
    from trainer.torch_rl.networks import MLPEncoder, MLPHead

    merged = check_model_config(
        {"fcnet_use_layernorm": True, "head_fcnet_use_layernorm": True, "head_fcnet_hiddens": [4]}
    )
    counts = [
        sum(isinstance(m, torch.nn.LayerNorm) for m in net.modules())
        for net in (MLPEncoder(3, merged), MLPHead(256, 2, merged))
    ]
    assert counts == [2, 1]
    with pytest.raises(UnsupportedValue, match="fcnet_use_layernorm.*framework"):
        refuse_torch_only_keys({"fcnet_use_layernorm": True})


def test_torch_compile_config_compiles_the_forward_methods(monkeypatch) -> None:
    from trainer.torch_rl.rl_module import TorchCompileConfig, TorchRLModule

    calls = []
    monkeypatch.setattr(
        torch, "compile", lambda fn, **options: calls.append((fn.__name__, options)) or fn
    )
    TorchRLModule().compile(TorchCompileConfig(torch_dynamo_backend="eager", kwargs={"a": 1}))
    assert [name for name, _ in calls] == [
        "_forward_train",
        "_forward_inference",
        "_forward_exploration",
    ]
    assert calls[0][1] == {"backend": "eager", "mode": None, "a": 1}


def test_the_old_stacks_head_keys_are_taken_with_a_warning_naming_the_new_ones() -> None:
    """RLlib 2.60's default modules take `post_fcnet_hiddens` in a model config and do not read
    it; here it is taken too, and the warning names `head_fcnet_hiddens`."""
    from trainer.core import models

    models._warned_ignored_keys.clear()
    with pytest.warns(UserWarning, match=r"'post_fcnet_hiddens'.*'head_fcnet_hiddens'"):
        merged = check_model_config({"post_fcnet_hiddens": [256], "fcnet_hiddens": [8]})
    assert merged["fcnet_hiddens"] == [8] and "post_fcnet_hiddens" not in merged
    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8], "post_fcnet_hiddens": [16]})
        .build()
    )
    try:
        assert algo.train()["training_iteration"] == 1
    finally:
        algo.stop()
