"""RLlib's torch action distributions and PPO's default torch module (`trainer.torch_rl`):
distributions against `torch.distributions` and closed forms, the module's shapes, layout
(the numpy PolicyModule's for the same model config), inference-only copies, state and
checkpoints, and the launcher's RLlib paths onto them."""

from __future__ import annotations

import math
import os

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer import launcher  # noqa: E402
from trainer.algorithms.ppo.module import PolicyModule  # noqa: E402
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.apis import InferenceOnlyAPI, ValueFunctionAPI  # noqa: E402
from trainer.core.models import DefaultModelConfig, SpaceInfo  # noqa: E402
from trainer.core.rl_module import RLModuleSpec  # noqa: E402
from trainer.torch_rl.distributions import (  # noqa: E402
    TorchCategorical,
    TorchDeterministic,
    TorchDiagGaussian,
    TorchMultiCategorical,
    TorchMultiDistribution,
    TorchSquashedGaussian,
)
from trainer.torch_rl.rl_module import TorchRLModule  # noqa: E402

CARTPOLE_OBS = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
DISCRETE_2 = gym.spaces.Discrete(2)
BOX_ACTIONS = gym.spaces.Box(-2.0, 2.0, (3,), np.float32)


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


# -- distributions ----------------------------------------------------------------------------
def test_categorical_matches_torch_and_closed_forms():
    logits = torch.randn(5, 4)
    other_logits = torch.randn(5, 4)
    dist = TorchCategorical.from_logits(logits)
    reference = torch.distributions.Categorical(logits=logits)
    actions = torch.tensor([0, 1, 2, 3, 1])
    torch.testing.assert_close(dist.logp(actions), reference.log_prob(actions))
    torch.testing.assert_close(dist.logp(actions), torch.log_softmax(logits, -1)[range(5), actions])
    probs = torch.softmax(logits, -1)
    torch.testing.assert_close(dist.entropy(), -(probs * probs.log()).sum(-1))
    other_probs = torch.softmax(other_logits, -1)
    expected_kl = (probs * (probs.log() - other_probs.log())).sum(-1)
    torch.testing.assert_close(dist.kl(TorchCategorical.from_logits(other_logits)), expected_kl)
    assert dist.sample().shape == (5,)
    assert dist.sample(sample_shape=(7,)).shape == (7, 5)
    greedy = dist.to_deterministic()
    assert isinstance(greedy, TorchDeterministic)
    assert torch.equal(greedy.sample(), logits.argmax(-1))
    assert TorchCategorical.required_input_dim(gym.spaces.Discrete(6)) == 6


def test_categorical_sampling_frequencies_follow_the_probabilities():
    probs = torch.tensor([0.1, 0.6, 0.3])
    samples = TorchCategorical(probs=probs).sample(sample_shape=(20000,))
    frequencies = torch.bincount(samples, minlength=3).float() / samples.numel()
    torch.testing.assert_close(frequencies, probs, atol=0.02, rtol=0)


def test_categorical_rsample_is_one_hot_with_the_probabilities_gradient():
    logits = torch.randn(3, 4, requires_grad=True)
    sample = TorchCategorical.from_logits(logits).rsample()
    assert sample.shape == (3, 4)
    torch.testing.assert_close(sample.detach().sum(-1), torch.ones(3))
    assert set(sample.detach().flatten().tolist()) <= {0.0, 1.0}
    (sample * torch.arange(4.0)).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


def test_categorical_needs_exactly_one_of_logits_and_probs():
    with pytest.raises(ValueError, match="exactly one"):
        TorchCategorical()
    with pytest.raises(ValueError, match="exactly one"):
        TorchCategorical(logits=torch.zeros(2), probs=torch.ones(2) / 2)


