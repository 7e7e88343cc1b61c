"""IMPALA's and APPO's losses (`trainer.algorithms.impala.loss`, `trainer.algorithms.appo.loss`):
the numpy loss and the torch loss on the same inputs give the same loss and the same statistics
under the same keys, and the numpy backward pass gives torch autograd's gradients (V-trace's
targets held, as both losses hold them)."""

import numpy as np
import pytest

from trainer import APPOConfig, IMPALAConfig
from trainer.algorithms.appo import loss as appo_loss
from trainer.algorithms.impala import loss as impala_loss
from trainer.algorithms.impala.vtrace import VTraceReturns, vtrace
from trainer.core.nn import Categorical, DiagGaussian

torch = pytest.importorskip("torch")

from trainer.torch_rl.distributions import TorchCategorical, TorchDiagGaussian  # noqa: E402

ROWS = 16
#: Three chunks: the first terminated, the others cut (bootstrapped from their last value).
CHUNK_END = np.zeros(ROWS, dtype=bool)
CHUNK_END[[4, 10, ROWS - 1]] = True
TERMINATED = np.zeros(ROWS, dtype=bool)
TERMINATED[4] = True


def _inputs(continuous: bool, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """float64 inputs: the learned policy's distribution inputs, the target network's (apart
    enough from the behaviour policy's for APPO's clip of mu / pi_old at 2) and the behaviour
    policy's log-likelihoods of the actions; values, next values and rewards. (Gaussian log
    stds stay inside the numpy distribution's clip, [-20, 2], which torch's does not have.)"""
    spread = 0.8
    if continuous:
        mean, log_std = rng.standard_normal((ROWS, 2)), rng.uniform(-1.0, 0.5, (ROWS, 2))
        inputs = np.concatenate([mean, log_std], axis=1)
        actions = rng.standard_normal((ROWS, 2))
        spread = np.array([0.8, 0.8, 0.2, 0.2])
    else:
        inputs = rng.standard_normal((ROWS, 3))
        actions = rng.integers(0, 3, ROWS)
    dist = DiagGaussian if continuous else Categorical
    behaviour_inputs = inputs + 0.3 * rng.standard_normal(inputs.shape)
    return {
        "inputs": inputs,
        "old_inputs": behaviour_inputs + spread * rng.standard_normal(inputs.shape),
        "actions": actions,
        "behaviour_logp": dist.logp(behaviour_inputs, actions),
        "values": rng.standard_normal(ROWS),
        "next_values": rng.standard_normal(ROWS),
        "rewards": rng.standard_normal(ROWS),
    }


def _vtrace(data: dict[str, np.ndarray], config: IMPALAConfig, target_logp: np.ndarray):
    """V-trace's targets of `target_logp` (the learners' call), without gradients."""
    return vtrace(
        target_logp=target_logp,
        behaviour_logp=data["behaviour_logp"],
        rewards=data["rewards"],
        discounts=config.gamma * ~TERMINATED,
        values=data["values"],
        next_values=data["next_values"] * ~TERMINATED,
        chunk_end=CHUNK_END,
        clip_rho_threshold=config.vtrace_clip_rho_threshold,
        clip_pg_rho_threshold=config.vtrace_clip_pg_rho_threshold,
    )


def _torch_vtrace(data: dict[str, np.ndarray], config: IMPALAConfig, target_logp):
    targets: VTraceReturns = _vtrace(data, config, target_logp.detach().numpy())
    return torch.from_numpy(targets.vs), torch.from_numpy(targets.pg_advantages)


def _compare(numpy_stats, total, stats, keys) -> None:
    assert list(numpy_stats) == ["total_loss", *keys]
    assert list(stats) == list(keys)
    assert numpy_stats["total_loss"] == pytest.approx(float(total.detach()), rel=1e-10, abs=1e-12)
    for key in keys:
        assert not stats[key].requires_grad, key
        assert numpy_stats[key] == pytest.approx(float(stats[key]), rel=1e-10, abs=1e-12), key


def _tensors(data: dict[str, np.ndarray]) -> tuple:
    """The learned policy's inputs and the values, as leaves autograd differentiates."""
    inputs = torch.tensor(data["inputs"], requires_grad=True)
    values = torch.tensor(data["values"], requires_grad=True)
    return inputs, values


@pytest.mark.parametrize("continuous", [False, True])
def test_impala_numpy_and_torch_losses_agree(continuous):
    config = IMPALAConfig().training(gamma=0.9, vf_loss_coeff=0.7, vtrace_clip_rho_threshold=1.1)
    coeffs = {"entropy_coeff": 0.05}
    data = _inputs(continuous, np.random.default_rng(0))
    dist_cls = DiagGaussian if continuous else Categorical
    terms = dist_cls.loss_grads(data["inputs"], data["actions"], data["inputs"])
    loss = impala_loss.numpy_loss(
        dist=terms,
        values=data["values"],
        vtrace_targets=lambda logp: _vtrace(data, config, logp),
        config=config,
        **coeffs,
    )
    d_inputs, d_values = impala_loss.numpy_loss_gradients(loss, terms, config, **coeffs)

    inputs, values = _tensors(data)
    torch_dist = TorchDiagGaussian if continuous else TorchCategorical
    total, stats = impala_loss.torch_loss(
        actions=torch.from_numpy(data["actions"]),
        curr_action_dist=torch_dist.from_logits(inputs),
        values=values,
        vtrace_targets=lambda logp: _torch_vtrace(data, config, logp),
        config=config,
        **coeffs,
    )
    total.backward()

    _compare(loss.stats, total, stats, impala_loss.LOSS_STAT_KEYS)
    assert loss.stats["mean_pi_loss"] * ROWS == pytest.approx(loss.stats["pi_loss"])
    np.testing.assert_allclose(d_values, values.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d_inputs, inputs.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize(
    "training", [{}, {"use_kl_loss": False}, {"clip_param": 10.0}, {"vf_loss_coeff": 0.0}]
)
def test_appo_numpy_and_torch_losses_agree(continuous, training):
    settings = {"gamma": 0.9, "vf_loss_coeff": 0.7, "clip_param": 0.2, "use_kl_loss": True}
    config = APPOConfig().training(**{**settings, **training})
    coeffs = {"entropy_coeff": 0.05, "kl_coeff": 0.3}
    data = _inputs(continuous, np.random.default_rng(1))
    dist_cls = DiagGaussian if continuous else Categorical
    terms = dist_cls.loss_grads(data["inputs"], data["actions"], data["old_inputs"])
    old_logp = dist_cls.logp(data["old_inputs"], data["actions"])
    # The clip of mu / pi_old at 2 is active on some steps, not on others.
    mu_over_old = np.exp(data["behaviour_logp"] - old_logp)
    assert (mu_over_old > 2.0).any() and (mu_over_old < 2.0).any()
    loss = appo_loss.numpy_loss(
        dist=terms,
        old_logp=old_logp,
        behaviour_logp=data["behaviour_logp"],
        values=data["values"],
        vtrace_targets=lambda logp: _vtrace(data, config, logp),
        config=config,
        **coeffs,
    )
    d_inputs, d_values = appo_loss.numpy_loss_gradients(loss, terms, config, **coeffs)

    inputs, values = _tensors(data)
    torch_dist = TorchDiagGaussian if continuous else TorchCategorical
    total, stats = appo_loss.torch_loss(
        actions=torch.from_numpy(data["actions"]),
        curr_action_dist=torch_dist.from_logits(inputs),
        old_action_dist=torch_dist.from_logits(torch.from_numpy(data["old_inputs"])),
        behaviour_logp=torch.from_numpy(data["behaviour_logp"]),
        values=values,
        vtrace_targets=lambda logp: _torch_vtrace(data, config, logp),
        config=config,
        **coeffs,
    )
    total.backward()

    _compare(loss.stats, total, stats, appo_loss.LOSS_STAT_KEYS)
    if not config.use_kl_loss:
        assert loss.stats["mean_kl_loss"] == 0.0
    else:
        assert loss.stats["mean_kl_loss"] > 0.0
    np.testing.assert_allclose(d_values, values.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d_inputs, inputs.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_the_surrogate_clips_on_both_sides():
    """The APPO inputs above clip the probability ratio above and below its range, so the
    gradient comparison covers both zeroed sides."""
    config = APPOConfig().training(clip_param=0.2)
    for continuous in (False, True):
        data = _inputs(continuous, np.random.default_rng(1))
        dist_cls = DiagGaussian if continuous else Categorical
        old_logp = dist_cls.logp(data["old_inputs"], data["actions"])
        logp = dist_cls.logp(data["inputs"], data["actions"])
        is_ratio = np.exp(np.minimum(data["behaviour_logp"] - old_logp, np.log(2.0)))
        ratio = is_ratio * np.exp(logp - data["behaviour_logp"])
        assert (ratio > 1 + config.clip_param).any() and (ratio < 1 - config.clip_param).any()
