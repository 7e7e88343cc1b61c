"""RLlib's action-distribution interface (`ray.rllib.core.distribution.distribution.
Distribution`) and its numpy distributions: what the default numpy modules answer to
`get_inference_action_dist_cls()` / `get_exploration_action_dist_cls()` /
`get_train_action_dist_cls()`, so that a caller asks a numpy module and a torch module the same
questions (`cls.from_logits(module_output)`, `.sample()`, `.logp(actions)`, `.entropy()`,
`.kl(other)`, `.to_deterministic()`, `cls.required_input_dim(space)`).

The numpy distributions compute with the same functions the samplers and the numpy learners use
(`trainer.core.nn.Categorical` / `DiagGaussian`); `sample(rng=...)` draws from the given numpy
generator (a fresh, unseeded one without). They carry no gradients: `rsample` is refused.
The torch distributions (`trainer.torch_rl.distributions`) subclass the same `Distribution`.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import gymnasium as gym
import numpy as np

from trainer.core.action_layout import ActionLayout, MultiActionDistribution
from trainer.core.nn import Categorical, DiagGaussian
from trainer.core.obs_tree import tree_map
from trainer.core.spaces import first_leaf
from trainer.core.torch_inputs import from_torch, to_torch


class Distribution(abc.ABC):
    """RLlib's distribution interface (`ray.rllib.core.distribution.distribution`)."""

    @abc.abstractmethod
    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> Any:
        """A sample (no gradient)."""

    @abc.abstractmethod
    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> Any:
        """A reparameterized sample (gradients flow into the distribution's inputs)."""

    @abc.abstractmethod
    def logp(self, value: Any, **kwargs: Any) -> Any:
        """The log-likelihood of `value`."""

    @abc.abstractmethod
    def kl(self, other: Distribution, **kwargs: Any) -> Any:
        """KL(self || other)."""

    @abc.abstractmethod
    def entropy(self, **kwargs: Any) -> Any:
        """The entropy."""

    @staticmethod
    @abc.abstractmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        """How many inputs (per batch row) the distribution needs for `space`."""

    @classmethod
    def from_logits(cls, logits: Any, **kwargs: Any) -> Distribution:
        """The distribution the module's outputs `logits` describe."""
        raise NotImplementedError(f"{cls.__name__}.from_logits() is not implemented")

    @classmethod
    def get_partial_dist_cls(parent_cls, **partial_kwargs: Any) -> type[Distribution]:  # noqa: N805
        """A subclass whose `from_logits` and `required_input_dim` get `partial_kwargs` (for
        distributions that need more than the logits, e.g. `input_lens`). Giving one of those
        keywords again is an error."""

        def merged(kwargs: dict[str, Any]) -> dict[str, Any]:
            overlap = set(kwargs) & set(partial_kwargs)
            if overlap:
                raise ValueError(
                    f"{parent_cls.__name__} partial: cannot override {sorted(overlap)}, "
                    "already set when the partial class was made"
                )
            return {**partial_kwargs, **kwargs}

        class DistributionPartial(parent_cls):  # type: ignore[valid-type,misc]
            @classmethod
            def required_input_dim(cls, space: gym.Space, **kwargs: Any) -> int:
                arguments = merged(kwargs)
                if "space" in arguments and arguments.pop("space") != space:
                    raise ValueError(
                        f"{parent_cls.__name__} partial: required_input_dim(space={space}) "
                        "differs from the space the partial class was made for"
                    )
                return parent_cls.required_input_dim(space, **arguments)

            @classmethod
            def from_logits(cls, logits: Any, **kwargs: Any) -> Distribution:
                distribution = parent_cls.from_logits(logits, **merged(kwargs))
                # As RLlib: type() of the result is the partial class.
                distribution.__class__ = cls
                return distribution

        #: The bound keywords (the samplers read a multi-distribution's children here).
        DistributionPartial._partial_kwargs = dict(partial_kwargs)
        DistributionPartial.__name__ = f"{parent_cls.__name__}Partial"
        DistributionPartial.__qualname__ = DistributionPartial.__name__
        return DistributionPartial

    def to_deterministic(self) -> Distribution:
        """The deterministic counterpart (greedy actions); the distribution itself by
        default."""
        return self


def _rng(rng: np.random.Generator | None) -> np.random.Generator:
    return rng if rng is not None else np.random.default_rng()


def _batch_shape(sample_shape: Sequence[int] | None) -> tuple[int, ...]:
    return tuple(sample_shape) if sample_shape is not None else ()


_Distribution = TypeVar("_Distribution", bound="NumpyDistribution")


