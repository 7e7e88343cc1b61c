"""The EnvRunners' forward pass of a default torch module, in numpy: the shared machinery.

An EnvRunner asks its module for one small batch of action-distribution inputs per env step
(one row per sub-env). Through torch each such call costs ~100 us of dispatch (module calls,
no_grad, tensor wrapping) for microseconds of arithmetic; the numpy modules' MLP math does the
same products without it. For the default modules whose forward pass is a known structure,
the view (`TorchModuleView`) therefore computes the distribution inputs here.

A default module's class names its numpy forward (`numpy_forward_class`, read from that
class itself, so a subclass is not taken for it): a class in the algorithm's folder (its
`numpy_inference` module) that builds the forward from the module's parts with the pieces
here (`NumpyLayers` for a `TorchMLP`, `NumpyHead` for an `MLPHead`, `numpy_mlp_encoder` for an
`MLPEncoder`), noting each parameter it copies in a `WatchedParameters`, and raises `NotKnown`
for a structure it does not compute. Only inference-only copies (the EnvRunners') compute
here; a learner's module, and so `compute_single_action`, runs in torch. A recurrent default
module (`use_lstm`, never inference-only, as RLlib's) computes its steps here
(`numpy_recurrent_inference`: `NumpyLSTMEncoder`). Any other module (a subclass, a user's
`TorchRLModule`, a CNN encoder or tokenizer, a module with forward hooks, on a GPU, not
float32) runs its own forward in torch. The weights are numpy copies (weight
matrices transposed to `(in, out)`, contiguous), taken again whenever a parameter was written
since (torch's version counters see `set_state`'s `load_state_dict`, a multi-agent module's
`set_state`, any in-place write) or moved (`module.to(...)`), and at each `set_state` /
`set_weights` of the view (which also sends a module that got a forward hook back to torch).

The products are numpy's (OpenBLAS) where torch's use its own kernels: float32 results agree
to rounding, not always to the last bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.modules import module as torch_module

from trainer.core.nn import accepts_rows, forward_head, forward_layers
from trainer.torch_rl.networks import LSTMEncoder, MLPEncoder, MLPHead, TorchMLP

#: torch's activation layers of `TorchMLP` -> the numpy activations' names.
ACTIVATION_NAMES: dict[type[nn.Module], str] = {
    nn.Tanh: "tanh",
    nn.ReLU: "relu",
    nn.SiLU: "silu",
    nn.Sigmoid: "sigmoid",
    nn.ELU: "elu",
}


class NotKnown(Exception):
    """Raised by a numpy forward's constructor: the module is not a structure it computes, so
    the module runs in torch."""


class WatchedParameters(list):
    """The parameters a numpy forward copied, in order (for their version counters), with
    `copies`: each one's numpy copy and whether it was transposed (to copy them again in
    place when new weights arrive)."""

    def __init__(self) -> None:
        super().__init__()
        self.copies: list[tuple[np.ndarray, bool]] = []


def _weights(
    parameter: torch.Tensor, watched: WatchedParameters, transpose: bool = False
) -> np.ndarray:
    """A numpy copy of a float32 CPU `parameter` (transposed with `transpose`: torch's
    `(out, in)` weight as the `(in, out)` matrix a row batch is multiplied by), C-contiguous:
    a product of a few rows with a transposed view took three times as long at 8 rows
    (OpenBLAS). The parameter and its copy are noted in `watched`."""
    if parameter.device.type != "cpu" or parameter.dtype != torch.float32:
        raise NotKnown
    source = parameter.detach().numpy()
    array = np.ascontiguousarray(source.T if transpose else source)
    watched.append(parameter)
    watched.copies.append((array, transpose))
    return array


class NumpyLayers:
    """A `TorchMLP`'s layers as numpy: `(weight (in, out), bias, activation)` each."""

    def __init__(self, mlp: TorchMLP, watched: WatchedParameters) -> None:
        if type(mlp) is not TorchMLP:
            raise NotKnown
        self.layers: list[tuple[np.ndarray, np.ndarray, str | None]] = []
        for layer in mlp.mlp:
            if type(layer) is nn.Linear:
                if layer.bias is None:
                    raise NotKnown
                weight = _weights(layer.weight, watched, transpose=True)
                self.layers.append((weight, _weights(layer.bias, watched), None))
                continue
            name = ACTIVATION_NAMES.get(type(layer))
            if name is None or not self.layers or self.layers[-1][2] is not None:
                raise NotKnown
            if isinstance(layer, nn.ELU) and layer.alpha != 1.0:
                raise NotKnown
            weight, bias, _ = self.layers[-1]
            self.layers[-1] = (weight, bias, name)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return forward_layers(self.layers, x)


