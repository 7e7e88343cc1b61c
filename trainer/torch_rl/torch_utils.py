"""RLlib's torch helpers (`ray.rllib.utils.torch_utils`): the tensor conversion of nested data,
the gradient norms and clipping RLlib's learners use, the losses and encodings (Huber, one-hot,
two-hot, symlog, sequence masks) and `FLOAT_MIN` / `FLOAT_MAX`, the finite stand-ins for -inf and
inf in logits. Needs the `torch` extra.

Each function takes and returns what RLlib 2.60's does, with these differences:
- nested data (`convert_to_torch_tensor`, `copy_torch_tensors`, `flatten_inputs_to_1d_tensor`)
  is walked here without dm-tree: dicts (and other mappings), lists, tuples and namedtuples are
  structures, anything else a leaf; flattening visits a mapping's keys in sorted order, as
  dm-tree does. The old API stack's `RepeatedValues` is a leaf here.
- `update_target_network` (also `trainer.torch_rl.target_networks`', RLlib's
  `ray.rllib.core.learner.utils` one) refuses a `tau` outside [0, 1] and copies integer buffers.
- `apply_grad_clipping` and `warn_if_infinite_kl_divergence` take RLlib's old-stack `policy`
  argument; any object with a `config` mapping (`"grad_clip"`) serves the first, and the second
  calls the policy's `loss_initialized()` where it has one.
- `two_hot` without a `device` makes its result on `value`'s device (RLlib's: on the CPU).
- `concat_multi_gpu_td_errors` (the old stack's multi-GPU towers of a `TorchPolicy`) is not
  served: under the RLlib launcher it is a placeholder that refuses when called.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any, cast

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from trainer.core.learner import SMALL_NUMBER

try:
    from packaging.version import Version
except ImportError:  # torch vendors packaging (RLlib's version type)
    from torch._vendor.packaging.version import Version  # type: ignore[no-redef]

logger = logging.getLogger(__name__)

#: Finite stand-ins for -inf and inf (a masked logit): -inf and inf make NaNs in backprop.
FLOAT_MIN = -3.4e38
FLOAT_MAX = 3.4e38
#: The torch version `torch.compile` needs (RLlib's constant).
TORCH_COMPILE_REQUIRED_VERSION = Version("2.0.0")

#: What `clip_gradients` accepts as `grad_clip_by`.
_CLIP_MODES = ("value", "norm", "global_norm")
#: Where the norms map infinities (RLlib's bounds: an infinite norm stays comparable).
_NORM_BOUND = 10e8


# -- nested data -------------------------------------------------------------------------------
def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _map_nested(fn: Callable[[Any], Any], value: Any) -> Any:
    """`fn` applied to every leaf of `value`, its structure (and container types) kept."""
    if isinstance(value, Mapping):
        mapped = {key: _map_nested(fn, item) for key, item in value.items()}
        return mapped if type(value) is dict else _same_mapping(value, mapped)
    if _is_namedtuple(value):
        return type(value)(*(_map_nested(fn, item) for item in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_map_nested(fn, item) for item in value)
    return fn(value)


def _same_mapping(original: Mapping, mapped: dict) -> Any:
    try:
        return cast(Any, type(original))(mapped)
    except TypeError:  # a mapping type that cannot be made from a dict
        return mapped


def _flatten_nested(value: Any) -> list[Any]:
    """The leaves of `value` in dm-tree's order (a mapping's keys sorted). A gymnasium Dict or
    Tuple space is a structure of its sub-spaces."""
    if isinstance(value, Mapping):
        return [leaf for key in sorted(value) for leaf in _flatten_nested(value[key])]
    if isinstance(value, (tuple, list, gym.spaces.Tuple)):
        return [leaf for item in value for leaf in _flatten_nested(item)]
    return [value]


def convert_to_torch_tensor(
    x: Any,
    device: str | torch.device | None = None,
    pin_memory: bool = False,
    use_stream: bool = False,
    stream: Any = None,
) -> Any:
    """`x` (a leaf or a nested dict / list / tuple) with every leaf a tensor on `device` (default
    the CPU): numpy arrays and numbers become tensors, floating-point ones other than float16 as
    float32; tensors are moved (and cast the same way). None leaves, and arrays of objects or
    strings, stay as they are. On a CUDA device, `pin_memory` pins the host copies first, and the
    copies run on `stream` (with `use_stream`; a new stream if None) or the device's default
    stream."""
    target = torch.device(device) if device is not None else torch.device("cpu")
    on_cuda = target.type == "cuda" and torch.cuda.is_available()
    copy_stream = None
    if on_cuda:
        if not use_stream:
            copy_stream = torch.cuda.default_stream(device=target)
        elif stream is None:
            copy_stream = torch.cuda.Stream()
        else:
            if not isinstance(stream, (torch.cuda.Stream, torch.cuda.classes.Stream)):
                raise TypeError(
                    f"convert_to_torch_tensor: stream must be a torch.cuda.Stream, not "
                    f"{type(stream).__name__}"
                )
            copy_stream = stream

    def leaf(item: Any) -> Any:
        if item is None:
            return None
        if isinstance(item, torch.Tensor):
            tensor = item
        else:
            array = np.asarray(item)
            if array.dtype == object or array.dtype.type is np.str_:
                return item
            if array.flags.writeable:
                tensor = torch.from_numpy(array)
            else:  # torch warns that the tensor may write to a read-only array
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tensor = torch.from_numpy(array)
        if tensor.is_floating_point() and tensor.dtype != torch.float16:
            tensor = tensor.float()
        if not on_cuda:
            return tensor.to(target)
        if pin_memory:
            tensor = tensor.pin_memory()
        with torch.cuda.stream(copy_stream):
            return tensor.to(target, non_blocking=True)

    return _map_nested(leaf, x)


def copy_torch_tensors(x: Any, device: str | torch.device | None = None) -> Any:
    """`x` with every tensor leaf a detached copy (moved to `device` when given); other leaves
    are the same objects."""

    def leaf(item: Any) -> Any:
        if not isinstance(item, torch.Tensor):
            return item
        return item.detach().clone() if device is None else item.detach().to(device)

    return _map_nested(leaf, x)


def flatten_inputs_to_1d_tensor(
    inputs: Any, spaces_struct: Any = None, time_axis: bool = False
) -> torch.Tensor:
    """The leaves of `inputs` (tensors with a batch axis, and a time axis after it with
    `time_axis`) as one float tensor of shape (B, n) or (B, T, n): a leaf of a `Discrete` space
    in `spaces_struct` (the same structure) one-hot, of a `MultiDiscrete` space multi-one-hot,
    any other flattened. Leaves are taken in dm-tree's order (dict keys sorted)."""
    leaves = _flatten_nested(inputs)
    spaces = _flatten_nested(spaces_struct) if spaces_struct is not None else [None] * len(leaves)
    if not leaves:
        raise ValueError("flatten_inputs_to_1d_tensor: inputs has no leaves")
    batch_size = leaves[0].shape[0]
    steps = leaves[0].shape[1] if time_axis else 1
    rows = batch_size * steps
    parts = []
    for value, space in zip(leaves, spaces, strict=False):
        if isinstance(space, gym.spaces.Discrete):
            parts.append(one_hot(value.reshape(rows) if time_axis else value, space).float())
        elif isinstance(space, gym.spaces.MultiDiscrete):
            parts.append(one_hot(value.reshape(rows, -1) if time_axis else value, space).float())
        else:
            parts.append(value.reshape(rows, -1).float())
    merged = torch.cat(parts, dim=-1)
    return merged.reshape(batch_size, steps, -1) if time_axis else merged


