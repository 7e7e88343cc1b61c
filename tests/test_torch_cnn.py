"""RLlib's default CNN for torch PPO, end to end on image observations: the encoder's layers
against RLlib 2.60's presets and padding arithmetic, forward shapes, shared and separate critic
CNNs, inference-only copies, checkpoints, the model-config checks (the numpy modules refuse
`conv_*`), the samplers' and learner's observation shapes, the `DotToTarget` image env, and PPO
with `framework("torch")` learning it in an EnvRunner process."""

from __future__ import annotations

import ast
import copy
import importlib.util
import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from torch import nn

from trainer import Algorithm, PPOConfig
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.ppo import torch_learner as ppo_torch_learner
from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.compat.rllib_utils import Columns
from trainer.core.models import DefaultModelConfig, SpaceInfo
from trainer.examples.envs.classes.dot_to_target import DotToTarget
from trainer.torch_rl.cnn_encoder import CONV_FILTER_PRESETS, CNNEncoder, default_conv_filters

ACTIONS = gym.spaces.Discrete(4)


def image_space(size: int, channels: int = 3) -> gym.spaces.Box:
    return gym.spaces.Box(0.0, 1.0, (size, size, channels), np.float32)


def cnn_module(size: int = 10, channels: int = 3, **kwargs: Any) -> DefaultPPOTorchRLModule:
    model_config = kwargs.pop("model_config", {"vf_share_layers": True})
    return DefaultPPOTorchRLModule(
        observation_space=image_space(size, channels),
        action_space=ACTIONS,
        model_config=model_config,
        **kwargs,
    )


def convolutions(encoder: nn.Module) -> list[nn.Conv2d]:
    return [layer for layer in encoder.modules() if isinstance(layer, nn.Conv2d)]


# -- the encoder against RLlib's presets -------------------------------------------------------

#: RLlib 2.60's CNNEncoderConfig.output_dims for its preset of each image size ("same" padding
#: throughout: each layer divides the image by its stride, rounded up), flattened.
RLLIB_PRESET_OUTPUT_DIMS = {
    96: 6 * 6 * 256,  # 96 -> 24 -> 12 -> 6
    84: 11 * 11 * 256,  # 84 -> 21 -> 11 -> 11
    64: 4 * 4 * 128,  # 64 -> 32 -> 16 -> 8 -> 4
    42: 11 * 11 * 256,  # 42 -> 21 -> 11 -> 11
    10: 3 * 3 * 32,  # 10 -> 5 -> 3
}


@pytest.mark.parametrize("size", sorted(RLLIB_PRESET_OUTPUT_DIMS))
def test_default_cnn_is_rllibs_preset_for_the_image_size(size):
    module = cnn_module(size)
    encoder = module.encoder.encoder
    assert isinstance(encoder, CNNEncoder)
    convs = convolutions(encoder)
    preset = CONV_FILTER_PRESETS[size]
    assert len(convs) == len(preset)
    in_channels = 3
    for conv, (out_channels, kernel, stride) in zip(convs, preset, strict=True):
        assert conv.in_channels == in_channels and conv.out_channels == out_channels
        assert conv.kernel_size == tuple(kernel) and conv.stride == (stride, stride)
        in_channels = out_channels
    # Every convolution is followed by RLlib's default conv_activation, relu.
    layers = list(encoder.net[0].cnn)
    assert all(isinstance(layers[layers.index(c) + 1], nn.ReLU) for c in convs)
    assert encoder.output_dim == RLLIB_PRESET_OUTPUT_DIMS[size]
    assert module.pi.net.mlp[0].in_features == RLLIB_PRESET_OUTPUT_DIMS[size]
    with torch.no_grad():
        features = encoder(torch.rand(2, size, size, 3))
    assert features.shape == (2, RLLIB_PRESET_OUTPUT_DIMS[size])


