"""The Algorithm as a Ray Tune Trainable.

Tune runs a class only if it subclasses `ray.tune.Trainable`; this project's `Algorithm` does not
(it must not import Ray). `as_trainable(PPO)` makes (once per algorithm class) a Trainable class
named like the algorithm that builds one in each trial's actor: `setup()` builds it from the
trial's config dict, `step()` is `train()`, checkpoints are the Algorithm's own msgpack
checkpoints (what Tune copies between trials, for PBT too), `cleanup()` stops its EnvRunners.
"""

from __future__ import annotations

import logging
import os
from typing import Any, ClassVar

from ray.tune import PlacementGroupFactory, Trainable
from ray.tune.registry import ENV_CREATOR, TRAINABLE_CLASS
from ray.tune.registry import _global_registry as _tune_registry

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError
from trainer.algorithms.registry import ALGORITHM_NAMES
from trainer.algorithms.registry import get_trainable_cls as _known_algorithm
from trainer.compat.old_api import CLUSTER_ONLY_KEYS
from trainer.env.envs import register_env_if_missing, registered_env_creator

logger = logging.getLogger(__name__)

__all__ = [
    "AlgorithmTrainable",
    "algorithm_class_of",
    "as_trainable",
    "config_dict",
    "config_of",
]

#: The algorithms known by name without registration (RLlib's names).
KNOWN_ALGORITHMS = ALGORITHM_NAMES