# -- statistics and norms ----------------------------------------------------------------------
def explained_variance(y: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """max(-1, 1 - var(y - pred) / (var(y) + SMALL_NUMBER)) over the batch axis (torch's
    unbiased variance) after squeezing both: a scalar tensor (of several columns, the first
    column's)."""
    targets = y.squeeze()
    ratio = torch.var(targets - pred.squeeze(), dim=0) / (torch.var(targets, dim=0) + SMALL_NUMBER)
    floor = torch.full((1,), -1.0, device=pred.device)
    return torch.maximum(floor, 1 - ratio)[0]


def global_norm(tensors: list[torch.Tensor]) -> torch.Tensor:
    """The L2 norm of all `tensors` together: sqrt(sum of every element squared). Differentiable
    (nothing is detached)."""
    if not tensors:
        return torch.tensor(0.0)
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensors]))


def _tensor_norms(tensors: list[torch.Tensor]) -> torch.Tensor:
    """Each tensor's L2 norm (detached), infinities mapped to +-1e9, as one tensor."""
    norms = torch.stack(torch._foreach_norm([t.detach() for t in tensors]))
    return norms.nan_to_num(neginf=-_NORM_BOUND, posinf=_NORM_BOUND)


def compute_global_norm(gradients_list: list[torch.Tensor | None]) -> torch.Tensor:
    """The global L2 norm of the gradients (None entries skipped; 0.0 for none), each tensor's
    norm and the total with infinities mapped to 1e9 (RLlib's overflow guard)."""
    gradients = [g for g in gradients_list if g is not None]
    if not gradients:
        return torch.tensor(0.0)
    total = torch.linalg.vector_norm(_tensor_norms(gradients))
    return total.nan_to_num(neginf=-_NORM_BOUND, posinf=_NORM_BOUND)