def test_diag_gaussian_sums_over_action_dimensions():
    means, log_stds = torch.randn(6, 3), torch.randn(6, 3) * 0.3
    dist = TorchDiagGaussian.from_logits(torch.cat([means, log_stds], -1))
    stds = log_stds.exp()
    actions = torch.randn(6, 3)
    expected_logp = (
        -((actions - means) ** 2) / (2 * stds**2) - log_stds - 0.5 * math.log(2 * math.pi)
    ).sum(-1)
    torch.testing.assert_close(dist.logp(actions), expected_logp)
    torch.testing.assert_close(
        dist.entropy(), (0.5 + 0.5 * math.log(2 * math.pi) + log_stds).sum(-1)
    )
    other_means, other_log_stds = torch.randn(6, 3), torch.randn(6, 3) * 0.3
    other = TorchDiagGaussian(loc=other_means, scale=other_log_stds.exp())
    other_stds = other_log_stds.exp()
    expected_kl = (
        other_log_stds
        - log_stds
        + (stds**2 + (means - other_means) ** 2) / (2 * other_stds**2)
        - 0.5
    ).sum(-1)
    torch.testing.assert_close(dist.kl(other), expected_kl)
    assert dist.sample().shape == (6, 3)
    assert dist.rsample(sample_shape=(2,)).shape == (2, 6, 3)
    assert torch.equal(dist.to_deterministic().sample(), means)
    assert TorchDiagGaussian.required_input_dim(gym.spaces.Box(-1, 1, (2, 3))) == 12


def test_diag_gaussian_rsample_carries_gradients_and_sample_does_not():
    inputs = torch.zeros(4, 2, requires_grad=True)
    dist = TorchDiagGaussian.from_logits(inputs)
    assert dist.rsample().requires_grad
    assert not dist.sample().requires_grad
    sample, logp = dist.rsample_and_logp()
    torch.testing.assert_close(logp, dist.logp(sample))


def test_required_input_dim_refuses_the_wrong_space():
    with pytest.raises(ValueError, match="TorchCategorical.*Discrete"):
        TorchCategorical.required_input_dim(gym.spaces.Box(-1, 1, (2,)))
    with pytest.raises(ValueError, match="TorchDiagGaussian.*Box"):
        TorchDiagGaussian.required_input_dim(gym.spaces.Discrete(2))


def test_squashed_gaussian_samples_in_bounds_with_change_of_variables_logp():
    low, high = -2.0, 3.0
    inputs = torch.cat([torch.randn(5, 2), torch.full((5, 2), -0.5)], -1)
    dist = TorchSquashedGaussian.from_logits(inputs, low=low, high=high)
    samples = dist.sample(sample_shape=(100,))
    assert samples.shape == (100, 5, 2)
    assert samples.min() >= low and samples.max() <= high
    squashed, logp = dist.sample_and_logp()
    # Change of variables by hand: a = low + (tanh(u) + 1) / 2 * (high - low).
    unit = (squashed - low) / (high - low) * 2 - 1
    u = torch.atanh(unit)
    normal = torch.distributions.Normal(dist.loc, torch.exp(torch.tensor(-0.5)))
    expected = (normal.log_prob(u) - torch.log(1 - torch.tanh(u) ** 2)).sum(-1)
    torch.testing.assert_close(logp, expected, atol=1e-3, rtol=1e-4)
    torch.testing.assert_close(dist.logp(squashed), logp, atol=1e-3, rtol=1e-4)
    with pytest.raises(ValueError, match="entropy"):
        dist.entropy()
    with pytest.raises(ValueError, match="KL"):
        dist.kl(dist)
    assert torch.equal(dist.to_deterministic().sample(), dist.loc)


def test_squashed_gaussian_clips_log_stds_to_rllibs_bounds():
    inputs = torch.cat([torch.zeros(1, 2), torch.tensor([[-50.0, 50.0]])], -1)
    dist = TorchSquashedGaussian.from_logits(inputs)
    torch.testing.assert_close(dist._dist.scale, torch.tensor([[math.exp(-5), math.exp(2)]]))
    with pytest.raises(ValueError, match="low"):
        TorchSquashedGaussian.from_logits(inputs, low=1.0, high=1.0)


