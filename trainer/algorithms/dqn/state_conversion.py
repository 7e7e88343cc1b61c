"""The numpy default DQN module as the default torch DQN module of the same networks: what
an RLlib module checkpoint of a numpy DQN module holds (`AlgorithmEntry.rllib_module_classes`).
The parameter names map as the numpy twin maps them (`torch_names_of_numpy_parameters`)."""

from __future__ import annotations

from typing import Any

from trainer.algorithms.dqn.torch_module import (
    DefaultDQNTorchRLModule,
    torch_names_of_numpy_parameters,
)
from trainer.torch_rl.numpy_twin import torch_module_like


def torch_twin_of(module: Any) -> DefaultDQNTorchRLModule:
    """The default torch DQN module of the numpy module `module`'s spaces and model config
    (its `dueling`, and `num_atoms`, `v_min`, `v_max` with more than one atom), holding its
    weights (its target networks as the torch module built them)."""
    return torch_module_like(
        module,
        DefaultDQNTorchRLModule,
        torch_names_of_numpy_parameters,
        module.dqn_model_config(),
    )


__all__ = ["torch_twin_of"]
