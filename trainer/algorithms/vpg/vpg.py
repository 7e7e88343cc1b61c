"""VPG, vanilla policy gradient without a baseline: `VPGConfig` and the `VPG` algorithm
(RLlib's example custom algorithm, `ray.rllib.examples.algorithms.classes.vpg`).

One training step:

1. sample: every EnvRunner plays `num_episodes_per_train_batch / num_env_runners` complete
   episodes with the current policy pi_theta (in parallel; the local EnvRunner when there are
   no remote ones), and returns them with its metrics;
2. update: the learner (`VPGTorchLearner`) takes one gradient step on
   -mean_t [ log pi_theta(a_t | s_t) * G_t ] over those episodes;
3. sync: the new weights go to every EnvRunner.

VPG runs on torch: its default module is `VPGTorchRLModule` (`get_default_rl_module_spec`), its
learner `VPGTorchLearner` (`get_default_learner_class`); a user's TorchRLModule returning
`Columns.ACTION_DIST_INPUTS` (`rl_module(rl_module_spec=...)`) or learner class
(`training(learner_class=...)`) replaces them.

Multi-agent (`multi_agent(policies=..., policy_mapping_fn=...)`), one learner trains the whole
MultiRLModule, as RLlib's learner does: its container class may run its modules together (a
`MultiRLModuleSpec(multi_rl_module_class=...)` whose forward runs a shared encoder before each
policy, RLlib's shared-encoder example), and the EnvRunners act through that forward too.
"""

from __future__ import annotations

from typing import Any

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.algorithms.settings import setting
from trainer.core.learner import Learner
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.core.rl_module import RLModuleSpec
from trainer.errors import ConfigError
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
from trainer.runners.env_runner_group import spaces_of
from trainer.util.checks import int_at_least

#: The hidden layer's width of the default module (RLlib's example: `{"hidden_dim": 64}`).
DEFAULT_HIDDEN_DIM = 64
#: The statistics RLlib's example logs about each step's batch size (its own keys).
EPISODE_TIMESTEPS_MEAN_KEY = "episode_timesteps_sampled_mean_win100"
EPISODE_TIMESTEPS_EMA_KEY = "episode_timesteps_sampled_ema"


class VPGConfig(AlgorithmConfig):
    """VPG's config: every algorithm's settings, and `num_episodes_per_train_batch` (10), the
    complete episodes per training step. Defaults as RLlib's example: torch,
    `batch_mode="complete_episodes"`, `num_env_runners=1`."""

    num_episodes_per_train_batch: int = setting(
        10, int_at_least(1), "complete episodes per training step, spread over the EnvRunners"
    )

    _DEFAULT_OVERRIDES = {
        "framework_str": "torch",
        # The EnvRunners are asked for whole episodes anyway; for good measure, as RLlib's.
        "batch_mode": "complete_episodes",
        "num_env_runners": 1,
    }
    #: RLlib's test setting: the learner logs the mean of the module's weights.
    report_mean_weights: bool = True
    #: Multi-agent configs train: one learner over the whole MultiRLModule, whose container
    #: may run its modules together (`trainer.core.multi_rl_module.runs_modules_together`).
    _MULTI_AGENT_TRAINING = True
    _JOINT_MODULES = True

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or VPG)

    # The torch classes are imported when asked for: importing VPG does not import torch.
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """`VPGTorchRLModule` with a hidden layer of `DEFAULT_HIDDEN_DIM` units."""
        return RLModuleSpec(
            module_class=self.default_torch_module_class(),
            model_config={"hidden_dim": DEFAULT_HIDDEN_DIM},
        )

    def default_torch_module_class(self) -> type:
        from trainer.algorithms.vpg.torch_module import VPGTorchRLModule

        return VPGTorchRLModule

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        """The default module's `hidden_dim` (a user's spec's model config goes over it)."""
        return {"hidden_dim": DEFAULT_HIDDEN_DIM}

    def validate(self) -> None:
        """Every algorithm's checks, and VPG's: its multi-agent learner trains every module
        (`policies_to_train` is refused)."""
        super().validate()
        if self.is_multi_agent and self.policies_to_train is not None:
            raise ConfigError(
                f"VPGConfig.multi_agent(policies_to_train={self.policies_to_train!r}): VPG's "
                "learner trains every module of the MultiRLModule; leave policies_to_train "
                "out"
            )

    def get_default_learner_class(self) -> type:
        """VPG's learner, `VPGTorchLearner` (it reads its settings off a `VPGConfig`: it imports
        this module, which imports it only here, with torch)."""
        from trainer.algorithms.vpg.torch_learner import VPGTorchLearner

        return VPGTorchLearner


class VPG(Algorithm):
    config: VPGConfig
    #: A `VPGTorchLearner` (or the config's learner_class).
    learner: Learner

    @classmethod
    def get_default_config(cls) -> VPGConfig:
        return VPGConfig()

    def setup_learner(self) -> None:
        self.learner = self.learner_for(self.config, spaces_of(self.env_runner_group))

    @classmethod
    def learner_for(cls, config: Any, spaces: Any) -> Any:
        """The learner class (`config.learner_class`: the class given, else `VPGTorchLearner`)
        over a freshly built full module; multi-agent, over the full MultiRLModule of the
        policies (every module trains)."""
        if not config.is_multi_agent:
            return config.learner_class(config, config.build_module(spaces, seed=config.seed))
        from trainer.torch_rl.module_group import build_seeded

        spec = config.get_multi_rl_module_spec(spaces=spaces)
        return config.learner_class(config, build_seeded(spec, config.seed))

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
            learner_results = self.learner.update(
                episodes, num_env_steps_sampled_lifetime=self.num_env_steps_sampled_lifetime
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
