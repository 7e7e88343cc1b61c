"""The learner's faster paths give what the general paths give (issue 20).

The two-column row reductions of the categorical loss (CartPole's two actions) are checked bit for
bit against numpy's reductions along the last axis, which every other action count uses; Adam's
float32 step against the textbook update in float64; its state against later steps.
"""

from __future__ import annotations

import numpy as np

from trainer.core import nn


def _two_column_logits(rng: np.random.Generator, rows: int) -> np.ndarray:
    logits = (rng.standard_normal((rows, 2)) * rng.choice([1e-4, 1.0, 30.0, 1e4])).astype(
        np.float32
    )
    logits[::7, 1] = logits[::7, 0]  # ties
    return logits


def _log_softmax_by_reductions(logits: np.ndarray) -> np.ndarray:
    shifted = logits - np.maximum.reduce(logits, axis=-1, keepdims=True)
    return shifted - np.log(np.add.reduce(np.exp(shifted), axis=-1, keepdims=True))


def test_two_column_reductions_match_numpys_reductions_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(300):
        logits = _two_column_logits(rng, int(rng.integers(1, 300)))
        np.testing.assert_array_equal(
            nn._row_max(logits), np.maximum.reduce(logits, axis=-1, keepdims=True)
        )
        np.testing.assert_array_equal(nn._row_sum(logits), np.add.reduce(logits, axis=-1))
        np.testing.assert_array_equal(nn.log_softmax(logits), _log_softmax_by_reductions(logits))
    special = np.array([[np.inf, 0.0], [-np.inf, 1.0], [np.nan, 2.0], [3.0, np.nan]], np.float32)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(nn.log_softmax(special), _log_softmax_by_reductions(special))


def test_two_action_loss_terms_match_the_reductions_bit_for_bit():
    rng = np.random.default_rng(1)
    for _ in range(100):
        logits, old_logits = _two_column_logits(rng, 128), _two_column_logits(rng, 128)
        actions = rng.integers(0, 2, 128)
        terms = nn.Categorical.loss_grads(logits, actions, old_logits)
        logp_all = _log_softmax_by_reductions(logits)
        old_logp_all = _log_softmax_by_reductions(old_logits)
        np.testing.assert_array_equal(
            terms.entropy, -np.add.reduce(np.exp(logp_all) * logp_all, axis=-1)
        )
        np.testing.assert_array_equal(
            terms.kl, np.add.reduce(np.exp(old_logp_all) * (old_logp_all - logp_all), axis=-1)
        )
        np.testing.assert_array_equal(terms.logp, logp_all[np.arange(128), actions])
    # Three actions take the reductions themselves.
    logits = rng.standard_normal((64, 3)).astype(np.float32)
    np.testing.assert_array_equal(nn.log_softmax(logits), _log_softmax_by_reductions(logits))


def test_adam_steps_in_float32_as_the_textbook_update_and_its_state_is_a_snapshot():
    rng = np.random.default_rng(2)
    params = rng.standard_normal(1000).astype(np.float32)
    reference = params.astype(np.float64)
    m = np.zeros(1000)
    v = np.zeros(1000)
    adam = nn.Adam(params, lr=3e-4)
    snapshot = None
    for t in range(1, 51):
        grad = (rng.standard_normal(1000) * 10.0 ** rng.uniform(-6, 1)).astype(np.float32)
        adam.step(grad.copy())
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad.astype(np.float64) ** 2
        m_hat, v_hat = m / (1 - 0.9**t), v / (1 - 0.999**t)
        reference -= 3e-4 * m_hat / (np.sqrt(v_hat) + 1e-8)
        if t == 10:
            snapshot = adam.get_state()
            at_ten = (snapshot["m"].copy(), snapshot["v"].copy())
    assert params.dtype == adam.m.dtype == adam.v.dtype == np.float32
    np.testing.assert_allclose(params, reference, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(snapshot["m"], at_ten[0])
    np.testing.assert_array_equal(snapshot["v"], at_ten[1])
    assert snapshot["step_count"] == 10


def test_adam_flushes_the_moments_of_parameters_whose_gradient_stays_zero():
    # A dead ReLU unit's gradient is zero from some step on: its first moment shrinks by beta1
    # each step, into float32's subnormal range, where 0.9 times the smallest subnormal rounds
    # back to it. Intel CPUs compute on subnormals many times slower; Adam flushes them.
    smallest_normal = np.finfo(np.float32).tiny
    params = np.zeros(4, dtype=np.float32)
    adam = nn.Adam(params, lr=1e-3)
    adam.step(np.array([1e-3, 1e-3, 1.0, 1.0], dtype=np.float32))
    stuck = np.float32(np.nextafter(np.float32(0), np.float32(1)))
    assert stuck * np.float32(0.9) == stuck  # what the flush is for
    alive = np.array([0.0, 0.0, 1.0, -1.0], dtype=np.float32)
    for _ in range(1000):
        adam.step(alive.copy())
        moments = np.concatenate([adam.m, adam.v])
        nonzero = moments[moments != 0]
        # Between two flushes an entry may pass through the subnormal range, never stay.
        assert (
            adam.step_count % nn.FLUSH_SUBNORMALS_EVERY
            or (np.abs(nonzero) >= smallest_normal).all()
        )
    # The dead entries' moments are zero and their parameters stopped; the live ones train.
    assert (adam.m[:2] == 0).all() and (adam.m[2:] != 0).all()
    before = params.copy()
    adam.step(alive.copy())
    assert (params[:2] == before[:2]).all() and (params[2:] != before[2:]).all()
