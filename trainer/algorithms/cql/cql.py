"""CQL: the `CQL` algorithm (RLlib 2.60's `ray.rllib.algorithms.cql.CQL`; `CQLConfig`, from
`config.py`, is importable from here as from RLlib's module), which learns from recorded data
(`offline_data(input_=...)`) with SAC's module, optimizers and target critics and CQL's
conservative critic loss (`loss.py`, `torch_loss.py`).

Its training step is the offline one (`trainer.algorithms.offline_training`): read
`dataset_num_iters_per_learner` batches of recorded transitions, one update on each, sync the
policy to the evaluation EnvRunners.
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.cql.config import CQLConfig
from trainer.algorithms.offline_training import OfflineAlgorithm


class CQL(OfflineAlgorithm):
    """Conservative Q-learning (RLlib's `ray.rllib.algorithms.cql.CQL`): the offline training
    step with CQL's learner."""

    config: CQLConfig
    #: The numpy CQLLearner or a CQLTorchLearner (or the config's learner_class).
    learner: Any

    @classmethod
    def get_default_config(cls) -> CQLConfig:
        return CQLConfig()

    def training_step(self) -> None:
        """The offline training step, the learner told which iteration runs (`bc_iters`
        counts training iterations)."""
        self.learner.training_iteration = self.iteration
        super().training_step()


__all__ = ["CQL", "CQLConfig"]
