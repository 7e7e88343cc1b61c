"""What an exported policy computes, read from a trained algorithm: the policy's networks as
plain layers (weights `(in, out)`, biases, activations), the MeanStdFilter constants, the action
distribution and the greedy action rule, with the env's spaces.

Both exports are written from this one description (`PolicyDescription`): the ONNX graph
(`trainer.export.onnx_export`) and the numpy folder (`trainer.export.numpy_export`, whose
`policy.json` is `spec` and whose `weights.npz` is `arrays`). So numpy modules and torch
modules, which hold the same networks under different names, export alike.

The description is the module's inference path, one step:

    obs (float32, flattened) -> [(obs - mean) / scale, clipped]   MeanStdFilter, if any
      -> encoder layers (each activated)  -> [LSTM cell: state in -> state out]
      -> heads ("pi"; DQN's "q", or "advantage" and "value" when dueling)
      -> action distribution inputs (a free log-std appended, log-stds clipped as the module
         clips them)  -> greedy action (argmax; a Gaussian's mean, tanh-squashed for SAC;
         mapped onto a Box's bounds as the EnvRunner maps it: `normalize_actions`,
         `clip_actions`)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.algorithms.dqn.q_module import QModule
from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.sac.sac_module import SACModule
from trainer.connectors.env_to_module import MeanStdFilter, RunningStat
from trainer.core.models import DEFAULT_MODULE_ID, FlatParameterModule
from trainer.core.nn import ACTIVATIONS, MLP, Categorical, DiagGaussian
from trainer.runners.env_runner_group import local_runner_of

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
_GREEDY_OF = {
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


def space_to_json(space: gym.Space, where: str) -> dict[str, Any]:
    """A Box or Discrete space in gymnasium's terms (non-finite bounds as "inf" / "-inf")."""
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.Box):
        return {
            "type": "Box",
            "low": _bounds(space.low),
            "high": _bounds(space.high),
            "shape": [int(d) for d in space.shape],
            "dtype": str(space.dtype),
        }
    raise ExportError(
        f"{where}={space}: the export takes Box and Discrete spaces; allowed: {EXPORTABLE}"
    )


def _bounds(values: np.ndarray) -> list[Any]:
    return [float(v) if math.isfinite(v) else str(float(v)) for v in np.ravel(values).tolist()]


def module_of(algorithm: Any, module_id: str) -> Any:
    """The module `module_id` of `algorithm` (a torch module itself, not its view); an
    ExportError naming the module ids there are for another id."""
    modules = algorithm.learner.module
    known = list(modules) if algorithm.config.is_multi_agent else [DEFAULT_MODULE_ID]
    if module_id not in known:
        raise ExportError(
            f"module_id={module_id!r}: no such module; the algorithm's modules are {known}"
        )
    return algorithm.get_module(module_id)


def describe_policy(algorithm: Any, module_id: str = DEFAULT_MODULE_ID) -> PolicyDescription:
    """The description of module `module_id` of `algorithm` as its EnvRunners act with it
    greedily; an ExportError for a module or pipeline the export cannot express."""
    module = module_of(algorithm, module_id)
    config = algorithm.config
    description = PolicyDescription(
        spec={
            FORMAT: FORMAT_NAME,
            VERSION: FORMAT_VERSION,
            ALGORITHM: type(algorithm).__name__,
            MODULE_ID: module_id,
            FILTER: None,
            LSTM: None,
            LOG_STD: None,
        },
        arrays={},
    )
    if config.module_to_env_connector is not None:
        raise ExportError(
            f"module_to_env_connector={config.module_to_env_connector!r}: the export holds "
            "the module and a MeanStdFilter only; allowed: no module-to-env connector"
        )
    if config.is_multi_agent:
        obs_space, action_space = module.observation_space, module.action_space
        if config.env_to_module_connector is not None:
            raise ExportError(
                f"env_to_module_connector={config.env_to_module_connector!r} in a multi-agent "
                "run: the filters are per agent, not per module; allowed: none"
            )
    else:
        runner = local_runner_of(algorithm.env_runner_group)
        if runner.env_spaces is None:
            raise ExportError("the algorithm's EnvRunner has no env yet: nothing to export")
        obs_space, action_space = runner.env_spaces
        _describe_filter(runner.env_to_module, obs_space, description)
    description.spec[OBSERVATION_SPACE] = space_to_json(obs_space, "observation_space")
    description.spec[ACTION_SPACE] = space_to_json(action_space, "action_space")
    if not isinstance(obs_space, gym.spaces.Box):
        raise ExportError(
            f"observation_space={obs_space}: the export takes Box observations; "
            f"allowed: {EXPORTABLE}"
        )
    if isinstance(module, FlatParameterModule):
        description.spec[FRAMEWORK] = "numpy"
        _describe_numpy_module(module, description)
    elif hasattr(module, "state_dict"):
        # torch is imported only for torch modules (`trainer.export.torch_modules`).
        from trainer.export.torch_modules import describe_torch_module

        description.spec[FRAMEWORK] = "torch"
        describe_torch_module(module, description)
    else:
        raise ExportError(f"module {module_id!r}: {_unexpressible(module)}")
    distribution = description.spec[DISTRIBUTION]
    description.spec[GREEDY] = {
        KIND: _GREEDY_OF[distribution],
        NORMALIZE: bool(config.normalize_actions),
        CLIP: bool(config.clip_actions),
    }
    return description


