"""trainer.torch_rl.draws: a module's random draws come from torch's CPU generator.

On the CPU they are torch's own draws, bit for bit (the seeded runs recorded before the draws
moved here stay as they were); on a GPU they are the CPU's numbers moved there
(tests/test_gpu_learners.py checks that on a machine with CUDA).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from trainer.torch_rl.draws import draw, uniform  # noqa: E402

LOC = torch.tensor([[0.5, -1.0], [2.0, 0.1]], requires_grad=True)
SCALE = torch.tensor([[1.5, 0.2], [0.3, 2.0]])
LOGITS = torch.tensor([[0.1, 2.0, -1.0], [0.0, 0.0, 3.0]])


@pytest.mark.parametrize("sample_shape", [torch.Size(), torch.Size([5])])
@pytest.mark.parametrize("reparameterized", [True, False])
def test_on_the_cpu_a_draw_is_torchs_own(sample_shape, reparameterized):
    distributions = [
        lambda: torch.distributions.Normal(LOC, SCALE),
        lambda: torch.distributions.Independent(torch.distributions.Normal(LOC, SCALE), 1),
    ]
    if not reparameterized:
        distributions += [
            lambda: torch.distributions.Categorical(logits=LOGITS),
            lambda: torch.distributions.OneHotCategorical(logits=LOGITS),
        ]
    method = "rsample" if reparameterized else "sample"
    for make in distributions:
        torch.manual_seed(11)
        ours = draw(make(), sample_shape, reparameterized=reparameterized)
        torch.manual_seed(11)
        torchs = getattr(make(), method)(sample_shape)
        assert torch.equal(ours, torchs)
        assert ours.requires_grad == reparameterized


def test_a_reparameterized_draw_keeps_its_gradient():
    sample = draw(torch.distributions.Normal(LOC, SCALE), reparameterized=True)
    sample.sum().backward()
    assert torch.equal(LOC.grad, torch.ones_like(LOC))
    LOC.grad = None


def test_uniform_is_torch_rand():
    torch.manual_seed(11)
    ours = uniform((3, 4), torch.float64, "cpu")
    torch.manual_seed(11)
    torchs = torch.rand((3, 4), dtype=torch.float64)
    assert torch.equal(ours, torchs) and ours.dtype == torch.float64


def test_the_device_is_read_off_each_kind():
    from trainer.torch_rl.draws import _device

    for dist in [
        torch.distributions.Normal(LOC, SCALE),
        torch.distributions.Categorical(logits=LOGITS),
        torch.distributions.Categorical(probs=LOGITS.softmax(-1)),
        torch.distributions.OneHotCategorical(logits=LOGITS),
    ]:
        assert _device(dist) == torch.device("cpu"), dist