def _rllib_functions(relative: str, names: set[str]) -> dict[str, Any]:
    """Functions of an RLlib 2.60 source file, compiled from its text (ray.rllib itself does not
    import without its dependencies); skips when ray is not installed."""
    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("ray (RLlib's source) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "rllib" / relative
    tree = ast.parse(path.read_text())
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    for function in functions:
        function.decorator_list = []
    namespace: dict[str, Any] = {"np": np, "Tuple": tuple, "Union": Any, "List": list}
    exec(compile(ast.Module(body=functions, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("size", [10, 42, 64, 84, 96, 13, 37])
def test_layers_and_padding_follow_rllibs_own_functions(size):
    """RLlib's get_filter_config (the presets) and same_padding / valid_padding, read from its
    source, against the layers built here (including sizes without a preset, stacks given)."""
    rllib = _rllib_functions("models/utils.py", {"get_filter_config"})
    rllib.update(_rllib_functions("models/torch/misc.py", {"same_padding", "valid_padding"}))
    given = [[8, [3, 3], 2], [12, 4, 1, "valid"], [16, [2, 3], [1, 2], "same"]]
    if size in CONV_FILTER_PRESETS:
        filters = rllib["get_filter_config"]([size, size, 3])
        assert default_conv_filters((size, size, 3)) == filters
        module = cnn_module(size)
    else:
        with pytest.raises(ValueError, match="No default CNN configuration"):
            rllib["get_filter_config"]([size, size, 3])
        filters = given
        module = cnn_module(size, model_config={"vf_share_layers": True, "conv_filters": given})
    layers = list(module.encoder.encoder.net[0].cnn)
    dims = [size, size]
    for spec in filters:
        kernel, stride = spec[1], spec[2]
        conv = next(layer for layer in layers if isinstance(layer, nn.Conv2d))
        before = layers[: layers.index(conv)]
        if len(spec) == 3 or spec[3] == "same":
            padding, dims = rllib["same_padding"](dims, kernel, stride)
            assert isinstance(before[-1], nn.ZeroPad2d) and before[-1].padding == padding
        else:
            dims = rllib["valid_padding"](dims, kernel, stride)
            assert not any(isinstance(layer, nn.ZeroPad2d) for layer in before)
        layers = layers[layers.index(conv) + 1 :]
    assert module.encoder.output_dim == math.prod(dims) * filters[-1][0]


def test_a_size_without_preset_needs_conv_filters():
    with pytest.raises(ValueError, match=r"conv_filters.*\[16, 16, 3\].*\[42, 42, K\]"):
        cnn_module(16)
    with pytest.raises(ValueError, match="conv_filters"):  # empty: RLlib's "not given"
        cnn_module(16, model_config={"conv_filters": []})
    assert cnn_module(10, model_config={"conv_filters": []}).encoder.encoder.output_dim == 288
    module = cnn_module(16, model_config={"conv_filters": [[4, 3, 2], [8, 3, 2]]})
    assert module.encoder.encoder.output_dim == 4 * 4 * 8


def test_conv_activation_and_initializers_reach_the_layers():
    module = cnn_module(
        model_config=DefaultModelConfig(
            conv_activation="tanh",
            conv_kernel_initializer="constant_",
            conv_kernel_initializer_kwargs={"val": 0.25},
            conv_bias_initializer="zeros_",
        )
    )
    convs = convolutions(module.encoder.encoder)
    assert all(torch.all(c.weight == 0.25) and torch.all(c.bias == 0) for c in convs)
    layers = list(module.encoder.encoder.net[0].cnn)
    assert sum(isinstance(layer, nn.Tanh) for layer in layers) == len(convs)
    assert not any(isinstance(layer, nn.ReLU) for layer in layers)
    linear = cnn_module(model_config={"conv_activation": None, "vf_share_layers": True})
    assert not any(
        isinstance(layer, (nn.ReLU, nn.Tanh)) for layer in linear.encoder.encoder.net[0].cnn
    )


# -- forward passes ----------------------------------------------------------------------------


@pytest.mark.parametrize("shared", [True, False])
def test_forward_shapes_with_shared_or_separate_critic_cnn(shared):
    module = cnn_module(model_config={"vf_share_layers": shared, "head_fcnet_hiddens": [16]})
    if shared:
        assert isinstance(module.encoder.encoder, CNNEncoder)
        assert not hasattr(module.encoder, "critic_encoder")
    else:
        assert isinstance(module.encoder.actor_encoder, CNNEncoder)
        assert isinstance(module.encoder.critic_encoder, CNNEncoder)
        actor_convs = convolutions(module.encoder.actor_encoder)
        critic_convs = convolutions(module.encoder.critic_encoder)
        assert all(a.weight is not c.weight for a, c in zip(actor_convs, critic_convs, strict=True))
    images = torch.rand(5, 10, 10, 3)
    for forward in (module.forward_inference, module.forward_exploration):
        assert forward({Columns.OBS: images})[Columns.ACTION_DIST_INPUTS].shape == (5, 4)
    out = module.forward_train({Columns.OBS: images})
    assert out[Columns.ACTION_DIST_INPUTS].shape == (5, 4)
    assert out[Columns.EMBEDDINGS].shape == (5, 288)
    values = module.compute_values({Columns.OBS: images}, out[Columns.EMBEDDINGS])
    assert values.shape == (5,)
    torch.testing.assert_close(values, module.compute_values({Columns.OBS: images}))
    # Rows of flattened pixels (the numpy path's layout) are read as the same images.
    rows = module.forward_inference({Columns.OBS: images.reshape(5, -1)})
    torch.testing.assert_close(
        rows[Columns.ACTION_DIST_INPUTS],
        module.forward_inference({Columns.OBS: images})[Columns.ACTION_DIST_INPUTS],
    )


def test_images_are_read_channels_last_and_flattened_as_rllib():
    """One bright pixel in one channel: the first convolution sees it in that input channel
    (channels-last in), and the flattened features are (height, width, channels) ordered."""
    module = cnn_module(model_config={"vf_share_layers": True, "conv_filters": [[2, 1, 1]]})
    conv = convolutions(module.encoder.encoder)[0]
    with torch.no_grad():
        conv.weight.zero_()
        conv.bias.zero_()
        conv.weight[1, 2, 0, 0] = 1.0  # output channel 1 reads input channel 2 (blue)
        image = torch.zeros(1, 10, 10, 3)
        image[0, 3, 7, 2] = 1.0
        features = module.encoder.encoder(image)
    expected = torch.zeros(10, 10, 2)
    expected[3, 7, 1] = 1.0
    torch.testing.assert_close(features[0], expected.flatten())


# -- inference-only copies and checkpoints -----------------------------------------------------


def test_inference_only_copy_leaves_out_the_critic_cnn():
    full = cnn_module(model_config={"vf_share_layers": False})
    copy = cnn_module(model_config={"vf_share_layers": False}, inference_only=True)
    assert not hasattr(copy, "vf") and not hasattr(copy.encoder, "critic_encoder")
    weights = full.get_state(inference_only=True)
    assert not any(key.startswith(("vf", "encoder.critic_encoder")) for key in weights)
    assert any(key.startswith("encoder.critic_encoder.net.0.cnn") for key in full.get_state())
    assert set(weights) == set(copy.get_state())
    copy.set_state(weights)
    images = torch.rand(4, 10, 10, 3)
    torch.testing.assert_close(
        copy.forward_inference({Columns.OBS: images})[Columns.ACTION_DIST_INPUTS],
        full.forward_inference({Columns.OBS: images})[Columns.ACTION_DIST_INPUTS],
    )
    with pytest.raises(RuntimeError, match="inference-only"):
        copy.compute_values({Columns.OBS: images})


def test_checkpoint_round_trip_keeps_the_cnn(tmp_path):
    filters = [[6, [3, 3], 2], [8, 3, 1, "valid"]]
    module = cnn_module(16, model_config={"conv_filters": filters, "conv_activation": "elu"})
    restored = DefaultPPOTorchRLModule.from_checkpoint(module.save_to_path(str(tmp_path / "m")))
    assert restored.model_config["conv_filters"] == filters
    state, restored_state = module.get_state(), restored.get_state()
    assert set(state) == set(restored_state)
    for key, value in state.items():
        np.testing.assert_array_equal(restored_state[key], value)
    images = torch.rand(3, 16, 16, 3)
    torch.testing.assert_close(
        restored.forward_train({Columns.OBS: images})[Columns.ACTION_DIST_INPUTS],
        module.forward_train({Columns.OBS: images})[Columns.ACTION_DIST_INPUTS],
    )


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_an_algorithm_checkpoint_with_the_cnn_resumes_exactly(tmp_path):
    """The CNN's weights and its Adam state (per named conv parameter) go through the
    Algorithm's checkpoint: a restored run trains on to the same weights."""
    config = (
        learning_config(seed=3)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=100)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=2)
    )
    algo = config.build()
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "checkpoint")
        algo.train()
        expected = algo.get_module().get_state()
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        module = restored.get_module()
        assert isinstance(module.encoder.encoder, CNNEncoder)
        assert module.model_config["conv_filters"] is None  # RLlib's preset, rebuilt
        restored.train()
        state = module.get_state()
        assert any(key.startswith("encoder.encoder.net.0.cnn") for key in state)
        for key, value in expected.items():
            np.testing.assert_array_equal(state[key], value, err_msg=key)
    finally:
        restored.stop()


def test_the_learners_values_of_many_frames_are_the_modules_on_all_of_them(monkeypatch):
    """The learner values a train batch's images a few hundred at a time (one pass over a
    thousand frames spills the CPU's caches): GAE gets the values one pass over all of them
    gives."""
    config = learning_config(seed=1).env_runners(num_env_runners=0)
    algo = config.build()
    try:
        episodes = algo.env_runner.sample(num_timesteps=1000)
        learner = algo.learner
        module = learner.rl_module
        valued_rows: list[int] = []
        compute_values = module.compute_values

        def counted(batch, **kwargs):
            valued_rows.append(len(batch[Columns.OBS]))
            return compute_values(batch, **kwargs)

        monkeypatch.setattr(module, "compute_values", counted)
        in_parts = learner.build_train_batch(episodes)
        assert max(valued_rows) <= ppo_torch_learner.VALUE_ROWS < sum(valued_rows)
        monkeypatch.setattr(ppo_torch_learner, "VALUE_ROWS", 10**6)
        valued_rows.clear()
        at_once = learner.build_train_batch(episodes)
        assert len(valued_rows) == 1
        for column in (Columns.VALUE_TARGETS, Columns.ADVANTAGES):
            np.testing.assert_allclose(in_parts[column], at_once[column], atol=1e-5)
    finally:
        algo.stop()


# -- config checks -----------------------------------------------------------------------------


def test_numpy_modules_refuse_conv_keys_pointing_to_torch():
    """A config that chose numpy refuses conv keys off RLlib's defaults (one that chose no
    framework runs them on torch, as RLlib does: tests/test_torch_lstm.py)."""
    config = (
        PPOConfig()
        .environment(DotToTarget)
        .framework("numpy")
        .rl_module(model_config={"conv_filters": None})
    )
    config.validate()  # RLlib's defaults are fine for the numpy networks
    assert not config.uses_torch
    config.rl_module(model_config={"conv_filters": [[16, 5, 2]]})
    with pytest.raises(ConfigError, match=r"conv_filters.*framework\('torch'\)"):
        config.validate()
    with pytest.raises(ConfigError, match=r"conv_activation.*framework\('torch'\)"):
        PPOConfig().environment(DotToTarget).framework("numpy").rl_module(
            model_config={"conv_activation": "tanh"}
        ).build()
    spaces = SpaceInfo.from_spaces(image_space(10), ACTIONS)
    with pytest.raises(ValueError, match=r"conv_filters.*framework\('torch'\)"):
        PolicyModule(spaces, {"conv_filters": [[16, 5, 2]]})
    config.framework("torch").validate()  # the torch modules build the CNN


def test_spaces_keep_image_shape_for_torch_and_rows_for_numpy():
    spaces = SpaceInfo.from_spaces(image_space(10), ACTIONS)
    images = np.random.default_rng(0).random((4, 10, 10, 3))
    rows = spaces.preprocess(images)
    assert rows.shape == (4, 300) and rows.dtype == np.float32
    kept = spaces.keeping_obs_shape()
    shaped = kept.preprocess(images)
    assert shaped.shape == (4, 10, 10, 3) and shaped.dtype == np.float32
    np.testing.assert_array_equal(shaped.reshape(4, -1), rows)
    assert kept.preprocess(rows).shape == (4, 10, 10, 3)
    assert kept.observation_space().shape == (10, 10, 3)
    assert spaces.observation_space().shape == (300,)
    # A 1-D Box's batch is the same object either way (the sampling hot path).
    flat = SpaceInfo.from_spaces(gym.spaces.Box(-1, 1, (4,), np.float32), ACTIONS)
    batch = np.zeros((3, 4), np.float32)
    assert flat.preprocess(batch) is batch and flat.keeping_obs_shape().preprocess(batch) is batch


# -- the image env and PPO on it ---------------------------------------------------------------


def test_dot_to_target_follows_gymnasium_and_pays_for_reaching_the_target():
    env = DotToTarget()
    check_env(env, skip_render_check=True)
    obs, start = env.reset(seed=3)
    dot, target = np.argwhere(obs[..., 0])[0], np.argwhere(obs[..., 1])[0]
    assert start["distance"] == int(np.abs(dot - target).sum())
    assert obs.shape == (10, 10, 3) and obs.dtype == np.float32
    assert obs[..., 0].sum() == 1 and obs[..., 1].sum() == 1 and obs[..., 2].sum() == 0
    total, done, steps = 0.0, False, 0
    while not done:  # walk straight there: the optimal return
        delta = target - dot
        action = (0 if delta[0] < 0 else 1) if delta[0] else (2 if delta[1] < 0 else 3)
        obs, reward, terminated, truncated, info = env.step(action)
        dot = np.argwhere(obs[..., 0])[0]
        total, done, steps = total + reward, terminated or truncated, steps + 1
    assert terminated and steps == info["distance"] + steps == start["distance"]
    assert total == pytest.approx(1.0 + 0.1 * steps)
    with pytest.raises(ValueError, match="unknown env_config key.*'colour'"):
        DotToTarget({"colour": "red"})
    # Truncated after max_episode_steps when the target is not reached (bumping a wall).
    small = DotToTarget({"size": 4, "max_episode_steps": 2})
    small.reset(seed=0)
    small._dot, small._target = np.array([0, 0]), np.array([3, 3])
    assert small.step(0)[2:4] == (False, False)
    assert small.step(2)[1:4] == (0.0, False, True)


def learning_config(seed: int = 0) -> PPOConfig:
    """PPO on DotToTarget with RLlib's 10x10 CNN preset (shared by policy and value function),
    one EnvRunner process."""
    return (
        PPOConfig()
        .environment(DotToTarget)
        .framework("torch")
        .env_runners(num_env_runners=1, num_envs_per_env_runner=4, rollout_fragment_length=250)
        .training(
            train_batch_size=1000,
            minibatch_size=200,
            num_epochs=4,
            lr=0.001,
            gamma=0.95,
            entropy_coeff=0.01,
        )
        .rl_module(model_config={"vf_share_layers": True, "head_fcnet_hiddens": [64]})
        .debugging(seed=seed)
    )


def dot_to_target_states(count: int = 200) -> tuple[torch.Tensor, np.ndarray]:
    """Starting images of DotToTarget (fixed seeds) and, for each, which of the 4 actions move
    the dot closer to the target."""
    from trainer.examples.envs.classes.dot_to_target import _MOVES

    env = DotToTarget()
    images, closer = [], []
    for seed in range(count):
        image, info = env.reset(seed=1000 + seed)
        moved = np.clip(env._dot + _MOVES, 0, env.size - 1)
        closer.append(np.abs(moved - env._target).sum(axis=1) < info["distance"])
        images.append(image)
    return torch.from_numpy(np.stack(images)), np.array(closer)


def probability_of_moving_closer(module, images: torch.Tensor, closer: np.ndarray) -> float:
    """The mean probability (over the images) that the module's policy moves the dot closer."""
    with torch.no_grad():
        logits = module.forward_inference({Columns.OBS: images})[Columns.ACTION_DIST_INPUTS]
    return float((torch.softmax(logits, -1).numpy() * closer).sum(axis=1).mean())


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ppo_with_the_default_cnn_starts_learning_dot_to_target_in_an_env_runner_process():
    """`learning_config` at lr 5e-3 for 4 iterations of 1000 env steps: the policy's
    probability of moving the dot closer to the target, over 200 fixed starting images, rises
    from where the untrained CNN starts (~0.46, about uniform). At lr 1e-3 PPO passes a mean
    return of 1.0 within 30 iterations (random play: about 0.15, optimal: about 1.67):
    bench/learning_targets.py runs that."""
    images, closer = dot_to_target_states()
    algo = learning_config().training(lr=0.005).build()
    try:
        module = algo.get_module()
        assert isinstance(module.encoder.encoder, CNNEncoder)
        runner_shapes = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.module.rl_module.observation_space.shape,
            local_env_runner=False,
        )
        assert runner_shapes == [(10, 10, 3)]
        before = probability_of_moving_closer(algo.get_module(), images, closer)
        for _ in range(4):
            algo.train()
        after = probability_of_moving_closer(algo.get_module(), images, closer)
        # Seeds 0-2: +0.037 to +0.051 after 4 iterations, under +0.004 in the first 2.
        assert after >= before + 0.02, (before, after)
        # The Algorithm's own inference takes the image as the env emits it.
        env = DotToTarget()
        obs, _ = env.reset(seed=5)
        total, done = 0.0, False
        while not done:
            action = algo.compute_single_action(obs, explore=False)
            obs, reward, terminated, truncated, _ = env.step(action)
            total, done = total + reward, terminated or truncated
        assert env.action_space.contains(int(action)) and np.isfinite(total)
    finally:
        algo.stop()


