"""`DQNTorchLearner` (RLlib's `ray.rllib.algorithms.dqn.torch.dqn_torch_learner.DQNTorchLearner`):
one gradient step of (double, dueling, n-step) DQN on a replay batch, for a torch module, with
the numpy `DQNLearner`'s data flow and statistics.

`update(batch, num_env_steps_sampled_lifetime=...)` takes the replay buffer's train batch (as
`replay_buffer.sample_train_batch` returns it: `obs`, `next_obs`, `actions`, `rewards`,
`terminateds`, `discounts` = gamma ** the steps each n-step transition spans, RLlib's `n_step`
= those steps, `weights` = the importance weights), preprocesses the observations as the EnvRunners did, and runs
`TorchLearner.update_from_batch`: the module's `forward_train` (Q-values of `obs`, with
`double_q` of `next_obs` too, and the target networks' of `next_obs`), then RLlib 2.60's loss:

    y = r + gamma^n * (1 - terminated) * Q_target(s', a*)    (no gradient)
    a* = argmax_a Q(s', a) with double_q, else argmax_a Q_target(s', a)
    loss = mean(weights * huber(Q(s, a) - y))                (or the squared error: td_error_loss_fn)

With `num_atoms` > 1 (distributional Q-learning, RLlib's too): the target network's
distribution at a* (the bootstrap action, chosen on the expected Q-values as above) is shifted
to r + gamma^n * (1 - terminated) * z, clipped to [v_min, v_max] and projected onto the support
z; the loss is mean(weights * cross-entropy(logits of Q(s, a), projected target)), and the
cross-entropy per row is the TD error the priorities follow. RLlib's statistics of the
distributions (`atoms`, `expectations_abs_diff`, `dist_total_variation_dist`,
`dist_max_abs_distance`, `action_dist_mean_entropy`) join the results.

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
from torch.nn import functional

from trainer.algorithms.dqn.numpy_update import NumpyDQNUpdate
from trainer.algorithms.dqn.torch_module import (
    ATOMS,
    QF_LOGITS,
    QF_NEXT_PREDS,
    QF_PREDS,
    QF_PROBS,
    QF_TARGET_NEXT_PREDS,
    QF_TARGET_NEXT_PROBS,
)
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import TargetNetworkAPI
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, UpdateResults
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.metrics import (
    MODULE_TRAIN_BATCH_SIZE_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TD_ERROR_KEY,
)
from trainer.torch_rl.learner import GLOBAL_NORM_KEY, TorchLearner
from trainer.torch_rl.numpy_twin import BothPools, NumpyTwinHost
from trainer.torch_rl.target_networks import update_target_network, with_target_networks
from trainer.util.state_checks import require_int

if TYPE_CHECKING:
    from trainer.algorithms.dqn.dqn import DQNConfig

#: RLlib's statistics keys (`ray.rllib.algorithms.dqn.dqn_learner`).
QF_LOSS_KEY = "qf_loss"
QF_MEAN_KEY = "qf_mean"
QF_MAX_KEY = "qf_max"
QF_MIN_KEY = "qf_min"
TD_ERROR_MEAN_KEY = "td_error_mean"

#: The importance weights' and n-step discounts' columns of the replay buffer's train batch.
WEIGHTS = "weights"
DISCOUNTS = "discounts"
#: RLlib's column of the steps each n-step transition spans.
N_STEP = "n_step"


class DQNTorchLearner(NumpyTwinHost, TorchLearner):
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

    # -- the loss (RLlib 2.60's) -----------------------------------------------------------------
    def compute_loss_for_module(  # type: ignore[override]  # a DQNConfig, as RLlib's
        self,
        *,
        module_id: str,
        config: DQNConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        q_curr = fwd_out[QF_PREDS]
        q_target_next = fwd_out[QF_TARGET_NEXT_PREDS]
        actions = batch[Columns.ACTIONS].long().unsqueeze(-1)
        q_selected = torch.nan_to_num(q_curr.gather(-1, actions), neginf=0.0).squeeze(-1)
        # The bootstrap action: the online network's best with double_q, else the target's.
        next_q_for_argmax = fwd_out[QF_NEXT_PREDS] if config.double_q else q_target_next
        best_next = next_q_for_argmax.argmax(dim=-1, keepdim=True)
        if config.num_atoms > 1:
            return self._distributional_loss(config, batch, fwd_out, q_selected, best_next)
        q_next_best = torch.nan_to_num(q_target_next.gather(-1, best_next), neginf=0.0).squeeze(-1)
        not_terminated = 1.0 - batch[Columns.TERMINATEDS].float()
        # The Bellman target (no gradient through the target network's values).
        q_selected_target = (
            batch[Columns.REWARDS] + batch[DISCOUNTS] * not_terminated * q_next_best
        ).detach()
        # nn.HuberLoss / nn.MSELoss's functions: building the module at every update took
        # longer than its loss on a replay batch (15 us against 5).
        loss_fn = (
            functional.huber_loss if config.td_error_loss_fn == "huber" else functional.mse_loss
        )
        td_error = torch.abs(q_selected - q_selected_target)
        total_loss = torch.mean(
            batch[WEIGHTS] * loss_fn(q_selected, q_selected_target, reduction="none")
        )
        self.log_loss_stats(
            {
                QF_LOSS_KEY: total_loss,
                QF_MEAN_KEY: q_selected.mean(),
                QF_MAX_KEY: q_selected.max(),
                QF_MIN_KEY: q_selected.min(),
                TD_ERROR_MEAN_KEY: td_error.mean(),
            }
        )
        # Per row, for the priorities (RLlib logs them as an "item_series").
        self.td_errors = td_error.detach()
        return total_loss

    def _distributional_loss(
        self,
        config: DQNConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
        q_selected: torch.Tensor,
        best_next: torch.Tensor,
    ) -> torch.Tensor:
        """RLlib 2.60's loss for num_atoms > 1 (see the module docstring)."""
        num_atoms, v_min, v_max = int(config.num_atoms), float(config.v_min), float(config.v_max)
        actions = batch[Columns.ACTIONS].long()
        size = len(actions)
        # The logits of the actions taken (the first rows: with double_q the pass also holds
        # the next observations'), (B, num_atoms).
        logits_selected = (
            fwd_out[QF_LOGITS][:size].gather(1, actions.view(-1, 1, 1).expand(-1, 1, num_atoms))
        ).squeeze(1)
        # The target network's distribution at the bootstrap action.
        next_probs = (
            fwd_out[QF_TARGET_NEXT_PROBS]
            .gather(1, best_next.view(-1, 1, 1).expand(-1, 1, num_atoms))
            .squeeze(1)
        )
        not_terminated = 1.0 - batch[Columns.TERMINATEDS].float()
        target = project_distribution(
            next_probs,
            batch[Columns.REWARDS],
            batch[DISCOUNTS] * not_terminated,
            fwd_out[ATOMS],
            v_min,
            v_max,
        ).detach()
        # The cross-entropy (RLlib's KL-divergence loss up to the target's entropy, which
        # has no gradient).
        td_error = functional.cross_entropy(logits_selected, target, reduction="none")
        total_loss = torch.mean(batch[WEIGHTS] * td_error)
        with torch.no_grad():
            probs = fwd_out[QF_PROBS]
            stats = {
                QF_LOSS_KEY: total_loss,
                QF_MEAN_KEY: q_selected.mean(),
                QF_MAX_KEY: q_selected.max(),
                QF_MIN_KEY: q_selected.min(),
                TD_ERROR_MEAN_KEY: td_error.mean(),
                **_distribution_stats(probs, fwd_out[ATOMS]),
            }
        self.log_loss_stats(stats)
        # Per row, for the priorities (RLlib logs them as an "item_series").
        self.td_errors = td_error.detach()
        return total_loss

    # -- one update ----------------------------------------------------------------------------
    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> UpdateResults:
        """One gradient step on `batch` (the replay buffer's train batch, see the module
        docstring), then the target networks' update when it is due. Returns the numpy
        DQNLearner's statistics (qf_loss, qf_mean, qf_min, qf_max, td_error_mean,
        gradients_adam_global_norm, curr_lr) and, under `TD_ERROR_KEY`, the absolute TD
        errors per row (the algorithm takes them out before logging)."""
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
        results: UpdateResults = {
            key: stats[key]
            for key in (QF_LOSS_KEY, QF_MEAN_KEY, QF_MIN_KEY, QF_MAX_KEY, TD_ERROR_MEAN_KEY)
            if key in stats
        }
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


