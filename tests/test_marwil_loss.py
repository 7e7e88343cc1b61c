"""MARWIL's loss (`trainer.algorithms.marwil.loss`): the numpy loss and the torch loss on the
same inputs give the same loss, the same statistics under the same keys and the same moving
average, and the numpy backward pass gives torch autograd's gradients (beta 0, BC, and beta
1, with and without the value loss; discrete and continuous actions)."""

import numpy as np
import pytest

from trainer.algorithms.marwil import MARWILConfig
from trainer.algorithms.marwil.loss import (
    BC_STAT_KEYS,
    LOSS_STAT_KEYS,
    numpy_loss,
    numpy_loss_gradients,
    value_targets,
)
from trainer.core.nn import Categorical, DiagGaussian

torch = pytest.importorskip("torch")

from trainer.algorithms.marwil.loss import torch_loss  # noqa: E402
from trainer.torch_rl.distributions import TorchCategorical, TorchDiagGaussian  # noqa: E402

ROWS = 16
#: c^2 before the batch (a fast update rate, so the batch moves it visibly).
C_SQUARED = 2.0


def _inputs(continuous: bool, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Distribution inputs, actions, values and one-step transitions, in float64."""
    if continuous:
        mean, log_std = rng.standard_normal((ROWS, 2)), rng.uniform(-1.0, 0.5, (ROWS, 2))
        inputs = np.concatenate([mean, log_std], axis=1)
        actions = rng.standard_normal((ROWS, 2))
    else:
        inputs = rng.standard_normal((ROWS, 3))
        actions = rng.integers(0, 3, ROWS)
    return {
        "inputs": inputs,
        "actions": actions,
        "values": rng.standard_normal(ROWS),
        "rewards": rng.standard_normal(ROWS),
        "terminateds": (rng.random(ROWS) < 0.3).astype(np.float64),
        "next_values": rng.standard_normal(ROWS),
    }


def test_value_targets_bootstrap_where_the_episode_goes_on():
    rewards, next_values = np.array([1.0, 2.0]), np.array([10.0, 10.0])
    terminateds = np.array([0.0, 1.0])
    np.testing.assert_array_equal(value_targets(rewards, terminateds, next_values, 0.5), [6.0, 2.0])
    as_tensors = value_targets(
        torch.tensor(rewards), torch.tensor(terminateds), torch.tensor(next_values), 0.5
    )
    np.testing.assert_array_equal(as_tensors.numpy(), [6.0, 2.0])


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "continuous"])
@pytest.mark.parametrize(
    "training",
    [
        {"beta": 0.0},
        {"beta": 1.0, "vf_coeff": 0.7},
        {"beta": 1.0, "vf_coeff": 0.0},
        {"beta": 0.5, "vf_coeff": 0.7, "bc_logstd_coeff": 0.3},
    ],
    ids=["bc", "marwil", "marwil-no-vf", "marwil-logstd"],
)
def test_numpy_and_torch_losses_agree(continuous, training):
    config = MARWILConfig().training(
        gamma=0.9, moving_average_sqd_adv_norm_update_rate=0.3, **training
    )
    data = _inputs(continuous, np.random.default_rng(0))
    dist_cls = DiagGaussian if continuous else Categorical
    marwil = config.beta != 0.0

    targets = value_targets(data["rewards"], data["terminateds"], data["next_values"], 0.9)
    terms = dist_cls.loss_grads(data["inputs"], data["actions"], data["inputs"])
    loss = numpy_loss(
        terms,
        data["inputs"],
        dist_cls,
        data["values"],
        targets if marwil else None,
        config,
        moving_average_sqd_adv_norm=C_SQUARED,
    )
    d_inputs, d_values = numpy_loss_gradients(loss, terms, data["inputs"], dist_cls, config)

    inputs = torch.tensor(data["inputs"], requires_grad=True)
    values = torch.tensor(data["values"], requires_grad=True)
    total, stats, c_squared = torch_loss(
        {"actions": torch.from_numpy(np.asarray(data["actions"]))},
        inputs,
        TorchDiagGaussian if continuous else TorchCategorical,
        lambda: values,
        torch.from_numpy(targets) if marwil else None,
        config,
        moving_average_sqd_adv_norm=C_SQUARED,
    )
    total.backward()

    keys = LOSS_STAT_KEYS if marwil else BC_STAT_KEYS
    assert list(loss.stats) == ["total_loss", *keys]
    assert list(stats) == list(keys)
    assert loss.total_loss == loss.stats["total_loss"]
    assert loss.total_loss == pytest.approx(float(total.detach()), rel=1e-10, abs=1e-12)
    for key in keys:
        # (RLlib's torch explained variance is float32: its floor of -1 is a float32 tensor.)
        rel = 1e-6 if key == "vf_explained_variance" else 1e-10
        assert loss.stats[key] == pytest.approx(float(stats[key]), rel=rel, abs=1e-12), key
    assert loss.moving_average_sqd_adv_norm == c_squared
    if marwil:
        advantages = targets - data["values"]
        assert c_squared == pytest.approx(C_SQUARED + 0.3 * (np.mean(advantages**2) - C_SQUARED))
        assert stats["moving_avg_sqd_adv_norm"] == c_squared
        np.testing.assert_allclose(d_values, values.grad.numpy(), rtol=1e-10, atol=1e-12)
    else:
        assert c_squared == C_SQUARED
        assert values.grad is None
        np.testing.assert_array_equal(d_values, 0.0)
    np.testing.assert_allclose(d_inputs, inputs.grad.numpy(), rtol=1e-9, atol=1e-12)
