"""TQC, Truncated Quantile Critics (RLlib 2.60's `ray.rllib.algorithms.tqc`), one folder on
SAC's pieces:

    config.py          TQCConfig: SAC's settings plus the quantile critics', and its classes
                       by import path (SAC's, with TQC's learners and modules)
    tqc.py             TQC: SAC's off-policy training step
    loss.py            its loss in numpy: the truncated mixture's target quantiles, the
                       quantile Huber loss, SAC's policy and alpha losses, forward and backward
    torch_loss.py      the same loss on tensors (autograd differentiates it)
    tqc_module.py      TQCModule: SAC's numpy module with n_critics quantile critics
    tqc_learner.py     TQCLearner: SAC's numpy learner running loss.py's loss
    torch_module.py    DefaultTQCTorchRLModule: SAC's torch module with RLlib's quantile
                       critics (qf_encoders, qf_heads)
    torch_learner.py   TQCTorchLearner: SAC's torch learner running torch_loss.py's loss
    presets.py         the main job's presets
    differences.py     its rows of the deliberate-differences table

`ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads."""

from trainer.algorithms.registry import AlgorithmEntry
from trainer.algorithms.tqc.config import TQCConfig
from trainer.algorithms.tqc.differences import DIFFERENCES
from trainer.algorithms.tqc.presets import FASTER_PRESETS, PRESETS
from trainer.algorithms.tqc.tqc import TQC
from trainer.capabilities import DEFAULT_MODELS_INSTEAD, TORCH
from trainer.checkpoints.rllib_layout import RLlibModuleClass

ALGORITHM = AlgorithmEntry(
    name="TQC",
    algorithm_cls=TQC,
    config_cls=TQCConfig,
    presets=PRESETS,
    faster_presets=FASTER_PRESETS,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.tqc": ("trainer.algorithms.tqc",),
        "ray.rllib.algorithms.tqc.tqc": (
            "trainer.algorithms.tqc.config",
            "trainer.algorithms.tqc.tqc",
        ),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.tqc.torch": (
            "trainer.algorithms.tqc.torch_module",
            "trainer.algorithms.tqc.torch_learner",
        ),
        "ray.rllib.algorithms.tqc.torch.default_tqc_torch_rl_module": (
            "trainer.algorithms.tqc.torch_module",
        ),
        "ray.rllib.algorithms.tqc.torch.tqc_torch_learner": (
            "trainer.algorithms.tqc.torch_learner",
            "trainer.algorithms.tqc.torch_loss",
        ),
    },
    rllib_unavailable={
        "ray.rllib.algorithms.tqc.tqc_catalog": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.tqc.tqc_learner": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.tqc.default_tqc_rl_module": (TORCH, DEFAULT_MODELS_INSTEAD),
    },
    rllib_module_classes={
        "trainer.algorithms.tqc.torch_module:DefaultTQCTorchRLModule": RLlibModuleClass(
            rllib_class=(
                "ray.rllib.algorithms.tqc.torch.default_tqc_torch_rl_module.DefaultTQCTorchRLModule"
            ),
            catalog="ray.rllib.algorithms.tqc.tqc_catalog.TQCCatalog",
            # RLlib's TQCConfig adds them (SAC's twin_q too)
            auto_includes={
                "twin_q": True,
                "n_quantiles": 25,
                "n_critics": 2,
                "top_quantiles_to_drop_per_net": 2,
            },
        ),
        "trainer.algorithms.tqc.tqc_module:TQCModule": RLlibModuleClass(
            torch_twin="trainer.algorithms.tqc.state_conversion:torch_twin_of"
        ),
    },
)

__all__ = ["ALGORITHM", "TQC", "TQCConfig"]
