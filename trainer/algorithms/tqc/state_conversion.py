"""The numpy default TQC module as the default torch TQC module of the same networks: what an
RLlib module checkpoint of a numpy TQC module holds (`AlgorithmEntry.rllib_module_classes`).
The parameter names map as SAC's do (`torch_names_of_numpy_parameters`, each critic's
`qf_encoders.{i}` and `qf_heads.{i}`)."""

from __future__ import annotations

from typing import Any

from trainer.algorithms.sac.torch_module import torch_names_of_numpy_parameters
from trainer.algorithms.tqc.torch_module import DefaultTQCTorchRLModule
from trainer.torch_rl.numpy_twin import torch_module_like


def torch_twin_of(module: Any) -> DefaultTQCTorchRLModule:
    """The default torch TQC module of the numpy module `module`'s spaces, model config and
    critics, holding its weights (its target networks as the torch module built them)."""
    return torch_module_like(
        module,
        DefaultTQCTorchRLModule,
        torch_names_of_numpy_parameters,
        {"n_quantiles": module.n_quantiles, "n_critics": module.n_critics},
    )


__all__ = ["torch_twin_of"]
