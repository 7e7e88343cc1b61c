"""MARWIL's numpy learner (RLlib 2.60's `MARWILLearner`, with `MARWILTorchLearner`'s loss in
numpy) on PPO's policy-and-value module: each update is one Adam step on MARWIL's loss
(`loss.py`) of a batch of recorded transitions; with beta = 0 it is BC's learner. The learners'
state beyond the module and the optimizer, the moving average c^2 of the squared advantages,
is `MovingAverageState` (here, the torch learner's too).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from trainer.algorithms.marwil.loss import numpy_loss, numpy_loss_gradients, value_targets
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, NumpyLearner
from trainer.offline import columns as C


class MovingAverageState:
    """The learners' state beyond the module and the optimizer: the moving average c^2 of the
    squared advantages (`moving_average_sqd_adv_norm`, which the loss moves at each batch with
    beta > 0), its start and its checkpoint key (numpy and torch learners alike)."""

    extra_state_keys: tuple[str, ...] = ("moving_average_sqd_adv_norm",)
    moving_average_sqd_adv_norm: float
    config: Any

    def start_moving_average(self) -> None:
        self.moving_average_sqd_adv_norm = float(self.config.moving_average_sqd_adv_norm_start)

    def get_extra_state(self) -> dict:
        return {"moving_average_sqd_adv_norm": self.moving_average_sqd_adv_norm}

    def check_extra_state(self, state: dict, where: str) -> None:
        value = state["moving_average_sqd_adv_norm"]
        if not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
            raise ValueError(f"{where}['moving_average_sqd_adv_norm'] must be a number >= 0")

    def set_extra_state(self, state: dict) -> None:
        self.moving_average_sqd_adv_norm = float(state["moving_average_sqd_adv_norm"])

    def agree_on_moving_average(self) -> None:
        """After an update's loss: the moving average becomes its mean over the data-parallel
        learners, each of which moved it on its own shard (unchanged with one learner), so
        that the replicas stay equal."""
        mean_over_learners = cast(Any, self).mean_over_learners
        self.moving_average_sqd_adv_norm = mean_over_learners(self.moving_average_sqd_adv_norm)


class MARWILLearner(MovingAverageState, NumpyLearner):
    """See the module docstring. `update(batch)` takes a transition batch
    (`trainer.offline.reading`) and takes one Adam step on it."""

    loss_name = "MARWIL"
    #: A MARWILConfig (or BCConfig); the learners sit below the algorithms' configs.
    config: Any

    def __init__(self, config: Any, module: Any):
        super().__init__(config, module)
        self.start_moving_average()

    def value_targets(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """The batch's one-step value targets V_target = r + gamma (1 - d) V(s') with the
        module's current value network (no gradient flows through them)."""
        module = self.module
        next_values = module.values(module.spaces.preprocess(batch[C.NEXT_OBS]))
        rewards = batch[C.REWARDS].astype(next_values.dtype)
        return value_targets(
            rewards, batch[C.TERMINATEDS].astype(rewards.dtype), next_values, self.config.gamma
        )

    def loss_and_grads(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        """The loss of `batch` and its gradient, written into the module's gradient buffer; moves
        the moving average; returns the loss statistics under RLlib's keys (`loss.py`)."""
        config, module = self.config, self.module
        dist_inputs, values, cache = module.forward_train(module.spaces.preprocess(batch[C.OBS]))
        dist = module.dist.loss_grads(dist_inputs, batch[C.ACTIONS], dist_inputs)
        targets = None if config.beta == 0.0 else self.value_targets(batch)
        loss = numpy_loss(
            dist,
            dist_inputs,
            module.dist,
            values,
            targets,
            config,
            moving_average_sqd_adv_norm=self.moving_average_sqd_adv_norm,
        )
        self.moving_average_sqd_adv_norm = loss.moving_average_sqd_adv_norm
        d_dist_inputs, d_values = numpy_loss_gradients(loss, dist, dist_inputs, module.dist, config)
        module.backward(cache, d_dist_inputs, d_values)
        return loss.stats

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
        self.agree_on_moving_average()
        stats["gradients_default_optimizer_global_norm"] = self.apply_gradients(stats["total_loss"])
        stats[DEFAULT_OPTIMIZER_LR_KEY] = self.optimizer.lr
        stats["num_module_steps_trained"] = len(batch[C.OBS])
        return stats
