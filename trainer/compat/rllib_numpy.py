"""RLlib's `ray.rllib.utils.numpy`: numpy helpers that RLlib's scripts and custom modules import
(`convert_to_numpy` above all, which turns torch tensors inside any nested structure into numpy
arrays), with RLlib 2.60's behaviour, and the module's `torch` and `tf` names (RLlib's
`try_import_torch()` / `try_import_tf()` results, looked up when first asked for, so that
importing this module does not import torch).

RLlib's deprecated `aligned_array` and `concat_aligned` and its numpy `lstm` are not here.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from types import MappingProxyType
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.compat.rllib_utils import try_import_tf, try_import_torch
from trainer.core import spaces

__all__ = [
    "LARGE_INTEGER",
    "MAX_LOG_NN_OUTPUT",
    "MIN_LOG_NN_OUTPUT",
    "SMALL_NUMBER",
    "convert_to_numpy",
    "fc",
    "flatten_inputs_to_1d_tensor",
    "huber_loss",
    "l2_loss",
    "make_action_immutable",
    "one_hot",
    "one_hot_multidiscrete",
    "relu",
    "sigmoid",
    "softmax",
]

SMALL_NUMBER = 1e-6
LARGE_INTEGER = 100000000
#: Clipping bounds of a network output read as log(x) (such as a log standard deviation).
MIN_LOG_NN_OUTPUT = -5
MAX_LOG_NN_OUTPUT = 2

#: RLlib's module-level names of `try_import_tf()`'s results.
_TF_NAMES = ("tf1", "tf", "tfv")


def __getattr__(name: str) -> Any:
    # RLlib binds these at import (`torch, _ = try_import_torch()`); here on first use, so
    # that importing the module does not import torch.
    if name == "torch":
        return try_import_torch()[0]
    if name in _TF_NAMES:
        return dict(zip(_TF_NAMES, try_import_tf(), strict=True))[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_torch_tensor(item: Any) -> bool:
    # torch's Tensor class only if torch is imported: no tensor can exist otherwise.
    tensor = getattr(sys.modules.get("torch"), "Tensor", None)
    return isinstance(tensor, type) and isinstance(item, tensor)


def _to_numpy_leaf(item: Any) -> Any:
    if _is_torch_tensor(item):
        # A 0-d tensor becomes a Python number, as in RLlib.
        return item.cpu().item() if item.dim() == 0 else item.detach().cpu().numpy()
    return item


def convert_to_numpy(x: Any, reduce_type: bool = True) -> Any:
    """`x` (a value or a nested dict / tuple / list of values) with every torch tensor turned
    into a numpy array (a 0-d tensor into a Python number), moved to the CPU first. With
    `reduce_type`, float arrays become float32 and integer arrays int32 (RLlib's default)."""

    def mapping(item: Any) -> Any:
        converted = _to_numpy_leaf(item)
        if reduce_type and isinstance(converted, np.ndarray):
            if np.issubdtype(converted.dtype, np.floating):
                converted = converted.astype(np.float32)
            elif np.issubdtype(converted.dtype, np.integer):
                converted = converted.astype(np.int32)
        return converted

    return spaces.map_structure(mapping, x)


def fc(x: Any, weights: Any, biases: Any = None, framework: str | None = None) -> np.ndarray:
    """A dense layer's output `x @ weights + biases` (torch tensors taken as numpy; torch's
    transposed weight matrices are transposed back when `framework="torch"`)."""
    x = np.asarray(_to_numpy_leaf(x))
    weights = np.asarray(_to_numpy_leaf(weights))
    if framework == "torch" and x.shape[1] != weights.shape[0] and x.shape[1] == weights.shape[1]:
        weights = weights.T
    output = np.matmul(x, weights)
    return output if biases is None else output + np.asarray(_to_numpy_leaf(biases))


def flatten_inputs_to_1d_tensor(
    inputs: Any,
    spaces_struct: Any = None,
    time_axis: bool = False,
    batch_axis: bool = True,
) -> np.ndarray:
    """The leaves of `inputs` as one float32 array: Discrete leaves one-hot, MultiDiscrete
    leaves multi-one-hot, others flattened, concatenated along the last axis (keeping the
    batch axis, and the time axis with `time_axis`), as RLlib's function of that name."""
    if time_axis and not batch_axis:
        raise ValueError("flatten_inputs_to_1d_tensor: time_axis=True needs batch_axis=True")
    flat_inputs = _leaves(inputs)
    flat_spaces = _leaves(spaces_struct) if spaces_struct is not None else [None] * len(flat_inputs)
    batch = steps = 0  # set from the first input when it has a batch (and time) axis
    out: list[np.ndarray] = []
    for value, space in zip(flat_inputs, flat_spaces, strict=True):
        value = np.asarray(_to_numpy_leaf(value))
        if not out and batch_axis:
            batch = value.shape[0]
            steps = value.shape[1] if time_axis else 0
        if isinstance(space, gym.spaces.Discrete):
            if time_axis:
                value = np.reshape(value, [batch * steps])
            out.append(one_hot(value, depth=int(space.n)).astype(np.float32))
        elif isinstance(space, gym.spaces.MultiDiscrete):
            if time_axis:
                value = np.reshape(value, [batch * steps, -1])
            out.append(one_hot_multidiscrete(value, space.nvec))
        else:
            if time_axis:
                value = np.reshape(value, [batch * steps, -1])
            elif batch_axis:
                value = np.reshape(value, [batch, -1])
            else:
                value = np.reshape(value, [-1])
            out.append(value.astype(np.float32))
    merged = np.concatenate(out, axis=-1)
    return np.reshape(merged, [batch, steps, -1]) if time_axis else merged


def _leaves(struct: Any) -> list:
    """The leaves of a nested dict / tuple / list in dm_tree's order (dict keys sorted)."""
    if isinstance(struct, dict):
        return [leaf for key in sorted(struct) for leaf in _leaves(struct[key])]
    if isinstance(struct, (tuple, list)):
        return [leaf for item in struct for leaf in _leaves(item)]
    return [struct]


def make_action_immutable(obj: Any) -> Any:
    """A numpy array made read-only, a dict as a read-only mapping, anything else as is."""
    if isinstance(obj, np.ndarray):
        obj.setflags(write=False)
        return obj
    if isinstance(obj, OrderedDict):
        return MappingProxyType(dict(obj))
    if isinstance(obj, dict):
        return MappingProxyType(obj)
    return obj


def huber_loss(x: Any, delta: float = 1.0) -> np.ndarray:
    """The Huber loss of each element: x²/2 inside `delta`, linear outside."""
    x = np.asarray(x)
    return np.where(np.abs(x) < delta, np.power(x, 2.0) * 0.5, delta * (np.abs(x) - 0.5 * delta))


def l2_loss(x: Any) -> np.ndarray:
    """Half the squared L2 norm: sum(x²) / 2."""
    return np.sum(np.square(x)) / 2.0


def one_hot(
    x: Any, depth: int = 0, on_value: float = 1.0, off_value: float = 0.0, dtype: Any = np.float32
) -> np.ndarray:
    """Integers (any shape; an int, a numpy array or a torch tensor) as one-hot vectors along a
    new last axis of length `depth` (default: the largest value + 1; 2 for booleans)."""
    x = np.asarray(_to_numpy_leaf(x))
    if x.dtype == np.bool_:
        x, depth = x.astype(np.int64), 2
    return spaces.one_hot(x, depth, on_value, off_value, dtype)


def one_hot_multidiscrete(x: Any, depths: Any) -> np.ndarray:
    """A MultiDiscrete value (or a batch of them) as its sub-spaces' one-hot vectors,
    concatenated."""
    return spaces.one_hot_multidiscrete(np.asarray(_to_numpy_leaf(x)), depths)


def relu(x: Any, alpha: float = 0.0) -> np.ndarray:
    """Leaky ReLU: x where x > 0, else x * alpha."""
    x = np.asarray(x)
    return np.maximum(x, x * alpha)


def sigmoid(x: Any, derivative: bool = False) -> np.ndarray:
    """1 / (1 + e^-x); with `derivative`, x * (1 - x) (x being the sigmoid's output)."""
    x = np.asarray(x)
    return x * (1 - x) if derivative else 1 / (1 + np.exp(-x))


def softmax(x: Any, axis: int = -1, epsilon: float | None = None) -> np.ndarray:
    """The softmax of `x` along `axis`, floored at `epsilon` (default `SMALL_NUMBER`)."""
    epsilon = epsilon or SMALL_NUMBER
    exp = np.exp(x)
    return np.maximum(exp / np.sum(exp, axis, keepdims=True), epsilon)
