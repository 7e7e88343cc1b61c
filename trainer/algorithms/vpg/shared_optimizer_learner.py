"""RLlib's example learner for a MultiRLModule whose policies share an encoder
(`ray.rllib.examples.learners.classes.vpg_torch_learner_shared_optimizer`). Needs the `torch`
extra.

`VPGTorchLearnerSharedOptimizer` is VPG's learner with one optimizer over every module of the
MultiRLModule (the shared encoder and each policy), at the config's `lr`: two optimizers
stepping the shared encoder in turn would pull it two ways in one update.
"""

from __future__ import annotations

import torch

from trainer.algorithms.vpg.torch_learner import VPGTorchLearner


class VPGTorchLearnerSharedOptimizer(VPGTorchLearner):
    """VPG's learner with one Adam, `"shared_optimizer"`, over all modules' parameters."""

    def configure_optimizers(self) -> None:
        param_list = []
        for module in self.module.values():
            if self.rl_module_is_compatible(module):
                param_list.extend(module.parameters())
        self.register_optimizer(
            optimizer_name="shared_optimizer",
            optimizer=torch.optim.Adam(params=param_list),
            params=param_list,
            lr_or_lr_schedule=self.config.lr,
        )
