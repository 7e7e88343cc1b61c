"""PPO: the `PPO` algorithm (`training_step`), and `PPOConfig` (RLlib's settings and defaults,
from `config.py`; RLlib's `ray.rllib.algorithms.ppo.ppo` has both).

One training step: the EnvRunners sample at least `train_batch_size` env steps with the current
weights, the learner runs its update on them, and the new weights go to every EnvRunner.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.learner_pieces import run_learner_pieces
from trainer.algorithms.multi_agent_learner import MultiAgentLearner
from trainer.algorithms.ppo.config import PPOConfig
from trainer.core.learner import Learner
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TIMERS,
)


class PPO(Algorithm):
    config: PPOConfig
    #: A `PPOLearner`, a `PPOTorchLearner` (or the config's learner_class), or multi-agent a
    #: `MultiAgentLearner` of them.
    learner: Learner
    #: `training(learner_connector=...)` runs here: its pieces rewrite the sampled episodes
    #: before the learner makes its batch (`trainer.algorithms.learner_pieces`).
    RUNS_LEARNER_CONNECTOR: ClassVar[bool] = True
    DATA_PARALLEL_LEARNERS: ClassVar[tuple[str, ...]] = ("single-agent", "multi-agent", "recurrent")

    @classmethod
    def get_default_config(cls) -> PPOConfig:
        return PPOConfig()

    def _learner_modules(self) -> Any:
        """What the learner pieces get as `rl_module`: the learner's module, or, beside
        learner-only modules, every module by id (RLlib's MultiRLModule)."""
        learners = getattr(self.learner, "learner_only_learners", None)
        if learners:
            return next(iter(learners.values())).module
        return self.learner.module

    def training_step(self) -> None:
        metrics = self.metrics
        # 1. Sample with the current weights, on all EnvRunners in parallel.
        with metrics.log_time((TIMERS, "env_runner_sampling_timer")):
            episodes, runner_metrics = self.env_runner_group.sample(
                min_env_steps=self.config.total_train_batch_size
            )
        if not episodes:
            return  # every EnvRunner failed (see EnvRunnerGroup.handle_failures), as RLlib's
        metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        env_steps = sum(len(ep) for ep in episodes)
        metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, env_steps, reduce="lifetime_sum")
        if self.learner_connector is not None:
            with metrics.log_time((TIMERS, "learner_connector_timer")):
                run_learner_pieces(
                    self.learner_connector, self._learner_modules(), episodes, self.metrics
                )
        # 2. Update the policy and value function (of each trained module).
        with metrics.log_time((TIMERS, "learner_update_timer")):
            learner_results = self.update_learners(
                episodes, num_env_steps_sampled_lifetime=self.num_env_steps_sampled_lifetime
            )
        if isinstance(self.learner, MultiAgentLearner):
            for module_id, module_results in learner_results.items():
                metrics.log_dict(
                    cast(dict, module_results), key=(LEARNER_RESULTS, module_id), window=1
                )
        else:
            metrics.log_dict(learner_results, key=(LEARNER_RESULTS, "default_policy"), window=1)
            # Learner-only modules (`trainer.torch_rl.self_supervised`): under their ids.
            for module_id, module_results in getattr(
                self.learner, "learner_only_results", {}
            ).items():
                metrics.log_dict(module_results, key=(LEARNER_RESULTS, module_id), window=1)
        metrics.log_value(
            (LEARNER_RESULTS, "__all_modules__", "num_env_steps_trained_lifetime"),
            env_steps,
            reduce="lifetime_sum",
        )
        # 3. Send the new weights to the EnvRunners.
        with metrics.log_time((TIMERS, "synch_weights")):
            self.sync_weights()


__all__ = ["PPO", "PPOConfig"]
