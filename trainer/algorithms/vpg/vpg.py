"""VPG, vanilla policy gradient without a baseline: the `VPG` algorithm (RLlib's example custom
algorithm, `ray.rllib.examples.algorithms.classes.vpg`, which also has `VPGConfig`, from
`config.py`).

One training step:

1. sample: every EnvRunner plays `num_episodes_per_train_batch / num_env_runners` complete
   episodes with the current policy pi_theta (in parallel; the local EnvRunner when there are
   no remote ones), and returns them with its metrics;
2. update: the learner (`VPGTorchLearner`) takes one gradient step on
   -mean_t [ log pi_theta(a_t | s_t) * G_t ] over those episodes (`loss.py`); with N >= 2
   data-parallel learners each takes it on its share of the whole episodes
   (`shard_whole_episodes`: G_t needs every later reward), on the mean of their gradients;
3. sync: the new weights go to every EnvRunner.

The learner and the modules are built by `Algorithm.setup_learner` from the classes `VPGConfig`
declares.
"""

from __future__ import annotations

from typing import ClassVar

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.data_parallel import shard_whole_episodes
from trainer.algorithms.vpg.config import VPGConfig
from trainer.core.learner import Learner
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

#: The statistics RLlib's example logs about each step's batch size (its own keys).
EPISODE_TIMESTEPS_MEAN_KEY = "episode_timesteps_sampled_mean_win100"
EPISODE_TIMESTEPS_EMA_KEY = "episode_timesteps_sampled_ema"


class VPG(Algorithm):
    config: VPGConfig
    #: A `VPGTorchLearner` (or the config's learner_class).
    learner: Learner
    #: N >= 2 learners each update on their share of the sampled whole episodes.
    DATA_PARALLEL_LEARNERS: ClassVar[tuple[str, ...]] = ("single-agent", "multi-agent")

    @classmethod
    def get_default_config(cls) -> VPGConfig:
        return VPGConfig()

    def training_step(self) -> None:
        """Sample complete episodes, one update on them, new weights to the EnvRunners (see
        the module docstring); logs into `self.metrics` under RLlib's keys."""
        metrics = self.metrics
        # 1. Sample complete episodes with the current policy.
        with metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, env_runner_results = self._sample_episodes()
        if not episodes:
            return  # every EnvRunner failed (handled per fault_tolerance())
        metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        env_steps = sum(map(len, episodes))
        metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum")
        metrics.log_value(EPISODE_TIMESTEPS_MEAN_KEY, env_steps, reduce="mean", window=100)
        metrics.log_value(EPISODE_TIMESTEPS_EMA_KEY, env_steps, ema_coeff=0.1)
        # 2. One policy-gradient update on them.
        with metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            sampled = self.num_env_steps_sampled_lifetime
            replicas = self.learner_replicas
            if replicas is not None:  # each learner on its share of the whole episodes
                learner_results = replicas.run_calls(
                    [
                        ("update", (shard,), {"num_env_steps_sampled_lifetime": sampled})
                        for shard in shard_whole_episodes(episodes, replicas.num_learners)
                    ]
                )
            else:
                learner_results = self.learner.update(
                    episodes, num_env_steps_sampled_lifetime=sampled
                )
        if self.config.is_multi_agent:  # (already by module id, and ALL_MODULES)
            metrics.log_dict(learner_results, key=LEARNER_RESULTS, window=1)
        else:
            metrics.log_dict(learner_results, key=(LEARNER_RESULTS, DEFAULT_MODULE_ID), window=1)
        metrics.log_value(
            (LEARNER_RESULTS, ALL_MODULES, "num_env_steps_trained_lifetime"),
            env_steps,
            reduce="lifetime_sum",
        )
        # 3. The new weights to every EnvRunner.
        with metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.sync_weights()

    def _sample_episodes(self) -> tuple[list, list[dict]]:
        """`num_episodes_per_train_batch // num_env_runners` complete episodes from each
        EnvRunner (in parallel), and each one's metrics."""
        group = self.env_runner_group
        num_episodes_per_env_runner = self.config.num_episodes_per_train_batch // (
            self.config.num_env_runners or 1
        )
        # Each reply: the runner's episodes, its metrics, its connectors' state (unused: VPG,
        # as RLlib's, syncs only the weights).
        sampled = group.foreach_env_runner(
            "sample_with_metrics",
            kwargs={"num_episodes": num_episodes_per_env_runner},
            local_env_runner=group.num_remote_workers() <= 0,
        )
        episodes = [episode for runner_episodes, _, _ in sampled for episode in runner_episodes]
        return episodes, [runner_metrics for _, runner_metrics, _ in sampled]


__all__ = ["VPG", "VPGConfig"]
