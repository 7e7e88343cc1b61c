"""PPO (RLlib's `ray.rllib.algorithms.ppo`), one folder:

    config.py          PPOConfig: its settings, and its classes by import path (learners, default
                       modules: `AlgorithmClasses`)
    ppo.py             PPO: training_step (sample, update, sync the weights)
    loss.py            PPO's loss for numpy (with its backward pass, on the distributions'
                       `loss_grads` of `trainer.core.nn`) and for torch, side by side, with the
                       same statistics
    ppo_learner.py     PPOLearner, the numpy learner
    module.py          PolicyModule, the default numpy module
    export.py          PolicyModule as the export's description
    torch_learner.py   PPOTorchLearner, the torch learner
    torch_learner_view.py
                       what the numpy update reads of a PPOTorchLearner (a protocol)
    numpy_update.py    PPOTorchLearner's update computed in numpy, where its module and
                       settings are the defaults
    torch_module.py    DefaultPPOTorchRLModule, the default torch module
    numpy_inference.py DefaultPPOTorchRLModule's forward pass on the EnvRunners, in numpy
    torch_export.py    DefaultPPOTorchRLModule as the export's description
    numpy_state.py     a numpy module's state as the torch one's (both modules import it)
    state_conversion.py
                       a numpy module as the torch one of its weights (`torch_twin_of`)
    catalog.py         RLlib's PPOCatalog
    presets.py         the main job's presets
    differences.py     its rows of the deliberate-differences table

`ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads."""

from trainer.algorithms.ppo.catalog import PPOCatalog
from trainer.algorithms.ppo.config import PPOConfig
from trainer.algorithms.ppo.differences import DIFFERENCES
from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.ppo.ppo import PPO
from trainer.algorithms.ppo.presets import FASTER_PRESETS, PRESETS
from trainer.algorithms.registry import AlgorithmEntry
from trainer.capabilities import DEFAULT_MODELS_INSTEAD, OLD_API_STACK, TORCH
from trainer.checkpoints.rllib_layout import RLlibModuleClass

ALGORITHM = AlgorithmEntry(
    name="PPO",
    algorithm_cls=PPO,
    config_cls=PPOConfig,
    presets=PRESETS,
    faster_presets=FASTER_PRESETS,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.ppo": ("trainer.algorithms.ppo",),
        "ray.rllib.algorithms.ppo.ppo": (
            "trainer.algorithms.ppo.config",
            "trainer.algorithms.ppo.ppo",
        ),
        "ray.rllib.algorithms.ppo.ppo_catalog": ("trainer.algorithms.ppo.catalog",),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.ppo.torch.ppo_torch_learner": (
            "trainer.algorithms.ppo.torch_learner",
        ),
        "ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module": (
            "trainer.algorithms.ppo.torch_module",
        ),
        "ray.rllib.algorithms.ppo.torch.ppo_torch_rl_module": (
            "trainer.algorithms.ppo.torch_module",
        ),
    },
    rllib_unavailable={
        "ray.rllib.algorithms.ppo.torch": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.ppo.ppo_learner": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.ppo.default_ppo_rl_module": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.ppo.ppo_tf_policy": (OLD_API_STACK, ""),
        "ray.rllib.algorithms.ppo.ppo_torch_policy": (OLD_API_STACK, ""),
    },
    rllib_module_classes={
        "trainer.algorithms.ppo.torch_module:DefaultPPOTorchRLModule": RLlibModuleClass(
            rllib_class=(
                "ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module.DefaultPPOTorchRLModule"
            ),
            catalog="ray.rllib.algorithms.ppo.ppo_catalog.PPOCatalog",
            # RLlib's MLP heads keep their log-std clip value as a buffer.
            constant_buffers={
                "pi.log_std_clip_param_const": 20.0,
                "vf.log_std_clip_param_const": 20.0,
            },
        ),
        "trainer.algorithms.ppo.module:PolicyModule": RLlibModuleClass(
            torch_twin=PolicyModule.torch_twin
        ),
    },
)

__all__ = ["ALGORITHM", "PPO", "PPOCatalog", "PPOConfig"]
