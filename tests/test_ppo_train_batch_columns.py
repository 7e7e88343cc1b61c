"""PPO's train batch holds the episodes' rewards, terminateds and truncateds, as RLlib 2.60's
learner pipeline adds them (`AddColumnsFromEpisodesToTrainBatch`): a user's
`compute_loss_for_module` reads `batch[Columns.REWARDS]` and the chunks' ends. The last step of
an episode that terminated is terminated; the last step of every other chunk (a time limit, or
cut for the batch) is truncated, as RLlib marks a chunk whose value is bootstrapped."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer import PPOConfig
from trainer.algorithms.ppo.torch_learner import PPOTorchLearner
from trainer.compat.rllib_utils import Columns

#: Each episode terminates after this many steps.
EPISODE_STEPS = 5


class CountingEnv(gym.Env):
    """Observes its step count t; the reward of the step from t is t + 0.5; terminates after
    `EPISODE_STEPS` steps (the step from t = 4)."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, config: dict | None = None) -> None:
        super().__init__()
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action: Any) -> tuple:
        reward = self.t + 0.5
        self.t += 1
        return np.array([self.t], np.float32), reward, self.t == EPISODE_STEPS, False, {}


class ColumnsLearner(PPOTorchLearner):
    """A user's learner whose loss reads the episode columns of each minibatch."""

    seen: list[dict[str, np.ndarray]] = []

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):  # type: ignore[no-untyped-def]
        ColumnsLearner.seen.append(
            {
                key: batch[key].detach().cpu().numpy()
                for key in (Columns.OBS, Columns.REWARDS, Columns.TERMINATEDS, Columns.TRUNCATEDS)
            }
        )
        assert batch[Columns.TERMINATEDS].dtype == torch.bool
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )


@pytest.mark.parametrize("num_env_runners", [0, 1])
def test_a_users_loss_reads_rewards_terminateds_and_truncateds(num_env_runners: int) -> None:
    config = (
        PPOConfig()
        .environment(CountingEnv)
        .framework("torch")
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=64)
        .training(
            train_batch_size=64,
            minibatch_size=64,
            num_epochs=1,
            shuffle_batch_per_epoch=False,
            learner_class=ColumnsLearner,
        )
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        ColumnsLearner.seen.clear()
        algo.train()
        algo.train()  # the second batch begins inside an episode cut by the first
    finally:
        algo.stop()
    assert len(ColumnsLearner.seen) == 2
    for minibatch in ColumnsLearner.seen:
        t = minibatch[Columns.OBS][:, 0]
        np.testing.assert_array_equal(minibatch[Columns.REWARDS], t + 0.5)
        terminated = minibatch[Columns.TERMINATEDS]
        truncated = minibatch[Columns.TRUNCATEDS]
        # Every last step of an episode, and only those, is terminated.
        np.testing.assert_array_equal(terminated, t == EPISODE_STEPS - 1)
        # The batch is cut inside an episode (64 steps of 5-step episodes): that chunk's last
        # step is truncated, no terminated step is, and a batch has no other chunk ends.
        assert truncated.sum() == 1 and not (truncated & terminated).any()
        assert t[truncated][0] != EPISODE_STEPS - 1
