"""The numpy default PPO module as the default torch PPO module of the same networks
(`torch_twin_of`: what an RLlib module checkpoint of a numpy PPO module holds).

The conversion of the numpy module's state itself (which parameter becomes which, and what is
refused) is `trainer.algorithms.ppo.numpy_state`, which the numpy and the torch module both
import; its names are re-exported here."""

from __future__ import annotations

from typing import Any

from trainer.algorithms.ppo.numpy_state import (
    StateConversionError,
    numpy_ppo_state_to_torch,
    torch_names_of_numpy_parameters,
)
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule
from trainer.core.rl_module import RLModuleSpec


def torch_twin_of(module: Any) -> DefaultPPOTorchRLModule:
    """The default torch PPO module of the numpy `PolicyModule` `module`'s spaces and model
    config, holding its weights (`numpy_ppo_state_to_torch`): what an RLlib module checkpoint
    of a numpy PPO module holds (`AlgorithmEntry.rllib_module_classes`)."""
    twin = RLModuleSpec(
        module_class=DefaultPPOTorchRLModule,
        observation_space=module.observation_space,
        action_space=module.action_space,
        model_config=dict(module.model_config),
    ).build()
    model_config = dict(module.model_config)
    twin.set_state(numpy_ppo_state_to_torch(module.get_state(), model_config, twin))
    return twin


__all__ = [
    "StateConversionError",
    "numpy_ppo_state_to_torch",
    "torch_twin_of",
    "torch_names_of_numpy_parameters",
]
