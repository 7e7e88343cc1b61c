"""PPO's loss (`trainer.algorithms.ppo.loss`): the numpy loss and the torch loss on the same
inputs give the same loss and the same statistics under the same keys, and the numpy backward
pass gives torch autograd's gradients."""

import numpy as np
import pytest

from trainer import PPOConfig
from trainer.algorithms.ppo.loss import LOSS_STAT_KEYS, numpy_loss, numpy_loss_gradients
from trainer.core.nn import Categorical, DiagGaussian

torch = pytest.importorskip("torch")

from trainer.algorithms.ppo.loss import torch_loss  # noqa: E402
from trainer.torch_rl.distributions import TorchCategorical, TorchDiagGaussian  # noqa: E402

ROWS = 16


def _inputs(continuous: bool, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Distribution inputs (current and behaviour), actions, advantages, value targets and
    values, in float64, with both clip sides and the value clip active."""
    if continuous:
        mean, log_std = rng.standard_normal((ROWS, 2)), rng.uniform(-1.0, 0.5, (ROWS, 2))
        inputs = np.concatenate([mean, log_std], axis=1)
        actions = rng.standard_normal((ROWS, 2))
    else:
        inputs = rng.standard_normal((ROWS, 3))
        actions = rng.integers(0, 3, ROWS)
    old_inputs = inputs + 0.3 * rng.standard_normal(inputs.shape)
    dist = DiagGaussian if continuous else Categorical
    return {
        "inputs": inputs,
        "values": rng.standard_normal(ROWS),
        "obs": np.zeros((ROWS, 1)),
        "actions": actions,
        "action_dist_inputs": old_inputs,
        "action_logp": dist.logp(old_inputs, actions),
        "advantages": rng.standard_normal(ROWS),
        "value_targets": 2.0 * rng.standard_normal(ROWS),
    }


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize(
    "training",
    [{}, {"use_kl_loss": False}, {"use_critic": False}, {"vf_clip_param": 1e6, "clip_param": 1.0}],
)
def test_numpy_and_torch_losses_agree(continuous, training):
    settings = {"clip_param": 0.1, "vf_clip_param": 1.0, "vf_loss_coeff": 0.7, **training}
    config = PPOConfig().training(**settings)
    coeffs = {"entropy_coeff": 0.05, "kl_coeff": 0.3}
    data = _inputs(continuous, np.random.default_rng(0))
    batch = {k: v for k, v in data.items() if k not in ("inputs", "values")}

    dist_cls = DiagGaussian if continuous else Categorical
    terms = dist_cls.loss_grads(data["inputs"], batch["actions"], batch["action_dist_inputs"])
    loss = numpy_loss(batch, terms, data["values"], config, **coeffs)
    d_inputs, d_values = numpy_loss_gradients(loss, terms, config, **coeffs)

    torch_dist = TorchDiagGaussian if continuous else TorchCategorical
    inputs = torch.tensor(data["inputs"], requires_grad=True)
    values = torch.tensor(data["values"], requires_grad=True)
    tensors = {k: torch.from_numpy(np.asarray(v)) for k, v in batch.items()}
    total, stats = torch_loss(
        tensors,
        torch_dist.from_logits(inputs),
        torch_dist.from_logits(tensors["action_dist_inputs"]),
        lambda: values,
        config,
        **coeffs,
    )
    total.backward()

    assert list(loss.stats) == ["total_loss", *LOSS_STAT_KEYS]
    assert list(stats) == list(LOSS_STAT_KEYS)
    assert loss.total_loss == pytest.approx(float(total.detach()), rel=1e-10, abs=1e-12)
    for key in LOSS_STAT_KEYS:
        # (RLlib's torch explained variance is float32: its floor of -1 is a float32 tensor.)
        rel = 1e-6 if key == "vf_explained_var" else 1e-10
        assert loss.stats[key] == pytest.approx(float(stats[key].detach()), rel=rel, abs=1e-12), key
    if not config.use_kl_loss:
        assert loss.stats["mean_kl_loss"] == 0.0
    if not config.use_critic:
        assert loss.stats["vf_loss"] == loss.stats["vf_loss_unclipped"] == 0.0
        assert values.grad is None
        np.testing.assert_array_equal(d_values, 0.0)
    else:
        np.testing.assert_allclose(d_values, values.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d_inputs, inputs.grad.numpy(), rtol=1e-9, atol=1e-12)
