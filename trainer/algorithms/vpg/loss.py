"""VPG's loss: the vanilla policy gradient (REINFORCE, Williams 1992), without a baseline.

    G_t = r_t + gamma * r_{t+1} + gamma^2 * r_{t+2} + ...     (to the episode's end: the
                                                              episodes are complete)
    L(theta) = -mean_t [ log pi_theta(a_t | s_t) * G_t ]

`episode_columns` is what the train batch holds of one episode besides its observations and
actions (its returns to go); `vpg_loss` is the loss of a batch given the module's outputs, with
RLlib's example's statistics: the mean return to go of each action taken
(`action_<a>_return_to_go_mean`). The learner that runs them is the generic torch learner of
a loss function (`trainer.algorithms.torch_loss_learner.LossTorchLearner`, as
`VPGTorchLearner`), which the config names with them (`VPGConfig`'s `AlgorithmClasses`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainer.compat.rllib_utils import Columns


def returns_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = sum_{k >= t} gamma^(k - t) * r_k for every step t of one episode."""
    G = np.zeros(len(rewards), dtype=np.float32)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        G[t] = running
    return G


def episode_columns(episode: Any, config: Any) -> dict[str, np.ndarray]:
    """One complete episode's returns to go G_t (`Columns.RETURNS_TO_GO`), at `config.gamma`."""
    rewards = np.asarray(episode.get_rewards())
    return {Columns.RETURNS_TO_GO: returns_to_go(rewards, float(config.gamma))}


def vpg_loss(
    batch: dict[str, torch.Tensor],
    fwd_out: dict[str, torch.Tensor],
    config: Any,
    *,
    action_dist_class: Any,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """L(theta) = -mean_t [ log pi_theta(a_t | s_t) * G_t ] of `batch` (observations, actions,
    returns to go), pi_theta from the module's `Columns.ACTION_DIST_INPUTS`; and the mean G_t
    of each action taken."""
    pi = action_dist_class.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
    log_probs = pi.logp(batch[Columns.ACTIONS])
    G = batch[Columns.RETURNS_TO_GO]
    loss = -torch.mean(log_probs * G)
    actions = batch[Columns.ACTIONS]
    stats = {
        f"action_{action}_return_to_go_mean": G[actions == action].mean()
        for action in torch.unique(actions).tolist()
    }
    return loss, stats
