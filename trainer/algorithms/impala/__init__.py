"""IMPALA, importance-weighted actor-learner training (RLlib 2.60's `ray.rllib.algorithms.impala`),
one folder:

    config.py          IMPALAConfig: its settings, and its classes by import path (learners,
                       PPO's modules: `AlgorithmClasses`)
    impala.py          IMPALA: the asynchronous training step (EnvRunners sample while the
                       learner thread learns); re-exports IMPALAConfig
    loss.py            its loss (policy gradient on V-trace's advantages, value loss, entropy
                       bonus) in numpy, with its backward pass, and in torch, same statistics
    vtrace.py          V-trace's targets, a pure function
    impala_learner.py  IMPALALearner: the train batch of episode chunks, its minibatches, and
                       the loss in numpy on PPO's module
    torch_learner.py   IMPALATorchLearner: the same on a torch module (RLlib's
                       DefaultPPOTorchRLModule by default; recurrent ones too)
    learner_thread.py  the learner thread and its queues (IMPALA's, APPO's circular buffer)
    differences.py     its (and APPO's) rows of the deliberate-differences table

APPO (`trainer/algorithms/appo/`) is IMPALA with PPO's clipped surrogate and a target network.
"""

from trainer.algorithms.impala.config import IMPALAConfig
from trainer.algorithms.impala.differences import DIFFERENCES
from trainer.algorithms.impala.impala import IMPALA
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="IMPALA",
    algorithm_cls=IMPALA,
    config_cls=IMPALAConfig,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.impala": ("trainer.algorithms.impala",),
        "ray.rllib.algorithms.impala.impala": (
            "trainer.algorithms.impala.config",
            "trainer.algorithms.impala.impala",
        ),
    },
)

#: RLlib's older spelling.
Impala = IMPALA
ImpalaConfig = IMPALAConfig

__all__ = ["ALGORITHM", "IMPALA", "IMPALAConfig", "Impala", "ImpalaConfig"]
