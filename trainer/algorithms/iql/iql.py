"""IQL: the `IQL` algorithm (RLlib 2.60's `ray.rllib.algorithms.iql.IQL`; `IQLConfig`, from
`config.py`, is importable from here as from RLlib's module), implicit Q-learning from recorded
data (`offline_data(input_=...)`): an expectile value network, critics regressed on
r + gamma V(s'), and the policy weighted by its exponentiated advantages (the losses:
`loss.py`, `torch_loss.py`).

Its training step is the offline one (`trainer.algorithms.offline_training`), as RLlib's IQL
runs MARWIL's.
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.iql.config import IQLConfig
from trainer.algorithms.offline_training import OfflineAlgorithm


class IQL(OfflineAlgorithm):
    """Implicit Q-learning (RLlib's `ray.rllib.algorithms.iql.IQL`): the offline training step
    with IQL's learner."""

    config: IQLConfig
    #: The numpy IQLLearner or an IQLTorchLearner (or the config's learner_class).
    learner: Any

    @classmethod
    def get_default_config(cls) -> IQLConfig:
        return IQLConfig()


__all__ = ["IQL", "IQLConfig"]
