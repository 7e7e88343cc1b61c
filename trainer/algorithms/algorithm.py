"""`Algorithm`: owns the config, the EnvRunnerGroup, the learner and the metrics; `train()` runs
training steps and returns RLlib's result dict.

Subclasses implement `training_step()`; `setup_learner()` assembles the learner from the classes
their config declares (`learner_for`, `trainer.algorithms.config.classes`).

One `train()` call, as data flows (PPO; DQN samples into its replay buffer and updates from it):

    train()
     ├─ [parallel evaluation: a round starts with the last weights (EvaluationRounds)]
     ├─ restore_env_runners(): the runners left out in the last iteration are restarted
     ├─ training_step(), repeated until min_time_s / min_sample_timesteps are reached
     │  (or no runner is left to sample from):
     │    env_runner_group.sample()  ──requests──▶  EnvRunner processes: step envs, record
     │        ◀── episodes + each runner's MetricsLogger.reduce()        episodes, fire callbacks
     │    metrics.aggregate(runner metrics, key="env_runners")   (RLlib's merge)
     │    learner.update(episodes)  ─▶ GAE, epochs of minibatches, Adam: new weights + stats
     │    metrics.log_dict(stats, key=("learners", "default_policy"))
     │    sync_weights()  ──weights + global timestep──▶  every EnvRunner (applied before its
     │                                                     next request)
     ├─ [evaluation: finish the parallel round, or evaluate() now: trainer.algorithms.evaluation]
     ├─ result = metrics.reduce() + counters, fault tolerance, evaluation (+ older keys)
     ├─ env_task_fn (curriculum) on every training EnvRunner
     └─ on_train_result(result) ─▶ returned

A failed EnvRunner anywhere in that flow is handled inside `EnvRunnerGroup` (see
`trainer.runners.restart_policy`): the round keeps the other runners' samples, and a runner is
restarted at most once per iteration, so the call returns.
"""

from __future__ import annotations

import copy
import datetime
import importlib
import logging
import os
import platform
import socket
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from trainer.algorithms.acting import ModuleActor, actor_for
from trainer.algorithms.algorithm_config import AlgorithmConfig, deep_updated
from trainer.algorithms.checkpointing import (
    configured_module_states,
    load_algorithm_state,
    load_class_and_config,
    open_algorithm_checkpoint,
    read_module_states,
    runner_states,
    save_algorithm,
)
from trainer.algorithms.config.classes import AlgorithmClasses
from trainer.algorithms.data_parallel import DataParallelLearners
from trainer.algorithms.evaluation import EvaluationRounds
from trainer.algorithms.learner_group import LearnerGroup
from trainer.algorithms.learner_pieces import build_learner_pieces
from trainer.algorithms.module_changes import (
    ModuleChange,
    completed_spec,
    runner_add_module,
    runner_remove_module,
)
from trainer.algorithms.multi_agent_learner import (
    ModuleBuilder,
    MultiAgentLearner,
    build_multi_agent_learner,
)
from trainer.algorithms.replay import make_replay_buffer
from trainer.callbacks import ALGORITHM_EVENTS, CallbackChain
from trainer.capabilities import CHECKPOINTABLE, MULTI_AGENT, OFFLINE, OLD_API_STACK
from trainer.checkpoints import Checkpoint, CheckpointError
from trainer.checkpoints.location import fetched
from trainer.checkpoints.rllib_layout import RLLIB_CHECKPOINT_READER, is_rllib_checkpoint
from trainer.compat.old_api import with_old_result_keys
from trainer.compat.old_names import OldAlgorithmNames
from trainer.core.exploration import make_exploration
from trainer.core.learner import Learner
from trainer.core.learner_components import (
    COMPONENT_LEARNER_GROUP,
    component_names,
    in_rllib_layout,
    own_learner_state,
    subcomponents,
    wants,
)
from trainer.core.models import DEFAULT_MODULE_ID, FlatParameterModule
from trainer.core.multi_rl_module import MultiRLModuleSpec
from trainer.core.rl_module import RLModuleSpec, validate_module_id
from trainer.env.curriculum import apply_env_task_fn
from trainer.env.envs import make_env_creator
from trainer.errors import ConfigError, RunnerStateRejected
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    EVALUATION_RESULTS,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    RESTORE_ENV_RUNNERS_TIMER,
    TIMERS,
    TRAINING_ITERATION,
    TRAINING_ITERATION_TIMER,
    MetricsLogger,
    StatsBase,
    add_episode_defaults,
)
from trainer.named_objects import server_running as named_objects_running
from trainer.named_objects import shutdown_named_objects
from trainer.offline.recording import OfflineRecorder
from trainer.runners import restart_policy
from trainer.runners.env_runner_group import (
    EnvRunnerGroup,
    local_runner_of,
    prestart_workers,
    spaces_of,
)
from trainer.runners.ray_runner import ray_started_since, shutdown_ray, started_ray_session
from trainer.util.deprecation import warn_once
from trainer.util.import_paths import resolve_import_path
from trainer.util.log import set_library_log_level
from trainer.util.rllib_members import refuse
from trainer.util.rng import generator_state, set_generator_state
from trainer.util.state_checks import (
    StateError,
    check_loads,
    require_generator_state,
    require_int,
    require_map,
    require_number,
    select_components,
)

if TYPE_CHECKING:
    from trainer.runners.env_runner import EnvRunner

logger = logging.getLogger("trainer")

#: Where Tune's resource request of a trial is computed: the Tune layer (above this one; it
#: needs Ray Tune), imported by name when Tune asks (`default_resource_request`).
#: RLlib's resource request computed from a config, without Tune (the RLlib surface: a layer
#: above, named by its path).
RESOURCES_MODULE = "trainer.compat.resources"
TUNE_TRAINABLE_MODULE = "trainer.tune.trainable"
#: The policy export (`export_policy_model`, `export_model`): a layer above this one (it reads
#: the algorithm's modules and runners), imported by name when asked.
EXPORT_MODULE = "trainer.export"
#: Where the learners log the env steps trained so far.
TRAINED_LIFETIME_KEY = (LEARNER_RESULTS, "__all_modules__", "num_env_steps_trained_lifetime")


class SavedCheckpoint:
    """What `Algorithm.save()` returns (Tune's result of a save): `.checkpoint.path`."""

    def __init__(self, path: str):
        self.path = path
        self.checkpoint = self

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"SavedCheckpoint({self.path!r})"


def _action_space(spaces: Any) -> Any:
    """The action space of the algorithm's own exploration (`compute_single_action`): the
    module's; in a multi-agent run, the first module's."""
    if isinstance(spaces, dict):
        return next(iter(spaces.values()))[1]
    return spaces.action_space()


class TrainIterCtx:
    """RLlib's record of one training iteration (`Algorithm._run_one_training_iteration`
    returns it): when it started and stopped (`time.perf_counter()`), the env steps sampled
    and trained in it, and the lifetime counts it started from."""

    def __init__(self, algo: Any):
        self.algo = algo
        self.time_start: float | None = None
        self.time_stop: float | None = None
        self.sampled = 0
        self.trained = 0
        self.init_env_steps_sampled = int(algo.num_env_steps_sampled_lifetime)
        self.init_env_steps_trained = int(algo.metrics.peek(TRAINED_LIFETIME_KEY, default=0))

    def get_time_taken_sec(self) -> float:
        """The iteration's duration in seconds (once it stopped)."""
        if self.time_start is None or self.time_stop is None:
            raise RuntimeError("the iteration has not ended yet")
        return self.time_stop - self.time_start

    def should_stop(self, results: Any) -> bool:
        """Whether the iteration's minimum time and env steps are reached (RLlib's test after
        each `training_step()`; `results`: whether one ran yet)."""
        if not results:
            return False
        config = self.algo.config
        elapsed = time.perf_counter() - (self.time_start or time.perf_counter())
        sampled = self.algo.num_env_steps_sampled_lifetime - self.init_env_steps_sampled
        trained = int(self.algo.metrics.peek(TRAINED_LIFETIME_KEY, default=0))
        return (
            elapsed >= (config.min_time_s_per_iteration or 0)
            and sampled >= config.min_sample_timesteps_per_iteration
            and trained - self.init_env_steps_trained >= config.min_train_timesteps_per_iteration
        )


def _overridden(algorithm: Any, name: str) -> bool:
    """Whether the algorithm's class overrides `Algorithm`'s method `name`."""
    return getattr(type(algorithm), name) is not getattr(Algorithm, name)


def _group_health(group: EnvRunnerGroup) -> dict[str, int]:
    """An evaluation group's figures in its results, as RLlib 2.60 adds them after each
    evaluation round: healthy remote runners, requests in flight, restarts and replies dropped
    at a call's timeout."""
    return {
        "num_healthy_workers": group.num_healthy_remote_workers(),
        "actor_manager_num_outstanding_async_reqs": group.num_in_flight_async_reqs(),
        "num_remote_worker_restarts": group.num_remote_worker_restarts(),
        "num_env_runners_dropped_lifetime": group.num_env_runners_dropped_lifetime(),
    }


def _add_missing(result: dict, extra: dict) -> None:
    """The keys of `extra` that `result` lacks, added (nested dicts key by key)."""
    for key, value in extra.items():
        if key not in result:
            result[key] = value
        elif isinstance(value, dict) and isinstance(result[key], dict):
            _add_missing(result[key], value)