class AlgorithmTrainable(Trainable):
    """A Tune Trainable running one `algorithm_class` Algorithm per trial (see the module
    docstring); `as_trainable()` makes its subclass for each algorithm class."""

    #: The Algorithm class this Trainable runs (set on each subclass by `as_trainable`).
    algorithm_class: ClassVar[type[Algorithm]]
    #: The Algorithm of this trial (built in `setup`).
    algorithm: Algorithm

    @classmethod
    def get_default_config(cls) -> AlgorithmConfig:
        """The algorithm's default config: RLlib's scripts call
        `get_trainable_cls("PPO").get_default_config()`."""
        return cls.algorithm_class.get_default_config()

    # -- Tune's hooks ---------------------------------------------------------------------------
    def setup(self, config: dict) -> None:
        """Builds the trial's Algorithm: the class's default config updated from the trial's
        config dict (as RLlib's Algorithm.setup does)."""
        # The env's name must resolve before the config takes it.
        _take_env_from_tune_registry(config.get("env") if isinstance(config, dict) else None)
        algorithm_config = config_of(self.algorithm_class, config)
        # Its trial_name, trial_id, logdir and trial_resources are this trial's from the start
        # (callbacks of on_algorithm_init read them, as with RLlib's Algorithm).
        algorithm = self.algorithm_class.__new__(self.algorithm_class)
        algorithm._tune_trial = self
        self.algorithm_class.__init__(algorithm, config=algorithm_config)
        self.algorithm = algorithm

    def step(self) -> dict:
        return self.algorithm.train()

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        """The Algorithm's checkpoint (msgpack and JSON) in `checkpoint_dir`: Tune moves that
        directory to the trial's folder, and to other trials for PBT."""
        self.algorithm.save_to_path(checkpoint_dir)

    def load_checkpoint(self, checkpoint: str | dict | None) -> None:
        """Restores weights and state, not the config: a PBT trial keeps its own (mutated)
        hyperparameters after exploiting another trial's checkpoint, as in RLlib."""
        if not isinstance(checkpoint, (str, os.PathLike)):
            raise TypeError(
                f"{type(self).__name__}.load_checkpoint({checkpoint!r}): give the directory "
                "of a checkpoint this trainable saved"
            )
        self.algorithm.restore_from_path(checkpoint)

    def cleanup(self) -> None:
        algorithm = getattr(self, "algorithm", None)
        if algorithm is not None:
            algorithm.stop()

    def reset_config(self, new_config: dict) -> bool:
        """Rebuilds the algorithm from `new_config` in this actor (Tune's `reuse_actors=True`,
        and PBT, move a trial into an actor of another trial this way): the new trial saves
        the start of a process. RLlib's Algorithm returns False (a new actor per trial)."""
        self.cleanup()
        self.algorithm = None  # type: ignore[assignment]  # a failed setup leaves none
        self.setup(new_config)
        return True

    @classmethod
    def default_resource_request(cls, config: dict | AlgorithmConfig) -> PlacementGroupFactory:
        """What a trial reserves, from its config (the Algorithm's, as RLlib's)."""
        return cls.algorithm_class.default_resource_request(config)

    @classmethod
    def resource_help(cls, config: dict) -> str:
        return cls.algorithm_class.resource_help(config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(trial={self.trial_name})"


def resource_request(config: Any) -> PlacementGroupFactory:
    """Tune's placement group for a trial of `config` (an AlgorithmConfig; RLlib's layout: a
    bundle for the main process holding the learner, then one per EnvRunner and evaluation
    EnvRunner; with data-parallel learners the main process's own bundle and one per
    learner, as RLlib reserves for its learner actors). Typed Any: RLlib's resource settings
    are attributes that `trainer.compat.rllib_settings` adds to the config."""
    if config.num_cpus_per_learner != "auto":
        learner_cpus = config.num_cpus_per_learner
    else:
        learner_cpus = 1 if not config.num_gpus_per_learner else 0
    learners: list[dict[str, float]] = []
    if config.num_learners > 1 and config.data_parallel_refusal() is None:
        main = {
            "CPU": config.num_cpus_for_main_process,
            **(config.custom_resources_for_main_process or {}),
        }
        learners = [
            {
                "CPU": learner_cpus,
                "GPU": config.num_gpus_per_learner,
                **(config.custom_resources_per_learner or {}),
            }
        ] * config.num_learners
    else:
        main = {
            "CPU": max(learner_cpus, config.num_cpus_for_main_process),
            "GPU": config.num_gpus_per_learner,
            **(config.custom_resources_for_main_process or {}),
        }
    runners = [_runner_bundle(config)] * config.num_env_runners
    if config.evaluation_interval and config.evaluation_num_env_runners > 0:
        evaluation = config.get_evaluation_config_object()
        runners += [_runner_bundle(evaluation)] * config.evaluation_num_env_runners
    runners += [{k: v for k, v in bundle.items() if v} for bundle in learners]
    if config.backend == "ray":
        return PlacementGroupFactory([main, *runners], strategy=config.placement_strategy)
    # Worker processes of the trial's actor: on its node, so one bundle holds them all (with
    # several, Tune could place them on other nodes and overcommit this one).
    merged = dict(main)
    for bundle in runners:
        for name, amount in bundle.items():
            merged[name] = merged.get(name, 0) + amount
    merged["CPU"] = _at_most_one_nodes_cpus(merged["CPU"])
    return PlacementGroupFactory([{k: v for k, v in merged.items() if v}], strategy="PACK")


def _at_most_one_nodes_cpus(cpus: float) -> float:
    """A trial's CPUs with worker processes, capped at the largest node's: RLlib would
    reserve more than any node has and wait forever (PPO's 2 EnvRunners ask 3 CPUs, a 2-core
    laptop has 2). The trial's processes then share the node's CPUs, as `build()` outside
    Tune does; concurrent trials are still kept from overcommitting it. Warned about once."""
    import ray

    if not ray.is_initialized():
        return cpus
    largest = max(
        (node["Resources"].get("CPU", 0.0) for node in ray.nodes() if node.get("Alive")),
        default=0.0,
    )
    if not 0 < largest < cpus:
        return cpus
    if not _CAP_WARNED:
        _CAP_WARNED.append(True)
        logger.warning(
            "A trial asks %s CPUs (its main process and its EnvRunner processes); the "
            "largest node has %s: each trial reserves %s, and its processes share them",
            cpus,
            largest,
            largest,
        )
    return largest


#: Whether the CPU cap was warned about in this process.
_CAP_WARNED: list[bool] = []


def _runner_bundle(config: Any) -> dict[str, float]:
    return {
        "CPU": config.num_cpus_per_env_runner,
        "GPU": config.num_gpus_per_env_runner,
        **(config.custom_resources_per_env_runner or {}),
    }


def config_of(algorithm_class: type[Algorithm], config: dict | AlgorithmConfig) -> AlgorithmConfig:
    """`algorithm_class`'s default config updated from a trial's config (a dict, as Tune
    passes it, or an AlgorithmConfig)."""
    if isinstance(config, AlgorithmConfig):
        config = config_dict(config)
    if not isinstance(config, dict):
        raise ConfigError(
            f"{algorithm_class.__name__} as a Tune trainable: the trial's config is "
            f"{config!r}; give param_space a dict of settings or an AlgorithmConfig"
        )
    return algorithm_class.get_default_config().update_from_dict(config)


def config_dict(config: AlgorithmConfig) -> dict[str, Any]:
    """`config.to_dict()` less RLlib's older cluster keys (`num_cpus_per_worker`, ...), which
    a config reads back with a warning and ignores: each trial would warn for nothing."""
    return {k: v for k, v in config.to_dict().items() if k not in CLUSTER_ONLY_KEYS}


def _take_env_from_tune_registry(env: Any) -> None:
    """An env name registered in the driver (`trainer.tune.register_env`, or this project's
    `register_env` before the search started) reaches the trial's actor through Tune's registry,
    as in RLlib; this process's registry gets it from there."""
    if not isinstance(env, str) or registered_env_creator(env) is not None:
        return
    if _tune_registry.contains(ENV_CREATOR, env):
        register_env_if_missing(env, _tune_registry.get(ENV_CREATOR, env))


_TRAINABLES: dict[type[Algorithm], type[AlgorithmTrainable]] = {}


def algorithm_class_of(algorithm: Any) -> type[Algorithm] | None:
    """The Algorithm class that `algorithm` names (an Algorithm subclass, its registered name,
    an AlgorithmConfig with algo_class), or None when it names none (a Tune trainable, a
    function)."""
    if isinstance(algorithm, type) and issubclass(algorithm, Algorithm):
        return algorithm
    if isinstance(algorithm, AlgorithmConfig):
        if algorithm.algo_class is None:
            raise ConfigError(
                f"{type(algorithm).__name__} without algo_class as a Tune trainable: build the "
                "config of an algorithm (PPOConfig(), DQNConfig(), ...)"
            )
        return algorithm.algo_class
    if isinstance(algorithm, str) and algorithm in KNOWN_ALGORITHMS:
        return _known_algorithm(algorithm)
    return None


def as_trainable(algorithm: Any) -> Any:
    """The Tune trainable to run `algorithm`: for an Algorithm subclass, its name ("PPO",
    "DQN") or an AlgorithmConfig, the AlgorithmTrainable subclass of that algorithm (one per
    class, named like it); anything else (a Tune Trainable, a function, another registered
    name) is returned as it is, for Tune to take or refuse."""
    algorithm_class = algorithm_class_of(algorithm)
    if algorithm_class is None:
        return algorithm
    trainable = _TRAINABLES.get(algorithm_class)
    if trainable is None:
        # Named like the algorithm: Tune names trials and registers classes by __name__.
        trainable = type(
            algorithm_class.__name__,
            (AlgorithmTrainable,),
            {
                "algorithm_class": algorithm_class,
                "__doc__": f"{algorithm_class.__name__} as a Ray Tune Trainable.",
                "__module__": __name__,
                "__qualname__": f"AlgorithmTrainable.{algorithm_class.__name__}",
            },
        )
        _TRAINABLES[algorithm_class] = trainable
    return trainable


def register_known_algorithms() -> None:
    """Registers the registered algorithms (`trainer.algorithms.registry`) under their names in
    Tune's registry (so that `Tuner("PPO")` finds this project's, not RLlib's), unless
    registered already."""
    for name in KNOWN_ALGORITHMS:
        if not _tune_registry.contains(TRAINABLE_CLASS, name):
            _tune_registry.register(TRAINABLE_CLASS, name, as_trainable(name))
