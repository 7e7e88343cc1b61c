"""RLlib's torch action distributions (`ray.rllib.core.distribution.torch.torch_distribution`).

A module's forward pass returns `Columns.ACTION_DIST_INPUTS`; the algorithm turns them into a
distribution with `cls.from_logits(inputs)` and asks it for `sample()`, `logp(actions)`,
`entropy()` and `kl(other)`. `cls.required_input_dim(space)` is how many inputs the module must
output for an action space. The classes follow RLlib 2.60:

- `TorchCategorical` (Discrete): logits; `rsample()` is a straight-through one-hot sample.
- `TorchDiagGaussian` (Box): inputs are `[means, log_stds]`; logp, entropy and KL are summed
  over the action dimensions.
- `TorchSquashedGaussian` (Box, bounded): a Gaussian squashed by tanh into `[low, high]`.
- `TorchDeterministic`: returns its `loc` (what `to_deterministic()` gives, for greedy actions).
- `TorchMultiCategorical` (MultiDiscrete) and `TorchMultiDistribution` (nested actions: a dict,
  list or tuple of child distributions over one flat input vector).

`Distribution.get_partial_dist_cls(**kwargs)` binds constructor arguments (e.g. `input_lens`)
so that the result is built from logits alone.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from torch.nn import functional

from trainer.capabilities import ACTION_SPACES
from trainer.core.distributions import Distribution
from trainer.errors import UnsupportedValue
from trainer.torch_rl.draws import draw

#: RLlib's bounds of a squashed Gaussian's log-std (`ray.rllib.utils.numpy`).
MIN_LOG_NN_OUTPUT = -5.0
MAX_LOG_NN_OUTPUT = 2.0
#: How far inside [-1, 1] an action is moved before `atanh` (RLlib's `SMALL_NUMBER`).
SMALL_NUMBER = 1e-6


def _require_space(cls_name: str, space: gym.Space, expected: type | tuple[type, ...]) -> None:
    if not isinstance(space, expected):
        names = (
            " or ".join(t.__name__ for t in expected)
            if isinstance(expected, tuple)
            else expected.__name__
        )
        raise ValueError(
            f"{cls_name}.required_input_dim(space={space}): {cls_name} is for "
            f"gymnasium.spaces.{names} action spaces"
        )


def _sample_shape(sample_shape: Any) -> torch.Size:
    return torch.Size(sample_shape) if sample_shape is not None else torch.Size()


class TorchDistribution(Distribution, abc.ABC):
    """A `Distribution` that wraps a `torch.distributions.Distribution` (`self._dist`), built by
    `_get_torch_distribution` from the constructor's arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self._dist = self._get_torch_distribution(*args, **kwargs)

    @abc.abstractmethod
    def _get_torch_distribution(
        self, *args: Any, **kwargs: Any
    ) -> torch.distributions.Distribution:
        """The wrapped torch distribution."""

    def logp(self, value: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return self._dist.log_prob(value, **kwargs)

    def entropy(self, **kwargs: Any) -> torch.Tensor:
        return self._dist.entropy()

    def kl(self, other: Distribution, **kwargs: Any) -> torch.Tensor:
        if not isinstance(other, TorchDistribution):
            raise ValueError(
                f"{type(self).__name__}.kl(other): other must be a TorchDistribution, got "
                f"{type(other).__name__}"
            )
        return torch.distributions.kl.kl_divergence(self._dist, other._dist)

    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        return draw(self._dist, _sample_shape(sample_shape), reparameterized=False)

    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        return draw(self._dist, _sample_shape(sample_shape), reparameterized=True)

    def sample_and_logp(
        self, *, sample_shape: Sequence[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        sample = self.sample(sample_shape=sample_shape)
        return sample, self.logp(sample)

    def rsample_and_logp(
        self, *, sample_shape: Sequence[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        sample = self.rsample(sample_shape=sample_shape)
        return sample, self.logp(sample)

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs: Any) -> TorchDistribution:
        return cls(logits=logits, **kwargs)


class TorchCategorical(TorchDistribution):
    """A categorical distribution over `{0, ..., K-1}` from `logits` or `probs` (exactly one),
    each of shape `(..., K)`."""

    def __init__(
        self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None
    ) -> None:
        if (logits is None) == (probs is None):
            raise ValueError("TorchCategorical: give exactly one of `logits` and `probs`")
        self.logits = logits
        self.probs = probs
        super().__init__(logits=logits, probs=probs)

    def _get_torch_distribution(
        self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None
    ) -> torch.distributions.Distribution:
        return torch.distributions.Categorical(logits=logits, probs=probs, validate_args=False)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        _require_space("TorchCategorical", space, gym.spaces.Discrete)
        return int(cast(gym.spaces.Discrete, space).n)

    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        """A one-hot sample whose gradient is that of the probabilities (straight-through)."""
        probs = self._dist.probs
        one_hot = functional.one_hot(
            draw(self._dist, _sample_shape(sample_shape), reparameterized=False), probs.shape[-1]
        ).to(probs.dtype)
        return (one_hot - probs).detach() + probs

    def to_deterministic(self) -> TorchDeterministic:
        """The argmax action."""
        values = self.probs if self.probs is not None else self.logits
        return TorchDeterministic(loc=torch.argmax(values, dim=-1))


class TorchDiagGaussian(TorchDistribution):
    """A Gaussian with diagonal covariance: `loc` (means) and `scale` (standard deviations),
    each `(..., D)`. `logp`, `entropy` and `kl` sum over the last dimension."""

    def __init__(self, loc: torch.Tensor | float, scale: torch.Tensor | float) -> None:
        self.loc = loc
        super().__init__(loc=loc, scale=scale)

    def _get_torch_distribution(
        self, loc: torch.Tensor | float, scale: torch.Tensor | float
    ) -> torch.distributions.Distribution:
        return torch.distributions.Normal(loc, scale, validate_args=False)

    def logp(self, value: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return super().logp(value).sum(-1)

    def entropy(self, **kwargs: Any) -> torch.Tensor:
        return super().entropy().sum(-1)

    def kl(self, other: Distribution, **kwargs: Any) -> torch.Tensor:
        return super().kl(other).sum(-1)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        _require_space("TorchDiagGaussian", space, gym.spaces.Box)
        return int(np.prod(cast(gym.spaces.Box, space).shape, dtype=np.int64) * 2)

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs: Any) -> TorchDiagGaussian:
        """`logits` is `[means, log_stds]` along the last dimension."""
        loc, log_std = logits.chunk(2, dim=-1)
        return cls(loc=loc, scale=log_std.exp())

    def to_deterministic(self) -> TorchDeterministic:
        """The mean action."""
        return TorchDeterministic(loc=self.loc)


class TorchSquashedGaussian(TorchDistribution):
    """A Gaussian over `loc`/`scale` whose samples are squashed by tanh into `[low, high]`.

    `logp` of an action un-squashes it (exact inside the bounds); `sample_and_logp` and
    `rsample_and_logp` use the unsquashed sample and are always exact. Entropy and KL have no
    closed form and raise, as in RLlib."""

    def __init__(
        self,
        loc: torch.Tensor | float,
        scale: torch.Tensor | float = 1.0,
        low: float = -1.0,
        high: float = 1.0,
    ) -> None:
        self.loc = loc
        self.low = low
        self.high = high
        super().__init__(loc=loc, scale=scale)

    def _get_torch_distribution(
        self, loc: torch.Tensor | float, scale: torch.Tensor | float
    ) -> torch.distributions.Distribution:
        return torch.distributions.Normal(loc, scale, validate_args=False)

    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        return self._squash(super().sample(sample_shape=sample_shape))

    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        return self._squash(super().rsample(sample_shape=sample_shape))

    def logp(self, value: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        return self._squashed_logp(self._unsquash(value))

    def _squashed_logp(self, unsquashed: torch.Tensor) -> torch.Tensor:
        gaussian_logp = self._dist.log_prob(unsquashed).sum(-1)
        # log |d tanh(u)/du| = log(1 - tanh(u)^2), in a numerically stable form.
        log_det = 2.0 * (math.log(2.0) - unsquashed - functional.softplus(-2.0 * unsquashed))
        return gaussian_logp - log_det.sum(-1)

    def sample_and_logp(
        self, *, sample_shape: Sequence[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        unsquashed = draw(self._dist, _sample_shape(sample_shape), reparameterized=False)
        return self._squash(unsquashed), self._squashed_logp(unsquashed)

    def rsample_and_logp(
        self, *, sample_shape: Sequence[int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        unsquashed = draw(self._dist, _sample_shape(sample_shape), reparameterized=True)
        return self._squash(unsquashed), self._squashed_logp(unsquashed)

    def entropy(self, **kwargs: Any) -> torch.Tensor:
        raise ValueError("TorchSquashedGaussian has no closed-form entropy (as in RLlib)")

    def kl(self, other: Distribution, **kwargs: Any) -> torch.Tensor:
        raise ValueError("TorchSquashedGaussian has no closed-form KL divergence (as in RLlib)")

    def _squash(self, sample: torch.Tensor) -> torch.Tensor:
        squashed = (torch.tanh(sample) + 1.0) / 2.0 * (self.high - self.low) + self.low
        return torch.clamp(squashed, self.low, self.high)

    def _unsquash(self, value: torch.Tensor) -> torch.Tensor:
        unit = (value - self.low) / (self.high - self.low) * 2.0 - 1.0
        return torch.atanh(torch.clamp(unit, -1.0 + SMALL_NUMBER, 1.0 - SMALL_NUMBER))

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        _require_space("TorchSquashedGaussian", space, gym.spaces.Box)
        return int(np.prod(cast(gym.spaces.Box, space).shape, dtype=np.int64) * 2)

    @classmethod
    def from_logits(
        cls, logits: torch.Tensor, low: float = -1.0, high: float = 1.0, **kwargs: Any
    ) -> TorchSquashedGaussian:
        """`logits` is `[means, log_stds]`; log-stds are clipped to RLlib's [-5, 2]."""
        if not np.all(np.less(low, high)):
            raise ValueError(f"TorchSquashedGaussian.from_logits: low={low} must be < high={high}")
        loc, log_std = logits.chunk(2, dim=-1)
        log_std = torch.clamp(log_std, MIN_LOG_NN_OUTPUT, MAX_LOG_NN_OUTPUT)
        return cls(loc=loc, scale=log_std.exp(), low=low, high=high, **kwargs)

    def to_deterministic(self) -> TorchDeterministic:
        """The mean of the Gaussian (unsquashed, as in RLlib)."""
        return TorchDeterministic(loc=self.loc)


class TorchDeterministic(Distribution):
    """Always `loc`. `logp` is zeros (as in RLlib); entropy, KL and `rsample` are not
    defined."""

    def __init__(self, loc: torch.Tensor) -> None:
        super().__init__()
        self.loc = loc

    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        shape = _sample_shape(sample_shape) + self.loc.shape
        return torch.ones(shape, device=self.loc.device, dtype=self.loc.dtype) * self.loc

    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        raise NotImplementedError("TorchDeterministic has no reparameterized sample")

    def logp(self, value: Any, **kwargs: Any) -> torch.Tensor:
        return torch.zeros_like(self.loc)

    def entropy(self, **kwargs: Any) -> torch.Tensor:
        raise RuntimeError("`entropy()` not supported for TorchDeterministic")

    def kl(self, other: Distribution, **kwargs: Any) -> torch.Tensor:
        raise RuntimeError("`kl()` not supported for TorchDeterministic")

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        _require_space("TorchDeterministic", space, gym.spaces.Box)
        return int(np.prod(cast(gym.spaces.Box, space).shape, dtype=np.int64))

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs: Any) -> TorchDeterministic:
        return cls(loc=logits)

    def to_deterministic(self) -> TorchDeterministic:
        return self


class TorchMultiCategorical(Distribution):
    """Independent categoricals (a MultiDiscrete action): samples stack along the last
    dimension; logp, entropy and KL are sums over the components."""

    def __init__(self, categoricals: list[TorchCategorical]) -> None:
        super().__init__()
        self._cats = list(categoricals)

    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        return torch.stack([cat.sample(sample_shape=sample_shape) for cat in self._cats], dim=-1)

    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> torch.Tensor:
        # One-hot samples stacked as in RLlib: the components need equal category counts.
        return torch.stack([cat.rsample(sample_shape=sample_shape) for cat in self._cats], dim=-1)

    def logp(self, value: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        parts = torch.unbind(value, dim=-1)
        if len(parts) != len(self._cats):
            raise ValueError(
                f"TorchMultiCategorical.logp: value has {len(parts)} components in its last "
                f"dimension, the distribution {len(self._cats)}"
            )
        return torch.stack(
            [cat.logp(part) for cat, part in zip(self._cats, parts, strict=True)]
        ).sum(0)

    def entropy(self, **kwargs: Any) -> torch.Tensor:
        return torch.stack([cat.entropy() for cat in self._cats], dim=-1).sum(-1)

    def kl(self, other: Distribution, **kwargs: Any) -> torch.Tensor:
        if not isinstance(other, TorchMultiCategorical) or len(other._cats) != len(self._cats):
            raise ValueError(
                "TorchMultiCategorical.kl(other): other must be a TorchMultiCategorical with "
                f"{len(self._cats)} components"
            )
        return torch.stack(
            [cat.kl(other_cat) for cat, other_cat in zip(self._cats, other._cats, strict=True)],
            dim=-1,
        ).sum(-1)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        _require_space("TorchMultiCategorical", space, gym.spaces.MultiDiscrete)
        return int(np.sum(cast(gym.spaces.MultiDiscrete, space).nvec))

    @classmethod
    def from_logits(
        cls,
        logits: torch.Tensor,
        input_lens: list[int] | None = None,
        temperatures: list[float] | None = None,
        **kwargs: Any,
    ) -> TorchMultiCategorical:
        """Splits `logits` by `input_lens` (one entry per component) into categoricals; each
        component's logits are divided by its temperature (default 1.0)."""
        if not input_lens:
            raise ValueError(
                "TorchMultiCategorical.from_logits: input_lens (the number of logits of each "
                "component) is required; bind it with get_partial_dist_cls(input_lens=...)"
            )
        input_lens = [int(n) for n in input_lens]
        if sum(input_lens) != logits.shape[-1]:
            raise ValueError(
                f"TorchMultiCategorical.from_logits: input_lens={input_lens} sums to "
                f"{sum(input_lens)}, the logits have {logits.shape[-1]}"
            )
        temperatures = list(temperatures) if temperatures else [1.0] * len(input_lens)
        if len(temperatures) != len(input_lens):
            raise ValueError(
                f"TorchMultiCategorical.from_logits: temperatures={temperatures} must have one "
                f"entry per input_lens entry ({len(input_lens)})"
            )
        parts = torch.split(logits, input_lens, dim=-1)
        return cls(
            categoricals=[
                TorchCategorical(logits=part if t == 1.0 else part / t)
                for part, t in zip(parts, temperatures, strict=True)
            ]
        )

    def to_deterministic(self) -> TorchDeterministic:
        """The argmax of each component, stacked along the last dimension."""
        return TorchDeterministic(
            loc=torch.stack([cat.to_deterministic().loc for cat in self._cats], dim=-1)
        )


# -- nested structures (dicts in sorted key order, lists and tuples; dm-tree's order) ----------
def _flatten(struct: Any) -> list[Any]:
    if isinstance(struct, dict):
        return [leaf for key in sorted(struct) for leaf in _flatten(struct[key])]
    if isinstance(struct, (list, tuple)):
        return [leaf for item in struct for leaf in _flatten(item)]
    return [struct]


def _unflatten_as(struct: Any, leaves: list[Any]) -> Any:
    remaining = iter(leaves)

    def build(node: Any) -> Any:
        if isinstance(node, dict):
            built = {key: build(node[key]) for key in sorted(node)}
            return {key: built[key] for key in node}
        if isinstance(node, (list, tuple)):
            items = [build(item) for item in node]
            return type(node)(items) if isinstance(node, list) else tuple(items)
        return next(remaining)

    return build(struct)


def _map_structure(fn: Callable[[Any], Any], struct: Any) -> Any:
    return _unflatten_as(struct, [fn(leaf) for leaf in _flatten(struct)])


class TorchMultiDistribution(Distribution):
    """Child distributions in a nested structure (dict / list / tuple) for a nested action
    space: samples have that structure; logp, entropy and KL are sums over the children."""

    def __init__(self, child_distribution_struct: dict | list | tuple) -> None:
        super().__init__()
        self._original_struct = child_distribution_struct
        self._flat_child_distributions = _flatten(child_distribution_struct)

    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> Any:
        return _map_structure(
            lambda dist: dist.sample(sample_shape=sample_shape), self._original_struct
        )

    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> Any:
        return _map_structure(
            lambda dist: dist.rsample(sample_shape=sample_shape), self._original_struct
        )

    def logp(self, value: Any, **kwargs: Any) -> torch.Tensor:
        """`value` in the children's structure, or one tensor `(*batch, width)` whose last
        dimension holds the children's actions side by side (a categorical's takes one column):
        rows `(B, width)`, or a recurrent module's sequences `(B, T, width)`."""
        if isinstance(value, torch.Tensor):
            batch_dims = max(value.dim() - 1, 0)
            widths = [
                self._action_width(dist, batch_dims) for dist in self._flat_child_distributions
            ]
            if value.dim() == 0 or value.shape[-1] != sum(widths):
                raise ValueError(
                    f"TorchMultiDistribution.logp: the actions' last dimension (shape "
                    f"{tuple(value.shape)}) must hold the children's action columns side by "
                    f"side, {widths} ({sum(widths)} in all)"
                )
            parts = list(torch.split(value, widths, dim=-1))
        else:
            parts = _flatten(value)
        if len(parts) != len(self._flat_child_distributions):
            raise ValueError(
                f"TorchMultiDistribution.logp: value has {len(parts)} parts, the distribution "
                f"{len(self._flat_child_distributions)} children"
            )
        total = None
        for dist, part in zip(self._flat_child_distributions, parts, strict=True):
            if isinstance(dist, TorchCategorical) and part.dim() > 1 and part.shape[-1] == 1:
                part = part.squeeze(-1)
            logp = dist.logp(part)
            total = logp if total is None else total + logp
        return total

    @staticmethod
    def _action_width(dist: Distribution, batch_dims: int = 1) -> int:
        """The columns a child's action takes in a flat row: one for a categorical, one per
        component of a multi-categorical, otherwise the size of a sample past its
        `batch_dims` leading (batch, time) dimensions."""
        if isinstance(dist, TorchCategorical):
            return 1
        if isinstance(dist, TorchMultiCategorical):
            return len(dist._cats)
        sample = dist.sample()
        return max(1, math.prod(int(d) for d in sample.shape[batch_dims:]))

    def entropy(self, **kwargs: Any) -> torch.Tensor:
        return sum(dist.entropy() for dist in self._flat_child_distributions)

    def kl(self, other: Distribution, **kwargs: Any) -> torch.Tensor:
        if not isinstance(other, TorchMultiDistribution) or len(
            other._flat_child_distributions
        ) != len(self._flat_child_distributions):
            raise ValueError(
                "TorchMultiDistribution.kl(other): other must be a TorchMultiDistribution with "
                "the same children"
            )
        return sum(
            dist.kl(other_dist)
            for dist, other_dist in zip(
                self._flat_child_distributions, other._flat_child_distributions, strict=True
            )
        )

    @staticmethod
    def required_input_dim(  # type: ignore[override]  # RLlib's signature: input_lens, as_list
        space: gym.Space, input_lens: list[int] | None = None, as_list: bool = False, **kwargs: Any
    ) -> int | list[int]:
        if input_lens is None:
            raise ValueError(
                "TorchMultiDistribution.required_input_dim: input_lens (each child's number of "
                "inputs) is required"
            )
        return list(input_lens) if as_list else int(sum(_flatten(input_lens)))

    @classmethod
    def from_logits(
        cls,
        logits: torch.Tensor,
        child_distribution_cls_struct: dict | list | tuple | None = None,
        input_lens: dict | list[int] | None = None,
        **kwargs: Any,
    ) -> TorchMultiDistribution:
        """Splits `logits` by `input_lens` (flattened in the children's order) and builds each
        child class in `child_distribution_cls_struct` from its part."""
        if child_distribution_cls_struct is None or input_lens is None:
            raise ValueError(
                "TorchMultiDistribution.from_logits: child_distribution_cls_struct and "
                "input_lens are required; bind them with get_partial_dist_cls(...)"
            )
        lens = [int(n) for n in _flatten(input_lens)]
        classes = _flatten(child_distribution_cls_struct)
        if len(lens) != len(classes) or sum(lens) != logits.shape[-1]:
            raise ValueError(
                f"TorchMultiDistribution.from_logits: input_lens={lens} must have one entry "
                f"per child ({len(classes)}) and sum to the logits' size {logits.shape[-1]}"
            )
        children = [
            dist_cls.from_logits(part)
            for dist_cls, part in zip(classes, torch.split(logits, lens, dim=-1), strict=True)
        ]
        return cls(child_distribution_struct=_unflatten_as(child_distribution_cls_struct, children))

    def to_deterministic(self) -> TorchMultiDistribution:
        return TorchMultiDistribution(
            _map_structure(lambda dist: dist.to_deterministic(), self._original_struct)
        )


def action_dist_cls_for(space: gym.Space, where: str = "action_space") -> type[Distribution]:
    """RLlib's Catalog choice of an action distribution class for `space`: TorchCategorical
    (Discrete), TorchDiagGaussian (Box), TorchMultiCategorical bound to the components'
    sizes (MultiDiscrete), TorchMultiDistribution bound to the classes of the space's leaves,
    nested as the space is, and their input sizes in dm-tree's order (Tuple, Dict, however
    nested). Raises UnsupportedValue for other spaces."""
    if isinstance(space, gym.spaces.Discrete):
        return TorchCategorical
    if isinstance(space, gym.spaces.Box):
        return TorchDiagGaussian
    if isinstance(space, gym.spaces.MultiDiscrete):
        return TorchMultiCategorical.get_partial_dist_cls(
            input_lens=[int(n) for n in np.asarray(space.nvec).ravel()]
        )
    if isinstance(space, (gym.spaces.Tuple, gym.spaces.Dict)):
        return multi_distribution_for(space, lambda leaf: action_dist_cls_for(leaf, where))
    raise UnsupportedValue(
        f"{where}={space} is not supported: Discrete, Box, MultiDiscrete, and Tuple and Dict "
        "of those are (RLlib's Catalog: categorical, diagonal Gaussian, multi-categorical, "
        "multi-distribution)",
        ACTION_SPACES,
    )


def is_catalog_multi_distribution(dist_class: Any) -> bool:
    """Whether `dist_class` is a multi-categorical or a multi-distribution (a partial of
    RLlib's, as its Catalog binds them, `action_dist_cls_for`) whose children are all RLlib's
    categorical, diagonal Gaussian or such multi-distributions: what the samplers' numpy
    multi-distribution draws alike."""
    if not isinstance(dist_class, type):
        return False
    if issubclass(dist_class, TorchMultiCategorical):
        return True
    if not issubclass(dist_class, TorchMultiDistribution):
        return False
    partial_kwargs = getattr(dist_class, "_partial_kwargs", {})
    children = partial_kwargs.get("child_distribution_cls_struct")
    if children is None:
        return False
    return all(
        child in (TorchCategorical, TorchDiagGaussian) or is_catalog_multi_distribution(child)
        for child in _flatten(children)
    )


def _space_struct(space: gym.Space) -> Any:
    """A Tuple / Dict space as a tuple / dict of its leaf spaces, however nested (RLlib's
    `get_base_struct_from_space`)."""
    if isinstance(space, gym.spaces.Dict):
        return {key: _space_struct(sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_space_struct(sub) for sub in space.spaces)
    return space


def multi_distribution_for(
    space: gym.spaces.Tuple | gym.spaces.Dict, leaf_cls: Callable[[gym.Space], type]
) -> type[Distribution]:
    """`TorchMultiDistribution` bound to `leaf_cls(leaf)` for each of the space's leaves,
    nested as the space is, and their input sizes in dm-tree's order."""
    leaf_spaces = _space_struct(space)
    classes = _map_structure(leaf_cls, leaf_spaces)
    lens = [
        int(cast(Any, cls).required_input_dim(leaf))
        for cls, leaf in zip(_flatten(classes), _flatten(leaf_spaces), strict=True)
    ]
    return TorchMultiDistribution.get_partial_dist_cls(
        child_distribution_cls_struct=classes, input_lens=lens
    )