def clip_gradients(
    gradients_dict: dict[Any, torch.Tensor | None],
    *,
    grad_clip: float | None = None,
    grad_clip_by: str = "value",
) -> torch.Tensor | None:
    """Clips the gradients in `gradients_dict` (None entries skipped) as RLlib's learners do:
    "value" puts each element into [-grad_clip, grad_clip] (new tensors in the dict); "norm"
    scales each tensor whose L2 norm exceeds `grad_clip` down to it (in place); "global_norm"
    scales all of them, in place, by grad_clip / max(global norm + 1e-6, grad_clip) and returns
    the global norm before clipping. `grad_clip=None`: nothing is clipped. Returns None except
    for "global_norm"."""
    if grad_clip is None:
        return None
    if grad_clip_by not in _CLIP_MODES:
        raise ValueError(
            f"clip_gradients: grad_clip_by={grad_clip_by!r} must be one of "
            + ", ".join(repr(mode) for mode in _CLIP_MODES)
        )
    if grad_clip_by == "value":
        for key, grad in gradients_dict.items():
            if grad is not None:
                gradients_dict[key] = torch.clip(grad, -grad_clip, grad_clip)
        return None
    if grad_clip_by == "norm":
        for grad in gradients_dict.values():
            if grad is None:
                continue
            norm = torch.linalg.vector_norm(grad).nan_to_num(
                neginf=-_NORM_BOUND, posinf=_NORM_BOUND
            )
            if norm > grad_clip:
                grad.mul_(grad_clip / norm)
        return None
    gradients = [g.detach() for g in gradients_dict.values() if g is not None]
    total = compute_global_norm(list(gradients))
    if not gradients:
        return total
    # A coefficient in (0, 1] (below grad_clip the gradients stay), multiplied in without a
    # data-dependent branch (no device sync), one call for all of them.
    coefficient = torch.clamp(grad_clip / torch.clamp(total + 1e-6, min=grad_clip), max=1.0)
    torch._foreach_mul_(gradients, coefficient.to(gradients[0].device))
    return total


def apply_grad_clipping(policy: Any, optimizer: torch.optim.Optimizer, loss: Any) -> dict:
    """RLlib's old-stack clipping of the gradients already in `optimizer`'s parameters: each
    parameter group's gradients clipped by norm to `policy.config["grad_clip"]` (None: not
    clipped); returns {"grad_gnorm": the sum over the groups of min(group norm, grad_clip)}, or
    {} when no group has gradients. `loss` is not read (RLlib's signature)."""
    grad_clip = policy.config["grad_clip"]
    limit = float("inf") if grad_clip is None else grad_clip
    total = 0.0
    groups_with_grads = 0
    for group in optimizer.param_groups:
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        groups_with_grads += 1
        # torch clips in place and returns the norm before clipping.
        norm = float(nn.utils.clip_grad_norm_(params, limit))
        total += min(norm, limit)
    return {"grad_gnorm": total} if groups_with_grads else {}


