"""APPO's learner in numpy: IMPALA's learner (V-trace on PPO's module) with RLlib 2.60's APPO
loss (`APPOTorchLearner`). With pi the module, pi_old its target network (a copy that follows
the module every `target_network_update_freq` rounds of the circular buffer) and mu the
behaviour policy that sampled:

    vs, pg_adv = V-trace(pi_old's log-likelihoods, mu's, r, gamma, V)
    is_ratio   = clip(mu(a|x) / pi_old(a|x), 0, 2)
    ratio      = is_ratio * pi(a|x) / mu(a|x)
    pi_loss    = -mean(min(pg_adv * ratio, pg_adv * clip(ratio, 1 - clip_param, 1 + clip_param)))
    vf_loss    = 0.5 * mean((V(x) - vs)^2)
    total      = pi_loss + vf_loss_coeff * vf_loss - entropy_coeff * mean(entropy)
                 + kl_coeff * mean(KL(pi_old || pi))                         (use_kl_loss)

After each update the KL coefficient adapts (x1.5 above twice `kl_target`, x0.5 below half of
it) when `use_kl_loss`, and the target network becomes the module (tau = 1; else moves by tau)
once `target_network_update_freq * circular_buffer_num_batches *
circular_buffer_iterations_per_batch * train_batch_size_per_learner` env steps were trained
since its last update.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.impala.impala_learner import IMPALALearner, TrajectoryBatch
from trainer.core.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from trainer.core.models import SpaceInfo
from trainer.util.state_checks import (
    StateError,
    require_float_array,
    require_int,
    require_map,
    require_number,
)

if TYPE_CHECKING:
    from trainer.algorithms.appo.appo import APPOConfig

_sum = np.add.reduce
#: RLlib's clip of the target network's importance ratio (a constant in its loss).
IS_RATIO_CLIP = 2.0
LOG_IS_RATIO_CLIP = float(np.log(IS_RATIO_CLIP))


class APPOTargetState:
    """APPO's learner state beyond the module and its optimizer, and its rules (numpy and torch
    learners alike): the target network's weights, the KL coefficient, and the env steps
    trained in all and at the last target update. A learner gives `target_weights()`,
    `set_target_weights()` and `module_weights()` (name -> array) and calls `after_update`
    after each step."""

    extra_state_keys: tuple[str, ...] = (
        "target",
        "kl_coeff",
        "last_target_update_ts",
        "num_env_steps_trained",
    )
    config: Any  # an APPOConfig
    kl_coeff: float
    last_target_update_ts: int
    num_env_steps_trained: int

    def start_target_state(self) -> None:
        self.set_target_weights(self.module_weights())
        self.kl_coeff = float(self.config.kl_coeff)
        self.last_target_update_ts = 0
        self.num_env_steps_trained = 0

    @abstractmethod
    def target_weights(self) -> dict[str, np.ndarray]:
        """The target network's weights by name."""

    @abstractmethod
    def set_target_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Sets the target network's weights (`target_weights()`'s form)."""

    @abstractmethod
    def module_weights(self) -> dict[str, np.ndarray]:
        """The trained module's weights by name (`target_weights()`'s form)."""

    def after_update(self, stats: dict) -> None:
        """The KL coefficient's adaptation and the target network's update after a step whose
        statistics are `stats` (which get `curr_kl_coeff` and the target's counters)."""
        cfg = self.config
        self.num_env_steps_trained += int(stats["num_env_steps_trained"])
        if cfg.use_kl_loss:
            kl = float(stats["mean_kl_loss"])
            if kl > 2.0 * cfg.kl_target:
                self.kl_coeff *= 1.5
            elif kl < 0.5 * cfg.kl_target:
                self.kl_coeff *= 0.5
        stats["curr_kl_coeff"] = self.kl_coeff
        period = (
            cfg.target_network_update_freq
            * cfg.circular_buffer_num_batches
            * cfg.circular_buffer_iterations_per_batch
            * cfg.train_batch_size_per_learner
        )
        if self.num_env_steps_trained - self.last_target_update_ts >= period:
            tau = cfg.tau
            weights = self.module_weights()
            if tau != 1.0:
                old = self.target_weights()
                weights = {k: tau * w + (1.0 - tau) * old[k] for k, w in weights.items()}
            self.set_target_weights(weights)
            self.last_target_update_ts = self.num_env_steps_trained
            stats["num_target_updates"] = 1
        stats["last_target_update_ts"] = self.last_target_update_ts

    # -- state -------------------------------------------------------------------------------
    def get_extra_state(self) -> dict:
        return {
            "target": {k: np.array(v) for k, v in self.target_weights().items()},
            "kl_coeff": self.kl_coeff,
            "last_target_update_ts": self.last_target_update_ts,
            "num_env_steps_trained": self.num_env_steps_trained,
        }

    def check_extra_state(self, state: dict, where: str) -> None:
        target = state["target"]
        expected = {name: np.shape(array) for name, array in self.target_weights().items()}
        require_map(target, f"{where}['target']", list(expected))
        extra = sorted(set(target) - set(expected))
        if extra:
            raise StateError(f"{where}['target']", f"has parameters the module lacks: {extra[:4]}")
        for name, shape in expected.items():
            require_float_array(target[name], f"{where}['target'][{name!r}]", shape=shape)
        require_number(state["kl_coeff"], f"{where}['kl_coeff']", minimum=0.0)
        require_int(state["last_target_update_ts"], f"{where}['last_target_update_ts']")
        require_int(state["num_env_steps_trained"], f"{where}['num_env_steps_trained']")

    def set_extra_state(self, state: dict) -> None:
        self.set_target_weights(state["target"])
        self.kl_coeff = float(state["kl_coeff"])
        self.last_target_update_ts = int(state["last_target_update_ts"])
        self.num_env_steps_trained = int(state["num_env_steps_trained"])


class APPOLearner(APPOTargetState, IMPALALearner):
    """See the module docstring. Its state adds the target network's weights, the KL
    coefficient and the env steps trained at the last target update (`APPOTargetState`)."""

    config: APPOConfig
    loss_name = "APPO"

    def __init__(self, config: APPOConfig, spaces: SpaceInfo | None, module: Any = None):
        super().__init__(config, spaces, module)
        # A copy of the module: a spec's model_config (a multi-agent module's own) may differ
        # from the config's, and the target must have the module's layers.
        self.target = copy.deepcopy(self.module)
        self.start_target_state()

    def target_weights(self) -> dict[str, np.ndarray]:
        return self.target.get_weights()

    def set_target_weights(self, weights: dict[str, np.ndarray]) -> None:
        self.target.set_weights(weights)

    def module_weights(self) -> dict[str, np.ndarray]:
        return self.module.get_weights()

    def loss_and_grads(self, batch: TrajectoryBatch) -> dict[str, float]:
        cfg = self.config
        n = batch.num_steps
        terms = self.policy_terms(batch)
        old_inputs = self.target.dist_inputs(batch.obs)[batch.is_step]
        old_logp = self.module.dist.loss_grads(old_inputs, batch.actions, old_inputs)[0]
        targets = self.vtrace(batch, terms, old_logp)
        pg_adv = targets.pg_advantages
        # clip(exp(x), 0, 2) as exp(min(x, log 2)): no overflow where pi_old is far below mu.
        is_ratio = np.exp(np.minimum(batch.behaviour_logp - old_logp, LOG_IS_RATIO_CLIP))
        ratio = is_ratio * np.exp(terms.logp - batch.behaviour_logp)
        unclipped = pg_adv * ratio
        clipped = pg_adv * np.clip(ratio, 1.0 - cfg.clip_param, 1.0 + cfg.clip_param)
        surrogate = np.minimum(unclipped, clipped)
        # The gradient flows where the unclipped term is the minimum (d ratio / d logp = ratio).
        d_logp = -(unclipped * (unclipped <= clipped)) / n
        d_dist_inputs = d_logp[:, None] * terms.d_logp
        entropy_coeff = self.entropy_coeff.value
        d_dist_inputs -= (entropy_coeff / n) * terms.d_entropy
        mean_kl = 0.0
        if cfg.use_kl_loss:
            _, _, _, _, kl, d_kl = self.module.dist.loss_grads(
                terms.dist_inputs, batch.actions, old_inputs
            )
            mean_kl = float(_sum(kl)) / n
            d_dist_inputs += (self.kl_coeff / n) * d_kl
        value_error = terms.values - targets.vs
        self.backward(batch, terms, d_dist_inputs, (cfg.vf_loss_coeff / n) * value_error)
        policy_loss = -float(_sum(surrogate)) / n
        vf_loss = 0.5 * float(_sum(value_error * value_error)) / n
        mean_entropy = float(_sum(terms.entropy)) / n
        total = policy_loss + cfg.vf_loss_coeff * vf_loss - entropy_coeff * mean_entropy
        if cfg.use_kl_loss:
            total += self.kl_coeff * mean_kl
        mean_is = float(_sum(is_ratio)) / n
        return {
            "total_loss": total,
            POLICY_LOSS_KEY: policy_loss,
            VF_LOSS_KEY: vf_loss,
            ENTROPY_KEY: mean_entropy,
            "mean_kl_loss": mean_kl,
            "mean_IS": mean_is,
            "var_IS": float(_sum((is_ratio - mean_is) ** 2)) / n,
        }

    def update(
        self,
        episodes: list[Any] | TrajectoryBatch,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
        minibatch_size: int | None = None,
        num_minibatches: int | None = None,
    ) -> dict:
        """IMPALA's update with APPO's loss (a step per minibatch, if any), then the KL
        coefficient (from the last step's KL) and the target network (see the module
        docstring)."""
        stats = super().update(
            episodes,
            num_env_steps_sampled_lifetime=num_env_steps_sampled_lifetime,
            minibatch_size=minibatch_size,
            num_minibatches=num_minibatches,
        )
        self.after_update(stats)
        return stats
