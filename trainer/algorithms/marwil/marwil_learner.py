"""MARWIL's numpy learner (RLlib 2.60's `MARWILLearner`, with `MARWILTorchLearner`'s loss in
numpy) on PPO's policy-and-value module: each update is one Adam step on MARWIL's loss
(`loss.py`) of a batch of recorded transitions; with beta = 0 it is BC's learner. The learners'
state beyond the module and the optimizer is `MovingAverageState` (here, the torch learner's
too): the moving average c^2 of the squared advantages and the value network the value targets
come from.

The value targets r + gamma (1 - d) V(s') use the module's weights as they were at the
learner's first update, for the whole run, as RLlib 2.60's: its OfflineData maps the dataset
through the OfflinePreLearner once, with the module state the learner had when reading began,
and never updates it. (Bootstrapping from the value network as it learns spreads the advantage
weights exp(beta A / c) over orders of magnitude and the policy does not learn RLlib's
CartPole example.) Those weights are part of the learner's state, so a restored run goes on
with the same targets.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from trainer.algorithms.marwil.loss import numpy_loss, numpy_loss_gradients, value_targets
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, NumpyLearner
from trainer.offline import columns as C

#: The learner state's key of the value targets' weights (present once the first update froze
#: them).
VALUE_TARGETS_WEIGHTS = "value_targets_weights"


class MovingAverageState(ABC):
    """The learners' state beyond the module and the optimizer (numpy and torch learners
    alike): the moving average c^2 of the squared advantages (`moving_average_sqd_adv_norm`,
    which the loss moves at each batch with beta > 0), its start and its checkpoint key; and
    the weights the value targets come from (`value_targets_weights`, the module's at the
    first update with beta > 0; None before), which a backend keeps in its own form
    (`_frozen_value_weights`, `_check_value_weights`, `_use_value_weights`)."""

    extra_state_keys: tuple[str, ...] = ("moving_average_sqd_adv_norm",)
    moving_average_sqd_adv_norm: float
    value_targets_weights: Any = None
    config: Any

    def start_moving_average(self) -> None:
        self.moving_average_sqd_adv_norm = float(self.config.moving_average_sqd_adv_norm_start)
        self.value_targets_weights = None

    def get_extra_state(self) -> dict:
        state: dict[str, Any] = {"moving_average_sqd_adv_norm": self.moving_average_sqd_adv_norm}
        if self.value_targets_weights is not None:  # a copy, as the rest of the state
            state[VALUE_TARGETS_WEIGHTS] = self._copy_value_weights(self.value_targets_weights)
        return state

    def check_extra_state(self, state: dict, where: str) -> None:
        value = state["moving_average_sqd_adv_norm"]
        if not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
            raise ValueError(f"{where}['moving_average_sqd_adv_norm'] must be a number >= 0")
        if state.get(VALUE_TARGETS_WEIGHTS) is not None:
            self._check_value_weights(
                state[VALUE_TARGETS_WEIGHTS], f"{where}[{VALUE_TARGETS_WEIGHTS!r}]"
            )

    def set_extra_state(self, state: dict) -> None:
        """Takes the moving average back, and the value targets' weights where `state` has
        them (a state saved before the first update, or by an earlier version, has none: the
        next update freezes the module's weights then, as RLlib's reader does when it
        starts)."""
        self.moving_average_sqd_adv_norm = float(state["moving_average_sqd_adv_norm"])
        weights = state.get(VALUE_TARGETS_WEIGHTS)
        self.value_targets_weights = None if weights is None else self._copy_value_weights(weights)

    def next_values(self, module: Any, compute: Callable[[Any], Any], *, freeze: bool) -> Any:
        """`compute(module)` (a module's values of the next observations) with the value
        targets' weights; `freeze`: an update's, which freezes `module`'s current weights
        first if none are (an offline evaluation before any update computes with the current
        weights and freezes nothing)."""
        if self.value_targets_weights is None:
            if not freeze:
                return compute(module)
            self.value_targets_weights = self._frozen_value_weights()
        return self._use_value_weights(compute)

    # The backend's part (numpy here; the torch learner's own).
    @abstractmethod
    def _frozen_value_weights(self) -> Any:
        """A copy of the module's current weights."""

    @abstractmethod
    def _copy_value_weights(self, weights: Any) -> Any:
        """`weights` (from a learner state) as this backend keeps them, copied."""

    @abstractmethod
    def _check_value_weights(self, weights: Any, where: str) -> None:
        """Raises `StateError` unless `weights` fit the module."""

    @abstractmethod
    def _use_value_weights(self, compute: Callable[[Any], Any]) -> Any:
        """`compute(module)` for a module with `value_targets_weights`, the learner's module
        left as it was."""

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

    def value_targets(self, batch: dict[str, np.ndarray], *, freeze: bool = True) -> np.ndarray:
        """The batch's one-step value targets V_target = r + gamma (1 - d) V(s') with the
        value targets' weights (the module's at the first update; see the module docstring;
        no gradient flows through them)."""
        module = self.module
        next_obs = module.spaces.preprocess(batch[C.NEXT_OBS])
        next_values = self.next_values(
            module, lambda values_module: values_module.values(next_obs), freeze=freeze
        )
        rewards = batch[C.REWARDS].astype(next_values.dtype)
        return value_targets(
            rewards, batch[C.TERMINATEDS].astype(rewards.dtype), next_values, self.config.gamma
        )

    def _frozen_value_weights(self) -> dict[str, np.ndarray]:
        return cast(dict[str, np.ndarray], self.module.get_weights())

    def _copy_value_weights(self, weights: Any) -> dict[str, np.ndarray]:
        return {name: np.array(value) for name, value in weights.items()}

    def _check_value_weights(self, weights: Any, where: str) -> None:
        self.module.check_weights(weights, where)

    def _use_value_weights(self, compute: Callable[[Any], Any]) -> Any:
        # The frozen weights in the module for the call, then its own back.
        module = self.module
        own = module.get_weights()
        module.set_weights(self.value_targets_weights)
        try:
            return compute(module)
        finally:
            module.set_weights(own)

    def loss_and_grads(
        self, batch: dict[str, np.ndarray], *, freeze: bool = True
    ) -> dict[str, Any]:
        """The loss of `batch` and its gradient, written into the module's gradient buffer; moves
        the moving average; returns the loss statistics under RLlib's keys (`loss.py`).
        `freeze`: see `next_values`."""
        config, module = self.config, self.module
        targets = None if config.beta == 0.0 else self.value_targets(batch, freeze=freeze)
        dist_inputs, values, cache = module.forward_train(module.spaces.preprocess(batch[C.OBS]))
        dist = module.dist.loss_grads(dist_inputs, batch[C.ACTIONS], dist_inputs)
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
        moving_average = self.moving_average_sqd_adv_norm
        try:
            return self.loss_and_grads(batch, freeze=False)
        finally:
            self.moving_average_sqd_adv_norm = moving_average

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
