"""`VPGTorchLearner`, RLlib's example learner of VPG
(`ray.rllib.examples.learners.classes.vpg_torch_learner`): the generic torch learner of a loss
function (`trainer.algorithms.torch_loss_learner.LossTorchLearner`) running VPG's loss
(`loss.py`, which `VPGConfig` names), under RLlib's name, which RLlib's scripts import and
subclass (its shared-optimizer example, `shared_optimizer_learner.py`). Needs the `torch` extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainer.algorithms.torch_loss_learner import LossTorchLearner
from trainer.algorithms.vpg.loss import returns_to_go as returns_to_go  # (its earlier home)

if TYPE_CHECKING:
    from trainer.algorithms.vpg.config import VPGConfig


class VPGTorchLearner(LossTorchLearner):
    """VPG's learner: one gradient step (`num_epochs` of them) on the complete episodes of a
    training step, the loss -mean_t [ log pi_theta(a_t | s_t) * G_t ] (see `loss.py`)."""

    config: VPGConfig
    algorithm_name = "VPG"