def test_deterministic_returns_loc_with_zero_logp():
    loc = torch.tensor([[0.5, -1.0], [2.0, 3.0]])
    dist = TorchDeterministic(loc=loc)
    assert torch.equal(dist.sample(), loc)
    assert dist.sample(sample_shape=(3,)).shape == (3, 2, 2)
    assert torch.equal(dist.logp(loc), torch.zeros_like(loc))
    with pytest.raises(RuntimeError, match="entropy"):
        dist.entropy()
    with pytest.raises(NotImplementedError):
        dist.rsample()
    assert dist.to_deterministic() is dist
    assert TorchDeterministic.required_input_dim(gym.spaces.Box(-1, 1, (4,))) == 4


def test_multi_categorical_is_the_sum_of_its_categoricals():
    logits = torch.randn(5, 2 + 3)
    dist = TorchMultiCategorical.from_logits(logits, input_lens=[2, 3])
    first = TorchCategorical.from_logits(logits[:, :2])
    second = TorchCategorical.from_logits(logits[:, 2:])
    actions = torch.stack([torch.tensor([0, 1, 1, 0, 1]), torch.tensor([2, 0, 1, 2, 2])], -1)
    torch.testing.assert_close(
        dist.logp(actions), first.logp(actions[:, 0]) + second.logp(actions[:, 1])
    )
    torch.testing.assert_close(dist.entropy(), first.entropy() + second.entropy())
    other_logits = torch.randn(5, 5)
    other = TorchMultiCategorical.from_logits(other_logits, input_lens=[2, 3])
    expected_kl = first.kl(TorchCategorical.from_logits(other_logits[:, :2])) + second.kl(
        TorchCategorical.from_logits(other_logits[:, 2:])
    )
    torch.testing.assert_close(dist.kl(other), expected_kl)
    assert dist.sample().shape == (5, 2)
    greedy = dist.to_deterministic().sample()
    assert torch.equal(
        greedy, torch.stack([logits[:, :2].argmax(-1), logits[:, 2:].argmax(-1)], -1)
    )
    assert TorchMultiCategorical.required_input_dim(gym.spaces.MultiDiscrete([2, 3])) == 5
    with pytest.raises(ValueError, match="input_lens"):
        TorchMultiCategorical.from_logits(logits, input_lens=[2, 2])
    # Temperatures divide each component's logits (RLlib's docstring; RLlib ignores them).
    warmed = TorchMultiCategorical.from_logits(logits, input_lens=[2, 3], temperatures=[2.0, 0.5])
    torch.testing.assert_close(
        warmed.logp(actions),
        TorchCategorical.from_logits(logits[:, :2] / 2.0).logp(actions[:, 0])
        + TorchCategorical.from_logits(logits[:, 2:] / 0.5).logp(actions[:, 1]),
    )


def test_partial_dist_cls_binds_constructor_arguments():
    partial = TorchMultiCategorical.get_partial_dist_cls(input_lens=[2, 3])
    dist = partial.from_logits(torch.randn(4, 5))
    assert type(dist) is partial and isinstance(dist, TorchMultiCategorical)
    assert dist.sample().shape == (4, 2)
    with pytest.raises(ValueError, match="cannot override"):
        partial.from_logits(torch.randn(4, 5), input_lens=[1, 4])


def test_multi_distribution_over_a_dict_of_children():
    classes = {"move": TorchDiagGaussian, "pick": TorchCategorical}
    lens = {"move": 4, "pick": 3}
    logits = torch.randn(6, 7)
    partial = TorchMultiDistribution.get_partial_dist_cls(
        child_distribution_cls_struct=classes, input_lens=lens
    )
    dist = partial.from_logits(logits)
    # dm-tree's order: dict keys sorted ("move" then "pick").
    move = TorchDiagGaussian.from_logits(logits[:, :4])
    pick = TorchCategorical.from_logits(logits[:, 4:])
    sample = dist.sample()
    assert set(sample) == {"move", "pick"}
    assert sample["move"].shape == (6, 2) and sample["pick"].shape == (6,)
    torch.testing.assert_close(
        dist.logp(sample), move.logp(sample["move"]) + pick.logp(sample["pick"])
    )
    torch.testing.assert_close(dist.entropy(), move.entropy() + pick.entropy())
    assert TorchMultiDistribution.required_input_dim(gym.spaces.Dict(), input_lens=[4, 3]) == 7
    greedy = dist.to_deterministic().sample()
    assert torch.equal(greedy["pick"], logits[:, 4:].argmax(-1))


