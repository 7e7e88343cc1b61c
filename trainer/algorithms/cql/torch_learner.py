"""RLlib 2.60's `CQLTorchLearner`: CQL's losses (`torch_loss.py`; `loss.py` writes them out)
on RLlib's `DefaultCQLTorchRLModule`, with SAC's four optimizers, each stepping on its own loss
(`SACTorchLearner.compute_gradients`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trainer.algorithms.cql.cql_learner import CloningPhase
from trainer.algorithms.cql.torch_loss import torch_loss
from trainer.algorithms.sac.sac_learner import recorded_train_batch
from trainer.algorithms.sac.torch_learner import SACTorchLearner
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import UpdateResults
from trainer.core.replay_update_call import as_given, rllib_replay_update

if TYPE_CHECKING:
    from trainer.algorithms.cql.config import CQLConfig


class CQLTorchLearner(CloningPhase, SACTorchLearner):
    """See the module docstring; `CloningPhase` says when the policy clones the recorded
    actions (the first `bc_iters` training iterations)."""

    config: CQLConfig
    algorithm_name = "CQL"

    def update(
        self,
        batch: dict[str, np.ndarray] | None = None,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        timesteps: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> UpdateResults:
        """One step of every optimizer on a batch of recorded transitions (RLlib's column
        names), then the target critics' update. RLlib's call,
        `update(batch=MultiAgentBatch, timesteps=...)`, is taken too."""
        if num_env_steps_sampled_lifetime is None or batch is None:
            return rllib_replay_update(self, batch, timesteps, own_batch=as_given, **kwargs)
        return super().update(
            recorded_train_batch(batch, self.config.gamma),
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
        )

    def evaluation_loss(self, batch: dict[str, Any]) -> dict[str, float]:
        """The losses of `batch` with no step (offline evaluation), the module's draws on
        the learner's own generator, left as it was."""
        tensors = {**batch, Columns.NEXT_OBS: self.spaces.preprocess(batch[Columns.NEXT_OBS])}
        tensors[Columns.OBS] = self.spaces.preprocess(batch[Columns.OBS])
        tensors[Columns.ACTIONS] = np.asarray(batch[Columns.ACTIONS], dtype=np.float32)
        tensors[Columns.REWARDS] = np.asarray(batch[Columns.REWARDS], dtype=np.float32)
        rng_state = self._rng_state
        try:
            with self._own_rng():
                return super().evaluation_loss(tensors)
        finally:
            self._rng_state = rng_state
            self._temp_losses = {}
            self.td_errors = None

    def compute_loss_for_module(  # type: ignore[override]  # a CQLConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: CQLConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """CQL's loss (`torch_loss.torch_loss`): the sum of the critics', the policy's and
        alpha's losses, each also handed to its optimizer (`self._temp_losses`)."""
        loss = torch_loss(
            batch,
            fwd_out,
            config,
            log_alpha=self.curr_log_alpha[module_id],
            target_entropy=self.target_entropy[module_id],
            cloning=self.cloning,
            action_dist_class=self.rl_module.get_train_action_dist_cls(),
        )
        return self._finish_loss(module_id, loss)


__all__ = ["CQLTorchLearner"]