class NumpyDistribution(Distribution, abc.ABC):
    """A distribution over numpy arrays (no gradients).

    Made from torch tensors (`from_logits` of a numpy module's outputs for torch inputs, as
    scripts written for RLlib's default torch modules call it), it computes in numpy and
    answers `sample`, `logp`, `entropy` and `kl` in torch tensors; its deterministic
    counterpart too."""

    #: The torch module when the inputs were torch tensors (the outputs are then too).
    _torch: Any = None

    def _in(self, value: Any) -> Any:
        """`value` as numpy; a torch tensor marks the distribution's outputs as torch."""
        value, torch = from_torch(value)
        if torch is not None:
            self._torch = torch
        return value

    def _out(self, value: Any) -> Any:
        """`value` (an array, or a nested sample) as the caller passed the inputs."""
        if self._torch is None:
            return value
        if isinstance(value, (dict, tuple, list)):
            return tree_map(lambda leaf: to_torch(leaf, self._torch), value)
        return to_torch(value, self._torch)

    def _with_inputs_of(self: _Distribution, other: NumpyDistribution) -> _Distribution:
        """This distribution, answering in the kind of `other`'s inputs."""
        self._torch = other._torch
        return self

    def rsample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__}.rsample(): numpy distributions carry no gradients; "
            "reparameterized samples need a torch module (framework('torch'))"
        )