@refuse(
    "ray.rllib.algorithms.algorithm.Algorithm",
    MULTI_AGENT,
    "RLlib's old-stack multi-agent names (policies as Policy objects); the new stack's "
    "modules are added and removed with add_module / remove_module",
    "add_policy",
    "remove_policy",
)
@refuse(
    "ray.rllib.algorithms.algorithm.Algorithm",
    OLD_API_STACK,
    "RLlib's old API stack (Policy objects); get the module with algo.get_module() or act "
    "with algo.compute_single_action()",
    "compute_actions",
    "get_policy",
    "get_default_policy_class",
)
@refuse(
    "ray.rllib.algorithms.algorithm.Algorithm",
    CHECKPOINTABLE,
    "checkpoints are this project's format, written and read by save_to_path / "
    "restore_from_path / from_checkpoint (docs/checkpoints.md)",
    "get_checkpointable_components",
    "get_ctor_args_and_kwargs",
    "get_metadata",
)
@refuse(
    "ray.rllib.algorithms.algorithm.Algorithm",
    OFFLINE,
    "offline evaluation runs in the driver here (Algorithm.evaluate_offline): there are no "
    "offline evaluation runners to restore",
    "restore_offline_eval_runners",
)
class Algorithm(OldAlgorithmNames):
    """Base of all algorithms. Build one with `config.build()`, or `Algo(config=config)`."""

    #: The (frozen) config this algorithm runs with.
    config: AlgorithmConfig
    #: The training EnvRunners (set in `__init__`).
    env_runner_group: EnvRunnerGroup
    #: The one learner (`setup_learner()` sets it).
    learner: Learner
    metrics: MetricsLogger
    _evaluation: EvaluationRounds
    #: RLlib's aggregator actors (IMPALA's and APPO's batching workers): none here, the
    #: learner thread makes its batches; RLlib code checks it for None.
    _aggregator_actor_manager: Any = None
    #: Whether `training(learner_connector=...)` pieces run here: `setup_learner` builds them
    #: (`self.learner_connector`), and the training step runs them over the episodes before
    #: the learner makes its batch.
    RUNS_LEARNER_CONNECTOR: ClassVar[bool] = False
    #: Where `learners(num_learners=N)`, N >= 2, trains data-parallel here ("single-agent",
    #: "multi-agent"): the training step updates through `update_learners` (on-policy) or
    #: `update_learners_on_batch` (off-policy) (`trainer.algorithms.data_parallel`).
    DATA_PARALLEL_LEARNERS: ClassVar[tuple[str, ...]] = ()
    #: Learners 1..N-1 of data-parallel learners, beside `learner` (learner 0); None: one.
    learner_replicas: DataParallelLearners | None = None

    @classmethod
    def get_default_config(cls) -> AlgorithmConfig:
        return AlgorithmConfig(algo_class=cls)

    def __init__(
        self, config: AlgorithmConfig | dict | None = None, env: Any = None, **kwargs: Any
    ):
        if kwargs:
            raise TypeError(f"{type(self).__name__}() got unexpected arguments {sorted(kwargs)}")
        if config is None:
            config = self.get_default_config()
        elif isinstance(config, dict):
            warn_once(
                f"{type(self).__name__}(config={{...}}) with a dict",
                f"{type(self).__name__}Config()...build() (or "
                f"{type(self).__name__}Config.from_dict(d).build())",
            )
            config = self.get_default_config().update_from_dict(config)
        elif isinstance(config, AlgorithmConfig):
            default = self.get_default_config()
            if isinstance(default, AlgorithmConfig) and not isinstance(config, type(default)):
                # RLlib's rule: a generic config (`AlgorithmConfig(algo_class=PPO)`) gives its
                # settings to the algorithm's own config class, whose other settings keep
                # their defaults.
                config = default.update_from_dict(config.to_dict())
            else:
                config = config.copy()
        else:
            raise ConfigError(
                f"{type(self).__name__}(config={config!r}): give an AlgorithmConfig (for example "
                f"{type(self).__name__}Config()), a dict of settings, or None"
            )
        if env is not None:
            config.environment(env)
        if config.algo_class is None:
            config.algo_class = type(self)
        # A torch config's worker template imports torch while this process does (validate).
        prestart_workers(config)
        config.validate()
        config.ignored_settings_warnings()
        self.config = config.freeze()
        # python_environment(extra_python_environs_for_driver=): this process's variables.
        os.environ.update(
            {name: str(value) for name, value in config.extra_python_environs_for_driver.items()}
        )
        set_library_log_level(config.log_level)
        self.metrics = MetricsLogger(root=True, stats_cls_lookup=config.stats_cls_lookup)
        algorithm_callables = {
            e: fns for e, fns in config.callbacks_on.items() if e in ALGORITHM_EVENTS
        }
        self._callbacks = CallbackChain(config.callback_classes(), algorithm_callables)
        self.iteration = 0
        #: RLlib's mutable counter dict (a `defaultdict(int)`): scripts keep their own counters
        #: in it (RLlib's curriculum example stores its current task there); the step counters
        #: below are refreshed after every training step and state load (`_refresh_counters`).
        self._counters: defaultdict[str, Any] = defaultdict(int)
        self._iterations_since_restore = 0
        self._time_total_s = 0.0
        #: Iterations in a row in which EnvRunners failed and nothing was sampled
        #: (`restart_policy.failed_iterations_in_a_row`).
        self._failed_iterations_in_a_row = 0
        self._stopped = False
        self._rng = np.random.default_rng(config.seed)
        # Restarts seen on the evaluation thread: their callbacks fire on this thread.
        self._owner_thread = threading.current_thread()
        # Named objects created before this algorithm outlive it (RLlib's fault-tolerance tests
        # build several algorithms around one counter); those created later end with it.
        self._stops_named_objects = not named_objects_running()
        self._queued_recoveries: list[tuple[list[int], bool]] = []
        # A Ray this algorithm's build started (`env_runners(backend="ray")` or Ray learners
        # when this process had not joined Ray) ends with its stop(); one the user started, or
        # an earlier algorithm, stays (`trainer.runners.ray_runner.shutdown_ray`).
        ray_before = started_ray_session()
        self._started_ray: tuple[str, str] | None = None
        try:
            try:
                self.setup(self.config)
            finally:
                self._started_ray = ray_started_since(ray_before)
        except BaseException:
            self.stop()
            raise

    def setup(self, config: AlgorithmConfig) -> None:
        """Builds what the algorithm runs (RLlib's `Algorithm.setup`, called once by the
        constructor with the validated, frozen config): the EnvRunners, the learner, the
        modules' configured weights sent out; then fires `on_algorithm_init`. A subclass that
        adds its own parts (a shared store its actors reach, say) overrides it, calling
        `super().setup(config)` first; a failure stops whatever was started."""
        self.env_runner_group = self._training_runner_group(config)
        torch_reason = config.image_torch_reason(spaces_of(self.env_runner_group))
        if torch_reason is not None:  # images, and no framework chosen: RLlib's CNN
            config = self._rebuilt_on_torch(config, torch_reason)
        if config.output is not None:
            self.env_runner_group.recorder = OfflineRecorder(config)
        self._evaluation = EvaluationRounds(self)
        # The Algorithm's own exploration, for compute_single_action().
        self.exploration = make_exploration(
            config.get_exploration_config(), _action_space(spaces_of(self.env_runner_group))
        )
        self.setup_learner()
        if self.local_replay_buffer is None and _overridden(
            self, "_create_local_replay_buffer_if_necessary"
        ):
            self.local_replay_buffer = self._create_local_replay_buffer_if_necessary(config)
        self._build_learners()
        self._start_data_parallel_learners()
        self._set_module_weights(configured_module_states(self))
        self.sync_weights()
        self._refresh_counters()
        self._callbacks.fire("on_algorithm_init", algorithm=self, metrics_logger=self.metrics)

    def _training_runner_group(self, config: AlgorithmConfig) -> EnvRunnerGroup:
        """The training EnvRunners, their weights synced by `setup` before any use."""
        return EnvRunnerGroup(
            config,
            make_env_creator(config.env),
            on_recreated=lambda indices: self._runners_recreated(indices, False),
            weights_synced_at_start=True,
            tune_trial_id=self.trial_id,
        )

    def _rebuilt_on_torch(self, config: AlgorithmConfig, reason: str) -> AlgorithmConfig:
        """`config` on `framework("torch")`, which becomes `self.config`, and the EnvRunners
        rebuilt for it (`FrameworkSection.image_torch_reason` says when: the EnvRunners'
        spaces are known only once they run)."""
        logger.info("%s runs on torch: %s", type(self).__name__, reason)
        self.env_runner_group.stop()
        torch_config = config.copy(copy_frozen=False).framework("torch")
        prestart_workers(torch_config)
        torch_config.validate()
        self.config = torch_config.freeze()
        self.env_runner_group = self._training_runner_group(self.config)
        return self.config

    def _build_learners(self) -> None:
        """RLlib's `Learner.build()` hook, once, on each torch learner (each module's of a
        multi-agent learner), after `setup_learner`: a hook may change the learner's pipeline
        (`learner._learner_connector`), which then runs as the config's pieces do; where the
        algorithm runs no learner pieces, a hook that adds some is refused."""
        learner = self.learner
        nested = getattr(learner, "learners", None)
        for each in nested.values() if isinstance(nested, dict) else [learner]:
            build = getattr(each, "build", None)
            if not callable(build):
                continue  # (a numpy learner: its steps are its own)
            build()
            pipeline = getattr(each, "_learner_connector", None)
            if pipeline is None:
                continue
            if each is learner and getattr(self, "RUNS_LEARNER_CONNECTOR", False):
                self.learner_connector = pipeline
                continue
            where = "" if each is learner else " in a multi-agent module's learner"
            raise ConfigError(
                f"{type(each).__name__}.build() added learner pieces "
                f"{[type(piece).__name__ for piece in pipeline.connectors]}: "
                f"{type(self).__name__} runs no learner pieces{where} here (PPO, IMPALA and "
                "APPO run the config's training(learner_connector=...) pieces)"
            )

    def _start_data_parallel_learners(self) -> None:
        """With `num_learners` >= 2 where this algorithm trains data-parallel
        (`config.data_parallel_refusal()` is None): learners 1..N-1 in worker processes beside
        `self.learner` (`trainer.algorithms.data_parallel`); `update_learners` then shards
        each update over them."""
        config = self.config
        if config.num_learners < 2 or config.data_parallel_refusal() is not None:
            return
        self.learner_replicas = DataParallelLearners(
            type(self), config, spaces_of(self.env_runner_group), self.learner
        )

    def update_learners(self, episodes: list, **kwargs: Any) -> Any:
        """The learner's `update(episodes, **kwargs)`, or with data-parallel learners one
        update over all of them, each on its shard of `episodes` (results reduced)."""
        if self.learner_replicas is not None:
            return self.learner_replicas.update(episodes, **kwargs)
        return self.learner.update(episodes, **kwargs)

    def update_learners_on_batch(self, batch: Any, *, module_id: Any = None, **kwargs: Any) -> Any:
        """The learner's `update(batch, **kwargs)` on a replayed batch of columns (of module
        `module_id`'s learner, multi-agent), or with data-parallel learners one update over
        all of them, each on its rows (results reduced; per-row TD errors joined in the
        batch's order)."""
        if self.learner_replicas is not None:
            return self.learner_replicas.update_batch(batch, module_id=module_id, **kwargs)
        if module_id is not None:
            return cast(MultiAgentLearner, self.learner).update_module(module_id, batch, **kwargs)
        return self.learner.update(batch, **kwargs)

    # -- the learner, assembled from the classes the config declares ------------------------
    def setup_learner(self) -> None:
        """Builds the learner for the EnvRunners' spaces (`learner_for`) and, where the
        algorithm runs them (`RUNS_LEARNER_CONNECTOR`), the config's learner pieces
        (`self.learner_connector`). An algorithm adds what else its training step needs (a
        replay buffer, the recorded data's reader) after `super().setup_learner()`."""
        spaces = spaces_of(self.env_runner_group)
        self.learner = self.learner_for(self.config, spaces)
        if self.RUNS_LEARNER_CONNECTOR:
            self.learner_connector = build_learner_pieces(self.config, spaces, self.learner)

    @classmethod
    def learner_for(cls, config: Any, spaces: Any) -> Any:
        """The learner for `spaces` (the EnvRunners' modules' spaces: a `SpaceInfo`, or
        multi-agent `{module_id: (observation space, action space)}`), from the classes the
        config declares (`AlgorithmClasses`):

        - single-agent numpy: the numpy learner, which builds its module (`numpy_learner_for`);
        - single-agent torch: `config.learner_class` (the torch learner, or the class given)
          over a freshly built module (`torch_module_learner`: on the GPU with
          `num_gpus_per_learner`), the learner-only modules' learners beside it;
        - multi-agent: a learner per module with weights (`module_learner`), or, where the
          config trains the whole MultiRLModule (`_JOINT_MODULES`), `config.learner_class`
          over all of it (each of its modules on the GPU with `num_gpus_per_learner`)."""
        if config.is_multi_agent:
            if config._JOINT_MODULES:
                from trainer.torch_rl.module_group import build_seeded  # (imports torch)

                spec = config.get_multi_rl_module_spec(spaces=spaces)
                multi_module = build_seeded(spec, config.seed)
                if config["num_gpus_per_learner"]:  # validate() found CUDA
                    for module in multi_module.values():
                        module.to("cuda")
                return config.learner_class(config, multi_module)
            return build_multi_agent_learner(config, spaces, cls.module_learner)
        if not config.uses_torch:
            return cls.numpy_learner_for(config, spaces)
        deferred = config._deferred_torch()
        if deferred is not None:  # the default torch learner, stood in for until torch is asked
            learner = deferred.learner(
                config, spaces, lambda: cls.torch_learner_for(config, spaces)
            )
            if learner is not None:
                return learner
        return cls.torch_learner_for(config, spaces)

    @classmethod
    def torch_learner_for(cls, config: Any, spaces: Any) -> Any:
        """The single-agent torch learner (`learner_for`), built now (torch imported)."""
        module = config.build_module(spaces, seed=config.seed)
        learner = cls.torch_module_learner(config, module)
        if config.learner_only_module_specs():
            from trainer.torch_rl.self_supervised import build_learner_only_learners

            learner.add_learner_only_learners(
                build_learner_only_learners(config, module.rl_module, config.seed)
            )
        return learner

    @classmethod
    def numpy_learner_for(cls, config: Any, spaces: Any) -> Any:
        """The single-agent numpy learner: `config.learner_class` (the numpy learner the config
        declares) for `spaces`, whose module it builds."""
        return config.learner_class(config, spaces)

    @classmethod
    def torch_module_learner(cls, config: Any, module: Any, **kwargs: Any) -> Any:
        """`config.learner_class` over a torch `module` (a view of a TorchRLModule), moved to
        the GPU first with `num_gpus_per_learner` (the EnvRunners' copies stay on the CPU);
        `kwargs`: the module's id in a multi-agent run."""
        if config["num_gpus_per_learner"]:  # validate() found CUDA
            module.rl_module.to("cuda")
        return config.learner_class(config, module, **kwargs)

    @classmethod
    def module_learner(cls, config: Any, build: ModuleBuilder) -> Any:
        """One module's learner in a multi-agent run (`config`: the module's own,
        `get_config_for_module`; `build()` builds the module from its spec, seeded by its id):
        `torch_module_learner` for a torch module; for a default numpy module the numpy
        learner the config declares (else `config.learner_class`) over it, with `build` too
        where that learner builds its target networks as its module
        (`AlgorithmClasses.numpy_targets_from_build`)."""
        module = build()
        if getattr(module, "framework", None) == "torch":
            return cls.torch_module_learner(config, module, module_id=build.module_id)
        classes = config._algorithm_classes() or AlgorithmClasses()
        learner_class = (
            resolve_import_path(classes.numpy_learner)
            if classes.numpy_learner is not None
            else config.learner_class
        )
        if classes.numpy_targets_from_build:
            return learner_class(config, None, module=module, build=build)
        return learner_class(config, None, module=module)

    def _create_local_replay_buffer_if_necessary(self, config: AlgorithmConfig) -> Any:
        """RLlib's hook for the algorithm's replay buffer (`self.local_replay_buffer`): the
        buffer `replay_buffer_config` names, or None where the config has none or sets
        `no_local_replay_buffer`. An off-policy algorithm's `setup_learner` calls it; for any
        other algorithm `setup` calls it after `setup_learner` where a subclass overrides it
        (RLlib calls it for every algorithm; by default here only those that replay make a
        buffer). Override to make another buffer."""
        buffer_config = getattr(config, "replay_buffer_config", None)
        if not buffer_config or buffer_config.get("no_local_replay_buffer"):
            return None
        return make_replay_buffer(buffer_config, seed=config.seed)

    @classmethod
    def merge_algorithm_configs(
        cls, config1: dict, config2: dict, _allow_unknown_configs: bool | None = None
    ) -> dict:
        """`config1` updated by `config2` (nested dicts key by key), as new dicts: RLlib's
        merge of dict configs (`AlgorithmConfig.update_from_dict` takes such a dict)."""
        return deep_updated(copy.deepcopy(config1), copy.deepcopy(config2))

    @staticmethod
    def validate_env(env: Any, env_context: Any) -> None:
        """RLlib's env check hook: does nothing here, as in RLlib, whose new API stack never
        calls it either (its old stack's RolloutWorker did); kept for subclasses that
        override it and call it themselves."""

    @staticmethod
    def from_state(state: dict) -> Algorithm:
        """An algorithm rebuilt from a state that names its class and config (RLlib's
        `state["algorithm_class"]` and `state["config"]`), the rest of `state` loaded with
        `set_state`."""
        algorithm_class = state.get("algorithm_class")
        if algorithm_class is None:
            raise ValueError(
                "No `algorithm_class` key was found in given `state`! Cannot create new Algorithm."
            )
        config = state.get("config")
        if not config:
            raise ValueError("No `config` found in given Algorithm state!")
        algorithm: Algorithm = algorithm_class(config=config)
        rest = {k: v for k, v in state.items() if k not in ("algorithm_class", "config")}
        if rest:
            algorithm.set_state(rest)
        return algorithm

    # -- the part an algorithm provides ------------------------------------------------------
    def training_step(self) -> None:
        """One round of sampling and learning; logs into `self.metrics`."""
        raise NotImplementedError(f"{type(self).__name__} must implement training_step()")

    def get_weights(self, policies: list[str] | None = None) -> dict[str, Any]:
        """The learner's weights; of a multi-agent algorithm `{module_id: weights}` (of
        `policies`, or all). Single-agent, `policies` (RLlib's module ids) may only name the
        one module, "default_policy"."""
        if self.config.is_multi_agent:
            weights = self.learner.get_weights()
            wanted = None if policies is None else set(policies)
            return {k: v for k, v in weights.items() if wanted is None or k in wanted}
        if policies is not None and set(policies) - {DEFAULT_MODULE_ID}:
            raise KeyError(
                f"get_weights(policies={policies!r}): there is one module here, "
                f"{DEFAULT_MODULE_ID!r}"
            )
        return self.learner.get_weights()

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        """Sets the learner's weights and sends them to every EnvRunner."""
        self.learner.set_weights(weights)
        self.sync_weights()

    def sync_weights(self) -> None:
        """Sends the learner's weights and the env steps sampled so far to every EnvRunner."""
        self.env_runner_group.sync_weights(
            self.learner.get_weights(), global_timestep=self.num_env_steps_sampled_lifetime
        )

    @property
    def num_env_steps_sampled_lifetime(self) -> int:
        return int(self.metrics.peek(NUM_ENV_STEPS_SAMPLED_LIFETIME, default=0))

    # -- public API --------------------------------------------------------------------------
    @property
    def training_iteration(self) -> int:
        return self.iteration

    @property
    def callbacks(self) -> list:
        """The Algorithm-side callback instances (one per configured class)."""
        return self._callbacks.instances

    @property
    def env_runner(self) -> EnvRunner:
        """The local EnvRunner (index 0, in this process): it has envs when
        `num_env_runners=0` or `create_env_on_local_worker=True`."""
        return local_runner_of(self.env_runner_group)

    @property
    def learner_group(self) -> LearnerGroup:
        """RLlib's handle on the learners: here one, in this process."""
        return LearnerGroup(algorithm=self)

    def get_module(self, module_id: str = DEFAULT_MODULE_ID) -> Any:
        """RLlib's: module `module_id` of the local EnvRunner, its inference-only copy (a torch
        module built with `inference_only=True`: no value-function or target networks where
        the module implements RLlib's `InferenceOnlyAPI`; `forward_inference` works), with
        the learner's latest weights (synced after every update). A torch module is returned
        itself, not the numpy view the EnvRunner samples through. A single-agent algorithm has
        one module (`module_id` is not read, as in RLlib); a multi-agent algorithm's unknown
        id is a KeyError naming the modules (RLlib returns None). The learner's whole module,
        training-only parts included: `learner_module(module_id)` (in RLlib,
        `algo.learner_group._learner.module[module_id]`)."""
        module = local_runner_of(self.env_runner_group).module
        if self.config.is_multi_agent:
            known = list(module.keys())
            if module_id not in known:
                raise KeyError(
                    f"get_module({module_id!r}): no such module; the modules are {known}"
                )
            module = module[module_id]
        # A torch module itself, not the view the samplers and the algorithm use.
        return getattr(module, "rl_module", module)

    def learner_module(self, module_id: str = DEFAULT_MODULE_ID) -> Any:
        """The learner's module `module_id` (its whole module: value function and training
        parts included), a torch module itself rather than its view; of a multi-agent
        algorithm, a module the learners do not hold (a user's heuristic RLModule) comes from
        the local EnvRunner. (`get_module` is RLlib's: the EnvRunner's inference-only copy.)"""
        if self.config.is_multi_agent:
            modules = self.learner.module
            if module_id in modules:
                return getattr(modules[module_id], "rl_module", modules[module_id])
            local = local_runner_of(self.env_runner_group).module
            if module_id in local:
                return local[module_id]
            raise KeyError(f"get_module({module_id!r}): no such module")
        if module_id != DEFAULT_MODULE_ID:
            raise KeyError(
                f"get_module({module_id!r}): there is one module here, {DEFAULT_MODULE_ID!r}"
            )
        return getattr(self.learner.module, "rl_module", self.learner.module)

    # -- exported policies (trainer.export) ------------------------------------------------
    def export_policy_model(
        self, export_dir: str, policy_id: str = DEFAULT_MODULE_ID, onnx: int | None = None
    ) -> None:
        """RLlib's `export_policy_model`: writes module `policy_id`'s inference path into
        `export_dir`. With `onnx=OPSET` as `model.onnx` for that ONNX opset; without, as the
        numpy export (`policy.json`, `weights.npz` and the standalone `policy_reader.py`),
        since there is no framework format for a numpy module (`trainer.export`)."""
        export = importlib.import_module(EXPORT_MODULE)
        if onnx is None:
            export.export_policy(self, export_dir, format=export.NUMPY, module_id=policy_id)
        else:
            export.export_policy(
                self, export_dir, format=export.ONNX, module_id=policy_id, opset=onnx
            )

    def export_policy_checkpoint(self, export_dir: str, policy_id: str = DEFAULT_MODULE_ID) -> None:
        """RLlib's `export_policy_checkpoint`: on the new API stack, module `policy_id` as a
        module checkpoint in RLlib 2.60's layout, which RLlib's `RLModule.from_checkpoint`
        loads (`export --format rllib`); a `KeyError` for a module the algorithm does not have,
        as RLlib raises."""
        export = importlib.import_module(EXPORT_MODULE)
        try:
            export.export_policy(self, export_dir, format=export.RLLIB, module_id=policy_id)
        except export.ExportError as error:
            if str(error).startswith(f"{export.MODULE_ID}="):
                raise KeyError(
                    f"Policy with ID {policy_id} not found in Algorithm! ({error})"
                ) from None
            raise

    def export_model(
        self, export_formats: list[str] | str, export_dir: str | None = None
    ) -> dict[str, str]:
        """RLlib's (Tune Trainable's) `export_model`: exports the default module in each of
        `export_formats` into a subfolder of `export_dir` named after the format ("onnx": the
        ONNX export for the opset in $ONNX_OPSET, default 11 as in RLlib; "model" and "numpy":
        the numpy export); returns format -> folder. "checkpoint" and "h5" are refused."""
        formats = [export_formats] if isinstance(export_formats, str) else list(export_formats)
        formats = [str(name).strip().lower() for name in formats]
        allowed = ("onnx", "model", "numpy")
        unknown = [name for name in formats if name not in allowed]
        if unknown:
            raise ValueError(
                f"export_model(export_formats={export_formats!r}): {unknown} not known here; "
                f"allowed: {list(allowed)} (use save_to_path() for a checkpoint)"
            )
        if export_dir is None:
            raise ValueError("export_model(export_dir=None): give the folder to export into")
        exported = {}
        for name in formats:
            path = os.path.join(export_dir, name)
            opset = int(os.environ.get("ONNX_OPSET", "11")) if name == "onnx" else None
            self.export_policy_model(path, onnx=opset)
            exported[name] = path
        return exported

    # -- modules added and removed at run time (self-play) -----------------------------------
    def add_module(
        self,
        module_id: str,
        module_spec: RLModuleSpec,
        *,
        config_overrides: dict | None = None,
        new_agent_to_module_mapping_fn: Callable[..., Any] | None = None,
        new_should_module_be_updated: Any = None,
        add_to_learners: bool = True,
        add_to_env_runners: bool = True,
        add_to_eval_env_runners: bool = True,
    ) -> MultiRLModuleSpec:
        """RLlib's `add_module`: adds module `module_id`, built from `module_spec` (an
        `RLModuleSpec`; spaces left out are the env's, when all agents share them), to the
        learners (a new learner, trained when `policies_to_train` says so), to every training
        EnvRunner (the local one and the worker processes) and to the evaluation EnvRunners.
        `config_overrides` are the module's own settings
        (`rl_module(algorithm_config_overrides_per_module=)`),
        `new_agent_to_module_mapping_fn` the mapping from now on (episodes under way keep
        theirs until they end) and `new_should_module_be_updated` the new `policies_to_train`.
        The config (`algo.config`, each EnvRunner's, the evaluation config) changes with it,
        so restarted EnvRunners and checkpoints have the module too. Returns the
        `MultiRLModuleSpec` of all modules. Every problem is raised before anything changes.

        The learners' weights go to every EnvRunner after each update, so a module added to
        the learners is added to the EnvRunners (and the evaluation EnvRunners, when there
        are some) too."""
        validate_module_id(module_id, error=True)
        learner = self._multi_agent_learner("add_module")
        if not (add_to_learners or add_to_env_runners or add_to_eval_env_runners):
            raise ValueError(
                "At least one of `add_to_learners`, `add_to_env_runners`, or "
                "`add_to_eval_env_runners` must be set to True!"
            )
        if module_id in self.config.policies:
            raise ValueError(
                f"add_module({module_id!r}): module {module_id!r} exists already (modules: "
                f"{sorted(map(str, self.config.policies))}); remove_module() it first"
            )
        evaluator = self._evaluation.evaluator
        if add_to_learners and not (
            add_to_env_runners and (evaluator is None or add_to_eval_env_runners)
        ):
            raise ValueError(
                f"add_module({module_id!r}, add_to_learners=True, add_to_env_runners="
                f"{add_to_env_runners}, add_to_eval_env_runners={add_to_eval_env_runners}): the "
                "learners' weights go to every (evaluation) EnvRunner, which must then hold the "
                "module too; add it to all of them, or with add_to_learners=False"
            )
        group = self.env_runner_group
        change = ModuleChange(
            module_id,
            completed_spec(module_id, module_spec, group.env_spaces),
            config_overrides,
            new_agent_to_module_mapping_fn,
            new_should_module_be_updated,
        )
        self._check_module_change(change)
        self._apply_module_change(change, learner, to_learners=add_to_learners)
        self._restart_learner_replicas()
        if add_to_env_runners:
            group.foreach_env_runner(partial(runner_add_module, change=change))
        if evaluator is not None and add_to_eval_env_runners:
            change.apply_to(evaluator.config)
            evaluator.group.foreach_env_runner(partial(runner_add_module, change=change))
        self.sync_weights()
        return self.config.get_multi_rl_module_spec(spaces=self._module_spaces())

    def remove_module(
        self,
        module_id: str,
        *,
        new_agent_to_module_mapping_fn: Callable[..., Any] | None = None,
        new_should_module_be_updated: Any = None,
        remove_from_learners: bool = True,
        remove_from_env_runners: bool = True,
        remove_from_eval_env_runners: bool = True,
    ) -> MultiRLModuleSpec:
        """RLlib's `remove_module`: removes module `module_id` from the learners (its learner
        and optimizer state go), the training and evaluation EnvRunners (whose episodes then
        start anew, so no agent acts with a module that is gone) and the config;
        `new_agent_to_module_mapping_fn` and `new_should_module_be_updated` as in
        `add_module`. Returns the `MultiRLModuleSpec` of the modules left."""
        learner = self._multi_agent_learner("remove_module")
        if module_id not in self.config.policies:
            raise ValueError(
                f"remove_module({module_id!r}): no such module (modules: "
                f"{sorted(map(str, self.config.policies))})"
            )
        if len(self.config.policies) == 1:
            raise ValueError(f"remove_module({module_id!r}): it is the only module")
        if (
            module_id in learner.learners
            and not remove_from_learners
            and (remove_from_env_runners or remove_from_eval_env_runners)
        ):
            raise ValueError(
                f"remove_module({module_id!r}, remove_from_learners=False): the learners' "
                "weights go to every EnvRunner, which must then keep the module"
            )
        change = ModuleChange(
            module_id,
            None,
            None,
            new_agent_to_module_mapping_fn,
            new_should_module_be_updated,
        )
        self._check_module_change(change)
        self._apply_module_change(change, learner, to_learners=remove_from_learners)
        self._restart_learner_replicas()
        group = self.env_runner_group
        if remove_from_env_runners:
            group.foreach_env_runner(partial(runner_remove_module, change=change))
        evaluator = self._evaluation.evaluator
        if evaluator is not None and remove_from_eval_env_runners:
            change.apply_to(evaluator.config)
            evaluator.group.foreach_env_runner(partial(runner_remove_module, change=change))
        self.__dict__.get("_module_explorations", {}).pop(module_id, None)
        self.sync_weights()
        return self.config.get_multi_rl_module_spec(spaces=self._module_spaces())

    def _restart_learner_replicas(self) -> None:
        """After a module was added or removed: data-parallel learners' workers built anew
        from the changed config, holding learner 0's state (its new module's too)."""
        if self.learner_replicas is not None:
            self.learner_replicas.restart(self.config, spaces_of(self.env_runner_group))

    def _module_spaces(self) -> dict[str, tuple[Any, Any]]:
        """The training group's `{module_id: (observation space, action space)}` (a
        multi-agent group's `spaces`; restarted EnvRunners are built for them)."""
        spaces = self.env_runner_group.spaces
        assert isinstance(spaces, dict), "a multi-agent EnvRunnerGroup has spaces by module"
        return spaces

    @staticmethod
    def _specs_of(spec: MultiRLModuleSpec) -> dict[Any, RLModuleSpec]:
        specs = spec.rl_module_specs
        assert isinstance(specs, dict), "get_multi_rl_module_spec() gives one spec per module"
        return specs

    def _multi_agent_learner(self, method: str) -> MultiAgentLearner:
        if not self.config.is_multi_agent or not isinstance(self.learner, MultiAgentLearner):
            raise RuntimeError(
                f"{method}(): can't add or remove an RLModule in a single-agent setup! Make "
                "sure that your setup is multi-agent: config.multi_agent(policies=..., "
                "policy_mapping_fn=...)"
            )
        return self.learner

    def _check_module_change(self, change: ModuleChange) -> None:
        """Applies `change` to a copy of the config and builds the module specs from it: a
        change the config refuses raises here, before anything changed."""
        trial = self.config.copy()
        change.apply_to(trial)
        spaces = dict(self._module_spaces())
        if change.spec is not None:
            spaces[change.module_id] = (change.spec.observation_space, change.spec.action_space)
        else:
            spaces.pop(change.module_id, None)
        specs = self._specs_of(trial.get_multi_rl_module_spec(spaces=spaces))
        _, is_trained = trial.get_multi_agent_setup(spaces=spaces)
        without_weights = [
            module_id
            for module_id, spec in specs.items()
            if is_trained(module_id) and not ModuleBuilder.can_build(spec)
        ]
        if without_weights:
            raise ConfigError(
                f"policies_to_train names {sorted(map(str, without_weights))}: a user's RLModule "
                "without weights cannot be trained; leave it out of new_should_module_be_updated"
            )

    def _apply_module_change(
        self, change: ModuleChange, learner: MultiAgentLearner, *, to_learners: bool
    ) -> None:
        """The Algorithm's side of a module change: its config (shared with the training
        EnvRunnerGroup), the group's module spaces (given to restarted runners) and the
        learners."""
        group = self.env_runner_group
        change.apply_to(self.config)
        if group.config is not self.config:
            change.apply_to(group.config)
        spaces = self._module_spaces()
        if change.spec is not None:
            spaces[change.module_id] = (change.spec.observation_space, change.spec.action_space)
        else:
            spaces.pop(change.module_id, None)
        change.apply_to(learner.config)  # the learner's own copy (RLlib's Learner.config)
        if to_learners:
            if change.spec is not None:
                specs = self._specs_of(self.config.get_multi_rl_module_spec(spaces=spaces))
                learner.add_module(change.module_id, specs[change.module_id])
            else:
                learner.remove_module(change.module_id)

    def _refresh_counters(self) -> None:
        """Writes the env steps sampled and trained so far and the iteration into `_counters`
        (RLlib's counter names); every other key of the dict is the script's own."""
        sampled = self.num_env_steps_sampled_lifetime
        trained = int(self.metrics.peek(TRAINED_LIFETIME_KEY, default=0))
        self._counters.update(
            {
                "num_env_steps_sampled": sampled,
                "num_agent_steps_sampled": sampled,
                "num_env_steps_trained": trained,
                "num_agent_steps_trained": trained,
                NUM_ENV_STEPS_SAMPLED_LIFETIME: sampled,
                TRAINING_ITERATION: self.iteration,
            }
        )

    def step(self) -> dict:
        """One iteration (Tune's Trainable spelling): the same as `train()`."""
        return self.train()

    def save(self, checkpoint_dir: str | os.PathLike | None = None) -> SavedCheckpoint:
        """Tune's spelling of `save_to_path`: returns a result whose `.checkpoint.path` (and
        `str()`) is the checkpoint directory; `restore()` takes it back."""
        return SavedCheckpoint(self.save_to_path(checkpoint_dir))

    def restore(self, checkpoint_path: str | os.PathLike | SavedCheckpoint | Any) -> None:
        """Tune's spelling of `restore_from_path`: a path, what `save()` returned, or a Tune
        `Checkpoint` (a Tune run's `result.checkpoint`: its `.path` on its `.filesystem`)."""
        target = getattr(checkpoint_path, "checkpoint", checkpoint_path)  # save()'s result
        filesystem = getattr(target, "filesystem", None)
        if type(filesystem).__name__ == "LocalFileSystem":  # pyarrow's: a local path
            filesystem = None
        self.restore_from_path(getattr(target, "path", target), filesystem=filesystem)

    # -- the rest of Tune's Trainable API (RLlib's Algorithm is a Trainable) -----------------
    def get_config(self) -> AlgorithmConfig:
        """The (frozen) config this algorithm runs with."""
        return self.config

    def reset_config(self, new_config: AlgorithmConfig | dict) -> bool:
        """Tune's hook to change the config without a rebuild: not supported (as in RLlib),
        so it returns False; build a new algorithm with the new config instead."""
        return False

    def reset(self, new_config: AlgorithmConfig | dict, storage: Any = None) -> bool:
        """Tune's reset for a new trial: `reset_config(new_config)`; on success the iteration
        counters start again from zero. Returns whether it succeeded (False here)."""
        if not self.reset_config(new_config):
            return False
        self.iteration = 0
        self._iterations_since_restore = 0
        self._time_total_s = 0.0
        return True

    #: The Ray Tune trial this algorithm runs in (`trainer.tune`'s Trainable sets it): the
    #: trial properties below are then Tune's, as RLlib's Algorithm (a Trainable) has them.
    _tune_trial: Any = None

    @property
    def logdir(self) -> str:
        """Tune's per-trial directory: in a Tune trial, the trial's working directory; else
        created on first use, in the system's temporary folder, named
        `<Algo>_<env>_<date>_<time>` (nothing is written there unless you do)."""
        if self._tune_trial is not None:
            return self._tune_trial.logdir
        if getattr(self, "_logdir", None) is None:
            stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            env_name = self.config.env if isinstance(self.config.env, str) else "env"
            self._logdir = tempfile.mkdtemp(prefix=f"{type(self).__name__}_{env_name}_{stamp}_")
        return self._logdir

    @property
    def trial_name(self) -> str:
        """Tune's trial name ("default" for an algorithm run without Tune)."""
        return "default" if self._tune_trial is None else self._tune_trial.trial_name

    @property
    def trial_id(self) -> str:
        """Tune's trial id ("default" for an algorithm run without Tune)."""
        return "default" if self._tune_trial is None else self._tune_trial.trial_id

    @property
    def trial_resources(self) -> Any:
        """Tune's placement group (factory) of the trial: None without Tune."""
        return None if self._tune_trial is None else self._tune_trial.trial_resources

    @classmethod
    def default_resource_request(cls, config: AlgorithmConfig | dict) -> Any:
        """Tune's resource request of a trial running `config` (a `PlacementGroupFactory`, as
        RLlib's; `trainer.tune.trainable.resource_request` says how it is computed). Without
        Ray Tune (`pip install 'localrl[tune]'`) nothing is reserved, and this is what RLlib
        would ask for, a `trainer.compat.resources.ResourceRequest` (`.bundles`, `.strategy`)
        computed from the config as RLlib computes it."""
        try:
            trainable = importlib.import_module(TUNE_TRAINABLE_MODULE)
        except ImportError:
            if isinstance(config, dict):
                config = cls.get_default_config().update_from_dict(config)
            return importlib.import_module(RESOURCES_MODULE).resource_request(config)
        return trainable.resource_request(trainable.config_of(cls, config))

    @classmethod
    def resource_help(cls, config: AlgorithmConfig | dict) -> str:
        return (
            "EnvRunners are worker processes of this machine: "
            "env_runners(num_env_runners=N) starts N of them. Under Ray Tune a trial reserves "
            "the main process's CPUs (num_cpus_for_main_process, or the learner's) plus "
            "num_cpus_per_env_runner for each of num_env_runners and "
            "evaluation_num_env_runners: one bundle with backend='processes' (the EnvRunners "
            "are processes of the trial's actor), one bundle each with backend='ray'."
        )

    def get_current_ip_pid(self) -> tuple[str, int]:
        """(this machine's IP address, this process's id)."""
        try:
            address = socket.gethostbyname(socket.gethostname())
        except OSError:
            address = "127.0.0.1"
        return address, os.getpid()

    def is_actor(self) -> bool:
        """Whether this algorithm runs inside a Ray actor: never here."""
        return False

    def get_auto_filled_metrics(
        self,
        now: datetime.datetime | None = None,
        time_this_iter: float | None = None,
        timestamp: int | None = None,
        debug_metrics_only: bool = False,
    ) -> dict:
        """The metrics Tune fills into every result: trial id, date, timestamp, timings,
        pid, hostname, node IP, config (`debug_metrics_only`: those that need no iteration)."""
        now = now or datetime.datetime.today()
        address, pid = self.get_current_ip_pid()
        metrics = {
            "trial_id": self.trial_id,
            "date": now.strftime("%Y-%m-%d_%H-%M-%S"),
            "timestamp": timestamp or int(time.mktime(now.timetuple())),
            "time_this_iter_s": time_this_iter,
            "time_total_s": self._time_total_s,
            "pid": pid,
            "hostname": platform.node(),
            "node_ip": address,
            "config": self.config,
            "time_since_restore": self._time_total_s,
            "iterations_since_restore": self._iterations_since_restore,
        }
        if debug_metrics_only:
            debug = (
                "done",
                "timesteps_total",
                "episodes_total",
                "trial_id",
                "date",
                "timestamp",
                "time_this_iter_s",
                "time_total_s",
                "pid",
                "hostname",
                "node_ip",
                "config",
            )
            metrics = {key: value for key, value in metrics.items() if key in debug}
        return metrics

    #: RLlib's `algo.offline_data`: the recorded data an offline algorithm learns from
    #: (`trainer.offline.reading.OfflineData`), None for the others.
    offline_data: Any = None
    #: The offline evaluation (`trainer.algorithms.offline_evaluation.OfflineEvaluation`) of an
    #: offline algorithm with `evaluation(offline_evaluation_interval=...)`, else None.
    offline_evaluation: Any = None
    #: RLlib's `algo.local_replay_buffer`: None unless the algorithm keeps one (DQN).
    local_replay_buffer: Any = None

    @property
    def eval_env_runner(self) -> EnvRunner | None:
        """The local evaluation EnvRunner (None without evaluation runners)."""
        group = self.eval_env_runner_group
        return None if group is None else group.local_env_runner

    @property
    def evaluation_config(self) -> AlgorithmConfig:
        """The config the evaluation EnvRunners run with (`evaluation_config` applied)."""
        return self.config.get_evaluation_config_object()

    def restore_env_runners(self, env_runner_group: EnvRunnerGroup) -> list[int]:
        """Brings back the EnvRunners of `env_runner_group` that failed and were left out
        (`EnvRunnerGroup.probe_unhealthy_env_runners`): each is restarted, synced from the
        local runner, and `on_env_runners_recreated` fires for them. Returns their indices
        (none when every runner is healthy). `train()` calls it when each iteration starts and
        each evaluation round when it starts, as RLlib does; subclasses may override it."""
        return env_runner_group.probe_unhealthy_env_runners()

    @property
    def eval_env_runner_group(self) -> EnvRunnerGroup | None:
        """The evaluation EnvRunners (built with the Algorithm when `evaluation_interval` is
        set or `evaluation_num_env_runners` is above 0, else at the first `evaluate()`)."""
        evaluation: EvaluationRounds | None = getattr(self, "_evaluation", None)  # in __init__
        return evaluation.group if evaluation is not None else None

    # -- evaluation --------------------------------------------------------------------------
    def evaluate(self, parallel_train_future: Any = None) -> dict:
        """One evaluation round now, with the current weights: fires `on_evaluate_start`, runs
        `custom_evaluation_function(algorithm, eval_env_runner_group)` or samples the
        configured duration on the evaluation runners, fires `on_evaluate_end` (which may
        change the metrics) and returns them (`{"env_runners": {...}}` by default). Without
        evaluation runners configured, the round samples on the local EnvRunner, as in
        RLlib (which needs envs there). `parallel_train_future` is RLlib's internal hook for
        rounds in parallel to training; here `train()` runs those itself."""
        if parallel_train_future is not None:
            raise ValueError(
                "evaluate(parallel_train_future=...): rounds in parallel to "
                "training run inside train() here; set "
                ".evaluation(evaluation_parallel_to_training=True)"
            )
        return self._evaluation.evaluate()

    def _runners_recreated(self, indices: list[int], is_evaluation: bool) -> None:
        """Fires `on_env_runners_recreated` for one recovery (on the thread that owns the
        Algorithm; recoveries on the parallel evaluation thread wait for the round's end)."""
        if threading.current_thread() is not self._owner_thread:
            self._queued_recoveries.append((indices, is_evaluation))
            return
        # None for a recovery while the group is still being built (in __init__).
        group = (
            self.eval_env_runner_group if is_evaluation else getattr(self, "env_runner_group", None)
        )
        self._callbacks.fire(
            "on_env_runners_recreated",
            algorithm=self,
            env_runner_group=group,
            env_runner_indices=list(indices),
            is_evaluation=is_evaluation,
        )

    def _fire_queued_recoveries(self) -> None:
        """`on_env_runners_recreated` for the recoveries seen on the evaluation thread."""
        queued, self._queued_recoveries = self._queued_recoveries, []
        for indices, is_evaluation in queued:
            self._runners_recreated(indices, is_evaluation)

    def evaluate_offline(self) -> dict:
        """RLlib's: the learner's loss on recorded batches without a step (offline evaluation,
        `evaluation(offline_evaluation_interval=...)`), under `offline_eval_runners`, between
        `on_evaluate_offline_start` and `on_evaluate_offline_end` (which may change the
        metrics); `train()` puts it into the result's `evaluation`."""
        if self.offline_evaluation is None:
            raise ValueError(
                f"{type(self).__name__}.evaluate_offline(): offline evaluation is not set up: "
                "give an offline algorithm evaluation(offline_evaluation_interval=N)"
            )
        self._callbacks.fire(
            "on_evaluate_offline_start", algorithm=self, metrics_logger=self.metrics
        )
        evaluation_metrics = self.offline_evaluation.run(self.learner)
        self._callbacks.fire(
            "on_evaluate_offline_end",
            algorithm=self,
            metrics_logger=self.metrics,
            evaluation_metrics=evaluation_metrics,
        )
        return evaluation_metrics

    def train(self) -> dict:
        """Runs training steps until the iteration's minimum time and env steps are reached
        (`reporting(min_time_s_per_iteration=, min_sample_timesteps_per_iteration=)`), then
        returns the result dict (after `on_train_result` could change it)."""
        if self._stopped:
            raise RuntimeError(f"{type(self).__name__} was stopped; build a new one to train")
        start = time.perf_counter()
        if self.learner_replicas is not None:  # learner 0's state may have been set since
            self.learner_replicas.new_round()
        rounds = self._evaluation
        # Evaluate the weights of the previous iteration while this one trains, if it is due.
        parallel_round = rounds.start_parallel(self.iteration + 1)
        self._iteration_start = start
        try:
            train_results, _ = self._run_one_training_iteration()
        except BaseException:
            if parallel_round is not None:
                rounds.abandon(parallel_round)
            raise
        evaluation = None
        if parallel_round is not None:
            evaluation = rounds.finish(parallel_round)
        elif rounds.due(self.iteration + 1):
            evaluation = self.evaluate()
        if self.offline_evaluation is not None and self.offline_evaluation.due(self.iteration + 1):
            evaluation = {**(evaluation or {}), **self.evaluate_offline()}
        self.iteration += 1
        self._iterations_since_restore += 1
        self._refresh_counters()
        time_this_iter = time.perf_counter() - start
        self._time_total_s += time_this_iter
        self._time_this_iter = time_this_iter
        result = self._compile_iteration_results(
            train_results=train_results, eval_results=evaluation
        )
        if self.config.env_task_fn is not None:
            self._apply_env_task_fn(result)
        self.log_result(result)
        logger.debug(
            "iteration %d took %.2f s: %d env steps sampled",
            self.iteration,
            time_this_iter,
            result[ENV_RUNNER_RESULTS].get(NUM_ENV_STEPS_SAMPLED, 0),
        )
        return result

    def log_result(self, result: dict) -> None:
        """Tune's hook for each iteration's result, called by `train()`: fires
        `on_train_result` (which may change `result`), as RLlib's does. Override it to log
        results elsewhere (call `super().log_result(result)` to keep the callbacks)."""
        self._callbacks.fire(
            "on_train_result", algorithm=self, metrics_logger=self.metrics, result=result
        )

    def train_buffered(self, buffer_time_s: float, max_buffer_length: int = 1000) -> list[dict]:
        """Tune's: `train()` repeatedly until `buffer_time_s` seconds passed (at least once)
        or `max_buffer_length` results were collected, or a result says `done`; returns the
        results."""
        results: list[dict] = []
        send_at = time.time() + buffer_time_s
        while not results or (time.time() < send_at and len(results) < max_buffer_length):
            results.append(self.train())
            if results[-1].get("done"):
                break
        return results

    def _apply_env_task_fn(self, result: dict) -> None:
        """Curriculum: every sub-env of every training EnvRunner gets
        `set_task(env_task_fn(result, sub_env, env_context))` (see `trainer.env.curriculum`)."""
        group, env_task_fn = self.env_runner_group, self.config.env_task_fn
        if env_task_fn is None:
            return
        group.foreach_env_runner(
            partial(apply_env_task_fn, env_task_fn=env_task_fn, train_results=result),
            local_env_runner=local_runner_of(group).env is not None,
        )

    #: When the running `train()` call started (`time.perf_counter()`).
    _iteration_start: float = 0.0

    def _run_one_training_iteration(self) -> tuple[dict, TrainIterCtx]:
        """RLlib's hook for one iteration's training, called by `train()` (between restoring
        failed EnvRunners and evaluating): `training_step()` until the iteration's minimum
        time and steps are reached. Returns the metrics logged so far (peeked: `train()`
        compiles them into the result, adding the keys an override put into this dict that
        the compiled result lacks) and the iteration's `TrainIterCtx`."""
        ctx = TrainIterCtx(self)
        ctx.time_start = self._iteration_start or time.perf_counter()
        self._run_training_steps(ctx.time_start)
        ctx.time_stop = time.perf_counter()
        ctx.sampled = self.num_env_steps_sampled_lifetime - ctx.init_env_steps_sampled
        ctx.trained = int(self.metrics.peek(TRAINED_LIFETIME_KEY, default=0)) - (
            ctx.init_env_steps_trained
        )
        return self.metrics.peek(), ctx

    def _run_training_steps(self, start: float) -> None:
        """Training steps until the iteration's minimum time and env steps are reached."""
        config, peek = self.config, self.metrics.peek
        sampled_before = peek(NUM_ENV_STEPS_SAMPLED_LIFETIME, default=0)
        trained_before = peek(TRAINED_LIFETIME_KEY, default=0)
        group = self.env_runner_group
        # RLlib's fault tolerance: the runners left out in the last iteration are restarted
        # now; each runner is restarted at most once in this one.
        group.begin_iteration()
        with self.metrics.log_time((TIMERS, RESTORE_ENV_RUNNERS_TIMER)):
            self.restore_env_runners(group)
        with self.metrics.log_time((TIMERS, TRAINING_ITERATION_TIMER)):
            while True:
                with self.metrics.log_time((TIMERS, "training_step")):
                    self.training_step()
                self._refresh_counters()
                if group.num_remote_workers() and not group.num_healthy_remote_workers():
                    # Every runner failed again after its restart: nothing more can be
                    # sampled in this iteration, which returns with what it has.
                    logger.warning(
                        "iteration %d: every EnvRunner failed after its restart; the "
                        "iteration ends with the %d env steps sampled before (they are "
                        "restarted when the next one starts)",
                        self.iteration + 1,
                        peek(NUM_ENV_STEPS_SAMPLED_LIFETIME, default=0) - sampled_before,
                    )
                    break
                elapsed = time.perf_counter() - start
                sampled = peek(NUM_ENV_STEPS_SAMPLED_LIFETIME, default=0) - sampled_before
                trained = peek(TRAINED_LIFETIME_KEY, default=0) - trained_before
                if (
                    elapsed >= (config.min_time_s_per_iteration or 0)
                    and sampled >= config.min_sample_timesteps_per_iteration
                    and trained >= config.min_train_timesteps_per_iteration
                ):
                    break
        # What the training step logged, or (one that logs no count) what the group returned.
        sampled = peek(NUM_ENV_STEPS_SAMPLED_LIFETIME, default=0) - sampled_before
        self._raise_if_failing_deterministically(group, max(sampled, group.iteration_env_steps))

    def _raise_if_failing_deterministically(self, group: EnvRunnerGroup, sampled: int) -> None:
        """Counts the iteration into the streak of failed ones (runners failed, nothing was
        sampled). By default (RLlib's behaviour) the runners are restarted for ever and the
        streak is logged once, as an ERROR naming the failure; with
        `max_consecutive_failed_iterations` set, the latest failure is raised, with its own
        type, when the streak reaches it."""
        self._failed_iterations_in_a_row = restart_policy.failed_iterations_in_a_row(
            self._failed_iterations_in_a_row,
            failed=bool(group.iteration_failures),
            env_steps_sampled=sampled,
        )
        settings = restart_policy.Settings.from_config(self.config)
        error = group.last_failure
        in_a_row = self._failed_iterations_in_a_row
        if error is not None and restart_policy.reports_streak(in_a_row, settings):
            logger.error(
                "EnvRunners failed and nothing was sampled in %d iterations in a row: the "
                "failure comes back on every restart, and they are restarted for ever, as RLlib "
                "does (to have train() raise it instead, set fault_tolerance("
                "max_consecutive_failed_iterations=N)). The latest failure: %s",
                in_a_row,
                group.iteration_failures[-1] if group.iteration_failures else error,
            )
        if error is None or not restart_policy.gives_up(in_a_row, settings):
            return
        if hasattr(error, "add_note"):  # Python 3.11+
            error.add_note(
                f"train() gives up: in {in_a_row} iterations in a row EnvRunners failed and "
                "nothing was sampled, so this failure comes back on every restart (fix it, or "
                "set fault_tolerance(max_consecutive_failed_iterations=None) to restart for "
                f"ever; it is {settings.max_consecutive_failed_iterations})."
            )
        logger.error(
            "train() gives up after %d iterations in a row in which EnvRunners failed and "
            "nothing was sampled; raising the latest failure: %s",
            in_a_row,
            group.iteration_failures[-1],
        )
        raise error

    #: The running iteration's duration so far, for `_compile_iteration_results`.
    _time_this_iter: float = 0.0

    def _compile_iteration_results(self, *, train_results: dict, eval_results: Any) -> dict:
        """RLlib's hook that makes the iteration's result dict, called once by `train()` after
        the iteration's training and evaluation (before `on_train_result`): the metrics the
        iteration logged, compiled, with the counters and fault-tolerance figures, the keys of
        `train_results` (`_run_one_training_iteration`'s) the compiled metrics lack, and
        `eval_results` under "evaluation" (where there are any), with the evaluation group's
        health (`_group_health`)."""
        result = self._compile_result(self._time_this_iter)
        _add_missing(result, train_results)
        if eval_results is not None:
            eval_group = self.eval_env_runner_group
            if eval_group is not None and isinstance(eval_results, dict):
                # Into the round's own dict, as RLlib's (an old-keys result answers on).
                eval_results.update(_group_health(eval_group))
            result[EVALUATION_RESULTS] = eval_results
        return result

    def _compile_result(self, time_this_iter: float) -> dict:
        # The exploration's values (cur_epsilon, ...) are the runners' current ones: those of
        # the newest sampling round, not the mean over the iteration's rounds.
        current = {
            key: self.metrics.peek((ENV_RUNNER_RESULTS, key), latest_merged_only=True)
            for key in self.exploration.get_info()
            if isinstance(self.metrics.stats.get(ENV_RUNNER_RESULTS, {}).get(key), StatsBase)
        }
        result = self.metrics.compile()
        env_runners = add_episode_defaults(result.setdefault(ENV_RUNNER_RESULTS, {}))
        env_runners.update(current)
        group = self.env_runner_group
        # The failures and restarts since the last result: this iteration's, and those that a
        # call between train() calls handled (foreach_env_runner, a weight sync, get_state(),
        # a checkpoint save), which the iteration's own list (`iteration_failures`, reset when
        # it starts, for the streak of failed iterations) no longer holds.
        report = group.take_failure_report()
        result.update(
            {
                TRAINING_ITERATION: self.iteration,
                "iterations_since_restore": self._iterations_since_restore,
                "time_this_iter_s": time_this_iter,
                "time_total_s": self._time_total_s,
                "timestamp": int(time.time()),
                "date": datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S"),
                "done": False,
                "env_runner_group": {
                    "actor_manager_num_outstanding_async_reqs": group.num_in_flight_async_reqs()
                },
                "fault_tolerance": {
                    "num_healthy_workers": group.num_healthy_remote_workers(),
                    "num_remote_worker_restarts": group.num_remote_worker_restarts(),
                    "num_env_runners_dropped_lifetime": group.num_env_runners_dropped_lifetime(),
                    # Runners left out until the next iteration, and the failures and
                    # restarts since the last result.
                    "num_waiting_workers": group.num_waiting_env_runners(),
                    "failures_this_iteration": report.headlines,
                    "env_runners_restarted": report.restarted,
                    "num_failures": {
                        kind: group.failures_by_kind.get(kind, 0)
                        for kind in ("crashed", "timeout", "exception", "callback")
                    },
                    # Failed sample requests (at most their size) plus dropped sub-env episodes.
                    "num_env_steps_lost": group.num_env_steps_lost
                    + int(env_runners.pop("num_env_steps_lost_lifetime", 0)),
                    "num_sub_environment_restarts": int(
                        env_runners.pop("num_sub_environment_restarts_lifetime", 0)
                    ),
                },
            }
        )
        result.setdefault(
            NUM_ENV_STEPS_SAMPLED_LIFETIME, env_runners[NUM_ENV_STEPS_SAMPLED_LIFETIME]
        )
        return with_old_result_keys(result)

    def compute_single_action(
        self,
        observation: Any = None,
        state: Any = None,
        *,
        prev_action: Any = None,
        prev_reward: float | None = None,
        input_dict: dict | None = None,
        policy_id: str = DEFAULT_MODULE_ID,
        full_fetch: bool = False,
        explore: bool | None = None,
        timestep: int | None = None,
        unsquash_action: bool | None = None,
        clip_action: bool | None = None,
    ) -> Any:
        """The action for one observation (or `input_dict["obs"]`), from the learner's current
        policy through the configured exploration. `explore=None` follows the config's
        `explore`; True explores (at `timestep`, by default the current one of the exploration
        schedule), False acts greedily. `unsquash_action` / `clip_action` (None: the config's
        `normalize_actions` / `clip_actions`) scale or clip a Box action to its bounds.

        A recurrent module (`use_lstm`, or a stateful RLModule) takes `state`, the state out
        of the previous call (None: its initial state, at an episode's start), and with
        `lstm_use_prev_action` / `_reward` the previous action and reward (None: zeros); it
        returns `(action, state_out, {})`, as RLlib does for a recurrent policy, so the caller
        carries the state. `full_fetch=True` returns that tuple for any module."""
        if (input_dict is None) == (observation is None):
            raise ValueError(
                "compute_single_action(): give either observation or "
                "input_dict={'obs': observation}"
            )
        if input_dict is not None:
            observation = input_dict["obs"]
            state = input_dict.get("state_in", state)
        normalize = self.config.normalize_actions if unsquash_action is None else unsquash_action
        clip = self.config.clip_actions if clip_action is None else clip_action
        explore = self.config.explore if explore is None else explore
        actor = self._actor(policy_id, state)
        action, state_out = actor.act(
            observation,
            state,
            prev_action,
            prev_reward,
            explore=explore,
            timestep=timestep,
            normalize=normalize,
            clip=clip,
        )
        return (action, state_out, {}) if actor.stateful or full_fetch else action

    def compute_action_batch(
        self,
        observations: list,
        *,
        policy_id: str = DEFAULT_MODULE_ID,
        explore: bool | None = None,
    ) -> list:
        """The actions for a list of observations, as `compute_single_action` gives each one
        (a recurrent module starts each from its initial state), in one forward pass of the
        module where it has no state (localrl's; `python -m trainer serve` answers a batch
        with it)."""
        explore = self.config.explore if explore is None else explore
        return self._actor(policy_id, None).act_batch(
            list(observations),
            explore=explore,
            normalize=self.config.normalize_actions,
            clip=self.config.clip_actions,
        )

    def _actor(self, policy_id: Any, state: Any) -> ModuleActor:
        """The acting adapter (`trainer.algorithms.acting`) of module `policy_id` for
        `compute_single_action`, made once per module and exploration (again when either
        changes: a module added, removed or rebuilt)."""
        connect = None
        if self.config.is_multi_agent:
            module, exploration = self._multi_agent_acting(policy_id, state)
        else:
            if policy_id != DEFAULT_MODULE_ID:
                raise KeyError(
                    f"compute_single_action(policy_id={policy_id!r}): there is one "
                    f"module here, {DEFAULT_MODULE_ID!r}"
                )
            module, exploration = self.learner.module, self.exploration
            # The env-to-module pipeline of the local EnvRunner, as the samplers see the env.
            connect = self._module_observation
        actors = self.__dict__.setdefault("_actors", {})
        actor = actors.get(policy_id)
        if actor is None or actor.module is not module or actor.exploration is not exploration:
            actor = actors[policy_id] = actor_for(
                module, exploration, self._rng, self._lifetime_timestep, connect
            )
        return actor

    def _multi_agent_acting(self, policy_id: Any, state: Any) -> tuple[Any, Any]:
        """A multi-agent algorithm's module `policy_id` to act with and its exploration (None:
        a user's RLModule, which acts itself); a torch module acts through its numpy view."""
        module = self.learner_module(policy_id)
        if state is not None:
            raise ValueError(
                f"compute_single_action(state=..., policy_id={policy_id!r}): recurrent "
                "modules act through compute_single_action in single-agent runs; call "
                "the module's forward_inference({'obs': ..., 'state_in': ...}) here"
            )
        learned = self.learner.module
        if policy_id in learned and hasattr(learned[policy_id], "rl_module"):
            module = learned[policy_id]  # a torch module's view acts as a numpy module
        elif not isinstance(module, FlatParameterModule):  # a user's RLModule acts itself
            return module, None
        return module, self._module_exploration(policy_id, module)

    def _module_observation(self, observation: Any) -> Any:
        """One observation through the local EnvRunner's env-to-module pipeline."""
        return local_runner_of(self.env_runner_group).module_observation(observation)

    def _lifetime_timestep(self) -> int:
        """The exploration's current timestep: the env steps sampled so far."""
        return self.num_env_steps_sampled_lifetime

    def _module_exploration(self, module_id: Any, module: Any) -> Any:
        """A multi-agent algorithm's exploration for `compute_single_action` with one module
        (made on first use, for that module's action space and per-module config)."""
        explorations = self.__dict__.setdefault("_module_explorations", {})
        if module_id not in explorations:
            explorations[module_id] = make_exploration(
                self.config.get_config_for_module(module_id).get_exploration_config(),
                module.spaces.action_space(),
            )
        return explorations[module_id]

    # -- state and checkpoints ---------------------------------------------------------------
    def get_state(
        self,
        components: str | list[str] | None = None,
        *,
        not_components: str | list[str] | None = None,
        **kwargs: Any,
    ) -> dict:
        """The whole training state as component name -> plain data and numpy arrays:
        `algorithm` (counters, RNG, exploration), `learner` (weights, optimizer), `metrics`,
        `env_runner_<i>` for every healthy EnvRunner (RNG, exploration timestep, sub-env states,
        unfinished episodes; not the weights, which the learner holds), and with evaluation
        runners `eval_env_runner_<i>` and `evaluation_metrics`. `components` keeps only the
        named components, `not_components` leaves the named ones out (RLlib's Checkpointable
        arguments; a name or a list). RLlib's `learner_group` component (`"learner_group"`,
        `"learner_group/learner/rl_module"`, ...) comes in RLlib's layout
        (`LearnerGroup.get_state`), and `set_state` takes it back."""
        group_wanted = wants(COMPONENT_LEARNER_GROUP, components, not_components) and (
            components is not None
            and any(
                str(name).startswith(COMPONENT_LEARNER_GROUP)
                for name in component_names(components)
            )
        )
        state = select_components(self._full_state(), components, not_components)
        if group_wanted:
            state[COMPONENT_LEARNER_GROUP] = self.learner_group.get_state(
                subcomponents(COMPONENT_LEARNER_GROUP, components),
                not_components=subcomponents(COMPONENT_LEARNER_GROUP, not_components) or (),
            )
        return state

    def _own_layout(self, state: dict) -> dict:
        """`state` with RLlib's `learner_group` component, or a learner state in RLlib's
        layout, as this project's `learner` component (`trainer.core.learner_components`)."""
        if not isinstance(state, dict):
            return state
        if COMPONENT_LEARNER_GROUP in state:
            group = state[COMPONENT_LEARNER_GROUP]
            state = {key: value for key, value in state.items() if key != COMPONENT_LEARNER_GROUP}
            if isinstance(group, dict) and "learner" in group:
                state["learner"] = group["learner"]
        if "learner" in state and in_rllib_layout(state["learner"]):
            state = {
                **state,
                "learner": own_learner_state(
                    self.learner, state["learner"], self.learner.get_state
                ),
            }
        return state

    def _full_state(self) -> dict:
        state = {
            "algorithm": {
                "iteration": self.iteration,
                "time_total_s": self._time_total_s,
                "rng": generator_state(self._rng),
                "exploration": self.exploration.get_state(),
            },
            "learner": self.learner.get_state(),
            "metrics": self.metrics.get_state(),
        }
        for index, runner_state in self.env_runner_group.get_runner_states().items():
            state[f"env_runner_{index}"] = runner_state
        state.update(self._evaluation.get_state())
        return state

    def check_state(self, state: dict) -> None:
        """Raises `StateError` (its `where` names the component) unless every component of
        `state` fits this algorithm: counters, learner (finite float weights and optimizer
        moments of the parameters' shapes, a non-negative learning rate), metrics (numbers
        only), and each runner's state. Nothing here changes."""
        require_map(state, "state")
        state = self._own_layout(state)
        if "algorithm" in state:
            counters = require_map(
                state["algorithm"], "algorithm", ("iteration", "time_total_s", "rng", "exploration")
            )
            require_int(counters["iteration"], "algorithm['iteration']")
            require_number(counters["time_total_s"], "algorithm['time_total_s']", minimum=0.0)
            require_generator_state(counters["rng"], "algorithm['rng']")
            check_loads(self.exploration, counters["exploration"], "algorithm['exploration']")
        if "learner" in state:
            self.learner.check_state(state["learner"], "learner")
        for key in ("metrics", "evaluation_metrics"):
            if key in state:
                MetricsLogger.check_state(state[key], key, self.config.stats_cls_lookup)
        training_runner = local_runner_of(self.env_runner_group)
        evaluation_group = self._evaluation.group
        evaluation_runner = (
            local_runner_of(evaluation_group) if evaluation_group is not None else training_runner
        )
        for prefix, runner in (
            ("env_runner_", training_runner),
            ("eval_env_runner_", evaluation_runner),
        ):
            for index, runner_state in runner_states(state, prefix).items():
                runner.check_state(runner_state, f"{prefix}{index}")

    def set_state(self, state: dict) -> None:
        """Loads what `get_state()` returned (any subset of its components), then pushes the
        weights and the runner states to every EnvRunner process. Evaluation runner states wait
        for the evaluation runners when those are not built yet. Every component is checked
        first (`check_state`): a state that does not fit raises `StateError` and changes
        nothing."""
        state = self._own_layout(state)
        self.check_state(state)
        self._apply_state(state)

    def _apply_state(self, state: dict, *, strict: bool = False) -> None:
        """Applies a checked state. With `strict`, a runner that fails to take its state raises
        `RunnerStateRejected` (after the group handled the failure) instead of being only
        handled per `fault_tolerance()`."""
        if "algorithm" in state:
            counters = state["algorithm"]
            self.iteration = int(counters["iteration"])
            self._time_total_s = float(counters["time_total_s"])
            set_generator_state(self._rng, counters["rng"])
            self.exploration.set_state(counters["exploration"])
        if "learner" in state:
            self.learner.set_state(state["learner"])
        if "metrics" in state:
            self.metrics.set_state(state["metrics"])
        self._refresh_counters()
        self.sync_weights()
        self.env_runner_group.set_runner_states(
            runner_states(state, "env_runner_"), strict=strict, prefix="env_runner_"
        )
        evaluation_state = {
            key: value
            for key, value in state.items()
            if key.startswith("eval_env_runner_") or key == "evaluation_metrics"
        }
        if evaluation_state:
            self._evaluation.set_state(evaluation_state, strict=strict)

    def __getstate__(self) -> dict:
        """RLlib's spelling of `get_state()` (its tests carry the counters over with
        `other.__setstate__(algo.__getstate__())`). An Algorithm itself does not pickle (its
        worker processes cannot travel): save a checkpoint instead."""
        return self.get_state()

    def __setstate__(self, state: dict) -> None:
        """RLlib's spelling of `set_state()` on a built Algorithm."""
        if "env_runner_group" not in self.__dict__:
            raise TypeError(
                "an Algorithm cannot be unpickled (its worker processes do not "
                "travel); save a checkpoint and use Algorithm.from_checkpoint(path)"
            )
        self.set_state(state)

    def save_to_path(
        self,
        path: str | os.PathLike | None = None,
        *,
        state: dict | None = None,
        filesystem: Any = None,
        use_msgpack: bool = True,
    ) -> str:
        """Writes a checkpoint directory at `path` (a new temporary directory when None) and
        returns its absolute path. `path` may be a `file://` URI; a URI of another scheme
        (`s3://...`) needs `filesystem=` (a `pyarrow.fs.FileSystem`, as in RLlib; the path is
        then that filesystem's, and is returned as given). `state`: save this state (what
        `get_state()` returns) instead of the current one. The files are always msgpack here
        (`use_msgpack` is accepted for RLlib's scripts). The save is atomic on local paths: a
        checkpoint already at `path` is replaced only once the new one is complete on disk."""
        return save_algorithm(self, path, state=state, filesystem=filesystem)

    def restore_from_path(
        self,
        path: str | os.PathLike,
        *,
        component: str | None = None,
        filesystem: Any = None,
        **kwargs: Any,
    ) -> None:
        """Loads the checkpoint at `path` (a local path, a `file://` URI, or with `filesystem=`
        a path on that `pyarrow.fs.FileSystem`) into this algorithm (reading only msgpack and
        JSON), pushes weights and runner states to every EnvRunner, then fires
        `on_checkpoint_loaded`. Every file of the checkpoint (its module checkpoints' too) is
        verified by its size and SHA-256 before anything is loaded. Raises
        `checkpoints.CheckpointError` naming the file for a missing, damaged, foreign or
        incompatible checkpoint, before anything is changed.

        With `component` (RLlib's Checkpointable argument), only the learner's modules are
        restored, everything else stays: `"learner_group/learner/rl_module/<module_id>"` with
        `path` that module's checkpoint directory (in an Algorithm checkpoint,
        `<checkpoint>/learner_group/learner/rl_module/<module_id>`, or any module checkpoint
        that fits), or `"learner_group/learner/rl_module"` for every module the checkpoint and
        this algorithm both have. `path` may also be the Algorithm checkpoint itself; the
        component's directory inside it is used. The weights then go to every EnvRunner."""
        with fetched(path, filesystem) as local:
            if component is None:
                self._restore(open_algorithm_checkpoint(local))
                return
            states = read_module_states(self, local, component)
        self._set_module_weights(states)
        self.sync_weights()
        logger.info("restored %s from %s", component, path)

    def _set_module_weights(self, weights: dict[Any, dict]) -> None:
        """Sets the learner modules' weights from `{module_id: weights}` (checked already)."""
        if not weights:
            return
        if self.config.is_multi_agent:
            self.learner.module.set_weights(weights)
            assert isinstance(self.learner, MultiAgentLearner)
            learners = [self.learner.learners[module_id] for module_id in weights]
        else:
            self.learner.module.set_weights(weights[DEFAULT_MODULE_ID])
            learners = [self.learner]
        for learner in learners:
            # A module checkpoint holds the online network: a target network starts from it.
            target = getattr(learner, "target", None)
            if target is not None:
                target.flat_params[:] = learner.module.flat_params

    def _restore(self, checkpoint: Checkpoint) -> None:
        """All or nothing: every component is read and checked before any is applied; if a
        runner still refuses its state, everything goes back to a deep copy of the state
        before (the rollback shares no array with the live one)."""
        state = load_algorithm_state(self, checkpoint)
        try:
            self.check_state(state)
        except StateError as error:
            raise CheckpointError(
                checkpoint.path, f"its state does not fit this algorithm: {error}"
            ) from None
        previous = copy.deepcopy(self.get_state())
        pending_evaluation_state = self._evaluation.pending_state
        try:
            self._apply_state(state, strict=True)
        except Exception as error:
            self._apply_state(previous)
            self._evaluation.pending_state = pending_evaluation_state
            where = error.component if isinstance(error, RunnerStateRejected) else "state"
            raise CheckpointError(
                checkpoint.path,
                f"{where} could not be applied, nothing was "
                f"loaded: {type(error).__name__}: {error}",
            ) from None
        self._iterations_since_restore = 0
        logger.info("restored checkpoint %s (iteration %d)", checkpoint.path, self.iteration)
        self._callbacks.fire("on_checkpoint_loaded", algorithm=self, metrics_logger=self.metrics)

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        filesystem: Any = None,
        *,
        config: AlgorithmConfig | dict | None = None,
        allow_pickle: bool = False,
    ) -> Algorithm:
        """A new algorithm with the checkpoint's state. `path` and `filesystem` as in
        `restore_from_path`; `path` may also be a Tune `Checkpoint` (a Tune run's
        `result.checkpoint`, as RLlib takes it). With `config`, the algorithm is built from it (it must fit the
        checkpoint's spaces and network). Every file of the
        checkpoint is verified before anything is loaded.

        Without `config`, the class and config come, as in RLlib, from the checkpoint's pickle
        (which carries lambdas and classes defined in `__main__`) when its signature verifies
        with this user's key: a checkpoint this user saved, or trusted with `python -m trainer
        trust PATH`. Otherwise they come from the checkpoint's `config.json` (plain data;
        callbacks, env classes and other code re-imported by their `module:name` paths), and a
        config that needs the pickle is refused, naming how to trust it. `allow_pickle=True`
        unpickles the pickle whoever signed it, running whatever code it holds (use it only
        for checkpoints you trust)."""
        if isinstance(filesystem, (AlgorithmConfig, dict)):
            raise TypeError(
                f"{cls.__name__}.from_checkpoint(path, {type(filesystem).__name__}"
                "): the second argument is RLlib's filesystem (a "
                "pyarrow.fs.FileSystem); pass the config as config=..."
            )
        with fetched(path, filesystem) as local:
            if is_rllib_checkpoint(local):  # RLlib 2.60's layout, read without its pickles' code
                reader = importlib.import_module(RLLIB_CHECKPOINT_READER)
                return reader.load_rllib_algorithm(
                    local, config if isinstance(config, AlgorithmConfig) else None
                )
            checkpoint = open_algorithm_checkpoint(local)
            from_checkpoint_config = config is None
            if config is None:
                algorithm_class, config = load_class_and_config(
                    checkpoint,
                    algorithm_base=Algorithm,
                    config_base=AlgorithmConfig,
                    allow_pickle=allow_pickle,
                )
                if isinstance(config, AlgorithmConfig) and not config.uses_torch:
                    # It trained on numpy: its modules' weights are numpy's (image
                    # observations included, which a config without a framework now runs on
                    # torch: `image_torch_reason`).
                    config = config.copy(copy_frozen=False).framework("numpy")
            elif isinstance(config, AlgorithmConfig) and config.algo_class is not None:
                algorithm_class = config.algo_class
            else:
                algorithm_class = cls
            if algorithm_class is Algorithm or not issubclass(algorithm_class, cls):
                raise CheckpointError(
                    checkpoint.path,
                    f"a checkpoint of "
                    f"{checkpoint.metadata.get('algorithm_class')} cannot be "
                    f"loaded with {cls.__name__}",
                )
            try:
                algorithm = algorithm_class(config=config)
            except (ConfigError, TypeError, ValueError) as error:
                if not from_checkpoint_config:
                    raise
                # The checkpoint's own config (a crafted config.json, say) is refused.
                raise CheckpointError(
                    checkpoint.path,
                    f"the config it was saved with cannot build {algorithm_class.__name__}: "
                    f"{type(error).__name__}: {error}",
                ) from None
            try:
                algorithm._restore(checkpoint)
            except BaseException:
                algorithm.stop()
                raise
        return algorithm

    def stop(self) -> None:
        """Ends every EnvRunner process, releases the envs, and stops the named-object server
        (`trainer.named_objects`) if it was started after this algorithm was built (one that
        existed before keeps its objects for the next algorithm): `cleanup()` does it, as in
        Tune's Trainable. Shuts Ray down if this algorithm's build started it (a Ray the user
        started stays up). Safe to call more than once."""
        self.cleanup()

    def cleanup(self) -> None:
        """Tune's hook behind `stop()`: releases the EnvRunners, evaluation rounds and the
        named-object server, then the Ray this algorithm's build started, if it did. A
        subclass that overrides it calls `super().cleanup()`."""
        self._stopped = True
        replicas: DataParallelLearners | None = getattr(self, "learner_replicas", None)
        if replicas is not None:
            replicas.stop()
        # Either may be missing when __init__ failed before making it.
        group: EnvRunnerGroup | None = getattr(self, "env_runner_group", None)
        if group is not None:
            if group.recorder is not None:
                group.recorder.stop()  # output_write_remaining_data (a second call: nothing left)
            group.stop()
        evaluation: EvaluationRounds | None = getattr(self, "_evaluation", None)
        if evaluation is not None:
            evaluation.stop()
        if getattr(self, "_stops_named_objects", True):
            shutdown_named_objects()
        started_ray = getattr(self, "_started_ray", None)
        if started_ray is not None:  # last: the actors and named actors above ran on it
            self._started_ray = None
            shutdown_ray(started_ray)

    def __enter__(self) -> Algorithm:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self.config.env!r}, iteration={self.iteration})"
