"""`OfflineAlgorithm`: the training step of the algorithms that learn from recorded data
(`offline_data(input_=...)`) instead of sampling.

One training step:

1. read: `dataset_num_iters_per_learner` batches of `train_batch_size_per_learner` recorded
   transitions (`trainer.offline.OfflineData`: streamed from the files, shuffled);
2. update: one step of the learner per batch (`learner.update(batch, ...)`, the algorithm's
   own loss); with data-parallel learners (`learners(num_learners=N)`, N >= 2) each batch is
   N x `train_batch_size_per_learner` transitions and learner r steps on the r-th block of
   them, on the mean of the N gradients (`Algorithm.update_learners_on_batch`);
3. sync: the new weights to the EnvRunners, which only evaluate (`evaluation(...)`).

As RLlib's, a step counts `train_batch_size_per_learner` x max(1, N) env steps "sampled"
(read) under `num_env_steps_sampled_lifetime`, and the learners' counters under
`learners/__all_modules__/`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.offline_evaluation import OfflineEvaluation
from trainer.algorithms.offline_pipeline import INPUT_ENV_SPACES, learner_batch
from trainer.algorithms.offline_pipeline import OfflineData as PipelineData
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.metrics import (
    ALL_MODULES,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    OFFLINE_SAMPLING_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TD_ERROR_KEY,
    TIMERS,
)
from trainer.offline.reading import OfflineData

#: The learners' counters under `learners/__all_modules__/` (each also as `<key>_lifetime`).
_TRAINED_COUNTERS = (
    "num_env_steps_trained",
    "num_module_steps_trained",
    "dataset_num_iters_trained",
)


class OfflineAlgorithm(Algorithm):
    """The base of the offline algorithms: `setup_learner` builds the learner
    (`Algorithm.learner_for`), the reader of the recorded data and, with
    `offline_evaluation_interval`, the offline evaluation (its learner's `evaluation_loss`);
    `training_step` is the loop of the module docstring."""

    #: The algorithm's learner: `update(batch, num_env_steps_sampled_lifetime=...)` returns its
    #: statistics.
    learner: Any
    DATA_PARALLEL_LEARNERS: ClassVar[tuple[str, ...]] = ("single-agent",)

    def setup(self, config: Any) -> None:
        """The recorded data and (without an env) the spaces are checked first
        (`require_buildable_offline`), then the Algorithm's parts are built."""
        config.require_buildable_offline()
        super().setup(config)

    def setup_learner(self) -> None:
        super().setup_learner()
        # The recorded observations are one sub-env's, as the episodes hold them.
        spaces = self.env_runner_group.get_spaces()
        obs_space, action_space = spaces.get("__env_single__", spaces[DEFAULT_MODULE_ID])
        if self.config.offline_data_class is None and self.config.prelearner_class is None:
            self.offline_data = OfflineData(self.config, obs_space, action_space, self.config.seed)
        else:
            self.offline_data = self._pipeline_data(obs_space, action_space)
        if self.config.offline_evaluation_interval:
            self.offline_evaluation = OfflineEvaluation(self.config, obs_space, action_space)

    def _pipeline_data(self, obs_space: Any, action_space: Any) -> Any:
        """RLlib's data pipeline (`trainer.algorithms.offline_pipeline`): the config's
        `offline_data_class`, given the spaces, the module's spec and the learner as RLlib's
        algorithm gives them."""
        data = (self.config.offline_data_class or PipelineData)(self.config)
        spaces = {DEFAULT_MODULE_ID: (obs_space, action_space)}
        data.spaces = {INPUT_ENV_SPACES: (obs_space, action_space), **spaces}
        data.module_spec = self.config.get_rl_module_spec(spaces=spaces)
        data.learner_handles = [self.learner]
        return data

    def _read(self, rows: int) -> dict[str, Any]:
        """`rows` recorded transitions: from the fast reader, or through the pipeline."""
        if isinstance(self.offline_data, OfflineData):
            return self.offline_data.sample(rows)
        source = type(self.offline_data).__name__
        return learner_batch(self.offline_data.sample(num_samples=rows), source)

    def training_step(self) -> None:
        """Read, update, sync (see the module docstring); logs under RLlib's keys."""
        config, metrics = self.config, self.metrics
        replicas = self.learner_replicas
        rows = config.train_batch_size_per_learner * (replicas.num_learners if replicas else 1)
        iterations = config.dataset_num_iters_per_learner or 1
        metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, rows, reduce="lifetime_sum")
        results: dict[str, Any] = {}
        trained = 0
        # The round of updates on one thread (the learner's torch or BLAS threads, as the
        # off-policy loop runs its rounds): on a loaded machine, two threads of small products
        # wait on each other for whole time slices.
        with self.learner.update_threads():
            for _ in range(iterations):
                with metrics.log_time((TIMERS, OFFLINE_SAMPLING_TIMER)):
                    batch = self._read(rows)
                with metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                    sampled = self.num_env_steps_sampled_lifetime
                    results = self.update_learners_on_batch(
                        batch, num_env_steps_sampled_lifetime=sampled
                    )
                trained += len(batch["rewards"])
        # (the per-row TD errors feed a prioritized buffer; offline there is none)
        results.pop(TD_ERROR_KEY, None)
        metrics.log_dict(results, key=(LEARNER_RESULTS, DEFAULT_MODULE_ID), window=1)
        counts = dict(zip(_TRAINED_COUNTERS, (trained, trained, iterations), strict=True))
        for key, value in counts.items():
            metrics.log_value((LEARNER_RESULTS, ALL_MODULES, key), value, reduce="sum")
            metrics.log_value(
                (LEARNER_RESULTS, ALL_MODULES, f"{key}_lifetime"), value, reduce="lifetime_sum"
            )
        with metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.sync_weights()