# -- the default PPO module -------------------------------------------------------------------
def _module(obs_space=CARTPOLE_OBS, action_space=DISCRETE_2, **kwargs):
    model_config = kwargs.pop("model_config", {"fcnet_hiddens": [16, 8]})
    return DefaultPPOTorchRLModule(
        observation_space=obs_space,
        action_space=action_space,
        model_config=model_config,
        **kwargs,
    )


def test_discrete_module_forward_shapes_and_values():
    module = _module()
    assert isinstance(module, TorchRLModule)
    assert isinstance(module, ValueFunctionAPI) and isinstance(module, InferenceOnlyAPI)
    batch = {Columns.OBS: torch.randn(5, 4)}
    for forward in (module.forward_inference, module.forward_exploration):
        out = forward(batch)
        assert set(out) == {Columns.ACTION_DIST_INPUTS}
        assert out[Columns.ACTION_DIST_INPUTS].shape == (5, 2)
        assert not out[Columns.ACTION_DIST_INPUTS].requires_grad
    train = module.forward_train(batch)
    assert train[Columns.ACTION_DIST_INPUTS].shape == (5, 2)
    assert train[Columns.EMBEDDINGS].shape == (5, 8)
    values = module.compute_values(batch)
    assert values.shape == (5,)
    torch.testing.assert_close(module.compute_values(batch, train[Columns.EMBEDDINGS]), values)
    assert module.get_train_action_dist_cls() is TorchCategorical
    actions = (
        module.get_inference_action_dist_cls()
        .from_logits(train[Columns.ACTION_DIST_INPUTS])
        .sample()
    )
    assert actions.shape == (5,)


def test_box_module_outputs_means_and_log_stds():
    module = _module(action_space=BOX_ACTIONS)
    out = module.forward_exploration({Columns.OBS: np.zeros((4, 4), np.float32)})
    inputs = out[Columns.ACTION_DIST_INPUTS]
    assert inputs.shape == (4, 6)
    assert module.get_exploration_action_dist_cls() is TorchDiagGaussian
    dist = TorchDiagGaussian.from_logits(inputs)
    assert dist.sample().shape == (4, 3)


def test_box_module_clips_log_stds_at_log_std_clip_param():
    module = _module(action_space=BOX_ACTIONS)
    with torch.no_grad():
        module.pi.net.mlp[-1].bias[3:] = 100.0
        module.pi.net.mlp[-1].bias[:3] = 100.0
    inputs = module.forward_inference({Columns.OBS: torch.zeros(1, 4)})[Columns.ACTION_DIST_INPUTS]
    assert torch.all(inputs[:, 3:] == 20.0)  # RLlib's log_std_clip_param default
    assert torch.all(inputs[:, :3] > 20.0)  # means are not clipped


def test_free_log_std_is_a_parameter_of_the_policy_head():
    module = _module(
        action_space=BOX_ACTIONS, model_config={"fcnet_hiddens": [8], "free_log_std": True}
    )
    assert module.pi.log_std.shape == (3,)
    assert module.pi.net.mlp[-1].out_features == 3
    with torch.no_grad():
        module.pi.log_std[:] = torch.tensor([0.1, -0.2, 0.3])
    inputs = module.forward_inference({Columns.OBS: torch.randn(5, 4)})[Columns.ACTION_DIST_INPUTS]
    torch.testing.assert_close(inputs[:, 3:], torch.tensor([[0.1, -0.2, 0.3]]).expand(5, 3))
    with pytest.raises(ValueError, match="free_log_std"):
        _module(model_config={"free_log_std": True})


