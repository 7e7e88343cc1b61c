"""Weight initializers under torch's names, in numpy: what RLlib's model config keys
`fcnet_kernel_initializer`, `fcnet_bias_initializer`, `head_fcnet_kernel_initializer` and
`head_fcnet_bias_initializer` (each with its `_kwargs`) select.

RLlib passes these names to `torch.nn.init` (`get_initializer_fn`): a name must be the in-place
form ending in "_" ("xavier_uniform_"), and its kwargs are torch's. Here each name has a numpy
function with torch's arithmetic (fan-in and fan-out of a weight of torch's shape
`(out_features, in_features)`), drawing from the module's seeded generator, so a seed gives the
same network every time. A function from `torch.nn.init` passed as the value maps onto the numpy
function of its name (torch need not be installed where the network is built); any other callable
is called as torch's are, `fn(array, **kwargs)`, on a float32 array of torch's shape that it fills
in place (or returns).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.random import Generator

from trainer.core.nn import orthogonal

#: A torch tensor's shape (a weight is `(out, in)`).
Shape = tuple[int, ...]

#: Activation names of `torch.nn.init.calculate_gain`.
_GAIN_OF_ACTIVATION = {
    "linear": 1.0,
    "identity": 1.0,
    "sigmoid": 1.0,
    "conv1d": 1.0,
    "conv2d": 1.0,
    "conv3d": 1.0,
    "tanh": 5.0 / 3.0,
    "relu": math.sqrt(2.0),
    "selu": 0.75,
}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch's recommended gain for an activation."""
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + slope**2))
    if nonlinearity not in _GAIN_OF_ACTIVATION:
        raise ValueError(
            f"nonlinearity={nonlinearity!r}: allowed are "
            f"{sorted(_GAIN_OF_ACTIVATION) + ['leaky_relu']}"
        )
    return _GAIN_OF_ACTIVATION[nonlinearity]


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    # torch's layout: a weight is (out_features, in_features).
    return shape[1], shape[0]


def _fan(shape: tuple[int, ...], mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode={mode!r}: allowed are 'fan_in' and 'fan_out'")
    fan_in, fan_out = _fans(shape)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(rng: Generator, shape: Shape, a: float = 0.0, b: float = 1.0) -> np.ndarray:
    return rng.uniform(a, b, shape)


def normal_(rng: Generator, shape: Shape, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
    return rng.normal(mean, std, shape)


def trunc_normal_(
    rng: Generator,
    shape: Shape,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
) -> np.ndarray:
    # Redraw the values outside [a, b] until none is left (as scipy's truncnorm would give).
    values = rng.normal(mean, std, shape)
    outside = (values < a) | (values > b)
    while outside.any():
        values[outside] = rng.normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    return values


def constant_(rng: Generator, shape: Shape, val: float) -> np.ndarray:
    return np.full(shape, val)


def ones_(rng: Generator, shape: Shape) -> np.ndarray:
    return np.ones(shape)


def zeros_(rng: Generator, shape: Shape) -> np.ndarray:
    return np.zeros(shape)


def eye_(rng: Generator, shape: Shape) -> np.ndarray:
    rows, cols = shape
    return np.eye(rows, cols)


def xavier_uniform_(rng: Generator, shape: Shape, gain: float = 1.0) -> np.ndarray:
    fan_in, fan_out = _fans(shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, shape)


def xavier_normal_(rng: Generator, shape: Shape, gain: float = 1.0) -> np.ndarray:
    fan_in, fan_out = _fans(shape)
    return rng.normal(0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), shape)


def kaiming_uniform_(
    rng: Generator,
    shape: Shape,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
) -> np.ndarray:
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(shape, mode))
    bound = math.sqrt(3.0) * std
    return rng.uniform(-bound, bound, shape)


def kaiming_normal_(
    rng: Generator,
    shape: Shape,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
) -> np.ndarray:
    return rng.normal(0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(shape, mode)), shape)


def orthogonal_(rng: Generator, shape: Shape, gain: float = 1.0) -> np.ndarray:
    return orthogonal(rng, shape[0], shape[1], gain)


def sparse_(rng: Generator, shape: Shape, sparsity: float, std: float = 0.01) -> np.ndarray:
    rows, cols = shape
    values = rng.normal(0.0, std, shape)
    zeros_per_column = int(math.ceil(sparsity * rows))
    for column in range(cols):
        values[rng.permutation(rows)[:zeros_per_column], column] = 0.0
    return values


