"""VPG, vanilla policy gradient without a baseline (RLlib's example custom algorithm), one folder:

    config.py          VPGConfig: its settings, and its classes by import path (learner, loss,
                       default module: `AlgorithmClasses`)
    loss.py            its loss: the returns to go of an episode, and
                       -mean_t [ log pi_theta(a_t | s_t) * G_t ] with its statistics
    vpg.py             VPG: training_step (sample complete episodes, update, sync the weights)
    torch_module.py    VPGTorchRLModule: the policy network
    torch_learner.py   VPGTorchLearner, RLlib's name for the generic learner of a loss function
                       (`trainer.algorithms.torch_loss_learner`) running VPG's loss
    shared_optimizer_learner.py
                       VPGTorchLearnerSharedOptimizer: one optimizer over a MultiRLModule
                       whose policies share an encoder (RLlib's example learner)
    differences.py     its rows of the deliberate-differences table

The learner and the module need torch (the torch extra); they are imported when a config asks
for them. `ALGORITHM` is what the registry (`trainer.algorithms.registry`) reads: besides the
classes, the RLlib example modules the launcher serves from this folder.
"""

from trainer.algorithms.registry import AlgorithmEntry
from trainer.algorithms.vpg.config import VPGConfig
from trainer.algorithms.vpg.differences import DIFFERENCES
from trainer.algorithms.vpg.vpg import VPG

ALGORITHM = AlgorithmEntry(
    name="VPG",
    algorithm_cls=VPG,
    config_cls=VPGConfig,
    rllib_modules={
        "ray.rllib.examples.algorithms.classes.vpg": (
            "trainer.algorithms.vpg.config",
            "trainer.algorithms.vpg.vpg",
        ),
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