class _SmallImages(gym.Env):
    """32x32 images: a size RLlib has no preset CNN for."""

    observation_space = gym.spaces.Box(0.0, 1.0, (32, 32, 3), np.float32)
    action_space = ACTIONS

    def __init__(self, config: Any = None):
        self._steps = 0

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[np.ndarray, dict]:
        self._steps = 0
        return np.zeros((32, 32, 3), np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._steps += 1
        return np.zeros((32, 32, 3), np.float32), 0.0, False, self._steps >= 20, {}


def test_a_config_without_framework_runs_images_on_rllibs_cnn(tmp_path):
    """RLlib's default framework is torch and its default module for images its CNN: a
    config that chose no framework runs image observations on torch's default module (the
    EnvRunner process's too), checkpoints as torch, and restores as torch. framework('numpy')
    keeps the MLP; a size without a preset CNN stays on the numpy MLP with a warning."""
    config = (
        PPOConfig()
        .environment(DotToTarget)
        .env_runners(num_env_runners=1, rollout_fragment_length=100)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
    )
    assert not config.uses_torch  # the spaces are known once the EnvRunners run
    algo = config.build()
    try:
        assert algo.config.framework_str == "torch" and algo.config.uses_torch
        assert any(isinstance(m, CNNEncoder) for m in algo.get_module().modules())
        runner_shapes = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.module.rl_module.observation_space.shape,
            local_env_runner=False,
        )
        assert runner_shapes == [(10, 10, 3)]
        assert algo.train()["env_runners"]["num_env_steps_sampled_lifetime"] >= 200
        path = algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        assert restored.config.framework_str == "torch"
        assert any(isinstance(m, CNNEncoder) for m in restored.get_module().modules())
    finally:
        restored.stop()
    kept = config.copy().framework("numpy").env_runners(num_env_runners=0).build()
    try:
        assert kept.config.framework_str == "numpy" and not kept.config.uses_torch
    finally:
        kept.stop()
    small = config.copy().environment(_SmallImages).env_runners(num_env_runners=0)
    with pytest.warns(UserWarning, match=r"\(32, 32, 3\).*no preset CNN.*conv_filters"):
        flat = small.build()
    try:
        assert not flat.config.uses_torch
    finally:
        flat.stop()


