"""VPG, vanilla policy gradient without a baseline (RLlib's example custom algorithm), one folder:

    vpg.py             VPGConfig (its settings, default module and learner) and VPG
                       (training_step: sample complete episodes, update, sync the weights)
    torch_learner.py   VPGTorchLearner: returns to go and the policy-gradient loss
    shared_optimizer_learner.py
                       VPGTorchLearnerSharedOptimizer: one optimizer over a MultiRLModule
                       whose policies share an encoder (RLlib's example learner)
    torch_module.py    VPGTorchRLModule: the policy network
    differences.py     its rows of the deliberate-differences table

The learner and the module need torch (the torch extra); they are imported when a config asks
for them. `ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads: besides the
classes, the RLlib example modules the launcher serves from this folder.
"""

from trainer.algorithms.registry import AlgorithmEntry
from trainer.algorithms.vpg.differences import DIFFERENCES
from trainer.algorithms.vpg.vpg import VPG, VPGConfig

ALGORITHM = AlgorithmEntry(
    name="VPG",
    algorithm_cls=VPG,
    config_cls=VPGConfig,
    rllib_modules={
        "ray.rllib.examples.algorithms.classes.vpg": ("trainer.algorithms.vpg.vpg",),
        "ray.rllib.examples.learners.classes.vpg_torch_learner": (
            "trainer.algorithms.vpg.torch_learner",
        ),
        "ray.rllib.examples.learners.classes.vpg_torch_learner_shared_optimizer": (
            "trainer.algorithms.vpg.shared_optimizer_learner",
        ),
        "ray.rllib.examples.rl_modules.classes.vpg_torch_rlm": (
            "trainer.algorithms.vpg.torch_module",
        ),
    },
    differences=DIFFERENCES,
)

__all__ = ["ALGORITHM", "VPG", "VPGConfig"]
