"""MARWIL, advantage-weighted imitation from recorded data (RLlib 2.60's), one folder:

    config.py          MARWILConfig: its settings, and its classes by import path (learners,
                       PPO's modules: `AlgorithmClasses`)
    marwil.py          MARWIL: the offline training step (read recorded transitions, update,
                       sync the weights to the evaluation EnvRunners)
    loss.py            its loss for numpy (with its backward pass) and for torch, side by side:
                       -mean(exp(beta A / c) log pi(a|s)) + vf_coeff 0.5 mean(A^2), with its
                       statistics
    marwil_learner.py  MARWILLearner: the numpy learner (PPO's numpy module), and the moving
                       average both learners keep
    torch_learner.py   MARWILTorchLearner: the torch learner (RLlib's DefaultPPOTorchRLModule)
    differences.py     its rows of the deliberate-differences table

BC (`trainer/algorithms/bc/`) is MARWIL with beta = 0, as in RLlib.
"""

from trainer.algorithms.marwil.config import MARWILConfig
from trainer.algorithms.marwil.differences import DIFFERENCES
from trainer.algorithms.marwil.marwil import MARWIL
from trainer.algorithms.registry import AlgorithmEntry

ALGORITHM = AlgorithmEntry(
    name="MARWIL",
    algorithm_cls=MARWIL,
    config_cls=MARWILConfig,
    differences=DIFFERENCES,
    rllib_modules={
        "ray.rllib.algorithms.marwil": ("trainer.algorithms.marwil",),
        "ray.rllib.algorithms.marwil.marwil": (
            "trainer.algorithms.marwil.config",
            "trainer.algorithms.marwil.marwil",
        ),
        # Torch (the `torch` extra; imported only when asked for).
        "ray.rllib.algorithms.marwil.torch.marwil_torch_learner": (
            "trainer.algorithms.marwil.torch_learner",
        ),
    },
)

__all__ = ["ALGORITHM", "MARWIL", "MARWILConfig"]
