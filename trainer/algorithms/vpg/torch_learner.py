"""`VPGTorchLearner`: the vanilla policy gradient (REINFORCE, Williams 1992) on a torch module.

One update, on the complete episodes of one training step:

1. returns to go, per episode:  G_t = r_t + gamma * r_{t+1} + gamma^2 * r_{t+2} + ...
   (to the episode's end: episodes are complete, none is bootstrapped)
2. the policy's log-likelihood of each action taken:  log pi_theta(a_t | s_t)
3. the loss, without a baseline:  L(theta) = -mean_t [ log pi_theta(a_t | s_t) * G_t ]
4. `num_epochs` gradient steps on the whole batch (RLlib's default: one), with the optimizers
   of `TorchLearner` (Adam at `lr`, `grad_clip`).

Statistics, as RLlib's example learner logs them: the mean return to go of each action taken
(`action_<a>_return_to_go_mean`), and with `report_mean_weights` the mean of the module's
weights after the update (`mean_weight`); `TorchLearner` adds `total_loss` and the gradient's
norm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from trainer.compat.rllib_utils import Columns
from trainer.core.learner import LearnerConfig, UpdateResults
from trainer.env.episode import SingleAgentEpisode
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
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
    of one, whose forward pass returns `Columns.ACTION_DIST_INPUTS`."""

    config: VPGConfig
    algorithm_name = "VPG"

    def update(
        self,
        episodes: list[SingleAgentEpisode],
        /,
        *,
        num_env_steps_sampled_lifetime: int | None = None,
    ) -> UpdateResults:
        """One VPG update on complete `episodes`; returns the statistics (see the module
        docstring), `curr_lr` and `num_env_steps_trained`."""
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
            results: UpdateResults = {**step_stats, **self.update_results()}
            results["curr_lr"] = self.current_lr
            results["num_env_steps_trained"] = len(batch[Columns.ACTIONS])
            return results

    def build_train_batch(self, episodes: list[SingleAgentEpisode]) -> dict[str, np.ndarray]:
        """The episodes' steps as one batch: observations s_t (preprocessed as the EnvRunners
        fed them to the module), actions a_t and returns to go G_t."""
        episodes = [ep for ep in episodes if len(ep) > 0]
        preprocess = self.module.spaces.preprocess
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
        action_dist_class = self.rl_module.get_train_action_dist_cls()
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
        if self.config.report_mean_weights:
            parameters = self.get_parameters(self.rl_module)
            mean_weight = np.mean([float(w.detach().mean()) for w in parameters])
            self.metrics.log_value((self.module_id, "mean_weight"), mean_weight, window=1)
