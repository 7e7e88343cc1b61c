"""IMPALA, importance-weighted actor-learner training (RLlib 2.60's `ray.rllib.algorithms.impala`),
one folder:

    impala.py          IMPALAConfig (its settings) and IMPALA (the asynchronous training step:
                       EnvRunners sample while the learner thread learns)
    impala_learner.py  IMPALALearner: V-trace and IMPALA's loss in numpy on PPO's module
    torch_learner.py   IMPALATorchLearner: the same loss on a torch module (RLlib's
                       DefaultPPOTorchRLModule by default)
    vtrace.py          V-trace, a pure function
    learner_thread.py  the learner thread and its queues (IMPALA's, APPO's circular buffer)
    differences.py     its (and APPO's) rows of the deliberate-differences table

APPO (`trainer/algorithms/appo/`) is IMPALA with PPO's clipped surrogate and a target network.
"""

from trainer.algorithms.impala.differences import DIFFERENCES
from trainer.algorithms.impala.impala import IMPALA, IMPALAConfig
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="IMPALA",
    algorithm_cls=IMPALA,
    config_cls=IMPALAConfig,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.impala": ("trainer.algorithms.impala",),
        "ray.rllib.algorithms.impala.impala": ("trainer.algorithms.impala.impala",),
    },
)

#: RLlib's older spelling.
Impala = IMPALA
ImpalaConfig = IMPALAConfig

__all__ = ["ALGORITHM", "IMPALA", "IMPALAConfig", "Impala", "ImpalaConfig"]
