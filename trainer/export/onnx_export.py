"""The ONNX export: the policy's description (`trainer.export.description`, its keys in
`trainer.core.policy_description`) as an ONNX graph built with the `onnx` package's helper API,
one node per operation (MatMul, Add, the activations, Slice, Concat, Clip, ArgMax; the LSTM
cell as its matrix products and gates), so that any ONNX runtime runs it and no framework's
exporter is needed.

Inputs: `obs` (float32, `(batch, *observation shape)`); with an LSTM also `state_in_h` and
`state_in_c` (`(batch, cell_size)`). Outputs: `action_dist_inputs` (logits, Q-values, or a
Gaussian's means and log-stds), `greedy_action` (int64 for Discrete, float32 of the Box's shape)
and with an LSTM `state_out_h`, `state_out_c`. The MeanStdFilter is constants at the input. The
model's `metadata_props` hold the spaces and the description (`METADATA_*`) as JSON.

`onnx` is imported here, and this module only when an ONNX export is asked for.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from trainer.core import policy_description as d

#: The exported file in the export folder (RLlib's name for a policy's ONNX export).
ONNX_FILE = "model.onnx"
#: The graph's inputs and outputs.
OBS, STATE_IN_H, STATE_IN_C = "obs", "state_in_h", "state_in_c"
DIST_INPUTS, GREEDY_ACTION, STATE_OUT_H, STATE_OUT_C = (
    "action_dist_inputs",
    "greedy_action",
    "state_out_h",
    "state_out_c",
)
#: metadata_props keys: the spaces (gymnasium's terms) and the whole description.
METADATA_OBSERVATION_SPACE = "observation_space"
METADATA_ACTION_SPACE = "action_space"
METADATA_DESCRIPTION = "localrl_policy"
#: The opsets the graph is written for (Clip takes its bounds as inputs from opset 11 on).
MIN_OPSET = 11
DEFAULT_OPSET = 17


class _Graph:
    """Collects nodes and constant initializers, naming each value once."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        self.arrays = arrays
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, onnx.TensorProto] = {}
        self._count = 0

    def const(self, key: str, value: Any | None = None) -> str:
        """The initializer of array `key` (from the description, or `value`)."""
        if key not in self.initializers:
            array = self.arrays[key] if value is None else np.asarray(value)
            self.initializers[key] = numpy_helper.from_array(array, key)
        return key

    def op(self, op_type: str, *inputs: str, output: str | None = None, **attrs: Any) -> str:
        self._count += 1
        name = output or f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], **attrs))
        return name

    def activation(self, name: str, x: str) -> str:
        if name == "linear":
            return x
        if name == "silu":
            return self.op("Mul", x, self.op("Sigmoid", x))
        return self.op(
            {"tanh": "Tanh", "relu": "Relu", "sigmoid": "Sigmoid", "elu": "Elu"}[name], x
        )

    def layers(self, layers: list[dict], x: str) -> str:
        for layer in layers:
            x = self.op("MatMul", x, self.const(layer[d.WEIGHT]))
            x = self.activation(layer[d.ACTIVATION], self.op("Add", x, self.const(layer[d.BIAS])))
        return x

    def columns(self, x: str, start: int, end: int) -> str:
        """x[:, start:end]."""
        return self.op(
            "Slice",
            x,
            self.const(f"slice.{start}", np.array([start], np.int64)),
            self.const(f"slice.{end}", np.array([end], np.int64)),
            self.const("slice.axis1", np.array([1], np.int64)),
        )

    def clip(self, x: str, low: Any, high: Any) -> str:
        low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
        if low.ndim == 0:  # Clip's bounds are scalars
            self._count += 1
            return self.op(
                "Clip",
                x,
                self.const(f"clip.{self._count}.low", low),
                self.const(f"clip.{self._count}.high", high),
            )
        self._count += 1
        bounded = self.op("Max", x, self.const(f"clip.{self._count}.low", low))
        return self.op("Min", bounded, self.const(f"clip.{self._count}.high", high))


def _bounds(values: list) -> np.ndarray:
    return np.array([float(v) for v in values], dtype=np.float64)