def test_gradients_reach_every_parameter():
    for share in (False, True):
        module = _module(
            action_space=BOX_ACTIONS,
            model_config={"fcnet_hiddens": [8, 8], "vf_share_layers": share},
        )
        batch = {Columns.OBS: torch.randn(6, 4)}
        out = module.forward_train(batch)
        dist = TorchDiagGaussian.from_logits(out[Columns.ACTION_DIST_INPUTS])
        values = module.compute_values(batch, embeddings=out[Columns.EMBEDDINGS])
        loss = -dist.logp(torch.zeros(6, 3)).mean() + values.pow(2).mean()
        loss.backward()
        for name, param in module.named_parameters():
            assert param.grad is not None and param.grad.abs().sum() > 0, name


def _layers(sequential):
    """[(in, out, activation after it or None)] of a TorchMLP's nn.Sequential."""
    layers = []
    for part in sequential:
        if isinstance(part, torch.nn.Linear):
            layers.append([part.in_features, part.out_features, None])
        else:
            layers[-1][2] = type(part).__name__
    return [tuple(layer) for layer in layers]


_TORCH_ACTIVATION = {"tanh": "Tanh", "relu": "ReLU", "linear": None, "elu": "ELU"}


def _numpy_layers(mlp, output_activated):
    """The same description of a numpy MLP (`sizes`, `activations`)."""
    activations = list(mlp.activations) + [mlp.activation if output_activated else "linear"]
    return [
        (mlp.sizes[i], mlp.sizes[i + 1], _TORCH_ACTIVATION[activations[i]])
        for i in range(len(mlp.sizes) - 1)
    ]


