"""MARWIL, advantage-weighted imitation from recorded data (RLlib 2.60's), one folder:

    marwil.py          MARWILConfig (its settings) and MARWIL (training_step: read recorded
                       transitions, update, sync the weights to the evaluation EnvRunners)
    marwil_learner.py  MARWILLearner: the numpy loss and its gradient on PPO's module
    torch_learner.py   MARWILTorchLearner: the same loss on RLlib's DefaultPPOTorchRLModule
    differences.py     its rows of the deliberate-differences table

BC (`trainer/algorithms/bc/`) is MARWIL with beta = 0, as in RLlib.
"""

from trainer.algorithms.marwil.differences import DIFFERENCES
from trainer.algorithms.marwil.marwil import MARWIL, MARWILConfig
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="MARWIL",
    algorithm_cls=MARWIL,
    config_cls=MARWILConfig,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.marwil": ("trainer.algorithms.marwil",),
        "ray.rllib.algorithms.marwil.marwil": ("trainer.algorithms.marwil.marwil",),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.marwil.torch.marwil_torch_learner": (
            "trainer.algorithms.marwil.torch_learner",
        ),
    },
)

__all__ = ["ALGORITHM", "MARWIL", "MARWILConfig"]
