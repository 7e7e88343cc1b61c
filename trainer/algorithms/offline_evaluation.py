"""Offline evaluation (RLlib 2.60's offline evaluation runners with
`offline_evaluation_type="eval_loss"`): every `offline_evaluation_interval` iterations, the
learner's loss on recorded batches, without a step.

    evaluation_config's input_ (else input_) --OfflineData--> batches of
    offline_eval_batch_size_per_runner rows, dataset_num_iters_per_offline_eval_runner per
    shard (num_offline_eval_runners shards; 0: one) --learner.evaluation_loss--> the loss
    statistics, averaged over the batches, under RLlib's keys:

    evaluation/offline_eval_runners/<module id>/total_eval_loss, <each loss statistic>,
        module_sample_batch_size_mean, num_module_steps_sampled(_lifetime)
    evaluation/offline_eval_runners/__all_modules__/num_env_steps_sampled(_lifetime),
        num_module_steps_sampled(_lifetime), dataset_num_iters_evaluated(_lifetime)
    evaluation/num_healthy_offline_eval_runners

The shards run one after another in the driver between training steps (RLlib runs them as
Ray actors); the reader is the evaluation's own, so evaluation never takes training's rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.core.models import DEFAULT_MODULE_ID
from trainer.metrics import ALL_MODULES
from trainer.offline.reading import OfflineData

#: RLlib's key of the offline evaluation results under `evaluation`.
OFFLINE_EVAL_RUNNER_RESULTS = "offline_eval_runners"
#: RLlib's name of the evaluation loss (the learner's `total_loss`).
TOTAL_EVAL_LOSS = "total_eval_loss"
NUM_HEALTHY_OFFLINE_EVAL_RUNNERS = "num_healthy_offline_eval_runners"


class OfflineEvaluation:
    """The offline evaluation of one algorithm: `due(iteration)` and `run(learner)`."""

    def __init__(self, config: Any, obs_space: Any, action_space: Any):
        #: The evaluation's settings: its `input_` may be another dataset than training's.
        self.config = config.get_evaluation_config_object()
        seed = None if config.seed is None else config.seed + 1
        self.data = OfflineData(self.config, obs_space, action_space, seed)
        self.interval = config.offline_evaluation_interval
        self.shards = max(1, config.num_offline_eval_runners)
        self._lifetime = {"env_steps": 0, "iterations": 0}

    def due(self, iteration: int) -> bool:
        """Whether the `iteration`th train() (1-based) ends with an offline evaluation."""
        return bool(self.interval) and iteration % self.interval == 0

    def run(self, learner: Any) -> dict[str, Any]:
        """The learner's loss on this round's batches: `{"offline_eval_runners": {...}}`
        (the keys of the module docstring)."""
        config = self.config
        rows = config.offline_eval_batch_size_per_runner
        per_batch: list[dict[str, float]] = []
        steps = 0
        for _ in range(self.shards * config.dataset_num_iters_per_offline_eval_runner):
            batch = self.data.sample(rows)
            stats = learner.evaluation_loss(batch)
            per_batch.append({key: float(value) for key, value in stats.items()})
            steps += len(batch["rewards"])
        self._lifetime["env_steps"] += steps
        self._lifetime["iterations"] += len(per_batch)
        module: dict[str, Any] = {
            key: float(np.mean([stats[key] for stats in per_batch]))
            for key in per_batch[0]
            if key != "total_loss"
        }
        module[TOTAL_EVAL_LOSS] = float(np.mean([stats["total_loss"] for stats in per_batch]))
        module["module_sample_batch_size_mean"] = steps / len(per_batch)
        module["num_module_steps_sampled"] = steps
        module["num_module_steps_sampled_lifetime"] = self._lifetime["env_steps"]
        all_modules = {
            "num_env_steps_sampled": steps,
            "num_env_steps_sampled_lifetime": self._lifetime["env_steps"],
            "num_module_steps_sampled": steps,
            "num_module_steps_sampled_lifetime": self._lifetime["env_steps"],
            "dataset_num_iters_evaluated": len(per_batch),
            "dataset_num_iters_evaluated_lifetime": self._lifetime["iterations"],
        }
        return {
            OFFLINE_EVAL_RUNNER_RESULTS: {DEFAULT_MODULE_ID: module, ALL_MODULES: all_modules},
            NUM_HEALTHY_OFFLINE_EVAL_RUNNERS: config.num_offline_eval_runners,
        }