@pytest.mark.parametrize(
    "model_config",
    [
        {
            "fcnet_hiddens": [16, 8],
            "head_fcnet_hiddens": [5],
            "fcnet_activation": "tanh",
            "vf_share_layers": False,
        },
        {
            "fcnet_hiddens": [12],
            "fcnet_activation": "elu",
            "head_fcnet_activation": "tanh",
            "head_fcnet_hiddens": [7, 3],
            "vf_share_layers": False,
        },
        {"fcnet_hiddens": [16, 8], "head_fcnet_hiddens": [5], "vf_share_layers": True},
        {"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True},
    ],
)
@pytest.mark.parametrize("action_space", [DISCRETE_2, BOX_ACTIONS])
def test_same_network_as_the_numpy_policy_module(model_config, action_space):
    module = _module(action_space=action_space, model_config=model_config)
    numpy_module = PolicyModule(SpaceInfo.from_spaces(CARTPOLE_OBS, action_space), model_config)
    if model_config.get("vf_share_layers"):
        assert numpy_module.encoder is not None
        assert _layers(module.encoder.encoder.net.mlp) == _numpy_layers(
            numpy_module.encoder, output_activated=True
        )
        assert _layers(module.pi.net.mlp) == _numpy_layers(numpy_module.pi, False)
        assert _layers(module.vf.net.mlp) == _numpy_layers(numpy_module.vf, False)
    else:
        # numpy: one MLP per path; torch: an encoder and a head per path, end to end the same.
        assert _layers(module.encoder.actor_encoder.net.mlp) + _layers(
            module.pi.net.mlp
        ) == _numpy_layers(numpy_module.pi, False)
        assert _layers(module.encoder.critic_encoder.net.mlp) + _layers(
            module.vf.net.mlp
        ) == _numpy_layers(numpy_module.vf, False)
    torch_count = sum(p.numel() for p in module.parameters())
    assert torch_count == sum(p.size for p in numpy_module.parameters())


def test_vf_share_layers_gives_one_encoder():
    shared = _module(model_config={"fcnet_hiddens": [16], "vf_share_layers": True})
    names = set(shared.get_state())
    assert any(name.startswith("encoder.encoder.") for name in names)
    assert not any("actor_encoder" in name or "critic_encoder" in name for name in names)
    batch = {Columns.OBS: torch.randn(3, 4)}
    out = shared.forward_train(batch)
    features = shared.encoder.encoder(batch[Columns.OBS])
    torch.testing.assert_close(out[Columns.EMBEDDINGS], features)
    torch.testing.assert_close(out[Columns.ACTION_DIST_INPUTS], shared.pi(features))
    assert shared.get_non_inference_attributes() == ["vf"]
    separate = _module(model_config={"fcnet_hiddens": [16], "vf_share_layers": False})
    assert separate.get_non_inference_attributes() == ["vf", "encoder.critic_encoder"]
    # RLlib's default (DefaultModelConfig's): one encoder, from a dataclass or a plain dict.
    for default in (DefaultModelConfig(fcnet_hiddens=[16]), {"fcnet_hiddens": [16]}):
        assert hasattr(_module(model_config=default).encoder, "encoder")


def test_empty_fcnet_hiddens_feeds_the_observation_to_the_heads():
    module = _module(model_config={"fcnet_hiddens": [], "head_fcnet_hiddens": [6]})
    assert _layers(module.pi.net.mlp) == [(4, 6, "ReLU"), (6, 2, None)]
    out = module.forward_train({Columns.OBS: torch.randn(2, 4)})
    assert out[Columns.EMBEDDINGS].shape == (2, 4)


def test_inference_only_copy_has_no_value_function():
    full = _module(action_space=BOX_ACTIONS)
    light = _module(action_space=BOX_ACTIONS, inference_only=True)
    assert not hasattr(light, "vf") and not hasattr(light.encoder, "critic_encoder")
    light_state = full.get_state(inference_only=True)
    assert not any(k.startswith(("vf.", "encoder.critic_encoder.")) for k in light_state)
    assert set(light_state) == set(light.get_state())
    assert set(light_state) < set(full.get_state())
    light.set_state(light_state)
    batch = {Columns.OBS: torch.randn(5, 4)}
    torch.testing.assert_close(
        light.forward_inference(batch)[Columns.ACTION_DIST_INPUTS],
        full.forward_inference(batch)[Columns.ACTION_DIST_INPUTS],
    )
    with pytest.raises(RuntimeError, match="inference_only"):
        light.forward_train(batch)
    with pytest.raises(RuntimeError, match="inference-only"):
        light.compute_values(batch)
    with pytest.raises(ValueError, match="lacks"):
        light.set_state(full.get_state())


def test_shared_inference_only_copy_keeps_the_shared_encoder():
    config = {"fcnet_hiddens": [8], "vf_share_layers": True}
    light = _module(model_config=config, inference_only=True)
    assert hasattr(light.encoder, "encoder") and not hasattr(light, "vf")
    full = _module(model_config=config)
    light.set_state(full.get_state(inference_only=True))


def test_state_round_trip_is_exact():
    source, target = _module(action_space=BOX_ACTIONS), _module(action_space=BOX_ACTIONS)
    state = source.get_state()
    assert all(isinstance(value, np.ndarray) for value in state.values())
    target.set_state(state)
    for key, value in target.get_state().items():
        np.testing.assert_array_equal(value, state[key])


def test_checkpoint_round_trip_is_exact_and_unpickled(tmp_path):
    module = _module(
        action_space=BOX_ACTIONS,
        model_config={"fcnet_hiddens": [8, 8], "free_log_std": True, "head_fcnet_hiddens": [4]},
    )
    with torch.no_grad():
        module.pi.log_std[:] = torch.tensor([0.3, -0.1, 0.2])
    path = module.save_to_path(str(tmp_path / "module"))
    restored = DefaultPPOTorchRLModule.from_checkpoint(path)
    assert type(restored) is DefaultPPOTorchRLModule and restored is not module
    assert restored.action_space == module.action_space
    state, restored_state = module.get_state(), restored.get_state()
    assert set(state) == set(restored_state)
    for key, value in state.items():
        np.testing.assert_array_equal(restored_state[key], value)
    batch = {Columns.OBS: torch.randn(3, 4)}
    assert torch.equal(
        restored.forward_inference(batch)[Columns.ACTION_DIST_INPUTS],
        module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS],
    )
    files = [os.path.join(root, name) for root, _, names in os.walk(path) for name in names]
    assert files
    for file in files:
        assert not file.endswith((".pkl", ".pickle", ".pt", ".pth")), file
        with open(file, "rb") as handle:
            head = handle.read(2)
        assert head[:1] != b"\x80", f"{file} starts like a pickle"
    # The spec route builds the same class (as RLModuleSpec(module_class=...) does in RLlib).
    spec = RLModuleSpec.from_module(restored)
    assert type(spec.build()) is DefaultPPOTorchRLModule