def _unexpressible(module: Any, detail: str = "") -> str:
    return (
        f"a {type(module).__name__}{' ' + detail if detail else ''} is not a module the export "
        f"can express; allowed: {EXPORTABLE}"
    )


def _describe_filter(pipeline: Any, obs_space: gym.Space, description: PolicyDescription) -> None:
    """The env-to-module pipeline's MeanStdFilter as constants: its running mean, and its std
    plus the filter's 1e-8 (the scale the observation is divided by); clipped as it clips."""
    if pipeline is None:
        return
    for piece in pipeline.connectors:
        if type(piece) is not MeanStdFilter or piece.multi_agent:
            raise ExportError(
                f"env_to_module_connector piece {type(piece).__name__}: the export can fold "
                "only a (single-agent) MeanStdFilter into the graph; allowed: MeanStdFilter"
            )
        if description.spec[FILTER] is not None:
            raise ExportError("env_to_module_connector: two MeanStdFilters; allowed: one")
        state = piece.get_state()
        stats = RunningStat.from_state(state["synced"]).merged(
            RunningStat.from_state(state["buffer"])
        )
        shape = obs_space.shape or ()
        mean = stats.mean if piece.de_mean_to_zero else np.zeros(shape)
        scale = stats.std + 1e-8 if piece.de_std_to_one else np.ones(shape)
        description.spec[FILTER] = {
            MEAN: description.add("filter.mean", np.ravel(mean)),
            SCALE: description.add("filter.scale", np.ravel(scale)),
            CLIP: None if piece.clip_by_value is None else float(piece.clip_by_value),
        }


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


def _describe_numpy_module(module: Any, description: PolicyDescription) -> None:
    """The default numpy modules: PPO's `PolicyModule` (and subclasses that keep its forward),
    DQN's `QModule`, SAC's `SACModule`."""
    spec = description.spec
    if isinstance(module, PolicyModule) and type(module).dist_inputs is PolicyModule.dist_inputs:
        if module.dist not in (Categorical, DiagGaussian):
            raise ExportError(_unexpressible(module, f"with action space {module.action_space}"))
        encoder = module.encoder
        spec[ENCODER] = (
            [] if encoder is None else numpy_layers(encoder, "encoder", description, activated=True)
        )
        spec[HEADS] = {"pi": numpy_layers(module.pi, "pi", description, activated=False)}
        spec[DISTRIBUTION] = CATEGORICAL if module.dist is Categorical else DIAG_GAUSSIAN
        if module.log_std is not None:
            spec[LOG_STD] = {FREE: description.add("pi.log_std", module.log_std), CLIP: None}
        return
    if isinstance(module, QModule) and type(module).dist_inputs is QModule.dist_inputs:
        encoder = module.encoder
        spec[ENCODER] = (
            [] if encoder is None else numpy_layers(encoder, "encoder", description, activated=True)
        )
        if module.q is not None:
            spec[HEADS] = {"q": numpy_layers(module.q, "q", description, activated=False)}
        else:
            advantage, value = module.advantage, module.value
            assert advantage is not None and value is not None, "a dueling module's heads"
            spec[HEADS] = {
                "advantage": numpy_layers(advantage, "advantage", description, activated=False),
                "value": numpy_layers(value, "value", description, activated=False),
            }
        spec[DISTRIBUTION] = Q_VALUES
        return
    if isinstance(module, SACModule) and type(module).dist_inputs is SACModule.dist_inputs:
        spec[ENCODER] = numpy_layers(module.pi_encoder, "pi_encoder", description, activated=True)
        spec[HEADS] = {"pi": numpy_layers(module.pi, "pi", description, activated=False)}
        spec[DISTRIBUTION] = SQUASHED_GAUSSIAN if module.continuous else CATEGORICAL
        return
    raise ExportError(_unexpressible(module))


__all__ = [
    "ExportError",
    "PolicyDescription",
    "describe_policy",
    "module_of",
    "space_to_json",
]
