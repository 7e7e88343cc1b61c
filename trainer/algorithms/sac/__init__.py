"""SAC (RLlib's `ray.rllib.algorithms.sac`), one folder:

    config.py          SACConfig: its settings, and its classes by import path (learners,
                       default modules: `AlgorithmClasses`)
    sac.py             SAC: the algorithm (DQN's off-policy training step)
    loss.py            its losses in numpy: the terms on the module's outputs with their
                       gradients, and the passes through the numpy module around them
    torch_loss.py      the same losses on tensors (autograd differentiates them)
    sac_learner.py     SACLearner: the numpy learner (optimizers, target critics)
    sac_module.py      SACModule: the default numpy module (policy, twin critics) and the
                       squashed Gaussian
    torch_learner.py   SACTorchLearner: the torch learner
    torch_module.py    DefaultSACTorchRLModule: the default torch module
    numpy_inference.py NumpySACInference: the EnvRunners' numpy forward pass of the torch
                       module
    state_conversion.py
                       the numpy module as the torch module of the same networks (RLlib's
                       module checkpoints)
    export.py, torch_export.py
                       the numpy and the torch module as the export's description
    presets.py         the main job's presets
    differences.py     its rows of the deliberate-differences table

`ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads."""

from trainer.algorithms.registry import AlgorithmEntry
from trainer.algorithms.sac.config import SACConfig
from trainer.algorithms.sac.differences import DIFFERENCES
from trainer.algorithms.sac.presets import FASTER_PRESETS, PRESETS
from trainer.algorithms.sac.sac import SAC
from trainer.capabilities import DEFAULT_MODELS_INSTEAD, OLD_API_STACK, TORCH
from trainer.checkpoints.rllib_layout import RLlibModuleClass

ALGORITHM = AlgorithmEntry(
    name="SAC",
    algorithm_cls=SAC,
    config_cls=SACConfig,
    presets=PRESETS,
    faster_presets=FASTER_PRESETS,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.sac": ("trainer.algorithms.sac",),
        "ray.rllib.algorithms.sac.sac": (
            "trainer.algorithms.sac.config",
            "trainer.algorithms.sac.sac",
        ),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module": (
            "trainer.algorithms.sac.torch_module",
        ),
        "ray.rllib.algorithms.sac.torch.sac_torch_learner": (
            "trainer.algorithms.sac.torch_learner",
        ),
    },
    rllib_unavailable={
        "ray.rllib.algorithms.sac.torch": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.sac.sac_catalog": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.sac.sac_learner": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.sac.default_sac_rl_module": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.sac.sac_tf_policy": (OLD_API_STACK, ""),
        "ray.rllib.algorithms.sac.sac_torch_policy": (OLD_API_STACK, ""),
        "ray.rllib.algorithms.sac.sac_tf_model": (OLD_API_STACK, ""),
        "ray.rllib.algorithms.sac.sac_torch_model": (OLD_API_STACK, ""),
    },
    rllib_module_classes={
        "trainer.algorithms.sac.torch_module:DefaultSACTorchRLModule": RLlibModuleClass(
            rllib_class=(
                "ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module.DefaultSACTorchRLModule"
            ),
            catalog="ray.rllib.algorithms.sac.sac_catalog.SACCatalog",
            auto_includes={"twin_q": True},  # RLlib's SACConfig adds it
        ),
        "trainer.algorithms.sac.sac_module:SACModule": RLlibModuleClass(
            torch_twin="trainer.algorithms.sac.state_conversion:torch_twin_of"
        ),
    },
)

__all__ = ["ALGORITHM", "SAC", "SACConfig"]
