"""RLlib's torch helpers (`ray.rllib.utils.torch_utils`: `trainer.torch_rl.torch_utils`), its
`Simplex` space (`trainer.core.spaces.Simplex`) and DQN's round-robin weights
(`calculate_rr_weights`), each compared with RLlib 2.60's own (the Ray wheel, imported here
without the launcher's hook) on the same inputs; and the three served through the launcher."""

from __future__ import annotations

import collections
import logging
import os
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch extra")

from tests.test_launcher import run_script  # noqa: E402
from trainer import launcher  # noqa: E402
from trainer.algorithms.dqn import dqn as our_dqn  # noqa: E402
from trainer.algorithms.off_policy import calculate_rr_weights  # noqa: E402
from trainer.core.spaces import Simplex, space_from_dict, space_to_dict  # noqa: E402
from trainer.torch_rl import torch_utils as ours  # noqa: E402

Pair = collections.namedtuple("Pair", ["left", "right"])


@pytest.fixture(scope="module")
def rllib():
    """RLlib 2.60's own torch_utils module (the installed wheel's, not the launcher's)."""
    assert not launcher.installed()
    return pytest.importorskip("ray.rllib.utils.torch_utils", reason="the Ray 2.60 wheel")


def _same(a, b, *, exact_dtype: bool = True, **tolerances) -> None:
    """Nested results alike: the same structure, tensors close with the same dtype (and
    shape), other leaves equal."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for key in a:
            _same(a[key], b[key], exact_dtype=exact_dtype, **tolerances)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y, exact_dtype=exact_dtype, **tolerances)
    elif isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.shape == b.shape
        if exact_dtype:
            assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, check_dtype=exact_dtype, equal_nan=True, **tolerances)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b or (a is None and b is None)


def _randn(seed: int, *shape: int, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# -- constants and conversions ---------------------------------------------------------------
@pytest.mark.ray
def test_constants_are_rllibs(rllib):
    assert (ours.FLOAT_MIN, ours.FLOAT_MAX) == (rllib.FLOAT_MIN, rllib.FLOAT_MAX)
    assert ours.SMALL_NUMBER == rllib.SMALL_NUMBER == 1e-6
    assert str(ours.TORCH_COMPILE_REQUIRED_VERSION) == str(rllib.TORCH_COMPILE_REQUIRED_VERSION)


def _nested_inputs() -> dict:
    rng = np.random.default_rng(0)
    frozen = rng.normal(size=(2, 3))
    frozen.flags.writeable = False
    return {
        "f64": rng.normal(size=(4, 3)),
        "f32": rng.normal(size=(5,)).astype(np.float32),
        "f16": rng.normal(size=(2,)).astype(np.float16),
        "ints": rng.integers(0, 9, size=(3, 2)),
        "bools": rng.random(4) > 0.5,
        "scalars": [1.5, 7, True, None],
        "tuple": (frozen, np.array(["a", "b"]), np.array([{}, 1], dtype=object)),
        "pair": Pair(torch.arange(3, dtype=torch.float64), torch.ones(2, dtype=torch.int32)),
        "nested": {"bf16": torch.ones(2, dtype=torch.bfloat16), "tensor": torch.zeros(2, 2)},
    }


@pytest.mark.ray
@pytest.mark.parametrize("pin_memory", [False, True])
def test_convert_to_torch_tensor_is_rllibs(rllib, pin_memory):
    for device in (None, "cpu", torch.device("cpu")):
        expected = rllib.convert_to_torch_tensor(
            _nested_inputs(), device=device, pin_memory=pin_memory
        )
        got = ours.convert_to_torch_tensor(_nested_inputs(), device=device, pin_memory=pin_memory)
        _same(got, expected)
    assert ours.convert_to_torch_tensor(None) is None
    _same(ours.convert_to_torch_tensor(np.float64(2.0)), rllib.convert_to_torch_tensor(2.0))


@pytest.mark.ray
def test_copy_torch_tensors_is_rllibs(rllib):
    struct = {"a": _randn(1, 3), "b": [np.zeros(2), 3, None]}
    got, expected = ours.copy_torch_tensors(struct), rllib.copy_torch_tensors(struct)
    _same(got, expected)
    assert got["a"] is not struct["a"] and got["b"][0] is struct["b"][0]
    _same(ours.copy_torch_tensors(struct, "cpu"), rllib.copy_torch_tensors(struct, "cpu"))


def _flatten_case(time_axis: bool):
    lead = (4, 3) if time_axis else (4,)
    rng = np.random.default_rng(3)
    inputs = {
        "z": torch.from_numpy(rng.integers(0, 4, size=lead)),
        "a": (
            torch.from_numpy(rng.normal(size=(*lead, 2))),
            torch.from_numpy(rng.integers(0, [2, 5], size=(*lead, 2))),
        ),
        "m": {"img": torch.from_numpy(rng.normal(size=(*lead, 2, 3)).astype(np.float32))},
    }
    spaces = gym.spaces.Dict(
        {
            "z": gym.spaces.Discrete(4),
            "a": gym.spaces.Tuple([gym.spaces.Box(-1, 1, (2,)), gym.spaces.MultiDiscrete([2, 5])]),
            "m": gym.spaces.Dict({"img": gym.spaces.Box(0, 1, (2, 3))}),
        }
    )
    return inputs, spaces


@pytest.mark.ray
@pytest.mark.parametrize("time_axis", [False, True])
def test_flatten_inputs_to_1d_tensor_is_rllibs(rllib, time_axis):
    inputs, spaces = _flatten_case(time_axis)
    for struct in (spaces, {"z": spaces["z"], "a": tuple(spaces["a"]), "m": spaces["m"]}, None):
        expected = rllib.flatten_inputs_to_1d_tensor(inputs, struct, time_axis=time_axis)
        _same(ours.flatten_inputs_to_1d_tensor(inputs, struct, time_axis=time_axis), expected)


# -- statistics, norms, clipping -------------------------------------------------------------
@pytest.mark.ray
@pytest.mark.parametrize("shape", [(64,), (64, 1), (64, 3), (1, 32)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_explained_variance_is_rllibs(rllib, shape, dtype):
    y = _randn(10, *shape, dtype=dtype)
    for pred in (y + 0.3 * _randn(11, *shape, dtype=dtype), _randn(12, *shape, dtype=dtype), y):
        _same(ours.explained_variance(y, pred), rllib.explained_variance(y, pred))
    constant = torch.ones(shape, dtype=dtype)  # var(y) = 0: floored at -1
    _same(
        ours.explained_variance(constant, y), rllib.explained_variance(constant, y), rtol=0, atol=0
    )


@pytest.mark.ray
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_global_norms_are_rllibs(rllib, dtype):
    tensors = [_randn(i, *shape, dtype=dtype) for i, shape in enumerate([(3,), (2, 4), (5, 1, 2)])]
    _same(ours.global_norm(tensors), rllib.global_norm(tensors))
    _same(ours.compute_global_norm(tensors), rllib.compute_global_norm(tensors))
    _same(ours.compute_global_norm([]), rllib.compute_global_norm([]))
    with_none = [tensors[0], None, tensors[2]]
    _same(ours.compute_global_norm(with_none), rllib.compute_global_norm(with_none))
    infinite = [*tensors, torch.tensor([float("inf")], dtype=dtype)]  # mapped to 1e9
    _same(ours.compute_global_norm(infinite), rllib.compute_global_norm(infinite))
    # global_norm is differentiable
    leaf = tensors[0].clone().requires_grad_(True)
    ours.global_norm([leaf, tensors[1]]).backward()
    assert leaf.grad is not None


def _gradients(seed: int, scale: float) -> dict:
    return {
        "w": scale * _randn(seed, 4, 3),
        "b": scale * _randn(seed + 1, 3),
        "frozen": None,
        "big": scale * 10 * _randn(seed + 2, 2, 2),
    }


@pytest.mark.ray
@pytest.mark.parametrize("mode", ["value", "norm", "global_norm"])
@pytest.mark.parametrize("grad_clip", [None, 0.05, 1.0, 1e6])
def test_clip_gradients_is_rllibs(rllib, mode, grad_clip):
    for seed, scale in ((0, 1.0), (5, 0.01)):
        got, expected = _gradients(seed, scale), _gradients(seed, scale)
        returned = ours.clip_gradients(got, grad_clip=grad_clip, grad_clip_by=mode)
        returned_rllib = rllib.clip_gradients(expected, grad_clip=grad_clip, grad_clip_by=mode)
        _same(got, expected)
        _same(returned, returned_rllib)
    with pytest.raises(ValueError, match="grad_clip_by='abs'"):
        ours.clip_gradients(_gradients(0, 1.0), grad_clip=1.0, grad_clip_by="abs")
    with pytest.raises(ValueError):
        rllib.clip_gradients(_gradients(0, 1.0), grad_clip=1.0, grad_clip_by="abs")


def _optimizer_with_gradients(seed: int) -> torch.optim.Optimizer:
    torch.manual_seed(seed)
    first, second, idle = torch.nn.Linear(3, 4), torch.nn.Linear(4, 2), torch.nn.Linear(2, 2)
    loss = second(first(_randn(seed, 8, 3))).pow(2).sum() * 10
    loss.backward()
    groups = [
        {"params": list(first.parameters())},
        {"params": list(second.parameters())},
        {"params": list(idle.parameters())},  # no gradients: skipped
    ]
    return torch.optim.SGD(groups, lr=0.1)


@pytest.mark.ray
@pytest.mark.parametrize("grad_clip", [None, 0.5, 1e4])
def test_apply_grad_clipping_is_rllibs(rllib, grad_clip):
    policy = SimpleNamespace(config={"grad_clip": grad_clip})
    got_opt, expected_opt = _optimizer_with_gradients(1), _optimizer_with_gradients(1)
    got = ours.apply_grad_clipping(policy, got_opt, None)
    expected = rllib.apply_grad_clipping(policy, expected_opt, None)
    assert got.keys() == expected.keys() == {"grad_gnorm"}
    assert got["grad_gnorm"] == pytest.approx(float(expected["grad_gnorm"]), rel=1e-6)
    for got_group, group in zip(got_opt.param_groups, expected_opt.param_groups, strict=True):
        for p, q in zip(got_group["params"], group["params"], strict=True):
            _same(p.grad, q.grad)
    no_grads = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    assert ours.apply_grad_clipping(policy, no_grads, None) == {}
    assert rllib.apply_grad_clipping(policy, no_grads, None) == {}


# -- losses and encodings --------------------------------------------------------------------
@pytest.mark.ray
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(7,), (3, 5)])
def test_losses_and_squashings_are_rllibs(rllib, dtype, shape):
    x = 3 * _randn(20, *shape, dtype=dtype)
    for delta in (1.0, 0.5, 2.0):
        _same(ours.huber_loss(x, delta), rllib.huber_loss(x, delta))
    _same(ours.huber_loss(x), rllib.huber_loss(x))
    _same(ours.l2_loss(x), rllib.l2_loss(x))
    _same(ours.symlog(x), rllib.symlog(x))
    _same(ours.inverse_symlog(x), rllib.inverse_symlog(x))
    _same(ours.inverse_symlog(ours.symlog(x)), x)
    labels = torch.softmax(_randn(21, *shape, dtype=dtype), dim=-1)
    _same(
        ours.softmax_cross_entropy_with_logits(x, labels),
        rllib.softmax_cross_entropy_with_logits(x, labels),
    )
    masked = x.clone()
    masked.view(-1)[::3] = float("-inf")
    axes = [None, 0] + ([1] if len(shape) > 1 else [])
    for axis in axes:
        _same(ours.reduce_mean_ignore_inf(masked, axis), rllib.reduce_mean_ignore_inf(masked, axis))


@pytest.mark.ray
def test_one_hot_is_rllibs(rllib):
    rng = np.random.default_rng(4)
    discrete = torch.from_numpy(rng.integers(0, 5, size=(6,)))
    _same(
        ours.one_hot(discrete, gym.spaces.Discrete(5)),
        rllib.one_hot(discrete, gym.spaces.Discrete(5)),
    )
    _same(
        ours.one_hot(discrete.int(), gym.spaces.Discrete(7)),
        rllib.one_hot(discrete.int(), gym.spaces.Discrete(7)),
    )
    flat = gym.spaces.MultiDiscrete([5, 4, 4, 7])
    x = torch.from_numpy(rng.integers(0, [5, 4, 4, 7], size=(6, 4)))
    _same(ours.one_hot(x, flat), rllib.one_hot(x, flat))
    grid = gym.spaces.MultiDiscrete([[2, 3], [4, 2]])
    x = torch.from_numpy(rng.integers(0, [[2, 3], [4, 2]], size=(5, 2, 2)))
    _same(ours.one_hot(x, grid), rllib.one_hot(x, grid))
    box = gym.spaces.Box(0, 1, (3,))
    for one_hot in (ours.one_hot, rllib.one_hot):
        with pytest.raises(ValueError):
            one_hot(torch.zeros(2, 3), box)


@pytest.mark.ray
@pytest.mark.parametrize(
    "buckets, low, high", [(255, -20.0, 20.0), (11, -5.0, 5.0), (5, -1.0, 1.0), (3, 0.0, 2.0)]
)
def test_two_hot_is_rllibs(rllib, buckets, low, high):
    values = 1.3 * high * _randn(30, 40)
    edges = torch.tensor([low, high, low - 1, high + 1, 0.0, (low + high) / 2, 0.1])
    for value in (values, edges, torch.linspace(low, high, buckets)):
        got = ours.two_hot(value, buckets, low, high)
        _same(got, rllib.two_hot(value, buckets, low, high), rtol=1e-5, atol=1e-6)
        buckets_values = torch.linspace(low, high, buckets)
        torch.testing.assert_close(got @ buckets_values, value.clamp(low, high), atol=1e-4, rtol=0)
    _same(ours.two_hot(values), rllib.two_hot(values), rtol=1e-5, atol=1e-6)


@pytest.mark.ray
def test_sequence_mask_is_rllibs(rllib):
    lengths = torch.tensor([3, 1, 4, 0, 2])
    for maxlen in (None, 4, 6):
        for time_major in (False, True):
            expected = rllib.sequence_mask(lengths, maxlen, time_major=time_major)
            _same(ours.sequence_mask(lengths, maxlen, time_major=time_major), expected)
    # RLlib 2.60 returns a boolean mask whatever dtype says; so does this one.
    _same(
        ours.sequence_mask(lengths, dtype=torch.float32),
        rllib.sequence_mask(lengths, dtype=torch.float32),
    )


# -- networks, seeds, warnings ---------------------------------------------------------------
@pytest.mark.ray
@pytest.mark.parametrize("tau", [0.0, 0.005, 0.5, 1.0])
def test_update_target_network_is_rllibs(rllib, tau):
    torch.manual_seed(0)
    main = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    target = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ours_target = type(target)(*(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)))
    ours_target.load_state_dict(target.state_dict())
    rllib.update_target_network(main, target, tau)
    ours.update_target_network(main, ours_target, tau)
    _same(ours_target.state_dict(), target.state_dict(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="tau must be in"):
        ours.update_target_network(main, ours_target, 1.5)


@pytest.mark.ray
def test_set_torch_seed_is_rllibs(rllib):
    deterministic = torch.are_deterministic_algorithms_enabled()
    cudnn = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    cublas = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
    rng_state = torch.get_rng_state()
    try:
        draws, settings = [], []
        for set_torch_seed in (ours.set_torch_seed, rllib.set_torch_seed):
            torch.use_deterministic_algorithms(False)
            set_torch_seed(123)
            draws.append(torch.rand(5))
            settings.append(
                (
                    torch.are_deterministic_algorithms_enabled(),
                    torch.backends.cudnn.deterministic,
                    torch.backends.cudnn.benchmark,
                    os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
                )
            )
            set_torch_seed(None)  # nothing
            assert not torch.equal(torch.rand(5), draws[-1])
        _same(draws[0], draws[1])
        assert settings[0] == settings[1]
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn
        if cublas is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = cublas
        torch.set_rng_state(rng_state)


def test_an_infinite_kl_divergence_is_warned_about(caplog):
    caplog.set_level(logging.WARNING, logger=ours.__name__)
    policy = SimpleNamespace(loss_initialized=lambda: True)
    ours.warn_if_infinite_kl_divergence(policy, torch.tensor(0.3))
    assert not caplog.records
    ours.warn_if_infinite_kl_divergence(
        SimpleNamespace(loss_initialized=lambda: False), torch.tensor(float("inf"))
    )
    assert not caplog.records
    ours.warn_if_infinite_kl_divergence(policy, torch.tensor([0.1, float("inf")]))
    assert len(caplog.records) == 1 and "KL divergence is non-finite" in caplog.text


# -- Simplex ---------------------------------------------------------------------------------
@pytest.mark.ray
def test_simplex_is_rllibs():
    rllib_simplex = pytest.importorskip("ray.rllib.utils.spaces.simplex").Simplex
    for shape, concentration in (((4,), None), ((3, 4), None), ((2, 3), np.array([0.5, 2.0, 1.0]))):
        space, theirs = Simplex(shape, concentration), rllib_simplex(shape, concentration)
        assert (space.shape, space.dtype, space.dim) == (theirs.shape, theirs.dtype, theirs.dim)
        assert repr(space) == repr(theirs)
        np.testing.assert_array_equal(space.concentration, theirs.concentration)
        assert space.concentration.dtype == theirs.concentration.dtype
        assert theirs == space and space == Simplex(list(shape), concentration)
        space.seed(7)
        samples = [space.sample() for _ in range(20)]
        for sample in samples:
            assert sample.shape == shape and sample.dtype == np.float32
            assert space.contains(sample) and theirs.contains(sample)
            assert theirs.contains(theirs.sample()) and space.contains(theirs.sample())
        assert theirs.to_jsonable(samples) == space.to_jsonable(samples)
        for ours_back, back in zip(
            space.from_jsonable(space.to_jsonable(samples)),
            theirs.from_jsonable(theirs.to_jsonable(samples)),
            strict=True,
        ):
            np.testing.assert_array_equal(ours_back, back)
    space = Simplex([3])
    assert space != Simplex((4,)) and space != Simplex((3,), np.array([1, 1, 2]))
    assert space != gym.spaces.Box(0, 1, (3,))
    bad_sum = np.array([0.5, 0.2, 0.2], dtype=np.float32)
    assert not space.contains(bad_sum) and not rllib_simplex([3]).contains(bad_sum)
    assert not space.contains(np.ones((2, 3)) / 3) and not rllib_simplex([3]).contains(
        np.ones((2, 3)) / 3
    )
    # The definition's [0, 1] coordinates (RLlib's contains checks only shape and sums).
    assert not space.contains(np.array([1.5, -0.5, 0.0]))
    assert space.contains([0.25, 0.25, 0.5])


def test_simplex_samples_are_dirichlet_and_seeded():
    concentration = np.array([1.0, 3.0, 6.0])
    space = Simplex((2000, 3), concentration, dtype=np.float64)
    space.seed(3)
    first = space.sample()
    assert first.dtype == np.float64 and first.shape == (2000, 3) and np.all(first >= 0)
    np.testing.assert_allclose(first.mean(axis=0), concentration / 10, atol=0.02)
    space.seed(3)
    np.testing.assert_array_equal(space.sample(), first)
    with pytest.raises(ValueError, match="concentration has 2 entries"):
        Simplex((3,), np.array([1.0, 1.0]))
    with pytest.raises(TypeError, match="tuple or list"):
        Simplex(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="masks"):
        space.sample(mask=np.ones(3))
    back = space_from_dict(space_to_dict(gym.spaces.Dict({"s": space})))
    assert back == gym.spaces.Dict({"s": space}) and back["s"].dtype == np.float64


# -- DQN's round-robin weights ---------------------------------------------------------------
def _rr_inputs():
    for intensity in (None, 0, 0.1, 1.0, 8.0, 32.0, 1000.0):
        for batch, fragment, envs, runners in ((32, 1, 1, 0), (256, 4, 2, 2), (64, 50, 8, 3)):
            yield SimpleNamespace(
                training_intensity=intensity,
                total_train_batch_size=batch,
                train_batch_size=batch,
                num_envs_per_env_runner=envs,
                num_env_runners=runners,
                get_rollout_fragment_length=lambda fragment=fragment: fragment,
            )


@pytest.mark.ray
def test_calculate_rr_weights_is_rllibs():
    rllib_dqn = pytest.importorskip("ray.rllib.algorithms.dqn.dqn")
    for config in _rr_inputs():
        assert calculate_rr_weights(config) == rllib_dqn.calculate_rr_weights(config), vars(config)
    # ... and from the configs themselves ("auto" fragments: n_step), as DQN and SAC step.
    for settings in ({}, {"training_intensity": 100.0}, {"training_intensity": 0.5, "n_step": 3}):
        runners = {"num_env_runners": 2, "num_envs_per_env_runner": 3}
        theirs = rllib_dqn.DQNConfig().training(**settings).env_runners(**runners)
        mine = our_dqn.DQNConfig().training(**settings).env_runners(**runners)
        assert our_dqn.calculate_rr_weights(mine) == rllib_dqn.calculate_rr_weights(theirs)
    assert our_dqn.calculate_rr_weights is calculate_rr_weights  # the step's own


# -- through the launcher --------------------------------------------------------------------
@pytest.mark.cli
def test_the_three_modules_serve_an_rllib_script_through_the_launcher(tmp_path):
    result = run_script(
        tmp_path,
        """
        import numpy as np
        import torch
        from ray.rllib.algorithms.dqn.dqn import DQNConfig, calculate_rr_weights
        from ray.rllib.utils.spaces.simplex import Simplex
        from ray.rllib.utils.torch_utils import (
            FLOAT_MIN,
            concat_multi_gpu_td_errors,
            convert_to_torch_tensor,
            explained_variance,
        )

        print("FLOAT_MIN", FLOAT_MIN)
        batch = convert_to_torch_tensor({"obs": np.ones((2, 3)), "a": [np.int64(1)]})
        print("converted", batch["obs"].dtype, batch["a"][0].dtype, type(batch["a"]).__name__)
        y = torch.tensor([1.0, 2.0, 3.0, 4.0])
        print("explained", round(float(explained_variance(y, 0.9 * y)), 4))
        space = Simplex((3,))
        space.seed(0)
        print("simplex", space, space.contains(space.sample()), type(space).__module__)
        config = DQNConfig().training(training_intensity=64.0)
        print("rr", calculate_rr_weights(config))
        try:
            concat_multi_gpu_td_errors(None)
        except ImportError as error:
            print("refused", type(error).__name__, "old API stack" in str(error))
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "FLOAT_MIN -3.4e+38" in lines
    assert "converted torch.float32 torch.int64 list" in lines
    assert "explained 0.99" in lines  # 1 - var(0.1 y) / var(y)
    assert "simplex Simplex((3,); [1 1 1]) True trainer.core.spaces" in lines
    assert "rr [1, 2]" in lines  # 64 / (32 / (1 * 1 * 1)): two updates per sampling round
    assert "refused RLlibNotAvailable True" in lines
