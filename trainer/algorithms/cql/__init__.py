"""CQL, conservative Q-learning from recorded data (RLlib 2.60's `ray.rllib.algorithms.cql`),
one folder on SAC's pieces:

    config.py          CQLConfig: SAC's settings plus CQL's, and its classes by import path
                       (SAC's, with CQL's learners and torch module: `AlgorithmClasses`)
    cql.py             CQL: the offline training step of trainer.algorithms.offline_training,
                       the learner told which training iteration runs
    loss.py            its loss in numpy: SAC's with the conservative critic term and
                       behaviour cloning, forward and backward
    torch_loss.py      the same loss on tensors (autograd differentiates it)
    cql_learner.py     CQLLearner: SAC's numpy learner running loss.py's loss
    torch_learner.py   CQLTorchLearner: SAC's torch learner running torch_loss.py's loss on
                       RLlib's DefaultCQLTorchRLModule
    torch_module.py    DefaultCQLTorchRLModule: SAC's torch module plus the repeated actions
    differences.py     its rows of the deliberate-differences table
"""

from trainer.algorithms.cql.config import CQLConfig
from trainer.algorithms.cql.cql import CQL
from trainer.algorithms.cql.differences import DIFFERENCES
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="CQL",
    algorithm_cls=CQL,
    config_cls=CQLConfig,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.cql": ("trainer.algorithms.cql",),
        "ray.rllib.algorithms.cql.cql": (
            "trainer.algorithms.cql.config",
            "trainer.algorithms.cql.cql",
        ),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.cql.torch.cql_torch_learner": (
            "trainer.algorithms.cql.torch_learner",
        ),
        "ray.rllib.algorithms.cql.torch.default_cql_torch_rl_module": (
            "trainer.algorithms.cql.torch_module",
        ),
    },
)

__all__ = ["ALGORITHM", "CQL", "CQLConfig"]
