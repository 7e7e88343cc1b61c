"""IQL, implicit Q-learning from recorded data (RLlib 2.60's `ray.rllib.algorithms.iql`), one
folder on MARWIL's config and SAC's pieces:

    config.py          IQLConfig: MARWIL's settings plus IQL's, and its classes by import path
                       (learners, default modules: `AlgorithmClasses`)
    iql.py             IQL: the offline training step of trainer.algorithms.offline_training
    loss.py            its loss in numpy (expectile value loss, the critics' regression on
                       r + gamma V(s'), AWR policy loss) and its backward pass
    torch_loss.py      the same loss on tensors (autograd differentiates it)
    iql_learner.py     IQLModule (SAC's numpy module plus a value network) and IQLLearner,
                       SAC's numpy learner running loss.py's loss
    torch_learner.py   IQLTorchLearner: SAC's torch learner running torch_loss.py's loss on
                       RLlib's DefaultIQLTorchRLModule
    torch_module.py    DefaultIQLTorchRLModule: SAC's torch module plus the value network
    differences.py     its rows of the deliberate-differences table
"""

from trainer.algorithms.iql.config import IQLConfig
from trainer.algorithms.iql.differences import DIFFERENCES
from trainer.algorithms.iql.iql import IQL
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="IQL",
    algorithm_cls=IQL,
    config_cls=IQLConfig,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.iql": ("trainer.algorithms.iql",),
        "ray.rllib.algorithms.iql.iql": (
            "trainer.algorithms.iql.config",
            "trainer.algorithms.iql.iql",
        ),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.iql.torch.iql_torch_learner": (
            "trainer.algorithms.iql.torch_learner",
        ),
        "ray.rllib.algorithms.iql.torch.default_iql_torch_rl_module": (
            "trainer.algorithms.iql.torch_module",
        ),
    },
)

__all__ = ["ALGORITHM", "IQL", "IQLConfig"]
