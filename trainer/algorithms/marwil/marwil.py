"""MARWIL: the `MARWIL` algorithm, which learns from recorded data (`offline_data(input_=...)`)
instead of sampling, and `MARWILConfig` (RLlib's settings and defaults, from `config.py`;
RLlib's `ray.rllib.algorithms.marwil.marwil` has both).

Its training step is the offline one (`trainer.algorithms.offline_training`: read recorded
batches, update, sync the evaluation EnvRunners); each update is one step of MARWIL's learner
(`marwil_learner.py`, `torch_learner.py`) on its loss (`loss.py`: the advantage-weighted
log-likelihood of the recorded actions plus the value loss).
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.marwil.config import MARWILConfig
from trainer.algorithms.offline_training import OfflineAlgorithm


class MARWIL(OfflineAlgorithm):
    """RLlib's MARWIL: the offline training step (`trainer.algorithms.offline_training`) with
    MARWIL's learner."""

    config: MARWILConfig
    #: MARWILLearner (numpy) or MARWILTorchLearner (or the config's learner_class).
    learner: Any

    @classmethod
    def get_default_config(cls) -> MARWILConfig:
        return MARWILConfig()

    @classmethod
    def numpy_learner_for(cls, config: Any, spaces: Any) -> Any:
        """MARWIL's numpy learner takes its module, built here for `spaces`."""
        return config.learner_class(config, config.build_module(spaces, seed=config.seed))


__all__ = ["MARWIL", "MARWILConfig"]
