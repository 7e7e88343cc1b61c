"""What an exported policy computes, read from a trained algorithm: the policy's networks as
plain layers (weights `(in, out)`, biases, activations), the MeanStdFilter constants, the action
distribution and the greedy action rule, with the env's spaces.

Both exports are written from this one description (`PolicyDescription`, whose keys and format
`trainer.core.policy_description` defines): the ONNX graph (`trainer.export.onnx_export`) and
the numpy folder (`trainer.export.numpy_export`, whose `policy.json` is `spec` and whose
`weights.npz` is `arrays`). So numpy modules and torch modules, which hold the same networks
under different names, export alike.

This module reads what every export shares: the spaces, the MeanStdFilter, the greedy rule.
The module's networks are described by the function its class names (`export_describer`): each
algorithm's folder describes its own modules, and a module class that names no describer is
refused.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from trainer.connectors.env_to_module import SMALL_NUMBER, MeanStdFilter, RunningStat
from trainer.core.models import DEFAULT_MODULE_ID, FlatParameterModule
from trainer.core.policy_description import (
    ACTION_SPACE,
    ALGORITHM,
    CLIP,
    DISTRIBUTION,
    EXPORTABLE,
    FILTER,
    FORMAT,
    FORMAT_NAME,
    FORMAT_VERSION,
    FRAMEWORK,
    GREEDY,
    GREEDY_OF,
    KIND,
    LOG_STD,
    LSTM,
    MEAN,
    MODULE_ID,
    NORMALIZE,
    OBSERVATION_SPACE,
    SCALE,
    VERSION,
    ExportError,
    PolicyDescription,
    unexpressible,
)
from trainer.export.describers import DESCRIBER_ATTRIBUTE, Describer, describer_of
from trainer.runners.env_runner_group import local_runner_of


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
    return algorithm.learner_module(module_id)


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
        describer = describer_of(module)
        if describer is None:
            raise ExportError(unexpressible(module))
        describer(module, description)
    elif hasattr(module, "state_dict"):
        # torch is imported only for torch modules (`trainer.export.torch_modules`).
        from trainer.export.torch_modules import describe_torch_module

        description.spec[FRAMEWORK] = "torch"
        describe_torch_module(module, describer_of(module), description)
    else:
        raise ExportError(f"module {module_id!r}: {unexpressible(module)}")
    distribution = description.spec[DISTRIBUTION]
    description.spec[GREEDY] = {
        KIND: GREEDY_OF[distribution],
        NORMALIZE: bool(config.normalize_actions),
        CLIP: bool(config.clip_actions),
    }
    return description


def _describe_filter(pipeline: Any, obs_space: gym.Space, description: PolicyDescription) -> None:
    """The env-to-module pipeline's MeanStdFilter as constants: its running mean, and its std
    plus the filter's `SMALL_NUMBER` (the scale the observation is divided by); clipped as it clips."""
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
        scale = stats.std + SMALL_NUMBER if piece.de_std_to_one else np.ones(shape)
        description.spec[FILTER] = {
            MEAN: description.add("filter.mean", np.ravel(mean)),
            SCALE: description.add("filter.scale", np.ravel(scale)),
            CLIP: None if piece.clip_by_value is None else float(piece.clip_by_value),
        }


__all__ = [
    "DESCRIBER_ATTRIBUTE",
    "Describer",
    "ExportError",
    "PolicyDescription",
    "describe_policy",
    "describer_of",
    "module_of",
    "space_to_json",
]
