"""DreamerV3 (RLlib's `ray.rllib.algorithms.dreamerv3`), one folder:

    config.py          DreamerV3Config: its settings (RLlib 2.60's, the model-size table), and
                       its classes by import path (learner, default module: `AlgorithmClasses`)
    loss.py            its losses: the world model's (prediction, dynamics, representation),
                       the lambda-returns, the critic's and the actor's, with the paper's names
    dreamerv3.py       DreamerV3: training_step (sample into the replay buffer, update on
                       replayed B x T sequences per `training_ratio`, sync the weights)
    torch_module.py    DreamerV3TorchRLModule: RLlib's module layout (world model, actor,
                       critic, dreamer model) and its stateful acting
    torch_learner.py   DreamerV3TorchLearner: three optimizers, each on its own loss

The learner and the module need torch (the torch extra); they are imported when a config asks
for them. `ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads: besides the
classes, the RLlib modules the launcher serves from this folder.
"""

from trainer.algorithms.dreamerv3.config import DreamerV3Config
from trainer.algorithms.dreamerv3.dreamerv3 import DreamerV3
from trainer.algorithms.registry import AlgorithmEntry
from trainer.capabilities import TORCH
from trainer.checkpoints.rllib_layout import RLlibModuleClass

#: What RLlib's DreamerV3 model classes (catalog, networks, utilities) are instead here.
MODULE_INSTEAD = (
    "DreamerV3's default module, trainer.algorithms.dreamerv3.torch_module (RLlib's layout "
    "and parameter names; sized by training(model_size=...))"
)

ALGORITHM = AlgorithmEntry(
    name="DreamerV3",
    algorithm_cls=DreamerV3,
    config_cls=DreamerV3Config,
    rllib_modules={
        "ray.rllib.algorithms.dreamerv3": ("trainer.algorithms.dreamerv3",),
        "ray.rllib.algorithms.dreamerv3.dreamerv3": (
            "trainer.algorithms.dreamerv3.config",
            "trainer.algorithms.dreamerv3.dreamerv3",
        ),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_rl_module": (
            "trainer.algorithms.dreamerv3.torch_module",
        ),
        "ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_learner": (
            "trainer.algorithms.dreamerv3.torch_learner",
        ),
    },
    rllib_unavailable={
        "ray.rllib.algorithms.dreamerv3.torch.models": (TORCH, MODULE_INSTEAD),
        "ray.rllib.algorithms.dreamerv3.dreamerv3_catalog": (TORCH, MODULE_INSTEAD),
        "ray.rllib.algorithms.dreamerv3.dreamerv3_learner": (TORCH, MODULE_INSTEAD),
        "ray.rllib.algorithms.dreamerv3.dreamerv3_rl_module": (TORCH, MODULE_INSTEAD),
        "ray.rllib.algorithms.dreamerv3.utils": (TORCH, MODULE_INSTEAD),
    },
    rllib_module_classes={
        # (RLlib's module checkpoints read here by the class's own name, the launcher's table)
        "trainer.algorithms.dreamerv3.torch_module:DreamerV3TorchRLModule": RLlibModuleClass(
            rllib_class=(
                "ray.rllib.algorithms.dreamerv3.torch.dreamerv3_torch_rl_module."
                "DreamerV3TorchRLModule"
            ),
            catalog="ray.rllib.algorithms.dreamerv3.dreamerv3_catalog.DreamerV3Catalog",
            # RLlib's DreamerV3Config adds them (`_model_config_auto_includes`), its defaults
            auto_includes={
                "gamma": 0.997,
                "horizon_H": 15,
                "model_size": "XS",
                "symlog_obs": "auto",
                "use_float16": False,
                "batch_length_T": 64,
            },
        ),
    },
)

__all__ = ["ALGORITHM", "DreamerV3", "DreamerV3Config"]