def test_discrete_observations_are_one_hot_encoded():
    module = _module(obs_space=gym.spaces.Discrete(5), model_config={"fcnet_hiddens": [8]})
    assert module.encoder.encoder.net.mlp[0].in_features == 5
    out = module.forward_inference({Columns.OBS: torch.tensor([0, 4, 2])})
    one_hot = torch.nn.functional.one_hot(torch.tensor([0, 4, 2]), 5).float()
    expected = module.pi(module.encoder.encoder(one_hot))
    torch.testing.assert_close(out[Columns.ACTION_DIST_INPUTS], expected)


def test_initializers_from_the_model_config():
    module = _module(
        model_config={
            "fcnet_hiddens": [8],
            "fcnet_kernel_initializer": "zeros_",
            "fcnet_bias_initializer": "constant_",
            "fcnet_bias_initializer_kwargs": {"val": 0.5},
            "head_fcnet_kernel_initializer": torch.nn.init.ones_,
        }
    )
    encoder = module.encoder.encoder.net.mlp[0]
    assert torch.all(encoder.weight == 0) and torch.all(encoder.bias == 0.5)
    assert torch.all(module.pi.net.mlp[0].weight == 1)


def test_bad_spaces_and_settings_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="conv_filters"):  # no CNN preset for 16x16 images
        _module(obs_space=gym.spaces.Box(0, 255, (16, 16, 3), np.uint8))
    with pytest.raises(ValueError, match=r"action_space=MultiBinary\(3\) is not supported"):
        _module(action_space=gym.spaces.MultiBinary(3))
    with pytest.raises(ValueError, match="fcnet_hiddens"):
        _module(model_config={"fcnet_hiddens": [0]})
    with pytest.raises(ValueError, match="fcnet_activation"):
        _module(model_config={"fcnet_activation": "gelu-ish"})
    with pytest.raises(ValueError, match="catalog"):
        _module(catalog_class=dict)


# -- RLlib's import paths ---------------------------------------------------------------------
def test_rllib_torch_paths_import_these_classes():
    launcher.install()
    try:
        from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
            DefaultPPOTorchRLModule as RLlibDefaultPPO,
        )
        from ray.rllib.core.distribution.torch.torch_distribution import (
            TorchCategorical as RLlibCategorical,
        )
        from ray.rllib.core.rl_module.apis import ValueFunctionAPI as RLlibValueFunctionAPI
        from ray.rllib.core.rl_module.apis.inference_only_api import InferenceOnlyAPI as RLlibIO
        from ray.rllib.core.rl_module.torch import TorchRLModule as RLlibTorchRLModule
        from ray.rllib.models.torch.torch_distributions import TorchDiagGaussian as OldPath
    finally:
        launcher.uninstall()
    assert RLlibDefaultPPO is DefaultPPOTorchRLModule
    assert RLlibCategorical is TorchCategorical and OldPath is TorchDiagGaussian
    assert RLlibValueFunctionAPI is ValueFunctionAPI and RLlibIO is InferenceOnlyAPI
    assert RLlibTorchRLModule is TorchRLModule


def test_default_model_config_checkpoints_as_a_dict(tmp_path):
    module = _module(model_config=DefaultModelConfig(fcnet_hiddens=[8]))
    assert isinstance(module.model_config, dict) and module.model_config["vf_share_layers"]
    restored = DefaultPPOTorchRLModule.from_checkpoint(module.save_to_path(str(tmp_path / "m")))
    assert hasattr(restored.encoder, "encoder")  # RLlib's shared default survives
    assert set(restored.get_state()) == set(module.get_state())


def test_numpy_float64_and_integer_observations_are_cast():
    module = _module()
    float32 = module.forward_inference({Columns.OBS: np.ones((2, 4), np.float32)})
    for obs in (np.ones((2, 4)), np.ones((2, 4), np.int64)):
        out = module.forward_inference({Columns.OBS: obs})
        assert out[Columns.ACTION_DIST_INPUTS].dtype == torch.float32
        torch.testing.assert_close(
            out[Columns.ACTION_DIST_INPUTS], float32[Columns.ACTION_DIST_INPUTS]
        )


