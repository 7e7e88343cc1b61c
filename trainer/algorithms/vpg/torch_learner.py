"""`VPGTorchLearner`: the vanilla policy gradient (REINFORCE, Williams 1992) on a torch module.

One update, on the complete episodes of one training step:

1. returns to go, per episode:  G_t = r_t + gamma * r_{t+1} + gamma^2 * r_{t+2} + ...
   (to the episode's end: episodes are complete, none is bootstrapped)
2. the policy's log-likelihood of each action taken:  log pi_theta(a_t | s_t)
3. the loss, without a baseline:  L(theta) = -mean_t [ log pi_theta(a_t | s_t) * G_t ]
4. `num_epochs` gradient steps on the whole batch (RLlib's default: one), with the optimizers
   of `TorchLearner` (Adam at `lr`, `grad_clip`).

In a multi-agent run the learner trains the whole MultiRLModule (`TorchLearner`'s
`is_multi_module`): each trained module's loss on its agents' steps, summed, in one backward
pass through the container's own forward (a MultiRLModule that runs its policies after a shared
encoder trains it with them), each registered optimizer stepping its parameters (one Adam per
module by default; RLlib's `VPGTorchLearnerSharedOptimizer` registers one over all of them).

Statistics, as RLlib's example learner logs them: the mean return to go of each action taken
(`action_<a>_return_to_go_mean`), and with `report_mean_weights` the mean of the module's
weights after the update (`mean_weight`); `TorchLearner` adds `total_loss` and the gradient's
norm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trainer.algorithms.multi_agent_learner import episodes_by_module
from trainer.compat.rllib_utils import Columns
from trainer.core.learner import DEFAULT_OPTIMIZER_LR_KEY, LearnerConfig, UpdateResults
from trainer.core.models import SpaceInfo
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import ALL_MODULES, NUM_ENV_STEPS_SAMPLED_LIFETIME
from trainer.torch_rl.learner import TorchLearner

if TYPE_CHECKING:
    from trainer.algorithms.vpg.vpg import VPGConfig


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = sum_{k >= t} gamma^(k - t) * r_k for every step t of one episode."""
    G = np.zeros(len(rewards), dtype=np.float32)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        G[t] = running
    return G


class VPGTorchLearner(TorchLearner):
    """VPG's learner (see the module docstring). `module`: the full TorchRLModule, or a view
    of one, whose forward pass returns `Columns.ACTION_DIST_INPUTS`; in a multi-agent run, the
    full MultiRLModule."""

    config: VPGConfig
    algorithm_name = "VPG"

    def update(
        self,
        episodes: list[Any],
        /,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
    ) -> UpdateResults:
        """One VPG update on complete `episodes` (MultiAgentEpisodes in a multi-agent run);
        returns the statistics (see the module docstring), `curr_lr` and
        `num_env_steps_trained`; in a multi-agent run, those of each module under its id and
        the update's under `ALL_MODULES`."""
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
        """The episodes' steps as one batch: observations s_t (preprocessed as the EnvRunners
        fed them to the module), actions a_t and returns to go G_t; in a multi-agent run, one
        such batch per module (its agents' steps), by module id."""
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
        """One module's batch of `episodes` (see `build_train_batch`)."""
        episodes = [ep for ep in episodes if len(ep) > 0]
        gamma = float(self.config.gamma)
        return {
            # Each episode holds one observation more than actions: the one after its last step.
            Columns.OBS: preprocess(
                np.concatenate([ep.get_observations()[:-1] for ep in episodes])
            ),
            Columns.ACTIONS: np.concatenate([ep.get_actions() for ep in episodes]),
            Columns.RETURNS_TO_GO: np.concatenate(
                [returns_to_go(np.asarray(ep.get_rewards()), gamma) for ep in episodes]
            ),
        }

    def compute_loss_for_module(
        self,
        *,
        module_id: str,
        config: LearnerConfig,
        batch: dict[str, Any],
        fwd_out: dict[str, Any],
    ) -> torch.Tensor:
        """L(theta) = -mean_t [ log pi_theta(a_t | s_t) * G_t ]."""
        action_dist_class = self._torch_module(module_id).get_train_action_dist_cls()
        pi = action_dist_class.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        log_probs = pi.logp(batch[Columns.ACTIONS])
        G = batch[Columns.RETURNS_TO_GO]
        loss = -torch.mean(log_probs * G)
        actions = batch[Columns.ACTIONS]
        for action in torch.unique(actions).tolist():
            self.metrics.log_value(
                key=(module_id, f"action_{action}_return_to_go_mean"),
                value=G[actions == action].mean(),
                reduce="mean",
            )
        return loss

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """With `report_mean_weights`, logs the mean of the module's weights (RLlib's check
        that learners on several GPUs hold the same weights)."""
        super().after_gradient_based_update(timesteps=timesteps)
        if not self.config.report_mean_weights:
            return
        module_ids = list(self.module.keys()) if self.is_multi_module else [self.module_id]
        for module_id in module_ids:
            parameters = self.get_parameters(self._torch_module(module_id))
            if parameters:
                mean_weight = np.mean([float(w.detach().mean()) for w in parameters])
                self.metrics.log_value((module_id, "mean_weight"), mean_weight, window=1)
