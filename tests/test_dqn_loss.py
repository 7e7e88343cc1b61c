"""DQN's loss (`trainer.algorithms.dqn.loss`): the numpy losses and the torch losses on the same
inputs give the same loss, the same statistics under the same keys and the same TD errors, and
the numpy backward pass gives torch autograd's gradient with respect to the module's outputs
(the Q-values, or the logits of a distributional module)."""

from typing import Any

import numpy as np
import pytest

from trainer.algorithms.dqn.config import DQNConfig
from trainer.algorithms.dqn.loss import (
    ATOMS,
    DISTRIBUTION_STAT_KEYS,
    LOSS_STAT_KEYS,
    QF_LOGITS,
    QF_NEXT_PREDS,
    QF_PREDS,
    QF_PROBS,
    QF_TARGET_NEXT_PREDS,
    QF_TARGET_NEXT_PROBS,
    numpy_distributional_loss,
    numpy_loss,
)
from trainer.algorithms.dqn.q_module import expectation, softmax, support

torch = pytest.importorskip("torch")

from trainer.algorithms.dqn.loss import torch_distributional_loss, torch_loss  # noqa: E402

ROWS = 16
ACTIONS = 3
ATOMS_N = 11
V_MIN, V_MAX = -2.0, 3.0


def _batch(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A replay batch in float64: n-step returns and discounts, some terminal rows and
    importance weights."""
    return {
        "actions": rng.integers(0, ACTIONS, ROWS),
        "rewards": rng.uniform(-1.5, 1.5, ROWS),
        "terminateds": rng.random(ROWS) < 0.25,
        "discounts": 0.99 ** rng.integers(1, 4, ROWS).astype(np.float64),
        "weights": rng.uniform(0.3, 1.0, ROWS),
    }


def _tensors(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The arrays as tensors (float64 stays float64)."""
    return {key: torch.from_numpy(np.asarray(value)) for key, value in arrays.items()}


def _assert_same_stats(numpy_stats: dict, torch_stats: dict, keys: tuple) -> None:
    """The same keys in the same order, and the same values (NaN where the other is NaN)."""
    assert list(numpy_stats) == list(torch_stats) == list(keys)
    for key in keys:
        expected = float(torch_stats[key].detach())
        assert numpy_stats[key] == pytest.approx(expected, rel=1e-10, abs=1e-12, nan_ok=True), key


@pytest.mark.parametrize("td_error_loss_fn", ["huber", "mse"])
@pytest.mark.parametrize("double_q", [True, False])
def test_the_expected_value_losses_agree(double_q, td_error_loss_fn):
    config = DQNConfig().training(double_q=double_q, td_error_loss_fn=td_error_loss_fn)
    rng = np.random.default_rng(0)
    batch = _batch(rng)
    # Q-values spread wide enough for both sides of the Huber loss's kink.
    fwd_out = {
        QF_PREDS: 2.0 * rng.standard_normal((ROWS, ACTIONS)),
        QF_TARGET_NEXT_PREDS: 2.0 * rng.standard_normal((ROWS, ACTIONS)),
    }
    if double_q:
        fwd_out[QF_NEXT_PREDS] = rng.standard_normal((ROWS, ACTIONS))
    loss = numpy_loss(batch, fwd_out, config)

    tensors = _tensors(fwd_out)
    tensors[QF_PREDS].requires_grad_(True)
    torch_result = torch_loss(_tensors(batch), tensors, config)
    torch_result.qf_loss.backward()

    assert loss.qf_loss == pytest.approx(float(torch_result.qf_loss.detach()), rel=1e-10, abs=1e-12)
    _assert_same_stats(loss.stats, torch_result.stats, LOSS_STAT_KEYS)
    # The numpy TD errors are signed (delta), the torch ones absolute (RLlib's).
    np.testing.assert_allclose(np.abs(loss.td_error), torch_result.td_error.numpy(), rtol=1e-12)
    np.testing.assert_allclose(loss.d_outputs, tensors[QF_PREDS].grad.numpy(), rtol=1e-10)
    if td_error_loss_fn == "huber":  # the batch has rows on both sides of |delta| = 1
        assert (np.abs(loss.td_error) > 1.0).any() and (np.abs(loss.td_error) < 1.0).any()


def _distributional_outputs(
    rng: np.random.Generator, double_q: bool, num_actions: int
) -> dict[str, np.ndarray]:
    """RLlib's module outputs of a distributional pass: the online pass's logits (with double_q
    of s, then s') and its distributions and expected values, the target network's of s'."""
    z = support(ATOMS_N, V_MIN, V_MAX).astype(np.float64)
    rows = 2 * ROWS if double_q else ROWS
    logits = rng.standard_normal((rows, num_actions, ATOMS_N))
    probs = softmax(logits)
    q_values = expectation(probs, z)
    target_probs = softmax(rng.standard_normal((ROWS, num_actions, ATOMS_N)))
    fwd_out = {
        ATOMS: z,
        QF_LOGITS: logits,
        QF_PROBS: probs,
        QF_PREDS: q_values[:ROWS],
        QF_TARGET_NEXT_PROBS: target_probs,
        QF_TARGET_NEXT_PREDS: expectation(target_probs, z),
    }
    if double_q:
        fwd_out[QF_NEXT_PREDS] = q_values[ROWS:]
    return fwd_out


@pytest.mark.parametrize("num_actions", [ACTIONS, 1])
@pytest.mark.parametrize("double_q", [True, False])
def test_the_distributional_losses_agree(double_q, num_actions):
    config = DQNConfig().training(double_q=double_q, num_atoms=ATOMS_N, v_min=V_MIN, v_max=V_MAX)
    rng = np.random.default_rng(1)
    batch = _batch(rng)
    batch["actions"] = rng.integers(0, num_actions, ROWS)
    # Returns beyond the support on both ends: the projection clips them.
    batch["rewards"][:2] = [V_MIN - 1.0, V_MAX + 1.0]
    fwd_out = _distributional_outputs(rng, double_q, num_actions)
    loss = numpy_distributional_loss(batch, fwd_out, config)

    tensors = _tensors(fwd_out)
    tensors[QF_LOGITS].requires_grad_(True)
    torch_result = torch_distributional_loss(_tensors(batch), tensors, config)
    torch_result.qf_loss.backward()

    assert loss.qf_loss == pytest.approx(float(torch_result.qf_loss.detach()), rel=1e-10, abs=1e-12)
    _assert_same_stats(loss.stats, torch_result.stats, LOSS_STAT_KEYS + DISTRIBUTION_STAT_KEYS)
    # The comparisons of consecutive actions: NaN for one action, numbers otherwise.
    comparisons = [loss.stats[key] for key in DISTRIBUTION_STAT_KEYS[1:4]]
    assert np.isnan(comparisons).all() == (num_actions == 1) == np.isnan(comparisons).any()
    np.testing.assert_allclose(loss.td_error, torch_result.td_error.numpy(), rtol=1e-10)
    # Autograd's gradient of the whole pass: the rows of s get the numpy one, those of s' none.
    grad = tensors[QF_LOGITS].grad.numpy()
    np.testing.assert_allclose(loss.d_outputs, grad[:ROWS], rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(grad[ROWS:], 0.0)
