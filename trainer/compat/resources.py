"""What RLlib would reserve for an algorithm, computed from its config: the main process's
bundle (RLlib's `ray.rllib.algorithms.utils._get_main_process_bundle`) and the whole request
(`Algorithm.default_resource_request` where Ray Tune is not installed: a `ResourceRequest` with
RLlib's bundles and strategy, where Tune gives a `PlacementGroupFactory`).

On one machine nothing is reserved; these say what RLlib's settings ask for (scripts and
tests read them, and Tune's trials use `trainer.tune.trainable.resource_request`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "ResourceRequest",
    "_get_main_process_bundle",
    "main_process_bundle",
    "resource_request",
]


def main_process_bundle(config: Any) -> dict[str, Any]:
    """The main process's bundle, as RLlib 2.60 computes it: with `num_learners=0` the
    learner runs there, so it takes `max(num_cpus_per_learner, num_cpus_for_main_process)`
    CPUs ("auto": 1 CPU without a GPU, else 0) and `num_gpus_per_learner` GPUs; with remote
    learners `num_cpus_for_main_process` CPUs and no GPU; `custom_resources_for_main_process`
    in both. Typed Any: RLlib's resource settings are attributes `trainer.compat.rllib_settings`
    adds to the config."""
    custom = dict(config.custom_resources_for_main_process or {})
    if config.num_learners == 0:
        learner_cpus = config.num_cpus_per_learner
        if learner_cpus == "auto":
            learner_cpus = 1 if config.num_gpus_per_learner == 0 else 0
        return {
            "CPU": max(learner_cpus, config.num_cpus_for_main_process),
            "GPU": config.num_gpus_per_learner,
            **custom,
        }
    return {"CPU": config.num_cpus_for_main_process, "GPU": 0, **custom}


#: RLlib's private name of `main_process_bundle` (its tests import it).
_get_main_process_bundle = main_process_bundle


@dataclass(frozen=True)
class ResourceRequest:
    """RLlib's placement-group request (what Tune's `PlacementGroupFactory` holds): the
    bundles (the main process's first, then one per EnvRunner, evaluation EnvRunner and
    remote learner) and the placement strategy."""

    bundles: list[dict[str, Any]]
    strategy: str = "PACK"

    @property
    def head_bundle_is_empty(self) -> bool:
        return not any(self.bundles[0].values()) if self.bundles else True

    @property
    def required_resources(self) -> dict[str, float]:
        """All bundles summed, by resource."""
        total: dict[str, float] = {}
        for bundle in self.bundles:
            for name, amount in bundle.items():
                total[name] = total.get(name, 0) + amount
        return total


def _runner_bundle(config: Any) -> dict[str, Any]:
    return {
        "CPU": config.num_cpus_per_env_runner,
        "GPU": config.num_gpus_per_env_runner,
        **(config.custom_resources_per_env_runner or {}),
    }


def _learner_bundle(config: Any) -> dict[str, Any]:
    cpus = config.num_cpus_per_learner
    if cpus == "auto":
        cpus = 1 if config.num_gpus_per_learner == 0 else 0
    return {"CPU": cpus, "GPU": config.num_gpus_per_learner}


def resource_request(config: Any) -> ResourceRequest:
    """RLlib's request for `config` (an AlgorithmConfig): the main process's bundle, one per
    EnvRunner, one per evaluation EnvRunner (when evaluation runs), one per remote learner."""
    bundles = [main_process_bundle(config)]
    bundles += [_runner_bundle(config) for _ in range(config.num_env_runners)]
    if config.evaluation_interval and config.evaluation_num_env_runners > 0:
        evaluation = config.get_evaluation_config_object()
        bundles += [_runner_bundle(evaluation) for _ in range(config.evaluation_num_env_runners)]
    bundles += [_learner_bundle(config) for _ in range(config.num_learners)]
    return ResourceRequest(bundles, config.placement_strategy)
