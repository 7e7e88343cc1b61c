"""SAC's loss (`trainer.algorithms.sac.loss` and `torch_loss` beside it): the numpy terms and the
torch loss on the same module outputs (float64) give the same losses, the same TD errors and
the same statistics under the same keys, and the numpy gradients with respect to the outputs
are torch autograd's; so is the numpy policy gradient through the squashed Gaussian's
reparameterized draws."""

import math

import numpy as np
import pytest

from trainer.algorithms.sac.loss import (
    ACTION_LOG_PROBS,
    ACTION_LOG_PROBS_NEXT,
    ACTION_PROBS,
    ACTION_PROBS_NEXT,
    ALPHA_VALUE_KEY,
    LOGP_NEXT_RESAMPLED,
    LOGP_RESAMPLED,
    Q_CURR,
    QF_PREDS,
    QF_TARGET_NEXT,
    QF_TWIN_PREDS,
    STAT_KEYS,
    PolicyDraws,
    continuous_loss_terms,
    discrete_loss_terms,
    policy_gradient,
)
from trainer.algorithms.sac.sac_module import LOG_STD_MAX, LOG_STD_MIN, SquashedGaussian
from trainer.core.nn import log_softmax

torch = pytest.importorskip("torch")

from trainer.algorithms.sac import torch_loss  # noqa: E402

ROWS, DIM, ACTIONS = 12, 2, 3
LOG_ALPHA, TARGET_ENTROPY = math.log(0.3), -2.0
#: The numpy optimizer names under torch's `_temp_losses` keys.
LOSS_KEYS = {"qf": "qf_loss", "qf_twin": "qf_twin_loss", "policy": "policy_loss"}
LOSS_KEYS["alpha"] = "alpha_loss"


def _batch(rng: np.random.Generator, discrete: bool) -> dict[str, np.ndarray]:
    """A replay batch: n-step discounts, some terminal rows, importance weights; float64."""
    actions = rng.integers(0, ACTIONS, ROWS) if discrete else rng.uniform(-0.9, 0.9, (ROWS, DIM))
    return {
        "actions": actions,
        "rewards": rng.uniform(-1.5, 1.5, ROWS),
        "terminateds": rng.random(ROWS) < 0.3,
        "discounts": 0.99 ** rng.integers(1, 4, ROWS).astype(np.float64),
        "weights": rng.uniform(0.3, 1.0, ROWS),
    }


def _tensors(arrays: dict[str, np.ndarray]) -> dict:
    """The arrays as tensors, the float ones requiring gradients."""
    return {
        key: torch.tensor(value, requires_grad=value.dtype.kind == "f")
        for key, value in arrays.items()
    }


def _grad(loss, tensor) -> np.ndarray:
    (grad,) = torch.autograd.grad(loss, tensor, retain_graph=True)
    return grad.numpy()


def _compare(numpy_loss, torch_result, twin_q: bool, log_alpha) -> None:
    """The same losses, TD errors and statistics (keys in the same order), and d alpha_loss /
    d log_alpha."""
    assert list(numpy_loss.losses) == (
        ["qf", "qf_twin", "policy", "alpha"] if twin_q else ["qf", "policy", "alpha"]
    )
    for name, value in numpy_loss.losses.items():
        expected = float(torch_result.losses[LOSS_KEYS[name]].detach())
        assert value == pytest.approx(expected, rel=1e-12), name
    if not twin_q:
        assert torch_result.losses["qf_twin_loss"] is None
    np.testing.assert_allclose(
        numpy_loss.td_error, torch_result.td_error.detach().numpy(), rtol=1e-12
    )
    keys = list(STAT_KEYS) if twin_q else list(STAT_KEYS[:-1])
    assert list(numpy_loss.stats) == list(torch_result.stats) == keys
    for key in keys:
        expected = float(torch_result.stats[key].detach())
        # (alpha_value: the float32 alpha the numpy loss reports, as its float32 learner's)
        rel = 1e-7 if key == ALPHA_VALUE_KEY else 1e-12
        assert numpy_loss.stats[key] == pytest.approx(expected, rel=rel, abs=1e-14), key
    d_log_alpha = _grad(torch_result.losses["alpha_loss"], log_alpha)[0]
    assert float(numpy_loss.d_log_alpha) == pytest.approx(d_log_alpha, rel=1e-12)


