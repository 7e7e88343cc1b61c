"""APPO, asynchronous PPO (RLlib 2.60's `ray.rllib.algorithms.appo`), one folder on IMPALA's:

config.py        APPOConfig: IMPALA's settings plus APPO's, and its learners by import path
appo.py          APPO: IMPALA's asynchronous training step, its learner fed from a circular
                 buffer; re-exports APPOConfig
loss.py          its loss (the clipped surrogate on V-trace's advantages against the target
                 network, value loss, entropy bonus, KL term) in numpy, with its backward
                 pass, and in torch, same statistics
appo_learner.py  APPOLearner: the target network and the KL coefficient, and the loss in
                 numpy on IMPALA's learner
torch_learner.py APPOTorchLearner: the same on a torch module
presets.py       the main job's presets: RLlib's tuned examples and faster ones for 2 cores
differences.py   its rows of the deliberate-differences table
"""

from trainer.algorithms.appo.appo import APPO
from trainer.algorithms.appo.config import APPOConfig
from trainer.algorithms.appo.differences import DIFFERENCES
from trainer.algorithms.appo.presets import FASTER_PRESETS, PRESETS
from trainer.algorithms.registry import AlgorithmEntry
from trainer.checkpoints.rllib_layout import ModuleRead

ALGORITHM = AlgorithmEntry(
    name="APPO",
    algorithm_cls=APPO,
    config_cls=APPOConfig,
    differences=DIFFERENCES,
    presets=PRESETS,
    faster_presets=FASTER_PRESETS,
    rllib_modules={
        "ray.rllib.algorithms.appo": ("trainer.algorithms.appo",),
        "ray.rllib.algorithms.appo.appo": (
            "trainer.algorithms.appo.config",
            "trainer.algorithms.appo.appo",
        ),
    },
    # RLlib's APPO module is PPO's plus the learner's target copies of its encoder and policy
    # head (APPO here keeps its target networks in the learner, copied from the module).
    rllib_module_reads={
        path: ModuleRead(
            "ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module.DefaultPPOTorchRLModule",
            dropped=("_old_encoder.", "_old_pi."),
        )
        for path in (
            "ray.rllib.algorithms.appo.torch.appo_torch_rl_module.APPOTorchRLModule",
            "ray.rllib.algorithms.appo.torch.default_appo_torch_rl_module.DefaultAPPOTorchRLModule",
        )
    },
)

__all__ = ["ALGORITHM", "APPO", "APPOConfig"]
