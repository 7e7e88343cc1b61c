"""`DQNTorchLearner` (RLlib's `ray.rllib.algorithms.dqn.torch.dqn_torch_learner.DQNTorchLearner`):
one gradient step of (double, dueling, n-step) DQN on a replay batch, for a torch module, with
the numpy `DQNLearner`'s data flow and statistics.

`update(batch, num_env_steps_sampled_lifetime=...)` takes the replay buffer's train batch (as
`replay_buffer.sample_train_batch` returns it: `obs`, `next_obs`, `actions`, `rewards`,
`terminateds`, `discounts` = gamma ** the steps each n-step transition spans, RLlib's `n_step`
= those steps, `weights` = the importance weights), preprocesses the observations as the
EnvRunners did, and runs `TorchLearner.update_from_batch`: the module's `forward_train` (Q-values of `obs`, with
`double_q` of `next_obs` too, and the target networks' of `next_obs`; with `num_atoms` > 1 the
logits and distributions too), then RLlib 2.60's loss, `loss.py`'s `torch_loss` (the TD error
of the (double) Q-learning target under the Huber or squared loss) or with `num_atoms` > 1
`torch_distributional_loss` (the cross-entropy against the projected target distribution, the
TD error the priorities follow), with RLlib's statistics.

After the step, every `target_network_update_freq` sampled env steps, each target network moves
towards its main network: target <- tau * main + (1 - tau) * target (RLlib's
`after_gradient_based_update`). The absolute TD errors go back under `TD_ERROR_KEY` (the
algorithm sets the prioritized buffer's priorities from them).

The module: a TorchRLModule with `QNetAPI` and `TargetNetworkAPI` whose `_forward_train` returns
RLlib's `qf_preds`, `qf_target_next_preds` and, with `double_q`, `qf_next_preds`
(`DefaultDQNTorchRLModule`'s layout). The learner state is the TorchLearner's (the module's
state, target networks included, and Adam's moments by parameter name) and the env step of the
last target update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from trainer.algorithms.dqn.loss import (
    ATOMS,
    DISCOUNTS,
    LOSS_STAT_KEYS,
    QF_LOGITS,
    QF_LOSS_KEY,
    QF_MAX_KEY,
    QF_MEAN_KEY,
    QF_MIN_KEY,
    QF_NEXT_PREDS,
    QF_PREDS,
    QF_PROBS,
    QF_TARGET_NEXT_PREDS,
    QF_TARGET_NEXT_PROBS,
    TD_ERROR_MEAN_KEY,
    WEIGHTS,
    torch_distributional_loss,
    torch_loss,
)
from trainer.algorithms.dqn.numpy_update import NumpyDQNUpdate
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import TargetNetworkAPI
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, UpdateResults
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.core.replay_update_call import rllib_replay_update
from trainer.metrics import (
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TD_ERROR_KEY,
)
from trainer.torch_rl.learner import GLOBAL_NORM_KEY, TorchLearner
from trainer.torch_rl.numpy_twin import BothPools, NumpyTwinHost
from trainer.torch_rl.target_networks import (
    TargetUpdateStepsAPI,
    update_target_network,
    with_target_networks,
)
from trainer.util.state_checks import require_int

if TYPE_CHECKING:
    from trainer.algorithms.dqn.config import DQNConfig

#: RLlib's column of the steps each n-step transition spans.
N_STEP = "n_step"


class DQNTorchLearner(TargetUpdateStepsAPI, NumpyTwinHost, TorchLearner):
    """DQN's learner for torch modules (see the module docstring)."""

    config: DQNConfig
    algorithm_name = "DQN"

    def __init__(
        self,
        config: DQNConfig,
        module: Any,
        *,
        spaces: SpaceInfo | None = None,
        module_id: str = DEFAULT_MODULE_ID,
    ):
        """`config`: the DQNConfig; `module`: the full TorchRLModule to train (with QNetAPI
        and TargetNetworkAPI), built by the caller, or a view of one (see `TorchLearner`);
        `spaces`: how the EnvRunners preprocessed the observations they fed the module (the
        learner feeds it the same), by default the view's `spaces`, else the module's spaces;
        `module_id`: its id."""
        module = with_target_networks(module, "DQNTorchLearner", "DQN")
        rl_module = getattr(module, "rl_module", module)
        super().__init__(config, module, module_id=module_id)
        self.spaces: SpaceInfo = (
            spaces
            or getattr(module, "spaces", None)
            or SpaceInfo.from_spaces(
                cast(Any, rl_module).observation_space, cast(Any, rl_module).action_space
            ).keeping_obs_shape()
        )
        #: The sampled env step of the last target network update.
        self.last_target_update_step = 0
        #: The gradient step in numpy, for this class itself on the default module and
        #: optimizer (`trainer.algorithms.dqn.numpy_update`); None: every step runs in torch.
        self.numpy_update = NumpyDQNUpdate.of(self) if type(self) is DQNTorchLearner else None
        self.numpy_twin = self.numpy_update.twin if self.numpy_update is not None else None
        if self.numpy_update is not None:
            # The algorithm runs its rounds of updates in `update_threads`: the numpy step's
            # products then run on the numpy learner's BLAS threads.
            self.update_threads = cast(
                Any,
                BothPools(self.update_threads, self.numpy_update.numpy_learner.update_threads),
            )

    # -- the loss (RLlib 2.60's: loss.py) ------------------------------------------------------
    def compute_loss_for_module(  # type: ignore[override]  # a DQNConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: DQNConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """`loss.py`'s torch loss (`torch_distributional_loss` with `num_atoms` > 1); logs its
        statistics and keeps the per-row TD errors for the priorities (RLlib logs them as an
        "item_series")."""
        loss_fn = torch_distributional_loss if config.num_atoms > 1 else torch_loss
        loss = loss_fn(batch, fwd_out, config)
        self.log_loss_stats(loss.stats)
        self.td_errors = loss.td_error
        return loss.qf_loss

    # -- one update ----------------------------------------------------------------------------
    def update(
        self,
        batch: dict[str, np.ndarray] | None = None,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        timesteps: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> UpdateResults:
        """One gradient step on `batch` (the replay buffer's train batch, see the module
        docstring), then the target networks' update when it is due. Returns the numpy
        DQNLearner's statistics (qf_loss, qf_mean, qf_min, qf_max, td_error_mean,
        gradients_adam_global_norm, curr_lr) and, under `TD_ERROR_KEY`, the absolute TD
        errors per row (the algorithm takes them out before logging). RLlib's call,
        `update(batch=MultiAgentBatch, timesteps=...)`, is taken too
        (`trainer.core.replay_update_call`)."""
        if num_env_steps_sampled_lifetime is None or batch is None:
            return rllib_replay_update(self, batch, timesteps, **kwargs)
        if self.numpy_update is not None and self.numpy_update.usable():
            return self.numpy_update.update(batch, num_env_steps_sampled_lifetime)
        self.sync_torch_optimizer()
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        preprocess = self.spaces.preprocess
        train_batch = {
            Columns.OBS: preprocess(batch["obs"]),
            Columns.NEXT_OBS: preprocess(batch["next_obs"]),
            Columns.ACTIONS: np.asarray(batch["actions"]).astype(np.int64),
            Columns.REWARDS: np.asarray(batch["rewards"], dtype=np.float32),
            Columns.TERMINATEDS: np.asarray(batch["terminateds"]),
            DISCOUNTS: np.asarray(batch["discounts"], dtype=np.float32),
            WEIGHTS: np.asarray(batch["weights"], dtype=np.float32),
        }
        if "n_step" in batch:  # RLlib's column, for a subclass's loss (gamma ** n_step)
            train_batch[N_STEP] = np.asarray(batch["n_step"])
        stats = self.update_from_batch(train_batch)
        self.after_gradient_based_update(
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime}
        )
        results: UpdateResults = {key: stats[key] for key in LOSS_STAT_KEYS if key in stats}
        # A subclass's loss may log more.
        results.update({k: v for k, v in stats.items() if k not in results and k != "total_loss"})
        # The numpy learner's name of the gradient's global norm before clipping.
        results["gradients_adam_global_norm"] = results.pop(GLOBAL_NORM_KEY)
        results["curr_lr"] = results[DEFAULT_OPTIMIZER_LR_KEY] = self.current_lr
        # The algorithm logs the mean over its updates: RLlib's mean train batch size.
        results[MODULE_TRAIN_BATCH_SIZE_MEAN] = float(len(train_batch[Columns.ACTIONS]))
        td_errors = getattr(self, "td_errors", None)
        if td_errors is None:
            raise RuntimeError(
                f"{type(self).__name__}.compute_loss_for_module did not set self.td_errors "
                "(the per-row TD errors the prioritized replay buffer needs)"
            )
        results[TD_ERROR_KEY] = td_errors.cpu().numpy().astype(np.float64)
        self.td_errors = None
        return results

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """Steps the torch lr schedulers (TorchLearner's), then moves every target network
        towards its main network (by `tau`) when `target_network_update_freq` sampled env
        steps passed since the last time (RLlib's DQN learner)."""
        super().after_gradient_based_update(timesteps=timesteps)
        num_env_steps_sampled_lifetime = int(timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0))
        if (
            num_env_steps_sampled_lifetime - self.last_target_update_step
            < self.config.target_network_update_freq
        ):
            return
        for main_net, target_net in cast(
            TargetNetworkAPI, self.rl_module
        ).get_target_network_pairs():
            update_target_network(
                main_net=main_net, target_net=target_net, tau=float(self.config.tau)
            )
        self.last_target_update_step = int(num_env_steps_sampled_lifetime)

    # -- state: the TorchLearner's (the module's, target networks included, and the
    # optimizer's) and the env step of the last target update -------------------------------
    extra_state_keys = ("last_target_update_step",)

    def get_extra_state(self) -> dict:
        return {"last_target_update_step": self.last_target_update_step}

    def check_extra_state(self, state: dict, where: str) -> None:
        require_int(state["last_target_update_step"], f"{where}['last_target_update_step']")

    def set_extra_state(self, state: dict) -> None:
        self.last_target_update_step = int(state["last_target_update_step"])


__all__ = [
    "ATOMS",
    "DQNTorchLearner",
    "QF_LOGITS",
    "QF_LOSS_KEY",
    "QF_MAX_KEY",
    "QF_MEAN_KEY",
    "QF_MIN_KEY",
    "QF_NEXT_PREDS",
    "QF_PREDS",
    "QF_PROBS",
    "QF_TARGET_NEXT_PREDS",
    "QF_TARGET_NEXT_PROBS",
    "TD_ERROR_KEY",
    "TD_ERROR_MEAN_KEY",
]
