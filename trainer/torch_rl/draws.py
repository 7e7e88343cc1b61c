"""Random draws of torch modules, always from torch's CPU generator.

A learner on a GPU (`learners(num_gpus_per_learner=1)`) runs its module there, and torch
would draw a reparameterized action, a categorical sample or a uniform from the CUDA
generator: other numbers than the CPU's for the same seed, from a state the learner's
checkpoint does not hold. Drawn here, the numbers come from the CPU generator (the learner's
own state, `OwnGenerator`) and are moved to the module's device: a seeded run on a GPU draws
what it draws on the CPU, and resumes exactly from a checkpoint. A module on the CPU draws
exactly as torch's own `sample`/`rsample` (the same calls, the same bits).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def uniform(shape: Sequence[int], dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """`torch.rand(shape)` drawn on the CPU, on `device`."""
    return torch.rand(tuple(shape), dtype=dtype).to(device)


def draw(
    dist: torch.distributions.Distribution,
    sample_shape: torch.Size = torch.Size(),
    *,
    reparameterized: bool,
) -> torch.Tensor:
    """`dist.rsample(sample_shape)` (`reparameterized`) or `dist.sample(sample_shape)`, with the
    numbers drawn on the CPU: torch's own draw for a distribution on the CPU; for one on another
    device, the draw torch makes on the CPU for the same parameters (Normal, Categorical,
    OneHotCategorical, and Independent over them), moved there. Other distributions draw on
    their device."""
    base = dist.base_dist if isinstance(dist, torch.distributions.Independent) else dist
    device = _device(base)
    if device is None or device.type == "cpu":
        return dist.rsample(sample_shape) if reparameterized else dist.sample(sample_shape)
    if isinstance(base, torch.distributions.Normal):
        # torch's Normal: rsample is loc + eps * scale, eps from `empty(...).normal_()`; sample is
        # `torch.normal(loc, scale)` without gradients.
        shape = base._extended_shape(sample_shape)
        if reparameterized:
            eps = torch.empty(shape, dtype=base.loc.dtype).normal_().to(device)
            return base.loc + eps * base.scale
        with torch.no_grad():
            loc, scale = base.loc.detach().cpu(), base.scale.detach().cpu()
            return torch.normal(loc.expand(shape), scale.expand(shape)).to(device)
    if isinstance(base, torch.distributions.Categorical) and not reparameterized:
        return _categorical_indices(base, sample_shape).to(device)
    if isinstance(base, torch.distributions.OneHotCategorical) and not reparameterized:
        indices = _categorical_indices(base._categorical, sample_shape).to(device)
        return torch.nn.functional.one_hot(indices, base.probs.shape[-1]).to(base.probs.dtype)
    return dist.rsample(sample_shape) if reparameterized else dist.sample(sample_shape)


def _categorical_indices(
    categorical: torch.distributions.Categorical, sample_shape: torch.Size
) -> torch.Tensor:
    """torch's `Categorical.sample` on the CPU copy of its probabilities."""
    probs_2d = categorical.probs.detach().cpu().reshape(-1, categorical._num_events)
    samples_2d = torch.multinomial(probs_2d, sample_shape.numel(), True).T
    return samples_2d.reshape(categorical._extended_shape(sample_shape))


def _device(dist: torch.distributions.Distribution) -> torch.device | None:
    if isinstance(dist, torch.distributions.OneHotCategorical):
        dist = dist._categorical
    for name in ("loc", "probs", "logits"):
        value = dist.__dict__.get(name)  # (probs/logits are lazy: only the one given is set)
        if isinstance(value, torch.Tensor):
            return value.device
    return None