class NumpyHead:
    """An `MLPHead` as numpy: its layers, then the log-stds as the head makes them."""

    def __init__(self, head: MLPHead, watched: WatchedParameters) -> None:
        if type(head) is not MLPHead:
            raise NotKnown
        self.net = NumpyLayers(head.net, watched)
        self.log_std = _weights(head.log_std, watched) if head.free_log_std else None
        self.clip = head.log_std_clip_param if head.clip_log_std else None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return forward_head(self.net(x), self.log_std, self.clip)


def numpy_mlp_encoder(encoder: nn.Module, watched: WatchedParameters) -> NumpyLayers:
    """An `MLPEncoder`'s layers as numpy; `NotKnown` for any other encoder (a CNN, a user's)."""
    if type(encoder) is not MLPEncoder:
        raise NotKnown  # a CNN encoder, or one of the user's
    return NumpyLayers(encoder.net, watched)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function, as tanh (no overflow for any float32 `x`), in place."""
    x *= 0.5
    np.tanh(x, out=x)
    x += 1.0
    x *= 0.5
    return x


class NumpyLSTMEncoder:
    """An `LSTMEncoder` (an MLP tokenizer, one `nn.LSTM` layer) as numpy, one time step at a
    time: what an EnvRunner's recurrent module computes for a step of its sub-envs."""

    def __init__(self, encoder: nn.Module, watched: WatchedParameters) -> None:
        if type(encoder) is not LSTMEncoder or encoder.image_shape is not None:
            raise NotKnown  # (a CNN tokenizer: torch's forward)
        lstm = encoder.lstm
        if (
            type(lstm) is not nn.LSTM
            or lstm.num_layers != 1
            or lstm.bidirectional
            or not lstm.bias
            or lstm.proj_size
            or not lstm.batch_first
        ):
            raise NotKnown
        self.tokenizer = numpy_mlp_encoder(encoder.tokenizer, watched)
        # torch's gates are rows of (input, forget, cell, output) blocks of `size` each.
        self.w_ih = _weights(lstm.weight_ih_l0, watched, transpose=True)
        self.w_hh = _weights(lstm.weight_hh_l0, watched, transpose=True)
        self.b_ih = _weights(lstm.bias_ih_l0, watched)
        self.b_hh = _weights(lstm.bias_hh_l0, watched)
        self.size = int(encoder.cell_size)

    def step(self, x: np.ndarray, state: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        """Rows `x` `(B, D)` and the state `{"h": (B, 1, H), "c": (B, 1, H)}` (RLlib's
        layout) -> the features `(B, H)` and the state after the step, in the same layout."""
        rows, size = len(x), self.size
        h = np.asarray(state["h"], dtype=np.float32).reshape(rows, size)
        c = np.asarray(state["c"], dtype=np.float32).reshape(rows, size)
        gates = self.tokenizer(x) @ self.w_ih
        gates += self.b_ih
        recurrent = h @ self.w_hh
        recurrent += self.b_hh
        gates += recurrent
        input_gate = _sigmoid(gates[:, :size])
        forget_gate = _sigmoid(gates[:, size : 2 * size])
        cell_gate = np.tanh(gates[:, 2 * size : 3 * size])
        output_gate = _sigmoid(gates[:, 3 * size :])
        c_out = forget_gate * c
        c_out += input_gate * cell_gate
        h_out = output_gate * np.tanh(c_out)
        return h_out, {"h": h_out[:, None], "c": c_out[:, None]}


def has_hooks(module: nn.Module) -> bool:
    """Whether a forward (pre-)hook, global or on any submodule, would see its forward."""
    if torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks:
        return True
    return any(m._forward_hooks or m._forward_pre_hooks for m in module.modules())


#: The class attribute by which a default module names the class of its numpy forward (a
#: callable `(module, watched) -> forward`, `forward(obs rows) -> distribution inputs`, in the
#: algorithm's folder). Read from the module's own class only: a subclass, which may override
#: the forward passes, runs them in torch.
NUMPY_FORWARD_CLASS = "numpy_forward_class"


def _versions(parameters: list[torch.Tensor]) -> list[int]:
    return [parameter._version for parameter in parameters]


class NumpyInference:
    """A default torch module's distribution inputs in numpy (see the module docstring):
    `numpy_inference(module)` builds one, or None for a module that runs in torch. Call
    `current()` before each use: False once a parameter was written or moved (then build a
    new one)."""

    def __init__(
        self,
        forward: Any,
        watched: WatchedParameters,
        in_dim: int,
        obs_shape: tuple[int, ...],
    ) -> None:
        self._forward = forward
        self._watched = watched
        self._versions = _versions(watched)
        self._first_pointer = watched[0].data_ptr()
        self._pointers = [parameter.data_ptr() for parameter in watched]
        #: The width of the observation rows it takes (the encoder's input).
        self.in_dim = in_dim
        #: The shapes of one observation it takes: a row, or a 2-D Box's own shape.
        self._obs_shapes = {(in_dim,), obs_shape}

    def current(self) -> bool:
        """Whether its copies still hold the parameters' values: no parameter was written
        since (torch's version counters: `load_state_dict`, an optimizer's step, any in-place
        write) and none moved (`module.to(...)` replaces every parameter's memory)."""
        return (
            _versions(self._watched) == self._versions
            and self._watched[0].data_ptr() == self._first_pointer
        )

    def refresh(self) -> bool:
        """Copies the parameters' values into its arrays again, in place (new weights
        arrived); False, changing nothing, when a parameter's memory was replaced (moved,
        cast): then build a new one."""
        watched = self._watched
        if [parameter.data_ptr() for parameter in watched] != self._pointers:
            return False
        for parameter, (array, transposed) in zip(watched, watched.copies, strict=True):
            source = parameter.detach().numpy()
            np.copyto(array, source.T if transposed else source)
        self._versions = _versions(watched)
        return True

    def accepts(self, obs: Any) -> bool:
        """Whether `obs` is a batch it computes: a float array of rows of `in_dim` columns,
        or of a 2-D Box's observations (anything else, such as raw Discrete indices, goes to
        the torch module)."""
        return accepts_rows(obs, self._obs_shapes)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The distribution inputs `(B, ...)` float32 for a batch `obs` it `accepts` (as the
        torch module reads them: flattened rows, cast to float32)."""
        return self._forward(self._rows(obs))

    def step(self, obs: np.ndarray, state: Any) -> tuple[np.ndarray, Any]:
        """A recurrent module's step (`numpy_recurrent_inference`): the distribution inputs
        `(B, ...)` float32 and the state out (each leaf `(B, ...)`) for a batch `obs` it
        `accepts` and the carried states batched (RLlib's layout)."""
        return self._forward.step(self._rows(obs), state)

    def _rows(self, obs: np.ndarray) -> np.ndarray:
        """`obs` as the torch module reads it: flattened rows, cast to float32."""
        return obs.reshape(len(obs), self.in_dim).astype(np.float32, copy=False)


def numpy_inference(module: nn.Module) -> NumpyInference | None:
    """The numpy forward pass of `module` when it is an inference-only copy (an EnvRunner's:
    it never trains, its weights arrive by `set_state`) of a default module of a known
    structure (see the module docstring), with float32 weights on the CPU and no forward
    hooks; None otherwise (a learner's module always runs in torch)."""
    if not module.inference_only:
        return None
    return _built(module, recurrent=False)


def numpy_recurrent_inference(module: nn.Module) -> NumpyInference | None:
    """The numpy forward pass of one step of a recurrent default module (its `step`), with
    float32 weights on the CPU and no forward hooks; None for any other module. A recurrent
    module is never inference-only (RLlib's: the EnvRunners carry the critic's state too), so
    any copy qualifies; the weights are copied again when they change (`current`)."""
    return _built(module, recurrent=True)


def _built(module: nn.Module, *, recurrent: bool) -> NumpyInference | None:
    build = type(module).__dict__.get(NUMPY_FORWARD_CLASS)
    if build is None or has_hooks(module):
        return None
    watched = WatchedParameters()
    try:
        forward = build(module, watched)
    except NotKnown:
        return None
    if recurrent != bool(getattr(forward, "recurrent", False)):
        return None  # (a recurrent module's forward is its `step`, any other's `__call__`)
    encoding = module._encode_obs
    return NumpyInference(forward, watched, int(encoding.dim), tuple(encoding.shape))