# -- losses ------------------------------------------------------------------------------------
def huber_loss(x: torch.Tensor, delta: float = 1.0) -> torch.Tensor:
    """Elementwise Huber loss: 0.5 * x^2 where |x| < delta, else delta * (|x| - 0.5 * delta)."""
    magnitude = torch.abs(x)
    return torch.where(magnitude < delta, 0.5 * x * x, delta * (magnitude - 0.5 * delta))


def l2_loss(x: torch.Tensor) -> torch.Tensor:
    """0.5 * the sum of `x`'s elements squared."""
    return 0.5 * torch.sum(x * x)


def softmax_cross_entropy_with_logits(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy of the softmax of `logits` against the distributions `labels`, over the
    last axis (tf.nn.softmax_cross_entropy_with_logits)."""
    return -torch.sum(labels * nn.functional.log_softmax(logits, dim=-1), dim=-1)


def reduce_mean_ignore_inf(x: torch.Tensor, axis: int | None = None) -> torch.Tensor:
    """The mean of `x` over `axis` (None: all elements) leaving out its -inf entries."""
    kept = x != float("-inf")
    values = torch.where(kept, x, torch.zeros_like(x))
    counts = kept.float()
    if axis is None:
        return values.sum() / counts.sum()
    return values.sum(dim=axis) / counts.sum(dim=axis)


# -- encodings ---------------------------------------------------------------------------------
def one_hot(x: torch.Tensor, space: gym.Space) -> torch.Tensor:
    """Integer actions or observations of a `Discrete` space as one-hot vectors (int64, a new
    last axis of `space.n`); of a `MultiDiscrete` space (x: (B, k), or (B, ...) of the space's
    shape) as each component's one-hot vector, concatenated. Any other space: ValueError."""
    if isinstance(space, gym.spaces.Discrete):
        return nn.functional.one_hot(x.long(), int(space.n))
    if isinstance(space, gym.spaces.MultiDiscrete):
        depths = np.ravel(space.nvec)
        if np.ndim(space.nvec) > 1:
            x = x.reshape(x.shape[0], -1)
        return torch.cat(
            [nn.functional.one_hot(x[:, i].long(), int(n)) for i, n in enumerate(depths)], dim=-1
        )
    raise ValueError(f"one_hot: unsupported space {space} (Discrete and MultiDiscrete are)")


def two_hot(
    value: torch.Tensor,
    num_buckets: int = 255,
    lower_bound: float = -20.0,
    upper_bound: float = 20.0,
    device: str | torch.device | None = None,
) -> torch.Tensor:
    """`value` (shape (B,)) as (B, num_buckets) "two-hot" vectors (DreamerV3's encoding): the
    buckets are evenly spaced from `lower_bound` to `upper_bound`, and each value (clipped to
    them) is spread over the two buckets around it, with weights summing to 1 whose weighted
    bucket values give the value back."""
    value = torch.clamp(value, lower_bound, upper_bound)
    spacing = (upper_bound - lower_bound) / (num_buckets - 1)
    position = (value - lower_bound) / spacing
    below = torch.floor(position)
    above = torch.ceil(position)
    # On a bucket exactly: its neighbor above gets weight 0 (at the top, the one below does).
    above = torch.where(above == below, above + 1.0, above)
    above = torch.where(above == num_buckets, above - 2.0, above)
    value_below = lower_bound + below * spacing
    value_above = lower_bound + above * spacing
    weight_below = (value - value_above) / (value_below - value_above)
    out = torch.zeros(value.shape[0], num_buckets, device=device or value.device)
    out.scatter_(1, below.long().unsqueeze(1), weight_below.to(out.dtype).unsqueeze(1))
    out.scatter_(1, above.long().unsqueeze(1), (1.0 - weight_below).to(out.dtype).unsqueeze(1))
    return out


def symlog(x: torch.Tensor) -> torch.Tensor:
    """sign(x) * log(|x| + 1) (DreamerV3's squashing)."""
    return torch.sign(x) * torch.log1p(torch.abs(x))


def inverse_symlog(y: torch.Tensor) -> torch.Tensor:
    """The inverse of `symlog`: sign(y) * (exp(|y|) - 1)."""
    return torch.sign(y) * torch.expm1(torch.abs(y))


def sequence_mask(
    lengths: torch.Tensor,
    maxlen: int | None = None,
    dtype: Any = None,
    time_major: bool = False,
) -> torch.Tensor:
    """tf.sequence_mask: for lengths of shape (B,), the boolean mask (B, maxlen) that is True at
    [b, t] for t < lengths[b] ((maxlen, B) with `time_major`); `maxlen` defaults to the longest
    length. As RLlib 2.60's, the mask is boolean whatever `dtype` says."""
    if maxlen is None:
        maxlen = int(lengths.max())
    steps = torch.arange(int(maxlen), device=lengths.device)
    mask = steps < lengths.unsqueeze(-1)
    return mask.movedim(-1, 0) if time_major else mask


# -- networks and seeds ------------------------------------------------------------------------
def update_target_network(main_net: nn.Module, target_net: nn.Module, tau: float) -> None:
    """Polyak update of `target_net` from `main_net`: target = tau * main + (1 - tau) * target,
    entry by entry of their state dicts, in place (tau=1.0: a copy). Integer buffers are copied
    (RLlib averages them too, then truncates); a `tau` outside [0, 1] is refused."""
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"update_target_network(tau={tau!r}): tau must be in [0.0, 1.0]")
    with torch.no_grad():
        main_state = main_net.state_dict()
        for name, target_value in target_net.state_dict().items():
            if target_value.is_floating_point():
                target_value.mul_(1.0 - tau).add_(main_state[name], alpha=tau)
            else:
                target_value.copy_(main_state[name])