def _log_alpha_args() -> tuple:
    log_alpha = torch.tensor([LOG_ALPHA], dtype=torch.float64, requires_grad=True)
    target_entropy = torch.tensor(TARGET_ENTROPY, dtype=torch.float64)
    return log_alpha, target_entropy


@pytest.mark.parametrize("twin_q", [True, False])
def test_the_box_losses_agree_and_their_gradients_are_autograds(twin_q):
    rng = np.random.default_rng(0)
    batch = _batch(rng, discrete=False)
    # Q-values spread wide enough for both sides of the Huber loss's kink.
    fwd_out = {
        QF_PREDS: 2.0 * rng.standard_normal(ROWS),
        Q_CURR: rng.standard_normal(ROWS),
        LOGP_RESAMPLED: rng.standard_normal(ROWS),
        QF_TARGET_NEXT: rng.standard_normal(ROWS),
        LOGP_NEXT_RESAMPLED: rng.standard_normal(ROWS),
    }
    if twin_q:
        fwd_out[QF_TWIN_PREDS] = 2.0 * rng.standard_normal(ROWS)
    loss = continuous_loss_terms(batch, fwd_out, np.array([LOG_ALPHA]), TARGET_ENTROPY)

    tensors = _tensors(fwd_out)
    log_alpha, target_entropy = _log_alpha_args()
    result = torch_loss.continuous_loss(
        _tensors(batch), tensors, log_alpha=log_alpha, target_entropy=target_entropy, gamma=0.99
    )

    _compare(loss, result, twin_q, log_alpha)
    assert (loss.td_error > 1.0).any() and (loss.td_error < 1.0).any()
    gradients = {QF_PREDS: "qf_loss", Q_CURR: "policy_loss", LOGP_RESAMPLED: "policy_loss"}
    if twin_q:
        gradients[QF_TWIN_PREDS] = "qf_twin_loss"
    assert sorted(loss.gradients) == sorted(gradients)
    for key, loss_key in gradients.items():
        expected = _grad(result.losses[loss_key], tensors[key])
        np.testing.assert_allclose(loss.gradients[key], expected, rtol=1e-12, err_msg=key)


@pytest.mark.parametrize("twin_q", [True, False])
def test_the_discrete_losses_agree_and_their_gradients_are_autograds(twin_q):
    rng = np.random.default_rng(1)
    batch = _batch(rng, discrete=True)
    logits = rng.standard_normal((2 * ROWS, ACTIONS))
    log_probs = log_softmax(logits)
    q_values = {
        QF_PREDS: 2.0 * rng.standard_normal((ROWS, ACTIONS)),
        QF_TARGET_NEXT: rng.standard_normal((ROWS, ACTIONS)),
    }
    if twin_q:
        q_values[QF_TWIN_PREDS] = 2.0 * rng.standard_normal((ROWS, ACTIONS))
    fwd_out = {
        **q_values,
        ACTION_PROBS: np.exp(log_probs[:ROWS]),
        ACTION_LOG_PROBS: log_probs[:ROWS],
        ACTION_PROBS_NEXT: np.exp(log_probs[ROWS:]),
        ACTION_LOG_PROBS_NEXT: log_probs[ROWS:],
    }
    loss = discrete_loss_terms(batch, fwd_out, np.array([LOG_ALPHA]), TARGET_ENTROPY)

    # The torch module's outputs: p and log p from the logits at s (their gradient's inputs).
    logits_tensor = torch.tensor(logits[:ROWS], requires_grad=True)
    log_probs_tensor = torch.log_softmax(logits_tensor, dim=-1)
    tensors = _tensors(q_values)
    tensors.update(
        {
            ACTION_PROBS: log_probs_tensor.exp(),
            ACTION_LOG_PROBS: log_probs_tensor,
            ACTION_PROBS_NEXT: torch.tensor(fwd_out[ACTION_PROBS_NEXT]),
            ACTION_LOG_PROBS_NEXT: torch.tensor(fwd_out[ACTION_LOG_PROBS_NEXT]),
        }
    )
    log_alpha, target_entropy = _log_alpha_args()
    result = torch_loss.discrete_loss(
        _tensors(batch), tensors, log_alpha=log_alpha, target_entropy=target_entropy, gamma=0.99
    )

    _compare(loss, result, twin_q, log_alpha)
    gradients = {QF_PREDS: "qf_loss", "action_dist_inputs": "policy_loss"}
    if twin_q:
        gradients[QF_TWIN_PREDS] = "qf_twin_loss"
    assert sorted(loss.gradients) == sorted(gradients)
    tensors["action_dist_inputs"] = logits_tensor
    for key, loss_key in gradients.items():
        expected = _grad(result.losses[loss_key], tensors[key])
        np.testing.assert_allclose(
            loss.gradients[key], expected, rtol=1e-10, atol=1e-15, err_msg=key
        )
    # (qf_loss_i reaches Q_i(s, a) of the taken actions only)
    assert np.count_nonzero(loss.gradients[QF_PREDS]) == ROWS