def project_distribution(
    next_probs: torch.Tensor,
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    atoms: torch.Tensor,
    v_min: float,
    v_max: float,
) -> torch.Tensor:
    """RLlib's categorical projection (the numpy learner's `project_distribution`, in torch):
    the distributions `next_probs` (B, num_atoms) over the support `atoms`, moved to
    `rewards + discounts * atoms` (clipped to [v_min, v_max]), each atom's probability split
    onto the two nearest atoms in proportion to the distance (all of it onto one where it
    lands on an atom)."""
    num_atoms = next_probs.shape[-1]
    shifted = torch.clamp(rewards.unsqueeze(-1) + discounts.unsqueeze(-1) * atoms, v_min, v_max)
    # The atom index each shifted atom lands on (clipped against rounding at v_max).
    b = torch.clamp((shifted - v_min) / ((v_max - v_min) / float(num_atoms - 1)), 0, num_atoms - 1)
    lower, upper = torch.floor(b), torch.ceil(b)
    floor_equal_ceil = ((upper - lower) < 0.5).float()
    to_lower = next_probs * (upper - b + floor_equal_ceil)
    to_upper = next_probs * (b - lower)
    # RLlib sums one-hot projections; scatter_add adds the same terms.
    return (
        torch.zeros_like(next_probs)
        .scatter_add(1, lower.long(), to_lower)
        .scatter_add(1, upper.long(), to_upper)
    )


def _distribution_stats(probs: torch.Tensor, z: torch.Tensor) -> dict[str, Any]:
    """RLlib's statistics of the distributions (`DQNTorchLearner`, num_atoms > 1) from the
    forward pass's probabilities `(B, num_actions, num_atoms)`: see the numpy learner's
    `distribution_stats` (the same, NaN for the action comparisons of one action)."""
    mean_probs = probs.mean(dim=0)  # (num_actions, num_atoms)
    nan = torch.tensor(float("nan"))
    stats: dict[str, Any] = {ATOMS: torch.mean(z)}
    if len(mean_probs) > 1:
        differences = torch.diff(mean_probs, dim=0).abs()
        stats.update(
            expectations_abs_diff=torch.mean(
                torch.abs(torch.diff(torch.sum(mean_probs * z, dim=1)).mean(dim=0))
            ),
            dist_total_variation_dist=differences.sum() * 0.5,
            dist_max_abs_distance=torch.max(differences),
        )
    else:
        stats.update(
            expectations_abs_diff=nan, dist_total_variation_dist=nan, dist_max_abs_distance=nan
        )
    stats["action_dist_mean_entropy"] = torch.mean(
        (mean_probs * torch.log(mean_probs)).sum(dim=1), dim=0
    )
    return stats


__all__ = ["DQNTorchLearner", "project_distribution"]
