"""`CQLLearner`: one gradient step of conservative Q-learning (Kumar et al. 2020, the CQL(H)
variant) on a batch of recorded transitions, in numpy, with RLlib 2.60's losses
(`CQLTorchLearner`): `loss.py`'s (`numpy_loss`, which writes them out: SAC's loss with CQL's
critic term and behaviour cloning) on SAC's numpy module, with SAC's learner: its optimizers,
each stepping its own loss's gradient, and its target critics, which follow the critics (by
`tau`) after every update (`target_network_update_freq` env steps apart, 0 by default).

`CloningPhase` says when the policy clones the recorded actions (the first `bc_iters`
training iterations), for this learner and the torch one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.cql.loss import numpy_loss
from trainer.algorithms.sac.loss import SACLoss
from trainer.algorithms.sac.sac_learner import SACLearner, recorded_train_batch
from trainer.capabilities import ACTION_SPACES
from trainer.core.models import SpaceInfo
from trainer.errors import UnsupportedValue
from trainer.metrics import TD_ERROR_KEY

if TYPE_CHECKING:
    from trainer.algorithms.cql.config import CQLConfig


class CloningPhase:
    """Whether a CQL learner's policy still clones the recorded actions: during the first
    `bc_iters` training iterations (RLlib 2.60's learner compares `bc_iters` with its
    `training_iteration` metric, "Number of iterations with Behavior Cloning pretraining").
    The algorithm sets `training_iteration` (the iterations completed before the running one)
    before each training step; a checkpoint restores it with the algorithm's iteration."""

    config: CQLConfig
    #: Training iterations completed before the one that runs.
    training_iteration: int = 0

    @property
    def cloning(self) -> bool:
        """True while the policy's loss is the recorded actions' log-likelihood."""
        return self.training_iteration < self.config.bc_iters


class CQLLearner(CloningPhase, SACLearner):
    """See the module docstring. Keys of the train batch: RLlib's column names (`obs`,
    `new_obs`, `actions`, `rewards`, `terminateds`), as the offline reader gives them."""

    config: CQLConfig
    loss_name = "CQL"

    def __init__(self, config: CQLConfig, spaces: SpaceInfo | None, **kwargs: Any):
        super().__init__(config, spaces, **kwargs)
        module_spaces = self.module.spaces
        if not self.module.continuous or module_spaces.action_low is None:
            raise UnsupportedValue(
                f"CQLConfig: the action space has {module_spaces.action_discrete_n} discrete "
                "actions; CQL learns Box actions (its conservative term draws random actions "
                "between the space's bounds, as RLlib's CQL)",
                ACTION_SPACES,
            )
        assert module_spaces.action_high is not None
        self.action_low = np.asarray(module_spaces.action_low, dtype=np.float32).reshape(-1)
        self.action_high = np.asarray(module_spaces.action_high, dtype=np.float32).reshape(-1)

    # -- the update ----------------------------------------------------------------------------
    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> dict[str, Any]:
        """One step of every optimizer on a batch of recorded transitions, then the target
        critics' update."""
        return super().update(
            recorded_train_batch(batch, self.config.gamma),
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
        )

    def evaluation_loss(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """The losses of `batch` with no step (offline evaluation): each optimizer's loss,
        their sum as `total_loss`, and the statistics; the draws' generator left as it was."""
        state = self.rng.bit_generator.state
        try:
            loss = self.loss_and_gradients(recorded_train_batch(batch, self.config.gamma))
        finally:
            self.rng.bit_generator.state = state
        results = self.loss_results(loss)
        results.pop(TD_ERROR_KEY, None)
        return {**results, "total_loss": sum(loss.losses.values())}

    def loss_and_gradients(self, batch: dict[str, np.ndarray]) -> SACLoss:
        """CQL's loss (`loss.numpy_loss`) on `batch`: each optimizer's gradient of its own loss
        left in the module's gradient buffer, log_alpha's in the result."""
        return numpy_loss(
            batch,
            self.module,
            self.target,
            self.log_alpha,
            self.target_entropy,
            self.rng,
            self.config,
            cloning=self.cloning,
            action_low=self.action_low,
            action_high=self.action_high,
        )
