"""MARWIL's torch learner, RLlib 2.60's `MARWILTorchLearner`: MARWIL's loss (`loss.py`) on a
torch module with a value function, RLlib's `DefaultPPOTorchRLModule` by default. The value
targets come from the value function on `new_obs`, outside the graph, with the module's
weights as they were at the first update (a frozen copy of the module: see
`trainer.algorithms.marwil.marwil_learner`); the advantage weights are detached, as RLlib's."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from trainer.algorithms.marwil.loss import torch_loss, value_targets
from trainer.algorithms.marwil.marwil_learner import MovingAverageState
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY
from trainer.offline import columns as C
from trainer.torch_rl.learner import TorchLearner


class MARWILTorchLearner(MovingAverageState, TorchLearner):
    """See the module docstring. `update(batch)` takes a transition batch
    (`trainer.offline.reading`) and takes one step of the default optimizer on it."""

    algorithm_name = "MARWIL"
    #: A MARWILConfig (or BCConfig).
    config: Any

    def __init__(self, config: Any, module: Any, **kwargs: Any):
        super().__init__(config, module, **kwargs)
        if config.beta != 0.0 and not isinstance(self.rl_module, ValueFunctionAPI):
            raise TypeError(
                f"{type(self).__name__}: MARWIL with beta={config.beta} needs a module with a "
                f"value function (ValueFunctionAPI); {type(self.rl_module).__name__} has none"
            )
        self.start_moving_average()
        #: The module that holds the value targets' weights, and the weights it was built for.
        self._value_targets_module: tuple[Any, Any] = (None, None)

    def value_targets(self, batch: dict[str, Any], *, freeze: bool = True) -> torch.Tensor:
        """One-step targets V_target = r + gamma (1 - d) V(s'), without a graph, with the
        value targets' weights (`freeze`: see `MovingAverageState.next_values`)."""
        with torch.no_grad():
            next_obs = {Columns.OBS: batch[C.NEXT_OBS]}
            next_values = self.next_values(
                self.rl_module, lambda module: module.compute_values(next_obs), freeze=freeze
            )
            rewards = batch[C.REWARDS].to(next_values.dtype)
            terminateds = batch[C.TERMINATEDS].to(next_values.dtype)
            return value_targets(rewards, terminateds, next_values, self.config.gamma)

    # The value targets' weights: the module's state (arrays by parameter name, as the learner
    # state's "module"), computed with by a copy of the module that holds them.
    def _frozen_value_weights(self) -> dict[str, np.ndarray]:
        return {key: np.array(value) for key, value in self.rl_module.get_state().items()}

    def _copy_value_weights(self, weights: Any) -> dict[str, np.ndarray]:
        return {key: np.array(value) for key, value in weights.items()}

    def _check_value_weights(self, weights: Any, where: str) -> None:
        self._check_module_state(weights, where)

    def _use_value_weights(self, compute: Callable[[Any], Any]) -> Any:
        weights, frozen = self._value_targets_module
        if weights is not self.value_targets_weights:  # frozen or restored since it was built
            frozen = copy.deepcopy(self.rl_module)
            frozen.set_state(self.value_targets_weights)
            frozen.requires_grad_(False)
            self._value_targets_module = (self.value_targets_weights, frozen)
        return compute(frozen)

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        """RLlib 2.60's MARWIL loss (`loss.torch_loss`); moves the moving average; logs
        policy_loss (and vf_loss, vf_explained_variance and moving_avg_sqd_adv_norm with
        beta > 0)."""
        module = self.rl_module
        targets = None if config.beta == 0.0 else self.value_targets(batch)
        total_loss, stats, self.moving_average_sqd_adv_norm = torch_loss(
            batch,
            fwd_out[Columns.ACTION_DIST_INPUTS],
            module.get_train_action_dist_cls(),
            lambda: module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS)),
            targets,
            config,
            moving_average_sqd_adv_norm=self.moving_average_sqd_adv_norm,
        )
        self.log_loss_stats(stats)
        return total_loss

    def update(
        self, batch: dict[str, Any], *, num_env_steps_sampled_lifetime: int | None = None
    ) -> dict[str, Any]:
        """One optimizer step on `batch`; the step's statistics under RLlib's keys."""
        with self.update_threads():
            self.metrics.reset()
            self.apply_lr_schedule(num_env_steps_sampled_lifetime)
            stats = self.update_from_batch(batch)
            self.agree_on_moving_average()
        stats.update(self.update_results())
        stats[DEFAULT_OPTIMIZER_LR_KEY] = self.current_lr
        stats["num_module_steps_trained"] = len(batch[C.OBS])
        return stats
