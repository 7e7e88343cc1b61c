"""`DQNLearner`: one gradient step of (double, dueling, n-step, distributional) DQN on a replay
batch, in numpy.

The step: the module's outputs (`module_outputs`: the online network's Q-values, or with
`num_atoms` > 1 its logits and distributions, of the observations and with `double_q` of the
next observations, and the target network's of the next observations), then `loss.py`'s numpy
loss (`numpy_loss`, `numpy_distributional_loss`: the loss, RLlib's statistics, the per-row TD
errors and the loss's gradient with respect to the module's outputs), the module's backward
pass and Adam. The target network follows the online one every `target_network_update_freq`
sampled env steps: target <- tau * online + (1 - tau) * target.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from trainer.algorithms.dqn.loss import (
    ATOMS,
    QF_LOGITS,
    QF_NEXT_PREDS,
    QF_PREDS,
    QF_PROBS,
    QF_TARGET_NEXT_PREDS,
    QF_TARGET_NEXT_PROBS,
    numpy_distributional_loss,
    numpy_loss,
)
from trainer.core.blas import BlasThreads
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, NumpyLearner, UpdateResults
from trainer.core.models import SpaceInfo
from trainer.metrics import MODULE_TRAIN_BATCH_SIZE_MEAN, TD_ERROR_KEY
from trainer.util.state_checks import require_int

if TYPE_CHECKING:
    from trainer.algorithms.dqn.config import DQNConfig


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
        step). The loss is `loss.py`'s, on the module's outputs (`module_outputs`)."""
        fwd_out, cache = self.module_outputs(batch)
        if self.module.num_atoms > 1:
            loss = numpy_distributional_loss(batch, fwd_out, self.config)
        else:
            loss = numpy_loss(batch, fwd_out, self.config)
        self.module.backward(cache, loss.d_outputs)
        return loss.stats, loss.td_error

    def module_outputs(self, batch: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Any]:
        """The loss's inputs from the online and the target network (RLlib's `fwd_out`, see
        `loss.py`), and the cache of the online pass that `backward` needs for the rows of the
        observations.

        With double_q, Q(s, .) and Q(s', .) come from one pass over both (as RLlib's module
        computes them): one product per layer instead of two, each row computed as in a pass
        over its own half; backward then runs over the observations' rows only. No gradient
        flows through the target network's outputs."""
        config, module, target = self.config, self.module, self.target
        preprocess = module.spaces.preprocess
        obs, next_obs = preprocess(batch["obs"]), preprocess(batch["next_obs"])
        batch_size = len(batch["actions"])
        if config.double_q:
            out, cache = module.forward_train(np.concatenate([obs, next_obs]))
            cache = _leading_rows(cache, batch_size)
        else:
            out, cache = module.forward_train(obs)
        fwd_out: dict[str, np.ndarray]
        if module.num_atoms > 1:
            # The logits and probabilities of the whole pass (RLlib's statistics read them all).
            probs, q_values = module.distribution(out)
            target_probs, target_q_values = target.distribution(target.q_logits(next_obs))
            fwd_out = {
                ATOMS: module.atoms,
                QF_LOGITS: out,
                QF_PROBS: probs,
                QF_TARGET_NEXT_PROBS: target_probs,
            }
        else:
            q_values, target_q_values = out, target.q_values(next_obs)
            fwd_out = {}
        fwd_out[QF_PREDS] = q_values[:batch_size]
        fwd_out[QF_TARGET_NEXT_PREDS] = target_q_values
        if config.double_q:
            fwd_out[QF_NEXT_PREDS] = q_values[batch_size:]
        return fwd_out, cache

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