class NumpyCategorical(NumpyDistribution):
    """A categorical distribution over the last axis of `logits`."""

    def __init__(self, logits: Any):
        self.logits = np.asarray(self._in(logits), dtype=np.float32)

    @classmethod
    def from_logits(cls, logits: Any, **kwargs: Any) -> NumpyCategorical:
        return cls(logits)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(f"NumpyCategorical is for Discrete action spaces, not {space}")
        return int(space.n)

    def sample(
        self,
        *,
        sample_shape: Sequence[int] | None = None,
        rng: np.random.Generator | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        shape = _batch_shape(sample_shape)
        draws = [
            Categorical.act(self.logits.reshape(-1, self.logits.shape[-1]), _rng(rng), True)[0]
            for _ in range(int(np.prod(shape, dtype=np.int64)))
        ]
        rows = self.logits.shape[:-1]
        return self._out(np.stack(draws).reshape(shape + rows).astype(np.int64))

    def logp(self, value: Any, **kwargs: Any) -> np.ndarray:
        flat = self.logits.reshape(-1, self.logits.shape[-1])
        actions = np.asarray(from_torch(value)[0]).reshape(-1)
        return self._out(Categorical.logp(flat, actions).reshape(self.logits.shape[:-1]))

    def entropy(self, **kwargs: Any) -> np.ndarray:
        flat = self.logits.reshape(-1, self.logits.shape[-1])
        return self._out(Categorical.entropy(flat).reshape(self.logits.shape[:-1]))

    def kl(self, other: Distribution, **kwargs: Any) -> np.ndarray:
        other_logits = cast(NumpyCategorical, other).logits
        flat = self.logits.reshape(-1, self.logits.shape[-1])
        return self._out(
            Categorical.kl(flat, other_logits.reshape(flat.shape)).reshape(self.logits.shape[:-1])
        )

    def to_deterministic(self) -> NumpyDeterministic:
        return NumpyDeterministic(self.logits.argmax(axis=-1))._with_inputs_of(self)


class NumpyDiagGaussian(NumpyDistribution):
    """A diagonal Gaussian; `from_logits` takes `[mean, log_std]` concatenated on the last
    axis (RLlib's layout)."""

    def __init__(self, loc: Any, scale: Any):
        self.loc = np.asarray(self._in(loc), dtype=np.float32)
        self.scale = np.asarray(self._in(scale), dtype=np.float32)

    @property
    def _inputs(self) -> np.ndarray:
        return np.concatenate([self.loc, np.log(self.scale)], axis=-1)

    @classmethod
    def from_logits(cls, logits: Any, **kwargs: Any) -> NumpyDiagGaussian:
        array, torch = from_torch(logits)
        mean, log_std = np.split(np.asarray(array, dtype=np.float32), 2, axis=-1)
        distribution = cls(mean, np.exp(log_std))
        distribution._torch = torch
        return distribution

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        if not isinstance(space, gym.spaces.Box):
            raise ValueError(f"NumpyDiagGaussian is for Box action spaces, not {space}")
        return int(np.prod(space.shape, dtype=np.int64)) * 2

    def sample(
        self,
        *,
        sample_shape: Sequence[int] | None = None,
        rng: np.random.Generator | None = None,
        **kwargs: Any,
    ) -> np.ndarray:
        shape = _batch_shape(sample_shape)
        noise = _rng(rng).standard_normal(shape + self.loc.shape).astype(np.float32)
        return self._out(self.loc + self.scale * noise)

    def logp(self, value: Any, **kwargs: Any) -> np.ndarray:
        actions = np.asarray(from_torch(value)[0], dtype=np.float32)
        return self._out(DiagGaussian.logp(self._inputs, actions))

    def entropy(self, **kwargs: Any) -> np.ndarray:
        return self._out(DiagGaussian.entropy(self._inputs))

    def kl(self, other: Distribution, **kwargs: Any) -> np.ndarray:
        return self._out(DiagGaussian.kl(self._inputs, cast(NumpyDiagGaussian, other)._inputs))

    def to_deterministic(self) -> NumpyDeterministic:
        return NumpyDeterministic(self.loc)._with_inputs_of(self)


class NumpyDeterministic(NumpyDistribution):
    """All mass on `loc` (the greedy action): log-probability, entropy and KL are 0."""

    def __init__(self, loc: Any):
        self.loc = np.asarray(self._in(loc))

    @classmethod
    def from_logits(cls, logits: Any, **kwargs: Any) -> NumpyDeterministic:
        return cls(logits)

    @staticmethod
    def required_input_dim(space: gym.Space, **kwargs: Any) -> int:
        if not isinstance(space, gym.spaces.Box):
            raise ValueError(f"NumpyDeterministic is for Box action spaces, not {space}")
        return int(np.prod(space.shape, dtype=np.int64))

    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> np.ndarray:
        shape = _batch_shape(sample_shape)
        return self._out(np.broadcast_to(self.loc, shape + self.loc.shape).copy())

    def _zeros(self) -> np.ndarray:
        rows = self.loc.shape[:-1] if self.loc.dtype.kind == "f" else self.loc.shape
        return np.zeros(rows, dtype=np.float32)

    def logp(self, value: Any, **kwargs: Any) -> np.ndarray:
        return self._out(self._zeros())

    def entropy(self, **kwargs: Any) -> np.ndarray:
        return self._out(self._zeros())

    def kl(self, other: Distribution, **kwargs: Any) -> np.ndarray:
        return self._out(self._zeros())


class NumpyMultiDistribution(NumpyDistribution):
    """RLlib's multi-distribution for a composite action space (Tuple, Dict, MultiDiscrete:
    `TorchMultiDistribution` / `TorchMultiCategorical` in RLlib), over numpy arrays: `logits`
    are each leaf's distribution inputs one after another, values are nested actions with a
    batch axis on every leaf, and logp, entropy and KL are the sums over the leaves. Made per
    space: `NumpyMultiDistribution.get_partial_dist_cls(layout=ActionLayout(space))`."""

    def __init__(self, logits: Any, layout: Any):
        self.logits = np.asarray(self._in(logits), dtype=np.float32)
        self.layout = layout
        self._dist = MultiActionDistribution(layout)

    @classmethod
    def from_logits(cls, logits: Any, layout: Any = None, **kwargs: Any) -> NumpyMultiDistribution:
        if layout is None:
            raise ValueError(
                "NumpyMultiDistribution.from_logits needs layout= (the module's "
                "get_inference_action_dist_cls() gives the class with it)"
            )
        return cls(logits, layout)

    @staticmethod
    def required_input_dim(space: gym.Space, layout: Any = None, **kwargs: Any) -> int:
        return (layout or ActionLayout(space)).num_inputs

    def _rows(self) -> np.ndarray:
        return self.logits.reshape(-1, self.logits.shape[-1])

    def sample(
        self,
        *,
        sample_shape: Sequence[int] | None = None,
        rng: np.random.Generator | None = None,
        **kwargs: Any,
    ) -> Any:
        if sample_shape:
            raise ValueError("NumpyMultiDistribution.sample(sample_shape=...) is not supported")
        rows, _ = self._dist.act(self._rows(), _rng(rng), True)
        return self._out(self.layout.unflatten(rows))

    def logp(self, value: Any, **kwargs: Any) -> np.ndarray:
        actions = tree_map(lambda leaf: from_torch(leaf)[0], value)
        return self._out(self._dist.logp(self._rows(), self.layout.flatten(actions)))

    def entropy(self, **kwargs: Any) -> np.ndarray:
        return self._out(self._dist.entropy(self._rows()))

    def kl(self, other: Distribution, **kwargs: Any) -> np.ndarray:
        return self._out(self._dist.kl(self._rows(), cast(NumpyMultiDistribution, other)._rows()))

    def to_deterministic(self) -> NumpyDeterministic:
        rows, _ = self._dist.act(self._rows(), np.random.default_rng(0), False)
        return _NestedDeterministic(self.layout.unflatten(rows))._with_inputs_of(self)


class _NestedDeterministic(NumpyDeterministic):
    """A multi-distribution's greedy actions (nested); logp, entropy and KL are 0."""

    def __init__(self, loc: Any):
        self.loc = loc

    def sample(self, *, sample_shape: Sequence[int] | None = None, **kwargs: Any) -> Any:
        return self._out(self.loc)

    def _zeros(self) -> np.ndarray:
        return np.zeros(len(first_leaf(self.loc)), dtype=np.float32)
