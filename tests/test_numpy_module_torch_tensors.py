"""Scripts written for RLlib's default modules (torch ones) pass torch tensors and read torch
tensors back; the default numpy module answers them so (RLlib's test_marwil_rl_module.py runs
that way): `forward_train(batch)` is RLlib's call (a batch dict in, `{"action_dist_inputs": ...}`
out), `compute_values` and the numpy distributions made from torch outputs answer in torch
tensors, and numpy inputs still get numpy outputs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch tensors in and out")

from trainer import MARWILConfig  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.action_layout import ActionLayout  # noqa: E402
from trainer.core.distributions import (  # noqa: E402
    NumpyCategorical,
    NumpyDiagGaussian,
    NumpyMultiDistribution,
)


def _module(env_id: str):
    env = gym.make(env_id)
    spec = MARWILConfig().environment(env_id).get_default_rl_module_spec()
    spec.observation_space, spec.action_space = env.observation_space, env.action_space
    return spec.build(), env


def test_forward_train_takes_rllibs_batch_and_answers_in_kind():
    module, env = _module("CartPole-v1")
    obs = np.stack([env.observation_space.sample() for _ in range(6)])
    out = module.forward_train({Columns.OBS: torch.as_tensor(obs)})
    assert isinstance(out[Columns.ACTION_DIST_INPUTS], torch.Tensor)
    assert out[Columns.ACTION_DIST_INPUTS].shape == (6, 2)
    numpy_out = module.forward_train({Columns.OBS: obs})
    assert isinstance(numpy_out[Columns.ACTION_DIST_INPUTS], np.ndarray)
    np.testing.assert_allclose(
        out[Columns.ACTION_DIST_INPUTS].numpy(), numpy_out["action_dist_inputs"]
    )
    values = module.compute_values({Columns.OBS: torch.as_tensor(obs)})
    assert isinstance(values, torch.Tensor) and values.shape == (6,)
    assert torch.isfinite(values).all()
    assert isinstance(module.compute_values({Columns.OBS: obs}), np.ndarray)
    # The learners' form: an observation matrix, with the caches of the backward pass.
    dist_inputs, values_out, _ = module.forward_train(obs.astype(np.float32))
    np.testing.assert_allclose(dist_inputs, numpy_out["action_dist_inputs"], rtol=1e-6)
    assert values_out.shape == (6,)


def test_a_sampling_loop_written_for_torch_runs():
    module, env = _module("CartPole-v1")
    dist_cls = module.get_exploration_action_dist_cls()
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        out = module.forward_exploration({Columns.OBS: torch.tensor(np.array([obs]))})
        dist = dist_cls.from_logits(out[Columns.ACTION_DIST_INPUTS])
        action = dist.sample()
        assert isinstance(action, torch.Tensor) and action.dtype == torch.int64
        assert isinstance(dist.logp(action), torch.Tensor)
        assert isinstance(dist.to_deterministic().sample(), torch.Tensor)
        obs, *_ = env.step(action[0].numpy())


def test_numpy_distributions_answer_in_the_kind_of_their_inputs():
    logits = np.array([[0.5, -1.0, 2.0]], np.float32)
    categorical = NumpyCategorical.from_logits(torch.as_tensor(logits))
    for value in (
        categorical.entropy(),
        categorical.kl(categorical),
        categorical.logp(torch.tensor([2])),
    ):
        assert isinstance(value, torch.Tensor)
    np.testing.assert_allclose(
        categorical.logp(torch.tensor([2])).numpy(), NumpyCategorical(logits).logp(np.array([2]))
    )
    assert isinstance(NumpyCategorical.from_logits(logits).sample(), np.ndarray)
    gaussian = NumpyDiagGaussian.from_logits(torch.zeros(2, 4))
    sample = gaussian.sample()
    assert isinstance(sample, torch.Tensor) and sample.shape == (2, 2)
    assert isinstance(gaussian.logp(sample), torch.Tensor)
    assert isinstance(gaussian.to_deterministic().sample(), torch.Tensor)
    layout = ActionLayout(gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3))))
    multi = NumpyMultiDistribution.from_logits(torch.zeros(4, 5), layout=layout)
    nested = multi.sample()
    assert all(isinstance(leaf, torch.Tensor) for leaf in nested)
    assert isinstance(multi.logp(nested), torch.Tensor)
