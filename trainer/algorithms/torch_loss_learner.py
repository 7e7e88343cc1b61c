"""`LossTorchLearner`: the torch learner of an algorithm whose loss is a function of the batch,
the module's outputs and the config, trained on complete episodes; the numpy one and the
update's steps: `trainer.algorithms.loss_learner`. The algorithm's config names the loss
(`AlgorithmClasses.torch_loss`) and what the train batch holds of an episode
(`AlgorithmClasses.episode_columns`).

The torch loss: `loss(batch, fwd_out, config, action_dist_class=...) -> (loss, stats)`, of one
module's batch (tensors) and its forward pass's outputs; `TorchLearner.update_from_batch` takes
the gradient step (backward, `grad_clip`, the optimizers), each statistic logged under the
module's id. In a multi-agent run the learner trains the whole MultiRLModule
(`is_multi_module`: the config's `_JOINT_MODULES`): one batch per module, of its agents' steps,
the modules' losses summed, in one backward pass through the container's own forward. With the
config's `report_mean_weights`, the mean of each module's weights after the update
(`mean_weight`: RLlib's check that learners on several GPUs hold the same weights).

Its results: the last step's statistics, what the losses logged, `curr_lr` and
`num_env_steps_trained`; in a multi-agent run each module's under its id and the update's under
`ALL_MODULES`. Needs torch (the torch extra): a config names it by its import path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from trainer.algorithms.loss_learner import declared_functions, episode_batch
from trainer.algorithms.multi_agent_learner import episodes_by_module
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, LearnerConfig, UpdateResults
from trainer.core.models import DEFAULT_MODULE_ID, SpaceInfo
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import ALL_MODULES, NUM_ENV_STEPS_SAMPLED_LIFETIME
from trainer.torch_rl.learner import TorchLearner

#: `loss(batch, fwd_out, config, action_dist_class=...) -> (loss, {statistic: value})`.
TorchLossFn = Callable[..., tuple[torch.Tensor, dict[str, Any]]]


class LossTorchLearner(TorchLearner):
    """See the module docstring. `module`: the full TorchRLModule, or a view of one, whose
    forward pass returns what the loss reads (`Columns.ACTION_DIST_INPUTS`); in a multi-agent
    run, the full MultiRLModule."""

    #: The algorithm's config (`num_epochs`, and what its loss and columns read).
    config: Any

    def __init__(self, config: Any, module: Any, *, module_id: str = DEFAULT_MODULE_ID):
        #: The algorithm's loss and its columns of an episode (see the module docstring).
        self.loss: TorchLossFn
        self.loss, self.episode_columns = declared_functions(
            type(self).__name__, config, "torch_loss"
        )
        super().__init__(config, module, module_id=module_id)

    def update(
        self,
        episodes: list[Any],
        /,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
    ) -> UpdateResults:
        """One update on complete `episodes` (MultiAgentEpisodes in a multi-agent run); see the
        module docstring."""
        with self.update_threads():
            self.metrics.reset()  # (an update that stopped on an error may have logged some)
            self.apply_lr_schedule(num_env_steps_sampled_lifetime)
            batch = self.build_train_batch(episodes)
            step_stats: dict[str, float] = {}
            for _ in range(self.config.num_epochs):
                step_stats = self.update_from_batch(batch)
            self.after_gradient_based_update(
                timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: num_env_steps_sampled_lifetime or 0}
            )
            logged = self.update_results()
            if self.is_multi_module:
                env_steps = sum(len(episode) for episode in episodes)
                return self._multi_module_results(batch, step_stats, logged, env_steps)
            results: UpdateResults = {**step_stats, **logged}
            results["curr_lr"] = results[DEFAULT_OPTIMIZER_LR_KEY] = self.current_lr
            results["num_env_steps_trained"] = len(batch[Columns.ACTIONS])
            return results

    def _multi_module_results(
        self,
        batch: dict[str, Any],
        step_stats: dict[str, float],
        logged: dict[str, Any],
        env_steps: int,
    ) -> UpdateResults:
        """A whole MultiRLModule's update results: what each module's loss logged and its
        agent steps trained under its id, the step's statistics and its `env_steps` under
        `ALL_MODULES`."""
        results: dict[str, Any] = {
            key: value for key, value in logged.items() if isinstance(value, dict)
        }
        for module_id, module_batch in batch.items():
            results.setdefault(module_id, {})["num_module_steps_trained"] = len(
                module_batch[Columns.ACTIONS]
            )
        results[ALL_MODULES] = {
            **step_stats,
            **{key: value for key, value in logged.items() if not isinstance(value, dict)},
            "curr_lr": self.current_lr,
            DEFAULT_OPTIMIZER_LR_KEY: self.current_lr,
            "num_env_steps_trained": env_steps,
        }
        return results

    def build_train_batch(self, episodes: list[Any]) -> dict[str, Any]:
        """The episodes' steps as one batch (see the module docstring); in a multi-agent run,
        one per module (its agents' steps), by module id."""
        if self.is_multi_module:
            return {
                module_id: self._module_batch(
                    module_episodes, self._module_spaces(module_id).preprocess
                )
                for module_id, module_episodes in episodes_by_module(episodes).items()
            }
        return self._module_batch(episodes, self.module.spaces.preprocess)

    def _module_spaces(self, module_id: str) -> SpaceInfo:
        """How module `module_id`'s observations are preprocessed (as its EnvRunners' view
        does: the env's shape kept for the module)."""
        module = self.module[module_id]
        return SpaceInfo.from_spaces(
            module.observation_space, module.action_space, nested_obs=True
        ).keeping_obs_shape()

    def _module_batch(
        self, episodes: list[SingleAgentEpisode], preprocess: Any
    ) -> dict[str, np.ndarray]:
        """One module's batch of `episodes` (`episode_batch`)."""
        return episode_batch(episodes, self.episode_columns, self.config, preprocess)

    def compute_loss_for_module(
        self,
        *,
        module_id: str,
        config: LearnerConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """The algorithm's loss of module `module_id`'s batch; its statistics logged under the
        module's id (averaged over the update's steps)."""
        action_dist_class = self._torch_module(module_id).get_train_action_dist_cls()
        loss, stats = self.loss(batch, fwd_out, config, action_dist_class=action_dist_class)
        for key, value in stats.items():
            self.metrics.log_value(key=(module_id, key), value=value, reduce="mean")
        return loss

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """With `report_mean_weights`, logs the mean of each module's weights."""
        super().after_gradient_based_update(timesteps=timesteps)
        if not getattr(self.config, "report_mean_weights", False):
            return
        module_ids = list(self.module.keys()) if self.is_multi_module else [self.module_id]
        for module_id in module_ids:
            parameters = self.get_parameters(self._torch_module(module_id))
            if parameters:
                mean_weight = np.mean([float(w.detach().mean()) for w in parameters])
                self.metrics.log_value((module_id, "mean_weight"), mean_weight, window=1)


__all__ = ["LossTorchLearner"]