def build_model(description: d.PolicyDescription, opset: int = DEFAULT_OPSET) -> onnx.ModelProto:
    """The ONNX model of `description` for ONNX opset `opset`."""
    newest = onnx.defs.onnx_opset_version()
    if not isinstance(opset, int) or isinstance(opset, bool) or not MIN_OPSET <= opset <= newest:
        raise d.ExportError(
            f"onnx={opset!r}: the ONNX opset must be an int from {MIN_OPSET} to {newest} "
            "(the installed onnx package's newest)"
        )
    spec = description.spec
    g = _Graph(description.arrays)
    obs_space, action_space = spec[d.OBSERVATION_SPACE], spec[d.ACTION_SPACE]
    inputs = [helper.make_tensor_value_info(OBS, TensorProto.FLOAT, ["batch", *obs_space["shape"]])]
    x = g.op("Flatten", OBS, axis=1)
    if spec[d.FILTER] is not None:
        f = spec[d.FILTER]
        x = g.op("Div", g.op("Sub", x, g.const(f[d.MEAN])), g.const(f[d.SCALE]))
        if f[d.CLIP] is not None:
            x = g.clip(x, -f[d.CLIP], f[d.CLIP])
    x = g.layers(spec[d.ENCODER], x)
    outputs = []
    lstm = spec[d.LSTM]
    if lstm is not None:
        size = lstm[d.CELL_SIZE]
        for name in (STATE_IN_H, STATE_IN_C):
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", size]))
        gates = g.op(
            "Add",
            g.op("Add", g.op("MatMul", x, g.const(lstm[d.WEIGHT_IH])), g.const(lstm[d.BIAS])),
            g.op("MatMul", STATE_IN_H, g.const(lstm[d.WEIGHT_HH])),
        )
        i, f_, c_, o = (g.columns(gates, k * size, (k + 1) * size) for k in range(4))
        c_new = g.op(
            "Add",
            g.op("Mul", g.op("Sigmoid", f_), STATE_IN_C),
            g.op("Mul", g.op("Sigmoid", i), g.op("Tanh", c_)),
            output=STATE_OUT_C,
        )
        x = g.op("Mul", g.op("Sigmoid", o), g.op("Tanh", c_new), output=STATE_OUT_H)
        for name in (STATE_OUT_H, STATE_OUT_C):
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", size]))
    heads = spec[d.HEADS]
    if "advantage" in heads:  # dueling Q-values: V + A - mean(A), the mean as a product
        advantages = g.layers(heads["advantage"], x)
        n = description.arrays[heads["advantage"][-1][d.BIAS]].shape[0]
        mean = g.op(
            "MatMul", advantages, g.const("dueling.mean", np.full((n, 1), 1.0 / n, np.float32))
        )
        dist_inputs = g.op("Add", g.layers(heads["value"], x), g.op("Sub", advantages, mean))
    else:
        dist_inputs = g.layers(heads["pi"] if "pi" in heads else heads["q"], x)
    width = description.arrays[
        (heads.get("pi") or heads.get("q") or heads["advantage"])[-1][d.BIAS]
    ].shape[0]
    log_std = spec[d.LOG_STD]
    if log_std is not None:
        if log_std[d.FREE] is not None:
            shape = g.op("Shape", dist_inputs)
            free = g.op("Expand", g.const(log_std[d.FREE]), shape)
            dist_inputs = g.op("Concat", dist_inputs, free, axis=1)
            width *= 2
        if log_std[d.CLIP] is not None:
            half = width // 2
            clipped = g.clip(g.columns(dist_inputs, half, width), -log_std[d.CLIP], log_std[d.CLIP])
            dist_inputs = g.op("Concat", g.columns(dist_inputs, 0, half), clipped, axis=1)
    g.op("Identity", dist_inputs, output=DIST_INPUTS)
    outputs.insert(
        0, helper.make_tensor_value_info(DIST_INPUTS, TensorProto.FLOAT, ["batch", width])
    )
    _greedy(g, spec, DIST_INPUTS, width)
    if action_space["type"] == "Discrete":
        greedy_info = helper.make_tensor_value_info(GREEDY_ACTION, TensorProto.INT64, ["batch"])
    else:
        greedy_info = helper.make_tensor_value_info(
            GREEDY_ACTION, TensorProto.FLOAT, ["batch", *action_space["shape"]]
        )
    outputs.insert(1, greedy_info)
    graph = helper.make_graph(
        g.nodes, "localrl_policy", inputs, outputs, list(g.initializers.values())
    )
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="localrl",
        ir_version=helper.find_min_ir_version_for(opsets),
    )
    helper.set_model_props(
        model,
        {
            METADATA_OBSERVATION_SPACE: json.dumps(obs_space),
            METADATA_ACTION_SPACE: json.dumps(action_space),
            METADATA_DESCRIPTION: json.dumps(spec),
        },
    )
    onnx.checker.check_model(model)
    return model


def _greedy(g: _Graph, spec: dict, dist_inputs: str, width: int) -> None:
    """The greedy action node (`GREEDY_ACTION`): argmax, or the (squashed) mean mapped onto
    the Box's bounds as the EnvRunner maps it (`trainer.core.models.env_actions`)."""
    greedy, space = spec[d.GREEDY], spec[d.ACTION_SPACE]
    if greedy[d.KIND] == d.ARGMAX:
        g.op("ArgMax", dist_inputs, output=GREEDY_ACTION, axis=1, keepdims=0)
        return
    actions = g.columns(dist_inputs, 0, width // 2)
    if greedy[d.KIND] == d.TANH_MEAN:
        actions = g.clip(g.op("Tanh", actions), -1.0, 1.0)
    low, high = _bounds(space["low"]), _bounds(space["high"])
    if greedy[d.NORMALIZE] and np.all(np.isfinite(low)) and np.all(np.isfinite(high)):
        unit = g.op("Add", g.clip(actions, -1.0, 1.0), g.const("greedy.one", np.float32(1.0)))
        half_range = g.const("greedy.half_range", (0.5 * (high - low)).astype(np.float32))
        actions = g.op(
            "Add", g.const("greedy.low", low.astype(np.float32)), g.op("Mul", unit, half_range)
        )
    elif greedy[d.CLIP]:
        actions = g.clip(actions, low, high)
    shape = g.const("greedy.shape", np.array([-1, *space["shape"]], np.int64))
    g.op("Reshape", actions, shape, output=GREEDY_ACTION)


def write_onnx(
    description: d.PolicyDescription, export_dir: str, opset: int = DEFAULT_OPSET
) -> str:
    """Writes `model.onnx` into `export_dir` (made if missing); returns its path."""
    model = build_model(description, opset)
    os.makedirs(export_dir, exist_ok=True)
    path = os.path.join(export_dir, ONNX_FILE)
    onnx.save(model, path)
    return path