def test_a_numpy_checkpoint_of_images_restores_on_numpy(tmp_path, monkeypatch):
    """A checkpoint of images trained on the numpy MLP by a config that chose no framework
    (as every such config did before images went to torch by default) restores on numpy:
    its weights are the MLP's."""
    config = (
        PPOConfig()
        .environment(DotToTarget)
        .env_runners(num_env_runners=0, rollout_fragment_length=100)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
    )
    with monkeypatch.context() as patched:
        patched.setattr(PPOConfig, "image_torch_reason", lambda self, spaces: None)
        algo = config.build()
    try:
        assert not algo.config.uses_torch
        algo.train()
        path = algo.save_to_path(str(tmp_path / "numpy"))
        weights = algo.get_weights()
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        assert not restored.config.uses_torch
        restored_weights = restored.get_weights()
        assert restored_weights.keys() == weights.keys()
        assert all(np.array_equal(restored_weights[k], v) for k, v in weights.items())
        restored.train()
    finally:
        restored.stop()


def test_the_cnn_convolves_channels_last_views_with_channels_first_results():
    """The stack keeps its kernels channels-last and convolves the env's images as a
    channels-last view (no copy); its outputs equal torch's on channels-first copies."""
    module = cnn_module(84, 4)
    cnn = next(m for m in module.modules() if isinstance(m, CNNEncoder)).net[0]
    kernels = [conv.weight for conv in convolutions(cnn)]
    assert kernels and all(k.is_contiguous(memory_format=torch.channels_last) for k in kernels)
    images = torch.rand(5, 84, 84, 4)
    reference = nn.Sequential(*[copy_to_channels_first(layer) for layer in cnn.cnn])
    expected = reference(images.permute(0, 3, 1, 2).contiguous()).permute(0, 2, 3, 1)
    torch.testing.assert_close(cnn(images), expected, rtol=1e-5, atol=1e-5)


def copy_to_channels_first(layer: nn.Module) -> nn.Module:
    """`layer` with its parameters copied row-major (torch's default layout)."""
    twin = copy.deepcopy(layer)
    for param in twin.parameters():
        param.data = param.data.contiguous()
    return twin