def set_torch_seed(seed: int | None = None) -> None:
    """Seeds torch (no-op for None) and makes it deterministic as RLlib does: with CUDA >= 10.2,
    CUDA's generators too and cuBLAS's workspace setting (`CUBLAS_WORKSPACE_CONFIG`); without,
    `torch.use_deterministic_algorithms(True)`; cuDNN deterministic, its benchmark mode off."""
    if seed is None:
        return
    torch.manual_seed(seed)
    cuda = torch.version.cuda
    if cuda is not None and tuple(int(part) for part in cuda.split(".")[:2]) >= (10, 2):
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.cuda.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
    else:
        torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def warn_if_infinite_kl_divergence(policy: Any, kl_divergence: torch.Tensor) -> None:
    """Logs a warning when `kl_divergence` is infinite (and the policy's loss is initialized,
    where it says): a near-zero action probability, which destabilizes training."""
    initialized = getattr(policy, "loss_initialized", None)
    if initialized is not None and not initialized():
        return
    if bool(torch.isinf(kl_divergence).any()):
        logger.warning(
            "KL divergence is non-finite: an action in some state has near-zero probability "
            "(natural in a deterministic env whose optimal policy never takes it), and it will "
            "likely destabilize the model and the training. Set the KL loss coefficient to zero "
            "or raise the policy's entropy."
        )


def _dynamo_is_available() -> bool:
    """Whether `torch._dynamo` (torch.compile's tracer) imports."""
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:
        return False
    return True


__all__ = [
    "FLOAT_MAX",
    "FLOAT_MIN",
    "SMALL_NUMBER",
    "TORCH_COMPILE_REQUIRED_VERSION",
    "apply_grad_clipping",
    "clip_gradients",
    "compute_global_norm",
    "convert_to_torch_tensor",
    "copy_torch_tensors",
    "explained_variance",
    "flatten_inputs_to_1d_tensor",
    "global_norm",
    "huber_loss",
    "inverse_symlog",
    "l2_loss",
    "one_hot",
    "reduce_mean_ignore_inf",
    "sequence_mask",
    "set_torch_seed",
    "softmax_cross_entropy_with_logits",
    "symlog",
    "two_hot",
    "update_target_network",
    "warn_if_infinite_kl_divergence",
]
