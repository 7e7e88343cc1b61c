"""DQN (RLlib's `ray.rllib.algorithms.dqn`), one folder:

    config.py          DQNConfig: its settings, and its classes by import path (learners,
                       default modules: `AlgorithmClasses`)
    loss.py            its loss, numpy and torch side by side: the TD error of the (double)
                       Q-learning target under the Huber or squared loss, and with
                       num_atoms > 1 the cross-entropy against the projected target
                       distribution (C51), with RLlib's statistics
    dqn.py             DQN: the off-policy training step (`trainer.algorithms.off_policy`)
    dqn_learner.py     DQNLearner: the numpy update (loss.py's numpy loss, Adam, the target
                       network)
    q_module.py        QModule: the default numpy Q network (dueling, distributional)
    torch_learner.py   DQNTorchLearner (RLlib's): the torch update (loss.py's torch loss)
    numpy_update.py    the default DQNTorchLearner's update computed in numpy
    torch_module.py    DefaultDQNTorchRLModule (RLlib's): the default torch module
    catalog.py         DQNCatalog (RLlib's), which the torch module builds with
    numpy_inference.py the torch module's EnvRunner forward in numpy
    state_conversion.py, export.py, torch_export.py
                       weights between the numpy and torch modules; policy exports
    presets.py         the main job's presets
    capabilities.py    what DQN does not have here (the capabilities its refusals name)
    differences.py     its rows of the deliberate-differences table

The torch learner and module need torch (the torch extra); they are imported when a config
asks for them. `ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads."""

from trainer.algorithms.dqn.catalog import DQNCatalog
from trainer.algorithms.dqn.config import DQNConfig
from trainer.algorithms.dqn.differences import DIFFERENCES
from trainer.algorithms.dqn.dqn import DQN
from trainer.algorithms.dqn.presets import PRESETS
from trainer.algorithms.registry import AlgorithmEntry
from trainer.capabilities import DEFAULT_MODELS_INSTEAD, OLD_API_STACK, TORCH
from trainer.checkpoints.rllib_layout import RLlibModuleClass

ALGORITHM = AlgorithmEntry(
    name="DQN",
    algorithm_cls=DQN,
    config_cls=DQNConfig,
    presets=PRESETS,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.dqn": ("trainer.algorithms.dqn",),
        "ray.rllib.algorithms.dqn.dqn": (
            "trainer.algorithms.dqn.config",
            "trainer.algorithms.dqn.dqn",
        ),
        "ray.rllib.algorithms.dqn.dqn_catalog": ("trainer.algorithms.dqn.catalog",),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module": (
            "trainer.algorithms.dqn.torch_module",
        ),
        "ray.rllib.algorithms.dqn.torch.dqn_torch_learner": (
            "trainer.algorithms.dqn.torch_learner",
        ),
    },
    rllib_unavailable={
        "ray.rllib.algorithms.dqn.torch": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.dqn.dqn_learner": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.dqn.default_dqn_rl_module": (TORCH, DEFAULT_MODELS_INSTEAD),
        "ray.rllib.algorithms.dqn.dqn_tf_policy": (OLD_API_STACK, ""),
        "ray.rllib.algorithms.dqn.dqn_torch_policy": (OLD_API_STACK, ""),
    },
    rllib_module_classes={
        "trainer.algorithms.dqn.torch_module:DefaultDQNTorchRLModule": RLlibModuleClass(
            rllib_class=(
                "ray.rllib.algorithms.dqn.torch.default_dqn_torch_rl_module.DefaultDQNTorchRLModule"
            ),
            catalog="ray.rllib.algorithms.dqn.dqn_catalog.DQNCatalog",
            # RLlib's DQNConfig adds these to the module's model config; its module reads all
            # but std_init (it has no noisy layers).
            auto_includes={
                "double_q": True,
                "dueling": True,
                "epsilon": [(0, 1.0), (10000, 0.05)],
                "num_atoms": 1,
                "std_init": 0.5,
                "v_max": 10.0,
                "v_min": -10.0,
            },
        ),
        "trainer.algorithms.dqn.q_module:QModule": RLlibModuleClass(
            torch_twin="trainer.algorithms.dqn.state_conversion:torch_twin_of"
        ),
    },
)

__all__ = ["ALGORITHM", "DQN", "DQNCatalog", "DQNConfig"]