def test_the_policy_gradient_is_autograds_through_the_reparameterized_draws():
    """policy_loss = mean(alpha log pi(a~|s) - objective), a~ = tanh(mean + std noise), with an
    objective of a~ and of the distribution's inputs directly (as behaviour cloning's): the
    numpy gradient with respect to [mean, log_std] (none through the log-std's clamp outside
    [-5, 2]) is autograd's."""
    rng = np.random.default_rng(2)
    alpha = 0.3
    mean = 0.5 * rng.standard_normal((ROWS, DIM))
    raw_log_std = rng.uniform(-1.5, 0.5, (ROWS, DIM))
    raw_log_std[0, 0], raw_log_std[1, 1] = LOG_STD_MIN - 2.0, LOG_STD_MAX + 1.0
    noise = rng.standard_normal((ROWS, DIM))
    slope, curvature = rng.standard_normal(DIM), rng.uniform(0.5, 1.5, DIM)
    mean_weight, log_std_weight = rng.standard_normal(DIM), rng.standard_normal(DIM)

    # objective = sum(slope a~ - curvature a~^2 / 2 + mean_weight mean + log_std_weight log_std)
    inputs = torch.tensor(np.concatenate([mean, raw_log_std], axis=1), requires_grad=True)
    mean_t = inputs[:, :DIM]
    log_std_t = torch.clamp(inputs[:, DIM:], LOG_STD_MIN, LOG_STD_MAX)
    unsquashed = mean_t + torch.exp(log_std_t) * torch.tensor(noise)
    actions_t = torch.tanh(unsquashed)
    logp_t = torch.distributions.Normal(mean_t, torch.exp(log_std_t)).log_prob(unsquashed)
    jacobian = 2.0 * (math.log(2.0) - unsquashed - torch.nn.functional.softplus(-2.0 * unsquashed))
    logp_t = (logp_t - jacobian).sum(-1)
    objective = (
        torch.tensor(slope) * actions_t
        - torch.tensor(curvature) * actions_t**2 / 2.0
        + torch.tensor(mean_weight) * mean_t
        + torch.tensor(log_std_weight) * log_std_t
    ).sum(-1)
    expected = _grad(torch.mean(alpha * logp_t - objective), inputs)

    log_std = np.clip(raw_log_std, LOG_STD_MIN, LOG_STD_MAX)
    std = np.exp(log_std)
    actions = np.tanh(mean + std * noise)
    logp = SquashedGaussian.squashed_logp(mean + std * noise, mean, log_std)
    np.testing.assert_allclose(logp, logp_t.detach().numpy(), rtol=1e-10)
    draws = PolicyDraws(ROWS, None, mean, raw_log_std, log_std, std, noise, actions, logp)
    gradient = policy_gradient(
        draws,
        np.full(ROWS, alpha / ROWS),
        -(slope - curvature * actions) / ROWS,
        np.tile(-mean_weight / ROWS, (ROWS, 1)),
        np.tile(-log_std_weight / ROWS, (ROWS, 1)),
    )
    np.testing.assert_allclose(gradient, expected, rtol=1e-10, atol=1e-15)
    assert gradient[0, DIM] == gradient[1, DIM + 1] == 0.0
