"""Neural-network pieces in numpy: an MLP with hand-written backprop, Adam, global-norm gradient
clipping, and the two action distributions (categorical, diagonal Gaussian) with the gradients the
learners need. float32 throughout."""

from __future__ import annotations

import array
import contextlib
import functools
import math
from collections.abc import Iterator, MutableMapping
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np

from trainer.core.blas import BlasThreads
from trainer.errors import NonFiniteUpdateError
from trainer.util.state_checks import (
    StateError,
    require_float_array,
    require_int,
    require_map,
    require_number,
)

ACTIVATIONS = ("tanh", "relu", "linear", "swish", "silu", "elu", "sigmoid")

#: True while networks are built whose every parameter is overwritten before first use (see
#: `weights_set_later`). A context variable: a runner built on a thread of the training process
#: (the thread backend) never affects the learner's networks built on another thread.
_WEIGHTS_SET_LATER: ContextVar[bool] = ContextVar("weights_set_later", default=False)


@contextlib.contextmanager
def weights_set_later() -> Iterator[None]:
    """Within it, an `MLP` starts with zero weights and biases and draws nothing from its
    generator: for a network whose every parameter is overwritten before it computes anything
    (a remote EnvRunner's, which the learner's weights reach before its first request). Its
    random initialisation (a QR decomposition per layer) was most of such a runner's start-up
    CPU, and the values were thrown away. Every network is built from a generator of its own
    (`seeding`), so leaving these draws out shifts no other random stream."""
    token = _WEIGHTS_SET_LATER.set(True)
    try:
        yield
    finally:
        _WEIGHTS_SET_LATER.reset(token)


def weights_are_set_later() -> bool:
    """Whether networks built now are within `weights_set_later`."""
    return _WEIGHTS_SET_LATER.get()


#: A module's weight initialisation runs on one BLAS thread (see `BlasThreads`).
_INIT_THREADS = BlasThreads()


