"""APPO, asynchronous PPO (RLlib 2.60's `ray.rllib.algorithms.appo`), one folder on IMPALA's:

appo.py          APPOConfig (IMPALA's settings plus APPO's) and APPO (IMPALA's
                 asynchronous training step, its learner fed from a circular buffer)
appo_learner.py  APPOLearner: the clipped surrogate on V-trace advantages, the target
                 network and the KL term, in numpy
torch_learner.py APPOTorchLearner: the same on a torch module
presets.py       the main job's presets: RLlib's tuned examples and faster ones for 2 cores
differences.py   its rows of the deliberate-differences table
"""

from trainer.algorithms.appo.appo import APPO, APPOConfig
from trainer.algorithms.appo.differences import DIFFERENCES
from trainer.algorithms.appo.presets import FASTER_PRESETS, PRESETS
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="APPO",
    algorithm_cls=APPO,
    config_cls=APPOConfig,
    differences=DIFFERENCES,
    presets=PRESETS,
    faster_presets=FASTER_PRESETS,
    rllib_modules={
        "ray.rllib.algorithms.appo": ("trainer.algorithms.appo",),
        "ray.rllib.algorithms.appo.appo": ("trainer.algorithms.appo.appo",),
    },
)

__all__ = ["ALGORITHM", "APPO", "APPOConfig"]
