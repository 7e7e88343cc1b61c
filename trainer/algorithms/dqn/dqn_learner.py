"""`DQNLearner`: one gradient step of (double, dueling, n-step) DQN on a replay batch, in numpy.

TD target: y = R^(n) + gamma^n * (1 - terminated) * Q_target(s', a*), where
a* = argmax_a Q(s', a) with `double_q` (van Hasselt et al. 2016), else argmax_a Q_target(s', a).
Loss: mean over the batch of importance weight * huber(Q(s, a) - y) (or squared error). The target
network follows the online one every `target_network_update_freq` sampled env steps:
target <- tau * online + (1 - tau) * target.

With `num_atoms` > 1 (distributional, RLlib 2.60's `DQNTorchLearner` loss): the target network's
return distribution at a* (chosen on the expected Q-values as above) is shifted to
R^(n) + gamma^n * (1 - terminated) * z, clipped to [v_min, v_max] and projected onto the support
z (`project_distribution`); the loss is the mean of importance weight * cross-entropy of the
online distribution of Q(s, a) against it, the cross-entropy per row is the TD error the
priorities follow, and RLlib's statistics of the distributions join the results
(`distribution_stats`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.dqn.q_module import log_softmax
from trainer.core.blas import BlasThreads
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, NumpyLearner, UpdateResults
from trainer.core.models import SpaceInfo
from trainer.metrics import MODULE_TRAIN_BATCH_SIZE_MEAN, TD_ERROR_KEY
from trainer.util.state_checks import require_int

if TYPE_CHECKING:
    from trainer.algorithms.dqn.dqn import DQNConfig

#: Sums through the ufunc itself: `array.sum()` and `np.mean` add Python wrapper calls.
_sum = np.add.reduce


def project_distribution(
    next_probs: np.ndarray,
    rewards: np.ndarray,
    discounts: np.ndarray,
    atoms: np.ndarray,
    v_min: float,
    v_max: float,
) -> np.ndarray:
    """RLlib's categorical projection: the distribution `next_probs` (B, num_atoms) over the
    support `atoms`, moved to `rewards + discounts * atoms` (clipped to [v_min, v_max]; the
    discounts are zero past a terminal step), split onto the two nearest atoms in
    proportion to the distance (all of it onto one where it lands on an atom). Returns the
    projected distribution (B, num_atoms)."""
    batch_size, num_atoms = next_probs.shape
    shifted = np.clip(rewards[:, None] + discounts[:, None] * atoms[None, :], v_min, v_max)
    # The atom index each shifted atom lands on (clipped against rounding at v_max).
    b = np.clip((shifted - v_min) / ((v_max - v_min) / float(num_atoms - 1)), 0, num_atoms - 1)
    lower, upper = np.floor(b), np.ceil(b)
    floor_equal_ceil = (upper - lower < 0.5).astype(b.dtype)
    to_lower = next_probs * (upper - b + floor_equal_ceil)
    to_upper = next_probs * (b - lower)
    offsets = (np.arange(batch_size) * num_atoms)[:, None]
    size = batch_size * num_atoms
    projected = np.bincount(
        (offsets + lower.astype(np.int64)).ravel(), weights=to_lower.ravel(), minlength=size
    ) + np.bincount(
        (offsets + upper.astype(np.int64)).ravel(), weights=to_upper.ravel(), minlength=size
    )
    return projected.reshape(batch_size, num_atoms).astype(next_probs.dtype, copy=False)


def distribution_stats(probs: np.ndarray, atoms: np.ndarray) -> dict[str, float]:
    """RLlib's statistics of distributional DQN (`DQNTorchLearner`) from the probabilities
    `probs` (B, num_actions, num_atoms) of the loss's forward pass: the support's mean
    (`atoms`), and of the batch-mean distribution of each action the mean difference of
    consecutive actions' expectations (`expectations_abs_diff`), the total variation
    distance and the largest absolute difference of consecutive actions' distributions,
    and the mean over actions of sum p log p (`action_dist_mean_entropy`, RLlib's sign). The
    action comparisons are NaN for one action."""
    mean_probs = _sum(probs, axis=0) / len(probs)  # (num_actions, num_atoms)
    nan = float("nan")
    stats = {"atoms": float(np.mean(atoms))}
    if len(mean_probs) > 1:
        differences = np.abs(np.diff(mean_probs, axis=0))
        stats.update(
            expectations_abs_diff=float(abs(np.mean(np.diff(mean_probs @ atoms)))),
            dist_total_variation_dist=float(_sum(differences, axis=None) * 0.5),
            dist_max_abs_distance=float(np.max(differences)),
        )
    else:
        stats.update(
            expectations_abs_diff=nan, dist_total_variation_dist=nan, dist_max_abs_distance=nan
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        stats["action_dist_mean_entropy"] = float(
            np.mean(_sum(mean_probs * np.log(mean_probs), axis=1))
        )
    return stats


def _leading_rows(cache: Any, n: int) -> Any:
    """A forward pass's cache (nested tuples and lists of per-row arrays, and None) restricted
    to its first `n` rows: views, for a backward pass over those rows only."""
    if isinstance(cache, np.ndarray):
        return cache[:n]
    if isinstance(cache, (tuple, list)):
        return type(cache)(_leading_rows(item, n) for item in cache)
    return cache


class DQNLearner(NumpyLearner):
    config: DQNConfig
    loss_name = "DQN"
    extra_state_keys = ("target", "last_target_update_step")

    def __init__(
        self,
        config: DQNConfig,
        spaces: SpaceInfo | None,
        build: Callable[[], Any] | None = None,
        module: Any = None,
    ):
        """`build`: makes the module to train and its target network alike (a multi-agent
        run's, from its spec); `module`: the module to train, built by `build` already (its
        target network is then built by `build` again). None builds the config's for
        `spaces`."""
        if build is None:
            module = config.build_module(spaces, seed=config.seed)
            self.target = config.build_module(spaces, seed=config.seed)
        else:
            module = module if module is not None else build()
            self.target = build()
        super().__init__(config, module)
        self.target.flat_params[:] = self.module.flat_params
        self._last_target_update_step = 0
        #: Updates run on one BLAS thread unless the user sized the pools (see BlasThreads).
        self.update_threads = BlasThreads()

    def update(
        self, batch: dict[str, np.ndarray], *, num_env_steps_sampled_lifetime: int
    ) -> UpdateResults:
        """One Adam step on `batch` (as `replay_buffer.sample_train_batch` returns it); returns the
        metrics and, under `TD_ERROR_KEY`, the per-item TD errors (for prioritized replay; the
        algorithm takes them out before logging, as RLlib's DQN does); then moves the target
        network when it is due."""
        self.apply_lr_schedule(num_env_steps_sampled_lifetime)
        results = self.gradient_step(batch)
        self.update_target_network(num_env_steps_sampled_lifetime)
        return results

    def gradient_step(self, batch: dict[str, np.ndarray]) -> UpdateResults:
        """`update`'s Adam step and results, at the optimizer's current rate, without the
        target network's update."""
        stats, td_errors = self.loss_and_gradients(batch)
        # Clip (grad_clip_by), Adam step.
        grad_norm = self.apply_gradients(stats["qf_loss"])
        return {
            **stats,
            "gradients_adam_global_norm": grad_norm,
            "curr_lr": self.optimizer.lr,
            DEFAULT_OPTIMIZER_LR_KEY: self.optimizer.lr,
            # The algorithm logs the mean over its updates: RLlib's mean train batch size.
            MODULE_TRAIN_BATCH_SIZE_MEAN: float(len(td_errors)),
            TD_ERROR_KEY: td_errors,
        }

    def loss_and_gradients(
        self, batch: dict[str, np.ndarray]
    ) -> tuple[dict[str, float], np.ndarray]:
        """The loss's statistics (`qf_loss`, `qf_mean`, `qf_min`, `qf_max`, `td_error_mean`;
        with `num_atoms` > 1 RLlib's statistics of the distributions too) and the per-row TD
        errors, with the loss's gradient written into the module's gradient buffer (no
        step)."""
        if self.module.num_atoms > 1:
            return self._distributional_loss(batch)
        return self._expected_value_loss(batch)

    def _expected_value_loss(
        self, batch: dict[str, np.ndarray]
    ) -> tuple[dict[str, float], np.ndarray]:
        config, module = self.config, self.module
        preprocess = module.spaces.preprocess
        obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
        actions = batch["actions"].astype(np.int64)
        rows = np.arange(len(actions))

        # Q(s, .) with what backward needs and, with double_q, Q(s', .) for the bootstrap
        # action, in one pass over both (as RLlib's module does): one product per layer
        # instead of two, each row computed as in a pass over its own half. Backward then
        # runs over the observations' rows only.
        batch_size = len(actions)
        if config.double_q:
            both, cache = module.forward_train(np.concatenate([obs, next_obs]))
            q_values, next_q_values = both[:batch_size], both[batch_size:]
            cache = _leading_rows(cache, batch_size)
        else:
            q_values, cache = module.forward_train(obs)

        # TD targets from the target network (no gradient flows through them).
        next_q_target = self.target.q_values(next_obs)
        next_actions = (next_q_values if config.double_q else next_q_target).argmax(axis=1)
        not_terminated = 1.0 - batch["terminateds"].astype(np.float32)
        targets = (
            batch["rewards"]
            + batch["discounts"] * not_terminated * next_q_target[rows, next_actions]
        )

        # Q(s, a) of the actions taken, and the TD errors.
        q_selected = q_values[rows, actions]
        td_errors = q_selected - targets

        # Importance-weighted loss and its gradient with respect to Q(s, a). (ufuncs and their
        # reductions directly: np.mean, np.clip and the array methods add a Python wrapper
        # call each, about 5% of a 32-row update in all.)
        weights = batch["weights"]
        abs_td_errors = np.abs(td_errors)
        if config.td_error_loss_fn == "huber":
            losses = np.where(
                abs_td_errors <= 1.0, 0.5 * (td_errors * td_errors), abs_td_errors - 0.5
            )
            d_losses = np.minimum(np.maximum(td_errors, -1.0), 1.0)
        else:  # "mse"
            losses = td_errors * td_errors
            d_losses = 2.0 * td_errors
        qf_loss = float(_sum(weights * losses) / batch_size)
        d_q_values = np.zeros_like(q_values)
        d_q_values[rows, actions] = weights * d_losses / batch_size

        module.backward(cache, d_q_values)
        return {
            "qf_loss": qf_loss,
            "qf_mean": float(_sum(q_selected) / batch_size),
            "qf_min": float(np.minimum.reduce(q_selected)),
            "qf_max": float(np.maximum.reduce(q_selected)),
            # RLlib's: the mean of the absolute TD errors.
            "td_error_mean": float(_sum(abs_td_errors) / batch_size),
        }, td_errors

    def _distributional_loss(
        self, batch: dict[str, np.ndarray]
    ) -> tuple[dict[str, float], np.ndarray]:
        """RLlib 2.60's distributional loss (`DQNTorchLearner`, num_atoms > 1): the target
        network's distribution at the bootstrap action, shifted by the n-step return and
        projected onto the support (`project_distribution`), against the online network's
        distribution of the action taken: the cross-entropy per row (also the TD error the
        priorities follow), weighted by the importance weights, averaged."""
        config, module = self.config, self.module
        preprocess = module.spaces.preprocess
        obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
        actions = batch["actions"].astype(np.int64)
        batch_size = len(actions)
        rows = np.arange(batch_size)
        if config.double_q:  # one pass over both, as for the expected values
            logits, cache = module.forward_train(np.concatenate([obs, next_obs]))
            cache = _leading_rows(cache, batch_size)
        else:
            logits, cache = module.forward_train(obs)
        # RLlib's statistics read the probabilities of the whole pass (with double_q, of the
        # observations and the next observations).
        all_probs, all_q_values = module.distribution(logits)
        q_values = all_q_values[:batch_size]

        # The target distribution (no gradient flows through it).
        target_probs, next_q_target = self.target.distribution(self.target.q_logits(next_obs))
        next_actions = (all_q_values[batch_size:] if config.double_q else next_q_target).argmax(
            axis=1
        )
        not_terminated = 1.0 - batch["terminateds"].astype(np.float32)
        target = project_distribution(
            target_probs[rows, next_actions],
            batch["rewards"],
            batch["discounts"] * not_terminated,
            module.atoms,
            module.v_min,
            module.v_max,
        )

        # Cross-entropy of the taken action's distribution against the projected target, and
        # its gradient with respect to the logits: softmax * sum(target) - target.
        log_probs = log_softmax(logits[rows, actions])
        cross_entropy = -_sum(target * log_probs, axis=1)
        weights = batch["weights"]
        qf_loss = float(_sum(weights * cross_entropy) / batch_size)
        d_logits = np.zeros((batch_size, *logits.shape[1:]), dtype=logits.dtype)
        d_logits[rows, actions] = (
            np.exp(log_probs) * _sum(target, axis=1, keepdims=True) - target
        ) * (weights / batch_size)[:, None]
        module.backward(cache, d_logits)

        q_selected = q_values[rows, actions]
        return {
            "qf_loss": qf_loss,
            "qf_mean": float(_sum(q_selected) / batch_size),
            "qf_min": float(np.minimum.reduce(q_selected)),
            "qf_max": float(np.maximum.reduce(q_selected)),
            "td_error_mean": float(_sum(cross_entropy) / batch_size),
            **distribution_stats(all_probs, module.atoms),
        }, cross_entropy

    def update_target_network(self, num_env_steps_sampled_lifetime: int) -> None:
        """Moves the target network towards the online one when `target_network_update_freq`
        sampled env steps passed since the last time."""
        config = self.config
        if (
            num_env_steps_sampled_lifetime - self._last_target_update_step
            >= config.target_network_update_freq
        ):
            tau = config.tau
            self.target.flat_params *= 1.0 - tau
            self.target.flat_params += tau * self.module.flat_params
            self._last_target_update_step = num_env_steps_sampled_lifetime

    def get_extra_state(self) -> dict:
        return {
            "target": self.target.get_weights(),
            "last_target_update_step": self._last_target_update_step,
        }

    def check_extra_state(self, state: dict, where: str) -> None:
        self.target.check_weights(state["target"], f"{where}['target']")
        require_int(state["last_target_update_step"], f"{where}['last_target_update_step']")

    def set_extra_state(self, state: dict) -> None:
        self.target.set_weights(state["target"])
        self._last_target_update_step = int(state["last_target_update_step"])