def orthogonal(rng: np.random.Generator, n_in: int, n_out: int, gain: float) -> np.ndarray:
    """Orthogonal initialisation (Saxe et al.), as in CleanRL / SB3."""
    a = rng.standard_normal((max(n_in, n_out), min(n_in, n_out)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    if n_in < n_out:
        q = q.T
    return np.ascontiguousarray(gain * q[:n_in, :n_out], dtype=np.float32)


def activate(name: str, x: np.ndarray) -> np.ndarray:
    if name == "tanh":
        return np.tanh(x)
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "linear":
        return x
    if name in ("swish", "silu"):
        return x / (1.0 + np.exp(-x))
    if name == "elu":
        return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    raise ValueError(f"unknown activation {name!r}; allowed: {list(ACTIVATIONS)}")


def activate_grad(name: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d activation / d x, from the pre-activation x and the output y."""
    if name == "tanh":
        return 1.0 - y * y
    if name == "relu":
        return (x > 0).astype(x.dtype)
    if name == "linear":
        return np.ones_like(x)
    if name in ("swish", "silu"):
        s = 1.0 / (1.0 + np.exp(-x))
        return s + y * (1.0 - s)
    if name == "elu":
        return np.where(x > 0, 1.0, y + 1.0).astype(x.dtype)
    if name == "sigmoid":
        return y * (1.0 - y)
    raise ValueError(f"unknown activation {name!r}")


#: Activations whose derivative is a function of their output alone: a training pass computes
#: them in place over the pre-activation, which it then need not keep.
OUTPUT_ONLY_GRADIENT = ("tanh", "relu", "linear", "sigmoid")


def activate_in_place(name: str, x: np.ndarray) -> np.ndarray:
    """`activate(name, x)`, written over `x` for the activations of OUTPUT_ONLY_GRADIENT."""
    if name == "tanh":
        return np.tanh(x, out=x)
    if name == "relu":
        return np.maximum(x, 0.0, out=x)
    if name == "sigmoid":
        np.negative(x, out=x)
        np.exp(x, out=x)
        x += 1.0
        return np.reciprocal(x, out=x)
    if name == "linear":
        return x
    raise ValueError(f"{name!r} needs its input for the gradient: use activate()")


def activate_for_backward(name: str, pre: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """A training pass's activation of `pre` (a fresh layer output): the output, and the
    pre-activation to keep for `backprop_activation` (None for OUTPUT_ONLY_GRADIENT, computed
    in place over it)."""
    if name in OUTPUT_ONLY_GRADIENT:
        return activate_in_place(name, pre), None
    return activate(name, pre), pre


def backprop_activation(
    name: str, d: np.ndarray, x: np.ndarray | None, y: np.ndarray
) -> np.ndarray:
    """d * activation'(x), computed over `d` (which the caller owns). `x` (the pre-activation)
    may be None for the activations of OUTPUT_ONLY_GRADIENT."""
    if name == "linear":
        return d
    if name == "tanh":  # 1 - y^2
        slope = np.multiply(y, y)
        np.subtract(1.0, slope, out=slope)
        d *= slope
        return d
    if name == "relu":
        d *= y > 0
        return d
    if name == "sigmoid":  # y (1 - y)
        slope = np.subtract(1.0, y)
        slope *= y
        d *= slope
        return d
    if x is None:
        raise ValueError(f"the {name!r} activation's gradient needs its pre-activation")
    d *= activate_grad(name, x, y)
    return d


class MLP:
    """Dense layers `sizes[0] -> ... -> sizes[-1]`, an activation after every hidden layer, linear
    output. Parameters are a flat list `[W0, b0, W1, b1, ...]` that optimisers update in place.

    `activation` is one name for every hidden layer, or a list with one per hidden layer.
    `initializers` holds one `(kernel, bias)` pair of `trainer.core.initializers.Initializer` per layer;
    None (or a None in a pair) keeps the default: orthogonal weights (gain sqrt(2) after ReLU-like
    activations, 1 otherwise, `output_gain` for the last layer) and zero biases.
    """

    def __init__(
        self,
        sizes: list[int],
        activation: str | list[str],
        rng: np.random.Generator,
        output_gain: float = 1.0,
        initializers: list | None = None,
    ):
        self.sizes = list(sizes)
        num_layers = len(sizes) - 1
        self.activations = (
            [activation] * max(num_layers - 1, 0)
            if isinstance(activation, str)
            else list(activation)
        )
        if len(self.activations) != max(num_layers - 1, 0):
            raise ValueError(
                f"{len(self.activations)} activations for {num_layers - 1} hidden layers"
            )
        # The activation an encoder applies after its last layer (see `models.activated`).
        self.activation = (
            activation
            if isinstance(activation, str)
            else (self.activations[-1] if self.activations else "linear")
        )
        initializers = initializers or [(None, None)] * num_layers
        self.params: list[np.ndarray] = []
        if _WEIGHTS_SET_LATER.get():
            for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
                self.params += [
                    np.zeros((n_in, n_out), dtype=np.float32),
                    np.zeros(n_out, dtype=np.float32),
                ]
            return
        with _INIT_THREADS():  # QR per layer: one BLAS thread (see BlasThreads)
            self._initialise(sizes, rng, output_gain, initializers)

    def _initialise(
        self, sizes: list[int], rng: np.random.Generator, output_gain: float, initializers: list
    ) -> None:
        num_layers = len(sizes) - 1
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            kernel_init, bias_init = initializers[i]
            if kernel_init is not None:
                # torch's layout is (out, in); these layers compute x @ W with W (in, out).
                weight = np.ascontiguousarray(kernel_init(rng, (n_out, n_in)).T)
            else:
                after = self.activations[i] if i < num_layers - 1 else self.activation
                gain = (
                    output_gain
                    if i == num_layers - 1
                    else (np.sqrt(2.0) if after in ("relu", "elu", "swish", "silu") else 1.0)
                )
                weight = orthogonal(rng, n_in, n_out, gain)
            self.params.append(weight)
            self.params.append(
                bias_init(rng, (n_out,))
                if bias_init is not None
                else np.zeros(n_out, dtype=np.float32)
            )

    @property
    def num_layers(self) -> int:
        return len(self.params) // 2

    def forward(self, x: np.ndarray) -> np.ndarray:
        """Inference only: no cache."""
        num_layers = len(self.params) // 2
        last = num_layers - 1
        for i in range(num_layers):
            x = x @ self.params[2 * i]
            x += self.params[2 * i + 1]
            if i < last:
                x = activate_layer(self.activations[i], x)
        return x

    def forward_train(self, x: np.ndarray) -> tuple[np.ndarray, list]:
        """Forward pass that keeps what `backward` needs: per layer its input, its
        pre-activation (None when the activation's gradient needs only the output) and its
        output."""
        cache: list[tuple[np.ndarray, np.ndarray | None, np.ndarray]] = []
        num_layers = len(self.params) // 2
        last = num_layers - 1
        for i in range(num_layers):
            pre = x @ self.params[2 * i]
            pre += self.params[2 * i + 1]
            if i == last:
                cache.append((x, None, pre))
                x = pre
                continue
            out, pre = activate_for_backward(self.activations[i], pre)
            cache.append((x, pre, out))
            x = out
        return x, cache

    def backward(
        self,
        cache: list,
        d_out: np.ndarray,
        grads: list[np.ndarray] | None = None,
        input_grad: bool = True,
    ) -> tuple[list[np.ndarray], np.ndarray | None]:
        """Gradients of the parameters (same order as `params`), written into `grads` when
        given (arrays of the parameters' shapes, e.g. views of a flat buffer), and of the input
        (None without `input_grad`)."""
        if grads is None:
            grads = [np.empty_like(p) for p in self.params]
        d = d_out
        last = len(self.params) // 2 - 1
        for i in range(last, -1, -1):
            x, pre, out = cache[i]
            if i != last:
                d = backprop_activation(self.activations[i], d, pre, out)
            np.matmul(x.T, d, out=grads[2 * i])
            # The bias gradient, d's column sums, as a product with ones (half the time of
            # d.sum(axis=0) for a minibatch).
            np.matmul(_ones(len(d), d.dtype), d, out=grads[2 * i + 1])
            if i > 0 or input_grad:
                weight = self.params[2 * i]
                if weight.shape[1] == 1:
                    # A one-output layer (a value head): d @ W.T is an outer product, each
                    # entry one multiplication, which the broadcast multiply computes alike;
                    # matmul with an inner dimension of one took 4x as long (128 x 256).
                    d = d * weight.T
                else:
                    d = d @ weight.T
        return grads, (d if input_grad else None)


@functools.lru_cache(maxsize=16)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    ones = np.ones(n, dtype=dtype)
    ones.flags.writeable = False
    return ones


def activate_layer(name: str, x: np.ndarray) -> np.ndarray:
    """`activate` over `x`, a layer's fresh output that nothing else holds."""
    return activate_in_place(name, x) if name in OUTPUT_ONLY_GRADIENT else activate(name, x)


def forward_layers(
    layers: list[tuple[np.ndarray, np.ndarray, str | None]], x: np.ndarray
) -> np.ndarray:
    """Rows `x` through dense layers `(weight (in, out), bias, activation or None)`: the
    EnvRunners' numpy forward of a default torch module's MLP (one order of operations, so
    that every copy of those weights computes the same bits)."""
    for weight, bias, activation in layers:
        x = x @ weight
        x += bias
        if activation is not None:
            x = activate_layer(activation, x)
    return x


def accepts_rows(obs: Any, shapes: set[tuple[int, ...]]) -> bool:
    """Whether `obs` is a batch the numpy forward of a default torch module computes: a float
    array whose observations have one of `shapes` (a row, or a 2-D Box's own shape)."""
    return (
        type(obs) is np.ndarray
        and obs.dtype.kind == "f"
        and obs.ndim >= 2
        and obs.shape[1:] in shapes
    )


def forward_head(out: np.ndarray, log_std: np.ndarray | None, clip: float | None) -> np.ndarray:
    """A default torch module's action head's output `out` as its distribution inputs: with a
    free `log_std`, the log-stds appended (clipped to `clip`); else, with `clip`, the second
    half (a Gaussian's log-stds) clipped in place."""
    if log_std is not None:
        log_stds = np.broadcast_to(log_std, out.shape)
        if clip is not None:
            log_stds = np.clip(log_stds, -clip, clip)
        return np.concatenate([out, log_stds], axis=-1)
    if clip is not None:
        half = out.shape[-1] // 2
        np.clip(out[..., half:], -clip, clip, out=out[..., half:])
    return out


#: Adam's moments are flushed to zero below float32's smallest normal number every this many
#: steps (`Adam.step`).
FLUSH_SUBNORMALS_EVERY = 16
_SMALLEST_NORMAL = np.finfo(np.float32).tiny


class AdamGroup(MutableMapping):
    """The one parameter group of a numpy `Adam` as torch spells it: "lr", "betas", "eps" and
    "params" (the flat parameter vector), read from and written to the Adam itself."""

    _KEYS = ("params", "lr", "betas", "eps")

    def __init__(self, adam: Adam) -> None:
        self._adam = adam

    def __getitem__(self, key: str) -> Any:
        adam = self._adam
        if key == "lr":
            return adam.lr
        if key == "betas":
            return (adam.beta1, adam.beta2)
        if key == "eps":
            return adam.eps
        if key == "params":
            return [adam.params]
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        adam = self._adam
        if key == "lr":
            adam.lr = float(value)
        elif key == "betas":
            adam.beta1, adam.beta2 = (float(b) for b in value)
        elif key == "eps":
            adam.eps = float(value)
        else:
            raise KeyError(f"{key!r}: a numpy Adam's group sets lr, betas and eps")

    def __delitem__(self, key: str) -> None:
        raise KeyError(f"{key!r}: an Adam's settings cannot be removed")

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


class Adam:
    """Adam (Kingma & Ba) on one flat parameter vector, updated in place; torch's defaults.

    The module's parameters are views into that vector (`PolicyModule.flat_params`), so one
    vectorised update covers every layer.

    Every `FLUSH_SUBNORMALS_EVERY` steps the moments' subnormal entries (below 1.2e-38) become
    zero. A parameter whose gradient stays zero (a dead ReLU unit) has a first moment that
    shrinks by beta1 each step into the subnormal range and stays there: 0.9 times the
    smallest subnormal rounds back to it. Intel CPUs compute on subnormals through a slow
    microcode path: with a quarter of RLlib's Pendulum network's moments subnormal, a step
    took 1.4 ms on an Intel Xeon instead of 0.1 ms (AMD's Zen 4 computes them at full speed).
    Such an entry's share of a step is below 1e-30 of the learning rate.
    """

    def __init__(
        self,
        params: np.ndarray,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.params = params
        self.lr = lr
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.m = np.zeros_like(params)
        self.v = np.zeros_like(params)
        self._scratch = np.zeros_like(params)
        self.step_count = 0

    @property
    def param_groups(self) -> list[AdamGroup]:
        """torch's view of the settings, for RLlib code that reads or sets an optimizer's
        rate (`optimizer.param_groups[0]["lr"]`): one group, a live view of this Adam."""
        return [AdamGroup(self)]

    def step(self, grad: np.ndarray) -> None:
        """One update from the flat gradient `grad`, in the parameters' dtype (float32): every
        scalar is cast to it first, since a float64 scalar would make numpy compute the whole
        pass in float64 and cast back."""
        self.step_count += 1
        scalar = self.params.dtype.type
        bias1 = 1.0 - self.beta1**self.step_count
        bias2 = 1.0 - self.beta2**self.step_count
        m, v, scratch = self.m, self.v, self._scratch
        # First moment: m <- beta1 m + (1 - beta1) g.
        m *= scalar(self.beta1)
        np.multiply(grad, scalar(1.0 - self.beta1), out=scratch)
        m += scratch
        # Second moment: v <- beta2 v + (1 - beta2) g^2.
        v *= scalar(self.beta2)
        np.multiply(grad, grad, out=scratch)
        scratch *= scalar(1.0 - self.beta2)
        v += scratch
        # Bias-corrected step, lr * m_hat / (sqrt(v_hat) + eps), with the corrections moved into
        # two scalars: lr sqrt(bias2) / bias1 * m / (sqrt(v) + eps sqrt(bias2)).
        np.sqrt(v, out=scratch)
        scratch += scalar(self.eps * math.sqrt(bias2))
        np.divide(m, scratch, out=scratch)
        scratch *= scalar(self.lr * math.sqrt(bias2) / bias1)
        self.params -= scratch
        if self.step_count % FLUSH_SUBNORMALS_EVERY == 0:
            np.abs(m, out=scratch)
            np.copyto(m, 0, where=scratch < _SMALLEST_NORMAL)
            np.copyto(v, 0, where=v < _SMALLEST_NORMAL)

    def get_state(self) -> dict:
        """A snapshot: copies of the moments, which later steps update in place."""
        return {
            "m": self.m.copy(),
            "v": self.v.copy(),
            "step_count": self.step_count,
            "lr": self.lr,
        }

    def check_state(self, state: dict, where: str = "optimizer") -> None:
        """Raises `StateError` unless `state` fits this optimizer: finite float moments of the
        parameters' shape (never broadcast), a non-negative second moment, a step count and a
        finite non-negative learning rate."""
        require_map(state, where, ("m", "v", "step_count", "lr"))
        require_float_array(state["m"], f"{where}['m']", self.params.shape)
        v = require_float_array(state["v"], f"{where}['v']", self.params.shape)
        if (v < 0).any():
            raise StateError(f"{where}['v']", "Adam's second moment cannot be negative")
        require_int(state["step_count"], f"{where}['step_count']")
        require_number(state["lr"], f"{where}['lr']", minimum=0.0)

    def set_state(self, state: dict) -> None:
        self.check_state(state)
        self.m[...] = state["m"]
        self.v[...] = state["v"]
        self.step_count = int(state["step_count"])
        self.lr = float(state["lr"])


def flatten(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([a.ravel() for a in arrays])


def clip_by_global_norm(grad: np.ndarray, max_norm: float | None) -> float:
    """Scales the flat gradient in place so its L2 norm is at most `max_norm`; returns the norm
    before clipping."""
    norm = float(np.sqrt(np.dot(grad, grad)))
    if max_norm is not None and norm > max_norm:
        grad *= max_norm / (norm + 1e-6)
    return norm


def check_finite_update(loss: float, grad_norm: float, algorithm: str) -> None:
    """Raises `NonFiniteUpdateError` unless the loss and the gradient's global norm are finite
    (the norm is NaN or infinite when any gradient element is); called before the optimizer
    step, so the weights never take a NaN."""
    if math.isfinite(loss) and math.isfinite(grad_norm):
        return
    raise NonFiniteUpdateError(
        f"{algorithm} learner: the {'loss' if not math.isfinite(loss) else 'gradient'} is "
        f"{'NaN' if math.isnan(loss if not math.isfinite(loss) else grad_norm) else 'infinite'} "
        f"(loss {loss}, gradient norm {grad_norm}); the update was stopped before the weights "
        "changed. Common causes: NaN or huge observations or rewards (scale them), a learning "
        "rate too large, or grad_clip=None with exploding gradients"
    )


def clip_gradients(grad: np.ndarray, max_value: float | None, by: str, sizes: list[int]) -> float:
    """Clips the flat gradient in place as RLlib's `grad_clip_by` says: "global_norm" (the
    norm of all of it), "norm" (each parameter tensor's norm; `sizes` are the tensors' lengths
    in order), or "value" (each element to [-max_value, max_value]). Returns the global norm
    before clipping."""
    if by == "global_norm":
        return clip_by_global_norm(grad, max_value)
    norm = float(np.sqrt(np.dot(grad, grad)))
    if max_value is None:
        return norm
    if by == "value":
        np.clip(grad, -max_value, max_value, out=grad)
        return norm
    offset = 0
    for size in sizes:
        clip_by_global_norm(grad[offset : offset + size], max_value)
        offset += size
    return norm


# ---------------------------------------------------------------------------------------------
# Action distributions. `inputs` are the policy head's outputs for a batch.
# ---------------------------------------------------------------------------------------------
def _row_max(x: np.ndarray) -> np.ndarray:
    """Each row's largest entry (of a 2-d batch), kept as a column."""
    if x.shape[-1] == 2 and x.ndim == 2:
        # Two columns: one elementwise maximum of them. A reduction along a last axis this
        # short costs numpy four times as much, and a maximum is exact either way.
        return np.maximum(x[:, 0], x[:, 1])[:, None]
    # ufunc reductions directly: the array methods add a Python wrapper call each.
    return np.maximum.reduce(x, axis=-1, keepdims=True)


def _row_sum(x: np.ndarray) -> np.ndarray:
    """Each row's sum (of a 2-d batch). With two columns it is their elementwise sum: the same
    one rounding as the reduction (x0 + x1), at a quarter of its cost."""
    if x.shape[-1] == 2 and x.ndim == 2:
        return x[:, 0] + x[:, 1]
    return np.add.reduce(x, axis=-1)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - _row_max(logits)
    return shifted - np.log(_row_sum(np.exp(shifted)))[..., None]


class LossTerms(NamedTuple):
    """What PPO's loss needs from an action distribution, per row, with each term's gradient
    with respect to the distribution inputs (`loss_grads`)."""

    logp: np.ndarray  # log-likelihood of the taken action
    d_logp: np.ndarray
    entropy: np.ndarray
    d_entropy: np.ndarray
    kl: np.ndarray  # KL(old || new)
    d_kl: np.ndarray


class Categorical:
    """Discrete actions from logits."""

    @staticmethod
    def num_inputs(n: int) -> int:
        return n

    #: Up to this many logits (rows x actions), `act` works on Python floats: numpy's
    #: per-call overhead is most of the time for the few rows of a sampling step.
    SMALL = 64

    @staticmethod
    def act(
        logits: np.ndarray, rng: np.random.Generator, explore: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Actions and their log-probabilities from one softmax (the sampling hot path)."""
        if logits.size <= Categorical.SMALL and logits.ndim == 2:
            return _act_small(logits, rng, explore)
        if explore and logits.ndim == 2 and logits.shape[1] == 2:
            return _act_two(logits, rng)
        return _act_rows(logits, rng, explore)

    @staticmethod
    def logp(logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return np.take_along_axis(log_softmax(logits), actions.astype(np.int64)[:, None], 1)[:, 0]

    @staticmethod
    def entropy(logits: np.ndarray) -> np.ndarray:
        logp = log_softmax(logits)
        return -(np.exp(logp) * logp).sum(axis=-1)

    @staticmethod
    def kl(old_logits: np.ndarray, new_logits: np.ndarray) -> np.ndarray:
        """KL(old || new) per row."""
        old_logp = log_softmax(old_logits)
        return (np.exp(old_logp) * (old_logp - log_softmax(new_logits))).sum(axis=-1)

    @staticmethod
    def loss_grads(logits: np.ndarray, actions: np.ndarray, old_logits: np.ndarray) -> LossTerms:
        """d logp(a)/d logits, d entropy/d logits, d KL(old||new)/d logits, plus logp, entropy
        and kl values: everything PPO's loss needs, from one softmax."""
        logp_all = log_softmax(logits)
        probs = np.exp(logp_all)
        a = actions.astype(np.int64)
        rows = np.arange(len(a))
        logp = logp_all[rows, a]
        d_logp = -probs
        d_logp[rows, a] += 1.0
        entropy = -_row_sum(probs * logp_all)
        d_entropy = -probs * (logp_all + entropy[:, None])
        old_logp_all = log_softmax(old_logits)
        old_probs = np.exp(old_logp_all)
        kl = _row_sum(old_probs * (old_logp_all - logp_all))
        d_kl = probs - old_probs
        return LossTerms(logp, d_logp, entropy, d_entropy, kl, d_kl)


def _act_rows(
    logits: np.ndarray, rng: np.random.Generator, explore: bool
) -> tuple[np.ndarray, np.ndarray]:
    """`Categorical.act` on arrays: an inverse-CDF draw from one uniform per row."""
    logp_all = log_softmax(logits)
    if explore:
        cdf = np.cumsum(np.exp(logp_all), axis=-1)
        u = rng.random((logits.shape[0], 1))
        actions = np.minimum((cdf < u).sum(axis=-1), logits.shape[-1] - 1)
    else:
        actions = logp_all.argmax(axis=-1)
    return actions, logp_all[np.arange(len(actions)), actions]


def _act_two(logits: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """`_act_rows` drawing from two actions (CartPole's), the same values bit for bit in
    fewer array operations: the CDF's first column is the first action's probability itself,
    so one comparison with the row's uniform draws the action (no cumulative sum, count or
    clip)."""
    logp_all = log_softmax(logits)
    u = rng.random((logits.shape[0], 1))
    actions = (np.exp(logp_all[:, 0]) < u[:, 0]).astype(np.int64)
    return actions, np.where(actions == 1, logp_all[:, 1], logp_all[:, 0])


def _act_small(
    logits: np.ndarray, rng: np.random.Generator, explore: bool
) -> tuple[np.ndarray, np.ndarray]:
    """`Categorical.act` for a few rows, row by row on Python floats (float64): the same
    inverse-CDF draw from the same uniforms (one per row, as the array path takes them). An
    action can differ from the float32 array path only where a uniform falls within rounding
    of a CDF step."""
    actions, logps = act_small_rows(logits, rng, explore)
    return np.array(actions, dtype=np.int64), np.array(logps, dtype=logits.dtype)


def act_small_rows(
    logits: np.ndarray, rng: np.random.Generator, explore: bool
) -> tuple[list[int], list[float]]:
    """`_act_small`'s actions and log-probabilities as Python lists (the log-probabilities
    still rounded to the logits' precision): the multi-agent runner hands them out per agent,
    and one array per step back to lists was a tenth of its time."""
    rows = logits.tolist()
    uniforms = rng.random(len(rows)).tolist() if explore else [None] * len(rows)
    draw = _draws_from_two if len(rows[0]) == 2 else _draws
    actions, logps = draw(rows, uniforms)
    if logits.dtype == np.float32:
        # Rounded to float32 as the array path's logps are (C floats: a third of numpy's
        # time for a few values; the same round-to-nearest).
        logps = array.array("f", logps).tolist()
    elif logits.dtype != np.float64:
        logps = np.array(logps, dtype=logits.dtype).tolist()
    return actions, logps


def _draws(rows: list[list[float]], uniforms: list) -> tuple[list[int], list[float]]:
    """Each row's action (the first whose CDF exceeds its uniform, or the most likely one when
    the uniform is None) and its log-probability."""
    actions, logps = [], []
    for row, uniform in zip(rows, uniforms, strict=True):
        top = max(row)
        weights = [math.exp(x - top) for x in row]
        total = sum(weights)
        if uniform is None:
            action = row.index(top)
        else:
            threshold = uniform * total
            action, cumulative = len(row) - 1, 0.0
            for index, weight in enumerate(weights[:-1]):
                cumulative += weight
                if threshold < cumulative:
                    action = index
                    break
        actions.append(action)
        logps.append(row[action] - top - math.log(total))
    return actions, logps


def _draws_from_two(rows: list[list[float]], uniforms: list) -> tuple[list[int], list[float]]:
    """`_draws` for rows of two logits, with the same floating-point operations: the larger
    logit's weight is exp(0) = 1 exactly, so one exp is left, and the CDF's one step is the
    first weight."""
    exp, log = math.exp, math.log
    actions, logps = [], []
    for (first, second), uniform in zip(rows, uniforms, strict=True):
        if first >= second:
            top, first_weight, total = first, 1.0, 1.0 + exp(second - first)
        else:
            top, first_weight = second, exp(first - second)
            total = first_weight + 1.0
        if uniform is None:
            action = 0 if first >= second else 1
        else:
            action = 0 if uniform * total < first_weight else 1
        actions.append(action)
        logps.append((second if action else first) - top - log(total))
    return actions, logps


class DiagGaussian:
    """Continuous actions: inputs are `[mean, log_std]` concatenated."""

    LOG_2PI = float(np.log(2.0 * np.pi))

    @staticmethod
    def num_inputs(n: int) -> int:
        return 2 * n

    @staticmethod
    def _halves(inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`[mean, log_std]` as two views (slices: `np.split`'s overhead was a tenth of a
        minibatch's loss)."""
        n = inputs.shape[-1] // 2
        return inputs[..., :n], inputs[..., n:]

    @classmethod
    def _split(cls, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, log_std = cls._halves(inputs)
        # np.clip's own result, without its dispatch overhead.
        return mean, np.minimum(np.maximum(log_std, -20.0), 2.0)

    @classmethod
    def sample(cls, inputs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        mean, log_std = cls._split(inputs)
        return (mean + np.exp(log_std) * rng.standard_normal(mean.shape)).astype(np.float32)

    @classmethod
    def deterministic(cls, inputs: np.ndarray) -> np.ndarray:
        return cls._split(inputs)[0]

    @classmethod
    def act(
        cls, inputs: np.ndarray, rng: np.random.Generator, explore: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        actions = cls.sample(inputs, rng) if explore else cls.deterministic(inputs)
        return actions, cls.logp(inputs, actions)

    @classmethod
    def logp(cls, inputs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        mean, log_std = cls._split(inputs)
        z = (actions - mean) / np.exp(log_std)
        return (-0.5 * z * z - log_std - 0.5 * cls.LOG_2PI).sum(axis=-1)

    @classmethod
    def entropy(cls, inputs: np.ndarray) -> np.ndarray:
        _, log_std = cls._split(inputs)
        return (log_std + 0.5 * (cls.LOG_2PI + 1.0)).sum(axis=-1)

    @classmethod
    def kl(cls, old_inputs: np.ndarray, new_inputs: np.ndarray) -> np.ndarray:
        old_mean, old_log_std = cls._split(old_inputs)
        mean, log_std = cls._split(new_inputs)
        var = np.exp(2 * log_std)
        return (
            log_std
            - old_log_std
            + (np.exp(2 * old_log_std) + (old_mean - mean) ** 2) / (2 * var)
            - 0.5
        ).sum(axis=-1)

    @classmethod
    def loss_grads(
        cls, inputs: np.ndarray, actions: np.ndarray, old_inputs: np.ndarray
    ) -> LossTerms:
        mean, log_std = cls._split(inputs)
        # Gradients through the clip of log_std are zero outside the clip range.
        raw_log_std = cls._halves(inputs)[1]
        in_range = ((raw_log_std > -20.0) & (raw_log_std < 2.0)).astype(inputs.dtype)
        std = np.exp(log_std)
        z = (actions - mean) / std
        logp = (-0.5 * z * z - log_std - 0.5 * cls.LOG_2PI).sum(axis=-1)
        d_logp = np.concatenate([z / std, (z * z - 1.0) * in_range], axis=-1)
        entropy = (log_std + 0.5 * (cls.LOG_2PI + 1.0)).sum(axis=-1)
        d_entropy = np.concatenate([np.zeros_like(mean), in_range], axis=-1)
        old_mean, old_log_std = cls._split(old_inputs)
        var = std * std
        spread = np.exp(2 * old_log_std) + (old_mean - mean) ** 2
        kl = (log_std - old_log_std + spread / (2 * var) - 0.5).sum(axis=-1)
        d_kl = np.concatenate([(mean - old_mean) / var, (1.0 - spread / var) * in_range], axis=-1)
        return LossTerms(logp, d_logp, entropy, d_entropy, kl, d_kl)
