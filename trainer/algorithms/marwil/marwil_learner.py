"""MARWIL's numpy learner (Wang et al. 2018, "Exponentially Weighted Imitation Learning for
Batched Data"), RLlib 2.60's `MARWILTorchLearner` loss in numpy on PPO's policy-and-value module.

On a batch of recorded transitions (s, a, r, s', terminated):

    V_target   = r + gamma * V(s')   (r where the step terminated)  RLlib's GAE on its one-step
                                                                     episodes, lambda = 1
    A          = V_target - V(s)
    c^2       <- c^2 + rate * (mean(A^2) - c^2)                      moving_average_sqd_adv_norm
    w          = exp(beta * A / (1e-8 + c))                          no gradient flows through w
    policy_loss = -mean(w * (log pi(a|s) + bc_logstd_coeff * mean(log_std)))
    vf_loss     = 0.5 * mean(A^2)                                    (beta > 0 only)
    total_loss  = policy_loss + vf_coeff * vf_loss

With beta = 0 (BC) every weight is 1, there is no value loss, and the loss is the negative
log-likelihood of the recorded actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, NumpyLearner, explained_variance
from trainer.core.nn import DiagGaussian
from trainer.offline import columns as C

#: RLlib's result key of the moving average of the squared advantages.
MOVING_AVG_KEY = "moving_avg_sqd_adv_norm"


def value_targets(
    rewards: np.ndarray, terminateds: np.ndarray, next_values: np.ndarray, gamma: float
) -> np.ndarray:
    """One-step targets: r + gamma * V(s') where the episode goes on, r where it ended."""
    return rewards + gamma * (1.0 - terminateds.astype(rewards.dtype)) * next_values


class MovingAverageState:
    """The learners' state beyond the module and the optimizer: the moving average c^2 of the
    squared advantages, and its update rule (numpy and torch learners alike)."""

    extra_state_keys: tuple[str, ...] = ("moving_average_sqd_adv_norm",)
    moving_average_sqd_adv_norm: float
    config: Any

    def start_moving_average(self) -> None:
        self.moving_average_sqd_adv_norm = float(self.config.moving_average_sqd_adv_norm_start)

    def advantage_scale(self, mean_sq_advantage: float) -> float:
        """Moves c^2 towards this batch's mean(A^2); returns the weights' scale 1e-8 + c."""
        rate = self.config.moving_average_sqd_adv_norm_update_rate
        self.moving_average_sqd_adv_norm += rate * (
            mean_sq_advantage - self.moving_average_sqd_adv_norm
        )
        return 1e-8 + float(np.sqrt(self.moving_average_sqd_adv_norm))

    def get_extra_state(self) -> dict:
        return {"moving_average_sqd_adv_norm": self.moving_average_sqd_adv_norm}

    def check_extra_state(self, state: dict, where: str) -> None:
        value = state["moving_average_sqd_adv_norm"]
        if not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
            raise ValueError(f"{where}['moving_average_sqd_adv_norm'] must be a number >= 0")

    def set_extra_state(self, state: dict) -> None:
        self.moving_average_sqd_adv_norm = float(state["moving_average_sqd_adv_norm"])


class MARWILLearner(MovingAverageState, NumpyLearner):
    """See the module docstring. `update(batch)` takes a transition batch
    (`trainer.offline.reading`) and takes one Adam step on it."""

    loss_name = "MARWIL"
    #: A MARWILConfig (or BCConfig); the learners sit below the algorithms' configs.
    config: Any

    def __init__(self, config: Any, module: Any):
        super().__init__(config, module)
        self.start_moving_average()

    # -- the loss ----------------------------------------------------------------------------
    def value_targets(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """The batch's one-step value targets with the module's current value network (no
        gradient flows through them)."""
        module = self.module
        next_values = module.values(module.spaces.preprocess(batch[C.NEXT_OBS]))
        return value_targets(
            batch[C.REWARDS].astype(next_values.dtype),
            batch[C.TERMINATEDS],
            next_values,
            self.config.gamma,
        )

    def loss_and_grads(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """The loss of `batch` and its gradient, written into the module's gradient buffer;
        returns the loss statistics under RLlib's keys."""
        cfg, module = self.config, self.module
        obs = module.spaces.preprocess(batch[C.OBS])
        actions = batch[C.ACTIONS]
        rows = len(obs)
        dist_inputs, values, cache = module.forward_train(obs)
        terms = module.dist.loss_grads(dist_inputs, actions, dist_inputs)
        stats: dict[str, Any] = {}
        d_values = np.zeros(rows, dtype=dist_inputs.dtype)
        if cfg.beta == 0.0:
            weights = np.ones(rows, dtype=dist_inputs.dtype)
            vf_loss = 0.0
        else:
            targets = self.value_targets(batch)
            advantages = targets - values
            mean_sq = float(np.mean(advantages * advantages))
            vf_loss = 0.5 * mean_sq
            scale = self.advantage_scale(mean_sq)
            weights = np.exp(cfg.beta * advantages / scale).astype(dist_inputs.dtype)
            # d(vf_coeff * 0.5 * mean(A^2)) / dV = -vf_coeff * A / rows.
            d_values = (-cfg.vf_coeff / rows * advantages).astype(dist_inputs.dtype)
            stats["vf_loss"] = vf_loss
            stats["vf_explained_variance"] = explained_variance(targets, values)
            stats[MOVING_AVG_KEY] = self.moving_average_sqd_adv_norm
        # d(-mean(w * logp)) / d dist_inputs.
        d_dist_inputs = (-weights / rows)[:, None] * terms.d_logp
        log_std_term = 0.0
        if cfg.bc_logstd_coeff > 0 and module.dist is DiagGaussian:
            half = dist_inputs.shape[1] // 2
            log_std_term = dist_inputs[:, half:].mean(axis=1)
            d_dist_inputs[:, half:] += (-cfg.bc_logstd_coeff / (rows * half)) * weights[:, None]
        module.backward(cache, d_dist_inputs.astype(dist_inputs.dtype, copy=False), d_values)
        policy_loss = -float(np.mean(weights * (terms.logp + cfg.bc_logstd_coeff * log_std_term)))
        stats["policy_loss"] = policy_loss
        stats["total_loss"] = policy_loss + cfg.vf_coeff * vf_loss
        return stats

    def evaluation_loss(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """The loss statistics of `batch` (`total_loss` among them) with no step, the moving
        average left as it was (offline evaluation)."""
        state = self.get_extra_state()
        try:
            return self.loss_and_grads(batch)
        finally:
            self.set_extra_state(state)

    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int | None = None
    ) -> dict[str, Any]:
        """One Adam step on `batch`; the statistics of the step, the learning rate and the
        rows trained."""
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        stats = self.loss_and_grads(batch)
        stats["gradients_default_optimizer_global_norm"] = self.apply_gradients(stats["total_loss"])
        stats[DEFAULT_OPTIMIZER_LR_KEY] = self.optimizer.lr
        stats["num_module_steps_trained"] = len(batch[C.OBS])
        return stats
