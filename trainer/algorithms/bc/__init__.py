"""BC, behaviour cloning from recorded data (RLlib 2.60's `BC`, MARWIL with beta = 0), one
folder: `bc.py` holds BCConfig and BC; the loss, learner and training step are MARWIL's
(`trainer/algorithms/marwil/`)."""

from trainer.algorithms.bc.bc import BC, BCConfig
from trainer.algorithms.bc.differences import DIFFERENCES as BC_DIFFERENCES
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="BC",
    algorithm_cls=BC,
    config_cls=BCConfig,
    differences=BC_DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.bc": ("trainer.algorithms.bc",),
        "ray.rllib.algorithms.bc.bc": ("trainer.algorithms.bc.bc",),
    },
)

__all__ = ["ALGORITHM", "BC", "BCConfig"]