#: torch.nn.init's in-place initializers by name.
INITIALIZERS: dict[str, Callable] = {
    fn.__name__: fn
    for fn in (
        uniform_,
        normal_,
        trunc_normal_,
        constant_,
        ones_,
        zeros_,
        eye_,
        xavier_uniform_,
        xavier_normal_,
        kaiming_uniform_,
        kaiming_normal_,
        orthogonal_,
        sparse_,
    )
}

#: Those that need a 2-D tensor (torch refuses a bias for them).
MATRIX_ONLY = {
    "eye_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
}


@dataclass(frozen=True)
class Initializer:
    """One initializer with its kwargs, ready to fill a weight or a bias."""

    name: str
    fn: Callable
    kwargs: dict = field(default_factory=dict)
    numpy_native: bool = True  # False: a user callable with torch's calling convention

    def __call__(self, rng: Generator, shape: Shape) -> np.ndarray:
        """A float32 array of torch's `shape` (a weight is `(out, in)`)."""
        if self.numpy_native:
            values = self.fn(rng, shape, **self.kwargs)
        else:
            values = np.zeros(shape, dtype=np.float32)
            returned = self.fn(values, **self.kwargs)
            if returned is not None and returned is not values:
                values = np.asarray(returned)
            if values.shape != tuple(shape):
                raise ValueError(
                    f"initializer {self.name} returned shape {values.shape}, "
                    f"expected {tuple(shape)}"
                )
        return np.asarray(values, dtype=np.float32)


def make_initializer(
    value: Any, kwargs: dict | None, *, where: str, key: str, for_bias: bool
) -> Initializer | None:
    """The `Initializer` the model config `where` asks for under `key` (and `key + "_kwargs"`), or
    None for the default. Raises ValueError naming the key for anything torch would refuse."""
    setting = f"{where}[{key!r}]"
    kwargs_setting = f"{where}[{key + '_kwargs'!r}]"
    if value is None:  # the default; RLlib ignores kwargs without an initializer too
        return None
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        raise ValueError(
            f"{kwargs_setting}={kwargs!r}: must be a dict of keyword arguments or None"
        )
    name = _torch_init_name(value)
    if name is None and callable(value):
        return Initializer(
            getattr(value, "__name__", repr(value)), value, dict(kwargs), numpy_native=False
        )
    if name is None:
        name = value
    if not isinstance(name, str):
        raise ValueError(
            f"{setting}={value!r}: must be the name of a torch.nn.init "
            f"initializer ({sorted(INITIALIZERS)}), a callable, or None"
        )
    name = name.lower()
    if not name.endswith("_"):
        raise ValueError(
            f"{setting}={value!r}: not an in-place initializer name; RLlib (torch) "
            f"needs the form ending in '_', e.g. {name + '_'!r}"
        )
    if name not in INITIALIZERS:
        raise ValueError(
            f"{setting}={value!r}: unknown initializer; allowed are {sorted(INITIALIZERS)}"
        )
    if for_bias and name in MATRIX_ONLY:
        raise ValueError(
            f"{setting}={value!r}: needs a 2-D weight, and a bias is 1-D (torch "
            f"refuses it too); for biases use one of "
            f"{sorted(set(INITIALIZERS) - MATRIX_ONLY)}"
        )
    fn = INITIALIZERS[name]
    try:
        inspect.signature(fn).bind(None, (1, 1), **kwargs)
    except TypeError as error:
        raise ValueError(f"{kwargs_setting}={kwargs!r} do not fit {name}: {error}") from None
    initializer = Initializer(name, fn, dict(kwargs))
    try:  # values torch would refuse (mode="fan_avg", an unknown nonlinearity) fail here
        initializer(np.random.default_rng(0), (2,) if for_bias else (2, 2))
    except (ValueError, TypeError) as error:
        raise ValueError(f"{setting}={value!r} with {kwargs_setting}={kwargs!r}: {error}") from None
    return initializer


def _torch_init_name(value: Any) -> str | None:
    """The name of a function from `torch.nn.init` (or of its stand-in that
    `try_import_torch()` gives without torch), without importing torch."""
    if callable(value) and getattr(value, "__module__", "") == "torch.nn.init":
        return value.__name__
    return getattr(value, "torch_init_name", None) if callable(value) else None