def test_observations_follow_the_modules_dtype():
    module = _module(obs_space=gym.spaces.Discrete(3), model_config={"fcnet_hiddens": [4]})
    module.double()
    out = module.forward_inference({Columns.OBS: np.array([0, 2])})
    assert out[Columns.ACTION_DIST_INPUTS].dtype == torch.float64
    box = _module().double()
    values = box.compute_values({Columns.OBS: np.ones((3, 4), np.float32)})
    assert values.dtype == torch.float64 and values.shape == (3,)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_module_on_a_gpu_takes_numpy_batches_and_returns_cpu_state():
    module = _module(action_space=BOX_ACTIONS).cuda()
    out = module.forward_exploration({Columns.OBS: np.zeros((2, 4), np.float32)})
    assert out[Columns.ACTION_DIST_INPUTS].device.type == "cuda"
    state = module.get_state()
    assert all(isinstance(value, np.ndarray) for value in state.values())
    cpu_module = _module(action_space=BOX_ACTIONS)
    cpu_module.set_state(state)
    torch.testing.assert_close(
        cpu_module.forward_exploration({Columns.OBS: np.zeros((2, 4), np.float32)})[
            Columns.ACTION_DIST_INPUTS
        ],
        out[Columns.ACTION_DIST_INPUTS].cpu(),
    )


def test_the_default_numpy_module_answers_torch_tensors_with_a_torch_tensor():
    # RLlib's default module is a torch one, and scripts (RLlib's ray_tune/custom_experiment.py)
    # call it with tensors and `.detach().cpu().numpy()` its output.
    spaces = SpaceInfo.from_spaces(gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2))
    module = PolicyModule(spaces, {"fcnet_hiddens": [8]}, seed=0)
    obs = np.random.default_rng(0).uniform(-1, 1, (3, 4)).astype(np.float32)
    expected = module.forward_inference({"obs": obs})["action_dist_inputs"]
    out = module.forward_exploration({"obs": torch.from_numpy(obs)})["action_dist_inputs"]
    assert isinstance(out, torch.Tensor) and out.shape == (3, 2)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), expected)
    assert isinstance(expected, np.ndarray)


def _singular_values(weight: torch.Tensor) -> np.ndarray:
    return np.linalg.svd(weight.detach().numpy(), compute_uv=False)


def test_default_layers_start_as_the_numpy_modules_layers():
    """Without configured initializers the default module's layers are orthogonal (every
    singular value the gain: sqrt(2) before ReLU, 1 before tanh and for the value output,
    0.01 for the policy output) with zero biases, as the numpy modules'; a configured
    initializer still decides."""
    for activation, hidden_gain in (("relu", math.sqrt(2.0)), ("tanh", 1.0)):
        module = DefaultPPOTorchRLModule(
            observation_space=CARTPOLE_OBS,
            action_space=DISCRETE_2,
            model_config={
                "fcnet_hiddens": [16, 8],
                "fcnet_activation": activation,
                "vf_share_layers": False,
            },
        )
        layers = {
            "encoder.actor_encoder.net.mlp.0": hidden_gain,
            "encoder.critic_encoder.net.mlp.2": hidden_gain,
            "pi.net.mlp.0": 0.01,
            "vf.net.mlp.0": 1.0,
        }
        for name, gain in layers.items():
            linear = module.get_submodule(name)
            np.testing.assert_allclose(_singular_values(linear.weight), gain, rtol=1e-4)
            assert not linear.bias.detach().numpy().any(), name
    configured = DefaultPPOTorchRLModule(
        observation_space=CARTPOLE_OBS,
        action_space=DISCRETE_2,
        model_config={"fcnet_hiddens": [16], "fcnet_bias_initializer": "ones_"},
    )
    assert (configured.get_submodule("encoder.encoder.net.mlp.0").bias == 1.0).all()
