"""MARWIL: `MARWILConfig` (RLlib 2.60's settings and defaults) and the `MARWIL` algorithm, which
learns from recorded data (`offline_data(input_=...)`) instead of sampling.

One training step:

1. read: `dataset_num_iters_per_learner` batches of `train_batch_size_per_learner` recorded
   transitions (`trainer.offline.OfflineData`: streamed from the files, shuffled);
2. update: one step of `MARWILLearner` (marwil_learner.py: the advantage-weighted
   log-likelihood of the recorded actions plus the value loss) per batch;
3. sync: the new weights to the EnvRunners, which only evaluate (`evaluation(...)`).

As RLlib's, the step counts `train_batch_size_per_learner` env steps "sampled" (read) per
training step.
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError, NotProvided
from trainer.algorithms.marwil.marwil_learner import MARWILLearner
from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.settings import settings_of
from trainer.capabilities import OFFLINE
from trainer.compat.rllib_settings import RAY_DATA_OPTION, NoEffect, Unsupported
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.metrics import (
    ALL_MODULES,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)
from trainer.offline.reading import OfflineData
from trainer.runners.env_runner_group import spaces_of
from trainer.torch_rl import require_torch
from trainer.util.checks import finite_number, number_at_least

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self

#: RLlib's timer of reading the recorded batches.
OFFLINE_SAMPLING_TIMER = "offline_sampling_timer"


class MARWILConfig(AlgorithmConfig):
    """MARWIL's config. Defaults are RLlib's: `beta=1.0`, `bc_logstd_coeff=0.0`,
    `moving_average_sqd_adv_norm_update_rate=1e-8`, `moving_average_sqd_adv_norm_start=100.0`,
    `vf_coeff=1.0`, `lr=1e-4`, `train_batch_size=2000`, `num_env_runners=0`; the module is PPO's
    (a policy and a value network)."""

    _LEARNS_OFFLINE = True
    _ALGO_SETTINGS = settings_of(
        "training",
        {
            "beta": (
                1.0,
                finite_number,
                "how much the advantages weigh the recorded actions (0: behaviour cloning)",
            ),
            "bc_logstd_coeff": (
                0.0,
                number_at_least(0),
                "weight of the mean log-std term in the policy loss (Box actions)",
            ),
            "moving_average_sqd_adv_norm_update_rate": (
                1e-8,
                number_at_least(0),
                "the update rate of the squared advantages' moving average",
            ),
            "moving_average_sqd_adv_norm_start": (
                100.0,
                number_at_least(0),
                "the squared advantages' moving average to start from",
            ),
            "vf_coeff": (1.0, number_at_least(0), "weight of the value loss"),
        },
    )
    _ALGO_RLLIB_SETTINGS: ClassVar[dict[str, dict[str, NoEffect | Unsupported]]] = {
        "training": {
            "lambda_": NoEffect(
                1.0,
                "RLlib's GAE lambda over MARWIL's one-step episodes, where it changes nothing: "
                "the value targets are r + gamma * V(s')",
            ),
            "burnin_len": Unsupported(
                0,
                "the offline algorithms train modules without memory here (no LSTM)",
                capability=OFFLINE,
            ),
        },
        "offline_data": {
            "materialize_data": NoEffect(True, RAY_DATA_OPTION),
            "materialize_mapped_data": NoEffect(False, RAY_DATA_OPTION),
            "postprocess_inputs": NoEffect(
                True, "the value targets are always computed (MARWIL's postprocessing)"
            ),
        },
    }
    _DEFAULT_OVERRIDES = {
        "lr": 1e-4,
        "train_batch_size": 2000,
        "num_env_runners": 0,
        "exploration_config": {"type": "StochasticSampling"},
    }

    beta: float
    bc_logstd_coeff: float
    moving_average_sqd_adv_norm_update_rate: float
    moving_average_sqd_adv_norm_start: float
    vf_coeff: float

    def __init__(self, algo_class: type[Algorithm] | None = None):
        super().__init__(algo_class=algo_class or MARWIL)

    def training(
        self,
        *,
        beta: float = NotProvided,
        bc_logstd_coeff: float = NotProvided,
        moving_average_sqd_adv_norm_update_rate: float = NotProvided,
        moving_average_sqd_adv_norm_start: float = NotProvided,
        vf_coeff: float = NotProvided,
        **kwargs: Any,
    ) -> Self:
        """Learning settings: MARWIL's own and those every algorithm has."""
        super().training(**kwargs)
        return self._set(
            "training",
            {
                "beta": beta,
                "bc_logstd_coeff": bc_logstd_coeff,
                "moving_average_sqd_adv_norm_update_rate": moving_average_sqd_adv_norm_update_rate,
                "moving_average_sqd_adv_norm_start": moving_average_sqd_adv_norm_start,
                "vf_coeff": vf_coeff,
            },
        )

    def default_module_class(self) -> type:
        """The numpy module: PPO's policy-and-value module (RLlib's MARWIL uses PPO's)."""
        return PolicyModule

    def default_torch_module_class(self) -> type:
        """The torch module: RLlib's DefaultPPOTorchRLModule, as RLlib's MARWIL."""
        require_torch(f"{type(self).__name__}.framework('torch')")
        from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule

        return DefaultPPOTorchRLModule

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        if not 0.0 <= self.beta <= 1.0:
            raise ConfigError(
                f"{name}.training(beta={self.beta!r}): `beta` must be within 0.0 and 1.0 "
                "(RLlib's check)"
            )
        if not self.is_offline:
            raise ConfigError(
                f"{name}: {name[: -len('Config')]} learns from recorded data: give it with "
                "offline_data(input_=<parquet files, a glob or a folder>); any algorithm "
                "records one with offline_data(output=<folder>)"
            )
        if self.is_multi_agent:
            raise ConfigError(
                f"{name}: multi-agent offline learning is not supported (nor by RLlib 2.60's "
                "offline reader)"
            )


