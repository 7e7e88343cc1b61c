"""The exported policy's description (`PolicyDescription`) as data: its keys, its action
distributions and greedy rules, and the helpers that describe a numpy MLP's layers.

The export (`trainer.export`) writes both its formats from one description; each algorithm's
folder describes its own modules' networks into it (a module class names its describer by the
class attribute `export_describer`, "module:function", which `trainer.export.description`
resolves). So this vocabulary sits low, where the algorithms' folders and the torch helpers
(`trainer.torch_rl.export_layers`) may import it, and the export above them re-exports it.

The description is the module's inference path, one step:

    obs (float32, flattened) -> [(obs - mean) / scale, clipped]   MeanStdFilter, if any
      -> encoder layers (each activated)  -> [LSTM cell: state in -> state out]
      -> heads ("pi"; DQN's "q", or "advantage" and "value" when dueling)
      -> action distribution inputs (a free log-std appended, log-stds clipped as the module
         clips them)  -> greedy action (argmax; a Gaussian's mean, tanh-squashed for SAC;
         mapped onto a Box's bounds as the EnvRunner maps it: `normalize_actions`,
         `clip_actions`)

A describer fills in `ENCODER`, `HEADS` and `DISTRIBUTION` (and `LSTM`, `LOG_STD` where its
module has them); the export adds the rest.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from trainer.core.nn import ACTIVATIONS, MLP
from trainer.errors import UnsupportedValue

#: The description's format, written into both exports.
FORMAT_NAME = "localrl-policy"
FORMAT_VERSION = 1

# Keys of the description (`PolicyDescription.spec`, the numpy export's policy.json).
FORMAT = "format"
VERSION = "version"
ALGORITHM = "algorithm"
MODULE_ID = "module_id"
FRAMEWORK = "framework"
OBSERVATION_SPACE = "observation_space"
ACTION_SPACE = "action_space"
FILTER = "filter"
ENCODER = "encoder"
LSTM = "lstm"
HEADS = "heads"
LOG_STD = "log_std"
DISTRIBUTION = "distribution"
GREEDY = "greedy"
# A layer's keys, a filter's, an LSTM's, a log-std's, the greedy rule's.
WEIGHT, BIAS, ACTIVATION = "weight", "bias", "activation"
MEAN, SCALE, CLIP = "mean", "scale", "clip"
WEIGHT_IH, WEIGHT_HH, CELL_SIZE = "weight_ih", "weight_hh", "cell_size"
FREE = "free"
KIND, NORMALIZE = "kind", "normalize"

#: The action distributions (`DISTRIBUTION`) and the greedy rules (`GREEDY`'s `KIND`).
CATEGORICAL, DIAG_GAUSSIAN, SQUASHED_GAUSSIAN, Q_VALUES = (
    "categorical",
    "diag_gaussian",
    "squashed_gaussian",
    "q_values",
)
ARGMAX, MEAN_ACTION, TANH_MEAN = "argmax", "mean", "tanh_mean"
#: Each action distribution's greedy rule.
GREEDY_OF = {
    CATEGORICAL: ARGMAX,
    Q_VALUES: ARGMAX,
    DIAG_GAUSSIAN: MEAN_ACTION,
    SQUASHED_GAUSSIAN: TANH_MEAN,
}

#: What the export expresses, for the error that refuses anything else.
EXPORTABLE = (
    "the default PPO, APPO/IMPALA-style actor-critic, DQN and SAC modules (numpy, or torch "
    "with framework('torch'); PPO's torch module also with use_lstm=True) over a Box "
    "observation space, with a Discrete or Box action space, MLP encoders, and no "
    "env-to-module connector other than MeanStdFilter"
)


class ExportError(ValueError):
    """The policy cannot be exported as asked; the message names the setting, the value and
    what is allowed."""


class UnsupportedExport(ExportError, UnsupportedValue):
    """A module the export's formats cannot express for want of a capability (a
    `NotSupported` too, with its `capability`): the message names the setting, the value and
    what to do instead."""


@dataclasses.dataclass
class PolicyDescription:
    """`spec`: the JSON-able description (see the module docstring); `arrays`: the weights and
    constants it names by key, float32."""

    spec: dict[str, Any]
    arrays: dict[str, np.ndarray]

    def add(self, key: str, array: Any) -> str:
        """Keeps `array` (as float32) under `key`; returns the key."""
        self.arrays[key] = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
        return key


def unexpressible(module: Any, detail: str = "") -> str:
    """The message that refuses `module` (with `detail`, what about it), naming what the
    export takes."""
    return (
        f"a {type(module).__name__}{' ' + detail if detail else ''} is not a module the export "
        f"can express; allowed: {EXPORTABLE}"
    )


def check_activation(name: str, where: str) -> str:
    """`name` when the export knows it ("swish" is "silu"); an ExportError otherwise."""
    if name not in ACTIVATIONS:
        raise ExportError(f"{where} activation {name!r}: allowed: {list(ACTIVATIONS)}")
    return "silu" if name == "swish" else name


def numpy_layers(
    mlp: MLP, prefix: str, description: PolicyDescription, *, activated: bool
) -> list[dict[str, Any]]:
    """A numpy `MLP`'s layers; `activated`: an encoder's, whose output layer is activated too
    (`trainer.core.models.activated`)."""
    activations = list(mlp.activations) + [mlp.activation if activated else "linear"]
    return [
        {
            WEIGHT: description.add(f"{prefix}.{i}.weight", mlp.params[2 * i]),
            BIAS: description.add(f"{prefix}.{i}.bias", mlp.params[2 * i + 1]),
            ACTIVATION: check_activation(activations[i], prefix),
        }
        for i in range(mlp.num_layers)
    ]


def numpy_encoder_layers(encoder: MLP | None, description: PolicyDescription) -> list[dict]:
    """A numpy module's shared encoder (`encoder`, activated) as the description's encoder
    layers; none (`[]`) for a module without one."""
    return [] if encoder is None else numpy_layers(encoder, "encoder", description, activated=True)