class MARWIL(Algorithm):
    config: MARWILConfig
    #: MARWILLearner (numpy) or MARWILTorchLearner (or the config's learner_class).
    learner: Any

    @classmethod
    def get_default_config(cls) -> MARWILConfig:
        return MARWILConfig()

    def setup_learner(self) -> None:
        config = self.config
        module = config.build_module(spaces_of(self.env_runner_group), seed=config.seed)
        if config.uses_torch:
            from trainer.algorithms.marwil.torch_learner import MARWILTorchLearner

            self.learner = (config.learner_class or MARWILTorchLearner)(config, module)
        else:
            self.learner = MARWILLearner(config, module)
        # The recorded observations are one sub-env's, as the episodes hold them.
        spaces = self.env_runner_group.get_spaces()
        obs_space, action_space = spaces.get("__env_single__", spaces[DEFAULT_MODULE_ID])
        self.offline_data = OfflineData(self.config, obs_space, action_space, self.config.seed)

    def training_step(self) -> None:
        """Read, update, sync (see the module docstring); logs under RLlib's keys."""
        config, metrics = self.config, self.metrics
        rows = config.train_batch_size_per_learner
        iterations = config.dataset_num_iters_per_learner or 1
        metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, rows, reduce="lifetime_sum")
        results: dict[str, Any] = {}
        trained = 0
        for _ in range(iterations):
            with metrics.log_time((TIMERS, OFFLINE_SAMPLING_TIMER)):
                batch = self.offline_data.sample(rows)
            with metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                results = self.learner.update(
                    batch, num_env_steps_sampled_lifetime=self.num_env_steps_sampled_lifetime
                )
            trained += int(results["num_module_steps_trained"])
        metrics.log_dict(results, key=(LEARNER_RESULTS, DEFAULT_MODULE_ID), window=1)
        for key, value in (
            ("num_env_steps_trained", trained),
            ("num_module_steps_trained", trained),
            ("dataset_num_iters_trained", iterations),
        ):
            metrics.log_value((LEARNER_RESULTS, ALL_MODULES, key), value, reduce="sum")
            metrics.log_value(
                (LEARNER_RESULTS, ALL_MODULES, f"{key}_lifetime"), value, reduce="lifetime_sum"
            )
        with metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.sync_weights()
