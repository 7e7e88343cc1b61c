"""`EnvRunner`: steps a `gymnasium.vector.SyncVectorEnv` with the current policy, records
`SingleAgentEpisode`s and fires the EnvRunner callbacks.

One EnvRunner lives in each worker process (`trainer.runners.worker`); with `num_env_runners=0` the
single EnvRunner lives in the main process. The vector env autoresets in gymnasium's NEXT_STEP mode
(as RLlib's does): when a sub-env finishes, the runner fires `on_episode_created` for its next
episode at once; the next `env.step()` resets that sub-env (its action is ignored and the step is
not counted), after which the runner logs the reset observation and fires `on_episode_start`. So
the event order is exactly created < reset < start < step ... < end, with no extra env calls.

What the runner knows about each sub-env between steps is one `SubEnvRecord`
(`trainer.runners.sub_env_record`: its episode, whether it awaits its reset, the episode's
earlier chunks, its task, ...): the sampling loop (`trainer.runners.rollout`), the state for
checkpoints and exact resume (`get_state` / `set_state`, `trainer.runners.sampling_state`) and
sub-env recovery (`trainer.runners.sub_env_recovery`) read and write the same records; each of
those modules names what it reads of the runner as a `Protocol` of its own, so none imports
this one. Pieces that need none of the runner's
state live beside it: the state format and its checks (`trainer.runners.runner_state`), the wrapper that catches a
sub-env's exceptions (`trainer.runners.sub_env_guard`), the per-sub-env rows of batched outputs
(`trainer.runners.vector_rows`), the step columns the sampling loop records into
(`trainer.runners.step_columns`) and the env-to-module pipeline run over a step's row of them
(`trainer.runners.env_to_module_rows`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from abc import ABCMeta
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import partial
from typing import Any, Protocol, cast

import gymnasium as gym
import numpy as np

from trainer.callbacks import CallbackChain
from trainer.capabilities import CHECKPOINTABLE, REMOTE_FILESYSTEMS
from trainer.compat.old_names import old_worker_callbacks
from trainer.connectors import ConnectorPipelineV2
from trainer.connectors.connector_v2 import (
    build_pipeline,
    call_factory,
    call_module_to_env_factory,
)
from trainer.core.exploration import ActionDistribution, module_exploration
from trainer.core.models import (
    DEFAULT_MODULE_ID,
    INPUT_ENV_SINGLE_SPACES,
    INPUT_ENV_SPACES,
    RL_MODULE_STATE,
    SpaceInfo,
)
from trainer.core.obs_tree import tree_rows
from trainer.core.recurrent import step_inputs
from trainer.core.spaces import batch
from trainer.env.curriculum import (
    NO_TASK,
    check_task_settable,
    check_task_settable_for_env_task_fn,
    is_task_settable,
    task_if_settable,
)
from trainer.env.envs import (
    EnvContext,
    EnvCreator,
    make_env_creator,
    multi_agent_env_needs_policies,
)
from trainer.env.episode import LiveEpisode, SingleAgentEpisode
from trainer.env.multi_agent_env import MultiAgentEnv
from trainer.env.vector_env import FastSyncVectorEnv, InfoKeepingAsyncVectorEnv
from trainer.env.vectorize import (
    ASYNC,
    SYNC,
    VECTOR_ENTRY_POINT,
    check_vector_env,
    make_sub_env_in_child,
    needs_sub_envs,
    run_in_children,
    vectorize_mode,
)
from trainer.errors import (
    EnvDataError,
    SampleRequestError,
    StepFailedRecreateEnvError,
    UnsupportedCall,
)
from trainer.metrics import (
    EPISODE_DURATION_SEC_MEAN,
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    MetricsLogger,
)
from trainer.runners.module_frames import (
    ModuleFrames,
    learner_stacked_frames,
    recording_pipeline,
)
from trainer.runners.module_to_env_pieces import for_pieces, missing_dist_inputs, pieces_left
from trainer.runners.rollout import ColumnRecorder, with_earlier_chunks
from trainer.runners.rollout_loop import collect_rollout
from trainer.runners.runner_checkpoint import (
    COMPONENT_PROTOCOL_METHODS,
    COMPONENT_PROTOCOL_REFUSAL,
    restore_runner,
    save_runner,
)
from trainer.runners.runner_state import (
    RUNNER_STATE_KEYS,
    WEIGHTS_SEQ_NO,
    check_sampling_state,
    connector_components,
    record_weights_seq_no,
    set_connector_components,
    single_module_weights,
    weights_are_new,
)
from trainer.runners.sampling_state import capture_sampling_state, restore_sampling_state
from trainer.runners.sub_env_guard import SubEnvGuard
from trainer.runners.sub_env_record import SubEnvRecord
from trainer.runners.sub_env_recovery import (
    GUARDED_IS_SYNC,
    recover_sub_envs,
    take_child_failures,
)
from trainer.runners.vector_rows import float_leaves, sub_env_infos, unbatch
from trainer.util import seeding
from trainer.util.rllib_members import refuse
from trainer.util.rng import generator_state, set_generator_state
from trainer.util.state_checks import (
    StateError,
    check_loads,
    require_generator_state,
    require_int,
    require_map,
    select_components,
)

logger = logging.getLogger("trainer")

#: Why the vector env exists where the sampling code reads it: `sample()` raises before any
#: step when the runner has none.
#: True while an EnvRunner is built on a config no one else holds (see `config_handed_over`).
_CONFIG_HANDED_OVER: ContextVar[bool] = ContextVar("config_handed_over", default=False)


@contextlib.contextmanager
def config_handed_over() -> Iterator[None]:
    """Within it, an EnvRunner takes the config it is given as its own instead of a copy: for
    a worker process's runner, whose config was just unpickled from its `Init` and is held by
    nothing else. (A copy in a freshly forked worker cost about 0.7 ms of its start-up, most of
    it pages copied on first write.)"""
    token = _CONFIG_HANDED_OVER.set(True)
    try:
        yield
    finally:
        _CONFIG_HANDED_OVER.reset(token)


def own_config(config: Any) -> Any:
    """The runner's own mutable config: `config` itself, unfrozen, when it was handed over;
    else a copy."""
    if _CONFIG_HANDED_OVER.get() and hasattr(config, "_frozen"):
        object.__setattr__(config, "_frozen", False)
        return config
    return config.copy()


_SAMPLING_HAS_ENV = "the EnvRunner samples only with a vector env (sample() checks)"
#: Why a sub-env's episode exists where the sampling code reads it: every sub-env gets one
#: at the first reset, and each ended or dropped episode is replaced at once.
_RECORD_HAS_EPISODE = "a sub-env records an episode from the first reset on"
#: Why the vector env holds its sub-envs in this process where the sub-env guards are read:
#: `SubEnvGuard`s wrap sub-envs in "sync" mode only, whose vector env is a `FastSyncVectorEnv`.
#: Why a guarded sub-env is a `SubEnvGuard`: `_make_sub_env` wraps each one in it.


class _TaskSettable(Protocol):
    """A raw sub-env with tasks (`trainer.env.curriculum.is_task_settable`): duck-typed, as
    RLlib's curriculum envs are, so not necessarily a `TaskSettableEnv` subclass."""

    def get_task(self) -> Any: ...

    def set_task(self, task: Any) -> None: ...


def _output_observation_space(pipeline: ConnectorPipelineV2) -> gym.Space:
    """The observation space the env-to-module pipeline gives the module (set with its input
    spaces); a clear error for a piece that computed none."""
    space = pipeline.observation_space
    if space is None:
        raise ValueError(
            "the env-to-module connector pipeline outputs no observation space: each piece's "
            "recompute_output_observation_space() must return a gymnasium space"
        )
    return space


def _config_spaces(config: Any) -> SpaceInfo | None:
    """The spaces the config names (`config.observation_space` and `.action_space`, both
    set), else None (the env gives them)."""
    if config.observation_space is None or config.action_space is None:
        return None
    return SpaceInfo.from_spaces(
        config.observation_space,
        config.action_space,
        nested_obs=bool(getattr(config, "uses_torch", False)),
    )


def _with_tasks(sub_env: gym.Env) -> _TaskSettable:
    """The raw env of a sub-env whose tasks the caller knows of (checked with
    `is_task_settable`, or required by `set_tasks`, where a sub-env without them fails on the
    missing method)."""
    return cast(_TaskSettable, sub_env.unwrapped)


class RunnerSetup:
    """What every EnvRunner (single- and multi-agent) sets up first (`_set_up`), and its
    checkpoint on its own (`save_to_path` / `restore_from_path`)."""

    config: Any
    worker_index: int
    #: Tune's trial id when RLlib's Tune runs it (its constructor keyword); else None.
    tune_trial_id: str | None
    num_workers: int
    metrics: MetricsLogger
    _env_creator: EnvCreator
    _callbacks: CallbackChain
    _rng: np.random.Generator
    _env_seed: int | None
    num_envs: int
    #: The next sample() starts fresh episodes in every sub-env.
    _needs_reset: bool
    #: The `explore` of the `sample()` call under way (None between calls: the config's): the
    #: env-to-module pieces get it, as RLlib passes each call's own flag to them.
    _call_explore: bool | None = None
    #: Fresh episodes in every sub-env (each runner's own: created, reset, started).
    _reset_all: Callable[[], None]
    #: The rollout loop (`runners/rollout_loop.py`) over the runner's recorder for one call:
    #: (num_timesteps, explore, random_actions=, num_episodes=, complete=) -> episodes.
    _sample_columnar: Callable[..., list]

    @property
    def pipeline_explore(self) -> bool:
        """The `explore` flag the env-to-module pieces get: the running `sample()` call's
        (a reset before any call, e.g. a restored runner's, gets the config's)."""
        return bool(self.config.explore if self._call_explore is None else self._call_explore)

    def save_to_path(
        self,
        path: str | os.PathLike | None = None,
        *,
        state: dict | None = None,
        filesystem: Any = None,
        use_msgpack: bool = False,
    ) -> str:
        """Writes this runner's state (or `state`) as an EnvRunner checkpoint at `path`
        (default: a new temporary directory; `trainer.runners.runner_checkpoint`); returns
        the path. Always msgpack (`use_msgpack` is taken); a local path only."""
        if filesystem is not None:
            raise UnsupportedCall(
                f"{type(self).__name__}.save_to_path(filesystem=...): checkpoints are written "
                "to local paths here",
                REMOTE_FILESYSTEMS,
            )
        return save_runner(self, path, state=state)

    def restore_from_path(
        self,
        path: str | os.PathLike,
        *,
        component: str | None = None,
        filesystem: Any = None,
        **kwargs: Any,
    ) -> None:
        """Sets this runner's state from an EnvRunner checkpoint (`save_to_path`'s), checked
        before anything changes. `component`: none is restorable on its own (a runner's
        state is one component)."""
        if component is not None or filesystem is not None:
            raise UnsupportedCall(
                f"{type(self).__name__}.restore_from_path(component=/filesystem=): a runner's "
                "checkpoint is restored whole, from a local path",
                CHECKPOINTABLE,
            )
        restore_runner(self, path)

    def _sample_call(
        self,
        num_timesteps: int | None,
        num_episodes: int | None,
        explore: bool | None,
        random_actions: bool,
        force_reset: bool,
    ) -> list:
        """One `sample()` call of either runner: the request checked, the call's `explore` set
        for the pieces while `_sample` steps the envs, then `on_sample_end`. As RLlib's
        `sample()`, it fills in the `rollout_fragment_length` steps per sub-env of
        `batch_mode="truncate_episodes"` before calling `_sample`."""
        check_sample_request(self, num_timesteps, num_episodes)
        explore = self.config.explore if explore is None else explore
        if (
            num_timesteps is None
            and num_episodes is None
            and self.config.batch_mode == "truncate_episodes"
        ):
            num_timesteps = (
                self.config.get_rollout_fragment_length(self.worker_index) * self.num_envs
            )
        self._call_explore = explore
        try:
            samples = self._sample(
                num_timesteps=num_timesteps,
                num_episodes=num_episodes,
                explore=explore,
                random_actions=random_actions,
                force_reset=force_reset,
            )
        finally:
            self._call_explore = None
        record_weights_seq_no(samples, getattr(self, "_weights_seq_no", 0))
        if self._callbacks.has("on_sample_end"):
            self._callbacks.fire(
                "on_sample_end", env_runner=self, metrics_logger=self.metrics, samples=samples
            )
        return samples

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list:
        """RLlib's hook for the stepping of one `sample()` call, which calls it (once, before
        `on_sample_end`) and returns what it returns: a count of episodes, a count of steps,
        or by default `rollout_fragment_length` steps per sub-env
        (`batch_mode="complete_episodes"`: whole episodes)."""
        if num_episodes is not None:
            return self._sample_episodes(num_episodes, explore, random_actions)
        complete = num_timesteps is None and self.config.batch_mode == "complete_episodes"
        if num_timesteps is None:
            num_timesteps = (
                self.config.get_rollout_fragment_length(self.worker_index) * self.num_envs
            )
        if complete:
            return self._sample_complete_episodes(num_timesteps, explore, random_actions)
        return self._sample_timesteps(num_timesteps, explore, random_actions, force_reset)

    def _sample_timesteps(
        self, num_timesteps: int, explore: bool, random_actions: bool, force_reset: bool
    ) -> list:
        """`num_timesteps` steps, the episodes under way continued (unless `force_reset`)."""
        if force_reset or self._needs_reset:
            self._reset_all()
        return self._sample_columnar(num_timesteps, explore, random_actions=random_actions)

    def _sample_complete_episodes(
        self, min_timesteps: int, explore: bool, random_actions: bool
    ) -> list:
        """Fresh episodes, played out once `min_timesteps` steps are sampled."""
        self._reset_all()
        return self._sample_columnar(
            min_timesteps, explore, random_actions=random_actions, complete=True
        )

    def _sample_episodes(self, num_episodes: int, explore: bool, random_actions: bool) -> list:
        """Fresh episodes, until `num_episodes` of them ended."""
        self._reset_all()
        return self._sample_columnar(
            0, explore, random_actions=random_actions, num_episodes=num_episodes
        )

    def _set_up(
        self,
        config: Any,
        env_creator: EnvCreator | None,
        worker_index: int,
        num_workers: int | None,
        kwargs: dict[str, Any],
    ) -> Any:
        """Sets `config` (the runner's own mutable copy: RLlib's curriculum example changes
        its env_config, then calls make_env()), `worker_index`, `tune_trial_id` (from RLlib's
        other constructor keywords in `kwargs`), `num_workers`, `metrics`, the env creator, the
        callback chain, the RNG and the env seed (evaluation runners draw from streams of their
        own, not the training ones'); in a worker process, `python_environment()`'s variables
        are set before any env is made. Returns the config."""
        self.config = config = own_config(config)
        self.worker_index = worker_index
        self.tune_trial_id = kwargs.get("tune_trial_id")
        if worker_index > 0:
            os.environ.update(
                {
                    name: str(value)
                    for name, value in getattr(
                        config, "extra_python_environs_for_worker", {}
                    ).items()
                }
            )
        self.num_workers = config.num_env_runners if num_workers is None else num_workers
        self.metrics = MetricsLogger(stats_cls_lookup=config.stats_cls_lookup)
        self._env_creator = env_creator or make_env_creator(config.env)
        self._callbacks = CallbackChain(
            config.callback_classes(), config.env_runner_callables(), env_runner_index=worker_index
        )
        self._rng = np.random.default_rng(
            seeding.runner_stream(config.seed, worker_index, config.in_evaluation)
        )
        self._env_seed = seeding.runner_env_seed(config.seed, worker_index, config.in_evaluation)
        return config


@refuse(
    "ray.rllib.env.single_agent_env_runner.SingleAgentEnvRunner",
    CHECKPOINTABLE,
    COMPONENT_PROTOCOL_REFUSAL,
    *COMPONENT_PROTOCOL_METHODS,
)
class EnvRunner(RunnerSetup, metaclass=ABCMeta):  # noqa: B024 (ABCMeta for register(), no abstract API)
    """Collects episodes from `num_envs_per_env_runner` copies of the env.

    As RLlib's `EnvRunner` base, it is the type of every EnvRunner: the `MultiAgentEnvRunner`
    registers itself as one (`isinstance(runner, EnvRunner)` holds for both kinds).

    Attributes a callback may use: `config` (with `in_evaluation`), `worker_index` (0 for the main
    process, 1..N for worker processes), `num_workers`, `env` (the vector env: `env.envs[i]` is a
    sub-env, `env.envs[i].unwrapped` the raw env), `module` (the policy), `metrics`.
    """

    #: The module `_stateful` was computed for, and whether it is a recurrent torch module
    #: (recomputed only when the module object changes: the stateless step stays as it was).
    _stateful_for: Any = None
    _stateful: bool = False

    def __init__(
        self,
        config: Any,
        env_creator: EnvCreator | None = None,
        *,
        worker_index: int = 0,
        num_workers: int | None = None,
        create_env: bool = True,
        spaces: SpaceInfo | None = None,
        recreated: bool = False,
        env_spaces: tuple[gym.Space, gym.Space] | None = None,
        **kwargs: Any,
    ):
        # RLlib builds an EnvRunner from the config alone: `EnvRunner(config=config)`; `kwargs`
        # takes RLlib's other constructor arguments (tune_trial_id, ...).
        config = self._set_up(config, env_creator, worker_index, num_workers, kwargs)
        seed = config.seed
        #: The vector env: a `FastSyncVectorEnv` ("sync"), an `InfoKeepingAsyncVectorEnv`
        #: ("async"), or the env creator's own ("vector_entry_point"); None without env.
        self.env: gym.vector.VectorEnv | None = None
        self._recreated = recreated
        #: (observation space, action space) as the env gives them, before the connectors.
        self.env_spaces = env_spaces
        #: The env-to-module connector pipeline, if configured (see `trainer.connectors`).
        self._env_to_module: ConnectorPipelineV2 | None = None
        #: The pipeline the sampling loop runs over the episodes, whose output they record:
        #: `_env_to_module`, or its pieces before the frame stacking when the learner stacks
        #: the frames (`_module_frames`; None when no piece is left).
        self._recording_pipeline: ConnectorPipelineV2 | None = None
        #: When the learner stacks the frames (`trainer.runners.module_frames`): the module's
        #: stacked inputs per sub-env.
        self._module_frames: ModuleFrames | None = None
        #: The config's module-to-env pieces, if any: run on each step's module outputs
        #: before the actions are drawn (`_module_to_env_actions`).
        self._module_to_env: ConnectorPipelineV2 | None = None
        self._module_obs: Any = None  # the pipeline's output per sub-env
        #: With a nested (Dict / Tuple) pipeline output: each sub-env's last one.
        self._module_obs_rows: list[Any] = []
        #: The vector env's last observations, batched (the policy's input): an array, or a
        #: dict / tuple of arrays for Dict / Tuple spaces; None before the first reset.
        self._obs: Any = None
        self.spaces = spaces if spaces is not None else _config_spaces(config)
        self._set_up_vectorize_mode(config)
        #: One record per sub-env (see `SubEnvRecord`), made anew with the vector env.
        self._sub_env_records: list[SubEnvRecord] = []
        self._set_env_context()
        if create_env:
            self.make_env()
        if self._env_to_module is None and self.env_spaces is not None:
            self._build_env_to_module()
        if self.spaces is None:
            raise ValueError("an EnvRunner without env needs the spaces")
        self.module = config.build_module(self.spaces, seed=seed, inference_only=True)
        self.exploration = module_exploration(
            config.get_exploration_config(),
            self.spaces.action_space(),
            type_chosen="type" in config.exploration_config,
            worker_index=worker_index,
            num_workers=self.num_workers,
        )
        #: Env steps sampled by all EnvRunners so far: set with every weight sync, advanced by
        #: this runner's own steps in between (exploration schedules read it).
        self.global_timestep = 0
        #: Env steps this runner (this process) has stepped: its progress, which the group's
        #: restart policy reads from a failure (a runner that fails having stepped its env is
        #: flaky, one that fails before any step is broken).
        self.num_env_steps_stepped = 0
        #: Observations and rewards are checked for NaN and infinity (debugging(check_nan=)).
        self._check_nan = bool(config.check_nan)
        #: While the columnar loop runs (its episodes hold no steps yet): the step of the
        #: episode chunk a sub-env is taking, for error messages.
        self._episode_step_of: Callable[[int], int] | None = None

    def _set_up_vectorize_mode(self, config: Any) -> None:
        """How the sub-envs are stepped (gym_env_vectorize_mode), and how a sub-env that
        raises is re-created under it (restart_failed_sub_environments)."""
        #: gym_env_vectorize_mode, normalized: "sync", "async" or "vector_entry_point".
        self.vectorize_mode = vectorize_mode(getattr(config, "gym_env_vectorize_mode", SYNC))
        restart_sub_envs = bool(config.restart_failed_sub_environments)
        #: Sub-envs are wrapped in `SubEnvGuard`s (restart_failed_sub_environments=True, in
        #: "sync" mode, where each sub-env can be re-created alone).
        self._guarded = restart_sub_envs and self.vectorize_mode == SYNC
        #: "async": a sub-env that raises is re-created in its child process, which says so
        #: in its info (`SubEnvInChild`); the runner drops that sub-env's episode.
        self._child_guarded = restart_sub_envs and self.vectorize_mode == ASYNC
        #: The other modes re-create the whole vector env when it raises (as RLlib does); in
        #: "async" mode this is the fallback when the vector env itself fails.
        self._recreate_env_on_failure = restart_sub_envs and self.vectorize_mode != SYNC

    def _set_env_context(self) -> None:
        """The sub-env count and `EnvContext` from the runner's current config."""
        self.num_envs = self.config.num_envs_per_env_runner
        self.env_context = EnvContext(
            self.config.env_config,
            worker_index=self.worker_index,
            num_workers=self.num_workers,
            recreated_worker=self._recreated,
        )
        previous = self._sub_env_records
        self._sub_env_records = [
            SubEnvRecord(event_kwargs_of=partial(self._event_kwargs, i))
            for i in range(self.num_envs)
        ]
        if len(previous) == self.num_envs:  # the known tasks outlive a re-made env
            for record, old in zip(self._sub_env_records, previous, strict=True):
                record.task = old.task
        self._obs = None
        self._needs_reset = True
        #: (return, length, duration) of each episode ended in this sample() call, logged
        #: into the metrics together when it returns (as RLlib logs them in get_metrics()).
        self._ended_episodes: list[tuple[float, int, float]] = []

    # -- env ---------------------------------------------------------------------------------
    def make_env(self) -> None:
        """(Re)creates the vector env from the runner's current config (`self.config.env_config`
        and `num_envs_per_env_runner`, which code in the runner may have changed), then fires
        `on_environment_created`. Episodes under way are dropped; the next sample starts new
        ones."""
        if self.env is not None:
            self.env.close()
        self._set_env_context()
        self._build_vector_env()
        if self._env_to_module is None:  # kept when the env is re-created (its statistics)
            self._build_env_to_module()
        if self.spaces is None:
            env_spaces = self.env_spaces
            assert env_spaces is not None, "_build_vector_env() sets env_spaces"
            observation_space = (
                _output_observation_space(self._env_to_module)
                if self._env_to_module is not None
                else env_spaces[0]
            )
            if self._env_to_module is None:
                self._check_configured_observation_space()
            assert self.env is not None, "_build_vector_env() makes the env"
            self._check_configured_action_space(self.env.single_action_space)
            # Torch modules take Dict / Tuple observations as they come (nested batches).
            self.spaces = SpaceInfo.from_spaces(
                observation_space,
                env_spaces[1],
                nested_obs=bool(getattr(self.config, "uses_torch", False)),
            )
        self._needs_reset = True
        self._fire_environment_created()

    def _check_configured_observation_space(self) -> None:
        """environment(observation_space=...) builds the networks for that space; without a
        connector between them, a Box of another size than the env's Box cannot be fed its
        observations (refused here, when the runner starts, not as a reshape error later)."""
        configured = self.config.observation_space
        env = self.env
        assert env is not None, "_build_vector_env() makes the env"
        own = env.single_observation_space
        if not (isinstance(configured, gym.spaces.Box) and isinstance(own, gym.spaces.Box)):
            return
        if int(np.prod(configured.shape)) != int(np.prod(own.shape)):
            raise ValueError(
                f"EnvRunner {self.worker_index}: environment(observation_space={configured}) "
                f"does not fit the env's observation space {own}: the networks take "
                f"{int(np.prod(configured.shape))} numbers per observation and the env returns "
                f"{int(np.prod(own.shape))}; give the env's space (or leave observation_space "
                "None), or add an env_to_module connector that maps one to the other"
            )

    def _check_configured_action_space(self, own: gym.Space) -> None:
        """environment(action_space=...) makes the networks' actions; the env must take them:
        a Discrete of another size, a Box of another shape, or one kind for the other is
        refused when the runner starts (not as the env's own assertion on some action)."""
        configured = self.config.action_space
        if configured is None or configured == own:
            return
        kinds = (gym.spaces.Discrete, gym.spaces.Box)
        if not (isinstance(configured, kinds) and isinstance(own, kinds)):
            return  # other spaces: the env judges its actions
        if isinstance(own, gym.spaces.Discrete) and isinstance(configured, gym.spaces.Discrete):
            fits = configured.n == own.n
        elif isinstance(own, gym.spaces.Box) and isinstance(configured, gym.spaces.Box):
            fits = configured.shape == own.shape
        else:
            fits = False  # one kind for the other
        if not fits:
            raise ValueError(
                f"EnvRunner {self.worker_index}: environment(action_space={configured}) does "
                f"not fit the env's action space {own}: the networks would send actions the env "
                "does not take; give the env's space (or leave action_space None)"
            )

    def _fire_environment_created(self) -> None:
        if self._callbacks.has("on_environment_created"):
            self._callbacks.fire(
                "on_environment_created",
                env_runner=self,
                metrics_logger=self.metrics,
                env=self.env,
                env_context=self.env_context,
            )

    def _build_vector_env(self, *, recreated: bool = False) -> None:
        """`self.env` as `gym_env_vectorize_mode` says (see `trainer.env.vectorize`)."""
        contexts = [
            self.sub_env_context(i).copy_with_overrides(
                recreated_worker=recreated or self._recreated
            )
            for i in range(self.num_envs)
        ]
        next_step = gym.vector.AutoresetMode.NEXT_STEP
        env: gym.vector.VectorEnv
        if self.vectorize_mode == SYNC:
            self.env = env = FastSyncVectorEnv(
                [partial(self._make_sub_env, ctx) for ctx in contexts], autoreset_mode=next_step
            )
            for i, sub_env in enumerate(env.envs):
                self._sub_env_created(i, sub_env, contexts[i])
        elif self.vectorize_mode == ASYNC:
            # Each sub-env is made in its child process (the creator travels by cloudpickle
            # where the start method needs it).
            self.env = env = InfoKeepingAsyncVectorEnv(
                [
                    partial(
                        make_sub_env_in_child,
                        self._env_creator,
                        ctx,
                        bool(self.config.restart_failed_sub_environments),
                    )
                    for ctx in contexts
                ],
                autoreset_mode=next_step,
            )
            if self.config.env_task_fn is not None:
                run_in_children(env, check_task_settable_for_env_task_fn)
        else:
            if self.config.env_task_fn is not None:
                raise needs_sub_envs("environment(env_task_fn=...)", self.vectorize_mode)
            self.env = env = check_vector_env(
                self._env_creator.make_vector(contexts[0], self.num_envs),
                self._env_creator.description,
            )
            if env.num_envs != self.num_envs:
                raise ValueError(
                    f"env_runners(gym_env_vectorize_mode='vector_entry_point'): the vector env "
                    f"{self._env_creator.description} has num_envs={env.num_envs}, but "
                    f"num_envs_per_env_runner={self.num_envs}"
                )
        self.env_spaces = (
            self.config.observation_space or env.single_observation_space,
            self.config.action_space or env.single_action_space,
        )

    def _recreate_vector_env(self, error: BaseException, method: str) -> None:
        """ "async" / "vector_entry_point" with restart_failed_sub_environments=True: the vector
        env raised in `method`; it is closed and made again (RLlib re-creates the whole env
        too), with the sub-envs' tasks put back. Every episode under way is dropped; the caller
        starts new ones."""
        if not isinstance(error, StepFailedRecreateEnvError):
            logger.exception(
                "EnvRunner %d: the vector env (gym_env_vectorize_mode=%r) raised "
                "%s in %s(): %s; it is re-created and its episodes dropped "
                "(restart_failed_sub_environments=True)",
                self.worker_index,
                self.vectorize_mode,
                type(error).__name__,
                method,
                error,
                exc_info=error,
            )
        for record in self._sub_env_records:
            if record.episode is not None and len(record.episode):
                self.metrics.log_value(
                    "num_env_steps_lost_lifetime", len(record.episode), reduce="sum"
                )
        self.metrics.log_value("num_sub_environment_restarts_lifetime", self.num_envs, reduce="sum")
        for record in self._sub_env_records:
            record.prev_chunks = []
        assert self.env is not None, _SAMPLING_HAS_ENV
        try:
            self.env.close()
        except Exception:
            pass  # a broken vector env may fail to close too; it is dropped either way
        self._build_vector_env(recreated=True)
        known_tasks = self._known_tasks()
        if known_tasks is not None:
            self.set_tasks(known_tasks)
        self._fire_environment_created()

    def abandon_episodes(self) -> None:
        """After a sample was interrupted mid-step (its deadline passed): the next sample starts
        fresh episodes. An "async" vector env left waiting for its children's answers cannot
        take another call, so it is closed (its children ended) and made again."""
        self._needs_reset = True
        env = self.env
        waiting = getattr(env, "_state", None)
        if (
            self.vectorize_mode == ASYNC
            and env is not None
            and waiting is not None
            and waiting != gym.vector.async_vector_env.AsyncState.DEFAULT
        ):
            tasks = self._known_tasks()
            env.close(terminate=True)
            self._build_vector_env(recreated=True)
            if tasks is not None:
                self.set_tasks(tasks)

    def _build_env_to_module(self) -> None:
        """The config's env-to-module pipeline, and its module-to-env pieces (each once: kept
        when the env is re-created)."""
        env_spaces = self.env_spaces
        assert env_spaces is not None, "built once the env's spaces are known"
        factory = self.config.env_to_module_factory()
        if factory is not None:
            pieces = call_factory(factory, self.env, env_spaces)
            pipeline = self._env_to_module = build_pipeline(pieces, *env_spaces)
            self._recording_pipeline = pipeline
            stacking = learner_stacked_frames(self.config, pipeline)
            if stacking is not None:
                self._recording_pipeline = recording_pipeline(pipeline)
                self._module_frames = ModuleFrames(stacking.num_frames, self.num_envs)
        to_env = self.config.module_to_env_connector
        if to_env is not None and self._module_to_env is None:
            pieces = call_module_to_env_factory(to_env, self.env, env_spaces)
            self._module_to_env = build_pipeline(
                pieces, *env_spaces, setting="module_to_env_connector"
            )

    def _to_module(self, episodes: list[SingleAgentEpisode], env_indices: list[int]) -> None:
        """Runs the env-to-module pipeline over the episodes that just got an observation and
        keeps each one's result as its sub-env's next module input."""
        assert self._recording_pipeline is not None, "called only with an env-to-module pipeline"
        self._recording_pipeline(
            rl_module=self.module,
            batch={},
            episodes=episodes,
            explore=self.pipeline_explore,
            shared_data={},
            metrics=self.metrics,
        )
        self._keep_module_inputs(episodes, env_indices)

    def _keep_module_inputs(
        self, episodes: list[SingleAgentEpisode], env_indices: list[int]
    ) -> None:
        """Keeps each episode's last observation (the pipeline's output) as its sub-env's next
        module input: after the pipeline ran over them, and for the episodes a restored runner
        continues (which hold the outputs the pipeline gave before the checkpoint)."""
        if self.spaces is not None and self.spaces.nested_obs_space is not None:
            self._nested_to_module(episodes, env_indices)
            return
        # (Frames of bytes stay bytes, as the module's observation space says.)
        dtype = np.uint8 if self.spaces is not None and self.spaces.obs_bytes else np.float32
        rows = [np.asarray(ep.observations[-1], dtype=dtype) for ep in episodes]
        if (
            self._module_obs is None
            or self._module_obs.shape[0] != self.num_envs
            or self._module_obs.shape[1:] != rows[0].shape
        ):
            self._module_obs = np.zeros((self.num_envs,) + rows[0].shape, dtype=dtype)
        for index, row in zip(env_indices, rows, strict=True):
            self._module_obs[index] = row

    def _nested_to_module(self, episodes: list[SingleAgentEpisode], env_indices: list[int]) -> None:
        """`_to_module` for a pipeline whose output is a Dict / Tuple observation (a torch
        module's input): each sub-env's last output is kept, and the batch rebuilt from them."""
        rows = self._module_obs_rows
        if len(rows) != self.num_envs:
            rows = self._module_obs_rows = [None] * self.num_envs
        for index, episode in zip(env_indices, episodes, strict=True):
            rows[index] = episode.observations[-1]
        if all(row is not None for row in rows):
            self._module_obs = batch(rows)

    @property
    def env_to_module(self) -> ConnectorPipelineV2 | None:
        """The env-to-module connector pipeline (RLlib's `env_runner._env_to_module`)."""
        return self._env_to_module

    def module_observation(self, observation: Any) -> Any:
        """One observation as the module sees it: through the env-to-module pipeline as the
        first of a new episode, statistics left unchanged (for `compute_single_action`)."""
        if self._env_to_module is None:
            return observation
        episode = SingleAgentEpisode()
        episode.add_env_reset(observation)
        self._env_to_module(
            rl_module=self.module,
            batch={},
            episodes=[episode],
            explore=False,
            shared_data={},
            metrics=None,
            update_stats=False,
        )
        return episode.observations[-1]

    def get_connector_state(self) -> dict | None:
        """The env-to-module pipeline's state, or None without a stateful pipeline."""
        pipeline = self._env_to_module
        return pipeline.get_state() if pipeline is not None and pipeline.is_stateful else None

    def set_connector_state(self, state: dict | None) -> None:
        if state is not None and self._env_to_module is not None:
            self._env_to_module.set_state(state)

    def sub_env_context(self, index: int) -> EnvContext:
        """The `EnvContext` sub-env `index` was created with (`vector_index=index`)."""
        return self.env_context.copy_with_overrides(vector_index=index)

    def _try_env_reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """`env.reset()` of the vector env (RLlib's name). With
        `restart_failed_sub_environments=True` a sub-env that raises does not abort it: the
        failure is logged here and the sub-env re-created by the caller."""
        env = self.env
        assert env is not None, _SAMPLING_HAS_ENV
        if self._recreate_env_on_failure:
            try:
                results = env.reset(seed=seed, options=options)
            except Exception as error:
                self._recreate_vector_env(error, "reset")
                env = self.env  # the new one
                assert env is not None, "_recreate_vector_env() makes a vector env"
                results = env.reset(seed=seed, options=options)  # twice: the env is broken
        else:
            try:
                results = env.reset(seed=seed, options=options)
            except EnvDataError as error:
                raise self._named(error) from None
        if self._guarded:
            self._log_sub_env_failures("reset")
        if self._check_nan:
            self._check_finite(results[0], "observation", "reset")
        return results

    def _try_env_step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]] | None:
        """`env.step(actions)` of the vector env (RLlib's name); sub-env failures as in
        `_try_env_reset`. In "async" and "vector_entry_point" mode a failure re-creates the
        whole vector env and returns None (RLlib's ENV_STEP_FAILURE): the caller starts new
        episodes."""
        env = self.env
        assert env is not None, _SAMPLING_HAS_ENV
        if self._recreate_env_on_failure:
            try:
                results = env.step(actions)
            except Exception as error:
                self._recreate_vector_env(error, "step")
                return None
        else:
            try:
                results = env.step(actions)
            except EnvDataError as error:  # the vector env's: names the sub-env, not the runner
                raise self._named(error) from None
        if self._guarded:
            self._log_sub_env_failures("step")
        if self._check_nan:
            obs, rewards = results[0], results[1]
            # The common case in two dot products, the cheapest numpy reductions here: NaN or
            # inf anywhere makes them non-finite; a finite overflow to inf only costs the exact
            # check, which then finds nothing.
            if not (
                type(obs) is np.ndarray
                and obs.dtype.kind == "f"
                and math.isfinite(np.vdot(obs, obs) + np.vdot(rewards, rewards))
            ):
                self._check_finite(obs, "observation", "step")
                self._check_finite(rewards, "reward", "step")
        return results

    def _named(self, error: EnvDataError) -> EnvDataError:
        """`error` with this runner named first, as the NaN check names it."""
        return EnvDataError(f"EnvRunner {self.worker_index}: {error}")

    def _check_finite(self, values: Any, field: str, method: str) -> None:
        """Raises `EnvDataError` if a float array of `values` (a batch over the sub-envs, or a
        dict/tuple of them) holds NaN or infinity: one vectorised check per batch; the loop
        that names the sub-env runs only on failure."""
        for leaf in float_leaves(values):
            # A sum is finite when every element is (an overflow to inf falls through to the
            # exact check below, which then finds nothing): half the cost of isfinite().all().
            if math.isfinite(leaf.sum()) or np.isfinite(leaf).all():
                continue
            rows = leaf.reshape(len(leaf), -1) if leaf.ndim else leaf.reshape(1, 1)
            sub_env = int(np.flatnonzero(~np.isfinite(rows).all(axis=1))[0])
            bad = rows[sub_env][~np.isfinite(rows[sub_env])][0]
            records = self._sub_env_records
            episode = records[sub_env].episode if sub_env < len(records) else None
            step_of = self._episode_step_of
            if method == "reset":
                at = "at reset"
            elif step_of is not None:
                at = f"at step {step_of(sub_env)} of its episode"
            elif episode is not None:
                at = f"at step {len(episode) + 1} of its episode"
            else:
                at = "in a step"
            raise EnvDataError(
                f"EnvRunner {self.worker_index}: sub-env {sub_env} returned a"
                f"{'n infinite' if np.isinf(bad) else ' NaN'} {field} {at}; NaN and infinite "
                "values would train the networks to NaN. Fix the env, or turn this check off "
                "with config.debugging(check_nan=False)"
            )

    def _log_sub_env_failures(self, method: str) -> None:
        """Logs each sub-env failure of the last reset/step with its traceback, except
        `StepFailedRecreateEnvError`, which an env raises to be re-created without noise."""
        env = self.env
        assert isinstance(env, gym.vector.SyncVectorEnv), GUARDED_IS_SYNC
        for i, sub_env in enumerate(env.envs):
            error = getattr(sub_env, "failure", None)
            if error is None:
                continue
            if isinstance(error, StepFailedRecreateEnvError):
                logger.debug(
                    "EnvRunner %d: sub-env %d asked to be re-created (%s)",
                    self.worker_index,
                    i,
                    error,
                )
                continue
            logger.exception(
                "EnvRunner %d: sub-env %d raised %s in %s(): %s; it is re-created "
                "and its episode dropped (restart_failed_sub_environments=True)",
                self.worker_index,
                i,
                type(error).__name__,
                method,
                error,
                exc_info=error,
            )

    def _make_sub_env(self, context: EnvContext) -> gym.Env:
        env = self._env_creator(context)
        if isinstance(getattr(env, "unwrapped", env), MultiAgentEnv):
            made = type(env.unwrapped).__name__
            raise ValueError(
                multi_agent_env_needs_policies(
                    f"env {self._env_creator.description} made a {made}, which"
                )
            )
        if not self.config.restart_failed_sub_environments:
            return env
        return SubEnvGuard(env, index=context.vector_index)

    def _sub_env_created(self, index: int, sub_env: gym.Env, context: EnvContext) -> None:
        """Checks a new sub-env against `env_task_fn`; fires `on_sub_environment_created`."""
        if self.config.env_task_fn is not None:
            check_task_settable(sub_env.unwrapped, "env_task_fn")
        if self._callbacks.has("on_sub_environment_created"):
            self._callbacks.fire(
                "on_sub_environment_created",
                worker=self,
                sub_environment=sub_env.unwrapped,
                env_context=context,
                env_index=index,
            )

    def _require_env(self, what: str) -> gym.vector.VectorEnv:
        """The vector env, for `what`; a clear error when this runner has none."""
        if self.env is None:
            raise RuntimeError(
                f"EnvRunner {self.worker_index} has no env (it was stopped, or it is the local "
                "runner of worker processes without "
                f".env_runners(create_env_on_local_worker=True)): {what} needs one"
            )
        return self.env

    def _sync_env(self, what: str) -> gym.vector.SyncVectorEnv:
        """The vector env of "sync" mode, whose sub-envs live in this process (`env.envs`)."""
        env = self._require_env(what)
        assert isinstance(env, gym.vector.SyncVectorEnv), (
            f"gym_env_vectorize_mode={self.vectorize_mode!r} steps a SyncVectorEnv"
        )
        return env

    def _async_env(self, what: str) -> gym.vector.AsyncVectorEnv:
        """The vector env of "async" mode, whose sub-envs live in child processes."""
        env = self._require_env(what)
        assert isinstance(env, gym.vector.AsyncVectorEnv), (
            f"gym_env_vectorize_mode={self.vectorize_mode!r} steps an AsyncVectorEnv"
        )
        return env

    def foreach_env(self, func: Callable[[gym.Env], Any]) -> list:
        """`func(sub_env)` for every sub-env (the raw env, `env.envs[i].unwrapped`, so its own
        methods such as `set_task` are reachable); returns the results in sub-env order. In
        "async" mode `func` runs in each sub-env's child process (it travels by cloudpickle;
        its results must pickle); "vector_entry_point" mode has no sub-envs to run it on."""
        if self.env is None:
            return []
        return self.foreach_sub_env(lambda env, context: func(env), "foreach_env()")

    def foreach_sub_env(
        self, func: Callable[[gym.Env, EnvContext], Any], what: str = "foreach_sub_env()"
    ) -> list:
        """`func(raw_sub_env, its_env_context)` for every sub-env, in sub-env order (see
        `foreach_env`); `what` names the caller in the error of "vector_entry_point" mode."""
        if self.vectorize_mode == ASYNC:
            return run_in_children(self._async_env(what), func)
        if self.vectorize_mode == VECTOR_ENTRY_POINT:
            raise needs_sub_envs(what, self.vectorize_mode)
        return [
            func(sub_env.unwrapped, self.sub_env_context(i))
            for i, sub_env in enumerate(self._sync_env(what).envs)
        ]

    # -- tasks (curriculum) ------------------------------------------------------------------
    @staticmethod
    def _task_of(sub_env: gym.Env) -> tuple | None:
        """(task,) of a task-settable sub-env, None for others or when get_task() fails."""
        env = sub_env.unwrapped
        if not is_task_settable(env):
            return None
        try:
            return (_with_tasks(sub_env).get_task(),)
        except Exception as error:
            logger.warning(
                "%s.get_task() raised %s: %s", type(env).__qualname__, type(error).__name__, error
            )
            return None

    def get_tasks(self) -> list | None:
        """Each sub-env's current task (see `trainer.env.curriculum`), or None when the env has no
        tasks (or this runner has no env, or its env no sub-envs: "vector_entry_point")."""
        if self.env is None or self.vectorize_mode == VECTOR_ENTRY_POINT:
            return None
        if self.vectorize_mode == ASYNC:
            tasks = run_in_children(self._async_env("get_tasks()"), task_if_settable)
            if any(isinstance(task, str) and task == NO_TASK for task in tasks):
                return None
        else:
            sub_envs = self._sync_env("get_tasks()").envs
            if not is_task_settable(sub_envs[0].unwrapped):
                return None
            tasks = [_with_tasks(sub_env).get_task() for sub_env in sub_envs]
        self._remember_tasks(tasks)
        return list(tasks)

    def set_tasks(self, tasks: list) -> None:
        """Sets sub-env i's task to `tasks[i]`."""
        if len(tasks) != self.num_envs:
            raise ValueError(
                f"EnvRunner {self.worker_index}: {len(tasks)} tasks given for "
                f"{self.num_envs} sub-envs"
            )
        if self.vectorize_mode == VECTOR_ENTRY_POINT:
            raise needs_sub_envs("setting the sub-envs' tasks", self.vectorize_mode)
        if self.vectorize_mode == ASYNC:  # one value per child process
            self._async_env("set_tasks()").set_attr("trainer_task", list(tasks))
        else:
            for sub_env, task in zip(self._sync_env("set_tasks()").envs, tasks, strict=True):
                _with_tasks(sub_env).set_task(task)
        self._remember_tasks(tasks)

    def apply_env_task_fn(self, env_task_fn: Callable, train_results: dict) -> list:
        """Sets each sub-env's task to `env_task_fn(train_results, sub_env, env_context)`
        (`config.environment(env_task_fn=...)`, after every `train()`); returns the new
        tasks. In "async" vectorize mode the function runs in each sub-env's own process."""

        def set_task(env: Any, env_context: Any) -> Any:
            task = env_task_fn(train_results, env, env_context)
            env.set_task(task)
            return task

        tasks = self.foreach_sub_env(set_task, "environment(env_task_fn=...)")
        self._remember_tasks(tasks)
        return tasks

    def _remember_tasks(self, tasks: list) -> None:
        for record, task in zip(self._sub_env_records, tasks, strict=True):
            record.task = (task,)

    def _known_tasks(self) -> list | None:
        """The sub-envs' tasks as last read or set, or None when not known."""
        known = [record.task[0] for record in self._sub_env_records if record.task is not None]
        return known if len(known) == len(self._sub_env_records) else None

    # -- state (checkpoints, exact resume; its format: trainer.runners.runner_state) ---------
    def get_state(
        self,
        components: Any = None,
        *,
        not_components: Any = None,
        include_weights: bool = True,
        include_env: bool = True,
        **kwargs: Any,
    ) -> dict:
        """Everything this runner needs to continue exactly: its RNG, the global timestep, the
        exploration's and metrics' state, the weights, the sub-envs' tasks (for envs with tasks,
        see `trainer.env.curriculum`), and (with `include_env`) where sampling
        stands: each sub-env's captured state (see `trainer.env.env_state`), the current
        observations and the unfinished episodes. Plain data and numpy arrays only.
        `components` keeps only the named top-level keys, `not_components` drops them
        (RLlib's Checkpointable arguments; a name or a list); RLlib's
        `"env_to_module_connector"` / `"module_to_env_connector"` give that pipeline's state."""
        state = self._full_runner_state(include_weights, include_env)
        return {
            **select_components(state, components, not_components),
            **connector_components(self, components, not_components),
        }

    def _full_runner_state(self, include_weights: bool, include_env: bool) -> dict:
        state = {
            "rng": generator_state(self._rng),
            "global_timestep": self.global_timestep,
            "exploration": self.exploration.get_state(),
            "metrics": self.metrics.get_state(),
        }
        if include_weights:
            state[RL_MODULE_STATE] = self.module.get_weights()
        connector_state = self.get_connector_state()
        if connector_state is not None:
            state["connector_state"] = connector_state
        tasks = self.get_tasks()
        if tasks is not None:
            state["tasks"] = tasks
        if include_env and self.env is not None:
            state["sampling"] = self._sampling_state()
        return state

    def check_state(self, state: Any, where: str = "env_runner") -> None:
        """Raises `StateError` unless `state` is a runner state this runner can take: every key
        `get_state()` writes has the right kind of value, the exploration, metrics and
        connector states load into scratch copies, and the unfinished episodes rebuild. Nothing
        here changes."""
        require_map(state, where)
        unknown = sorted(set(state) - RUNNER_STATE_KEYS)
        if unknown:
            raise StateError(where, f"has keys a runner state does not: {unknown[:4]}")
        if "rng" in state:
            require_generator_state(state["rng"], f"{where}['rng']")
        if "global_timestep" in state:
            require_int(state["global_timestep"], f"{where}['global_timestep']")
        if WEIGHTS_SEQ_NO in state:
            require_int(state[WEIGHTS_SEQ_NO], f"{where}[{WEIGHTS_SEQ_NO!r}]")
        if RL_MODULE_STATE in state:
            self.module.check_weights(
                single_module_weights(state[RL_MODULE_STATE]), f"{where}[{RL_MODULE_STATE!r}]"
            )
        if "metrics" in state:
            MetricsLogger.check_state(
                state["metrics"], f"{where}['metrics']", self.config.stats_cls_lookup
            )
        for key, component in (
            ("exploration", self.exploration),
            ("connector_state", self._env_to_module),
        ):
            if state.get(key) is not None and component is not None:
                check_loads(component, state[key], f"{where}[{key!r}]")
        if "tasks" in state and not isinstance(state["tasks"], list):
            raise StateError(
                f"{where}['tasks']", f"expected a list, got {type(state['tasks']).__name__}"
            )
        if "sampling" in state:
            check_sampling_state(state["sampling"], f"{where}['sampling']")

    def set_state(self, state: dict) -> None:
        """Takes back what `get_state()` returned (any subset of its keys), after `check_state`:
        a state that does not fit raises `StateError` and changes nothing."""
        self.check_state(state)
        if "rng" in state:
            set_generator_state(self._rng, state["rng"])
        if RL_MODULE_STATE in state and weights_are_new(self, state):
            self.module.set_weights(single_module_weights(state[RL_MODULE_STATE]))
        if "global_timestep" in state:
            self.global_timestep = state["global_timestep"]
        if "connector_state" in state:
            self.set_connector_state(state["connector_state"])
        set_connector_components(self, state)
        if "exploration" in state:
            self.exploration.set_state(state["exploration"])
        if "metrics" in state:
            self.metrics.set_state(state["metrics"])
            self._ended_episodes.clear()  # ended before the state was taken: in it already
        if "tasks" in state and self.env is not None:
            self.set_tasks(state["tasks"])  # before the sub-envs' own state, which may refine it
        if "sampling" in state and self.env is not None:
            self._restore_sampling(state["sampling"])

    def _sampling_state(self) -> dict:
        """The sampling part of this runner's state (`runners/sampling_state.py`)."""
        return capture_sampling_state(self)

    def _restore_sampling(self, state: dict) -> None:
        """Puts the sampling part of a state back (`runners/sampling_state.py`)."""
        restore_sampling_state(self, state)

    # -- weights -------------------------------------------------------------------------------
    def set_weights(
        self,
        weights: dict[str, np.ndarray],
        global_timestep: int | None = None,
        connector_state: dict | None = None,
    ) -> None:
        self.module.set_weights(weights)
        if global_timestep is not None:
            self.global_timestep = global_timestep
        self.set_connector_state(connector_state)

    def get_weights(self) -> dict[str, np.ndarray]:
        return self.module.get_weights()

    def apply(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`func(self, *args, **kwargs)`: RLlib's way to run code on a runner (what
        `EnvRunnerGroup.foreach_env_runner` sends)."""
        return func(self, *args, **kwargs)

    def make_module(self) -> None:
        """Builds the runner's policy module anew from its config (fresh weights: the next
        weight sync brings the learner's)."""
        assert self.spaces is not None, "__init__ sets the spaces"
        self.module = self.config.build_module(
            self.spaces, seed=self.config.seed, inference_only=True
        )

    @property
    def callbacks(self) -> Any:
        """RLlib's older name (the old stack's `worker.callbacks`): this process's callback
        object, or a list of them when several classes are configured."""
        return old_worker_callbacks(self._callbacks.instances)

    @property
    def num_env_steps_sampled_lifetime(self) -> int:
        """Env steps this runner has sampled over its life."""
        return self.num_env_steps_stepped

    #: RLlib's `env_runners(episodes_to_numpy=)`: episodes always come back as numpy here.
    episodes_to_numpy = True

    def sample_get_state_and_metrics(
        self, **sample_kwargs: Any
    ) -> tuple[list[SingleAgentEpisode], dict | None, dict]:
        """`sample()`, then the connector state and the metrics, in one call (RLlib's, for
        asynchronous algorithms)."""
        episodes = self.sample(**sample_kwargs)
        return episodes, self.get_connector_state(), self.get_metrics()

    def ping(self) -> str:
        return "pong"

    def get_spaces(self) -> dict[str, tuple[gym.Space, gym.Space]]:
        """RLlib's spaces dict: "__env__" (the vector env's batched spaces, when this runner has
        envs), "__env_single__" (one sub-env's spaces) and the module's id (the module's
        observation space, after the env-to-module connectors, and the action space)."""
        assert self.spaces is not None, "__init__ sets the spaces"
        env_spaces = self.env_spaces
        if self._env_to_module is not None:
            module_observation_space = _output_observation_space(self._env_to_module)
        elif env_spaces is not None:
            module_observation_space = env_spaces[0]
        else:
            module_observation_space = self.spaces.observation_space()
        spaces = {DEFAULT_MODULE_ID: (module_observation_space, self.spaces.action_space())}
        if env_spaces is not None:
            spaces[INPUT_ENV_SINGLE_SPACES] = (env_spaces[0], env_spaces[1])
        if self.env is not None:
            spaces[INPUT_ENV_SPACES] = (self.env.observation_space, self.env.action_space)
        return spaces

    def assert_healthy(self) -> None:
        """Raises `AssertionError` unless this runner has its envs (RLlib's health check; its
        module always exists here; the worker processes answer `ping()`)."""
        if self.env is None:
            raise AssertionError(
                f"EnvRunner {self.worker_index} is not healthy: it has no env "
                "(stopped, or a local runner without "
                "create_env_on_local_worker)"
            )

    def pid(self) -> int:
        return os.getpid()

    # -- sampling ----------------------------------------------------------------------------
    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list[SingleAgentEpisode]:
        """Steps the env and returns episodes.

        - `num_timesteps` (counted over all sub-envs): unfinished episodes are cut and returned
          as chunks and continue next call (as RLlib does, whatever the `batch_mode`).
        - `num_episodes`: starts fresh episodes and returns exactly that many finished ones.
        - Neither: `rollout_fragment_length` steps per sub-env. With
          `batch_mode="complete_episodes"`, only complete episodes: every sub-env starts a fresh
          episode, and once that many steps are sampled no new episode starts while the running
          ones play out, so each episode's start and end events fire within this call.
        """
        samples = self._sample_call(
            num_timesteps, num_episodes, explore, random_actions, force_reset
        )
        for episode in samples:
            episode.drop_temporary_timestep_data()
        return samples

    def _records_each_step(self) -> bool:
        """Whether the rollout loop gives every episode its object, which gets each step as
        it is taken: per-sub-env restarts (in this process or in "async" mode's children)
        drop it and count its steps, a recurrent module reads its state from it,
        observations (the env's or the pipeline's) that are Dict / Tuple fit no column, or an episode under way already has steps in its chunk
        (restored from a state taken in the middle of a call, e.g. by a callback), or one
        that an `on_episode_step` callback reads is not a `LiveEpisode`. Otherwise episodes
        are made from the columns when they end or are cut (an `on_episode_step` callback
        reads `LiveEpisode`s of the columns)."""
        pipeline = self._recording_pipeline
        module_obs = self._obs if pipeline is None else self._module_obs
        if (
            self._module_to_env is not None  # its pieces read the episodes at every step
            or self._guarded
            or self._child_guarded
            or self._uses_stateful_module()
            or type(module_obs) is not np.ndarray
            or type(self._obs) is not np.ndarray
        ):
            return True
        live = self._callbacks.has("on_episode_step")
        for record in self._sub_env_records:
            if record.cut_from is not None:  # continues from its last chunk, at its end
                continue
            episode = record.episode
            if (
                episode is None
                or (live and not record.awaiting_reset and not isinstance(episode, LiveEpisode))
                or record.idle
                or episode.t != episode.t_started
                or episode.observations.lookback
                or len(episode.observations.data) != (0 if record.awaiting_reset else 1)
            ):
                return True
        return False

    def _sample_columnar(
        self,
        num_timesteps: int,
        explore: bool,
        *,
        random_actions: bool = False,
        num_episodes: int | None = None,
        complete: bool = False,
    ) -> list[SingleAgentEpisode]:
        """The rollout loop over a `ColumnRecorder` (`runners/rollout.py`), which records by
        column; while it runs, a NaN check names the step of its episode a sub-env took."""
        recorder = ColumnRecorder(self, num_timesteps, num_episodes)
        self._episode_step_of = recorder.episode_step
        try:
            return collect_rollout(
                self,
                recorder,
                num_timesteps,
                explore,
                random_actions=random_actions,
                num_episodes=num_episodes,
                complete=complete,
            )
        finally:
            self._episode_step_of = None

    def _create_episode(self, env_index: int, restored: SingleAgentEpisode | None = None) -> None:
        """A new, empty episode for a sub-env (fires `on_episode_created`), or the `restored`
        one from a checkpoint, which continues without events."""
        if restored is not None:
            episode = restored
        elif self._callbacks.has("on_episode_step"):  # read by column while it runs
            episode = LiveEpisode.empty(env_index)
        else:
            episode = SingleAgentEpisode(env_index=env_index)
        episode._env_runner = self
        record = self._sub_env_records[env_index]
        record.start(episode, self._event_kwargs(env_index, episode))
        if restored is None and self._callbacks.has("on_episode_created"):
            self._callbacks.fire_with("on_episode_created", record.event_kwargs)

    def _event_kwargs(self, env_index: int, episode: SingleAgentEpisode | None) -> dict:
        """The keyword arguments of an episode's callback events."""
        return {
            "episode": episode,
            "env_runner": self,
            "metrics_logger": self.metrics,
            "env": self.env,
            "rl_module": self.module,
            "env_index": env_index,
        }

    def _begin_episode(
        self, env_index: int, observation: Any, infos: dict, *, fire_start: bool = True
    ) -> None:
        """Logs the reset observation into the sub-env's episode and runs the pipeline over
        it; fires `on_episode_start` (unless `fire_start` is False: the caller fires it)."""
        record = self._sub_env_records[env_index]
        episode = record.episode
        assert episode is not None, "_create_episode() comes first"
        episode.add_env_reset(observation, infos)
        if self._module_frames is not None:
            self._module_frames.start(env_index)
        if self._recording_pipeline is not None:
            self._to_module([episode], [env_index])
        if fire_start and self._callbacks.has("on_episode_start"):
            self._callbacks.fire_with("on_episode_start", record.event_kwargs)

    def _reset_all(self) -> None:
        """Fresh episodes in every sub-env: created -> reset -> start."""
        for i in range(self.num_envs):
            self._create_episode(i)
        obs, infos = self._try_env_reset(seed=self._env_seed)
        self._env_seed = None  # seed once; later resets continue the sub-envs' own RNGs
        for record in self._sub_env_records:
            record.child_autoreset = False
        self._obs = obs
        per_env_infos = sub_env_infos(self.env, infos, self.num_envs)
        if self._child_guarded:
            take_child_failures(self, per_env_infos)  # fresh episodes: nothing to drop
        obs_rows = unbatch(obs, self.num_envs)
        for i in range(self.num_envs):
            self._begin_episode(i, obs_rows[i], per_env_infos[i])
        for record in self._sub_env_records:
            record.awaiting_reset = False
            record.idle = False
        self._needs_reset = False
        if self._guarded:
            recover_sub_envs(self)

    def _uses_stateful_module(self) -> bool:
        """Whether the module is a recurrent torch module (its view's `stateful`), computed
        once per module object."""
        module = self.module
        if module is not self._stateful_for:
            self._stateful_for = module
            self._stateful = module.framework == "torch" and bool(
                getattr(module, "stateful", False)
            )
        return self._stateful

    def _recurrent_forward(self, obs_batch: np.ndarray, explore: bool) -> tuple[Any, list]:
        """One step of a recurrent module: the distribution inputs and, per sub-env, the state
        out (recorded with the step as `Columns.STATE_OUT`, as RLlib does)."""
        states, prev_actions, prev_rewards = step_inputs(
            self.module, [record.episode for record in self._sub_env_records]
        )
        # A module that draws in its forward (DreamerV3's latent states) draws from a seed of
        # this runner's generator: seeded runs and restored runners draw alike.
        seed = (
            int(self._rng.integers(2**63))
            if getattr(self.module, "draws_in_forward", False)
            else None
        )
        dist_inputs, state_out = self.module.dist_inputs_and_state(
            obs_batch,
            states,
            explore=explore,
            prev_actions=prev_actions,
            prev_rewards=prev_rewards,
            **({} if seed is None else {"seed": seed}),
        )
        return dist_inputs, [tree_rows(state_out, i) for i in range(self.num_envs)]

    def _step_actions(
        self, observations: Any, explore: bool, random_actions: bool
    ) -> tuple[np.ndarray, Any, np.ndarray, Any, list | None, dict[str, np.ndarray] | None]:
        """The actions for every sub-env given the module's `observations`: (actions, the
        env's actions, their log-probabilities, the distribution inputs, per sub-env the
        recurrent state after this step (None for a stateless module), and the module's other
        outputs by key, one row per sub-env (RLlib's extra model outputs: a user's module's
        "my_value"; None for none, `trainer.core.extra_outputs`)). Random actions are
        the env's action space's draws, with log-probability 0, the space seeded from this
        runner's generator (so seeded and restored runners draw alike); the module still runs,
        so that a recurrent state follows the episode and an episode that goes on from random
        to the module's actions records its distribution inputs at every step."""
        env = self.env
        assert env is not None, _SAMPLING_HAS_ENV
        module = self.module
        stateful = self._uses_stateful_module()
        spaces = self.spaces
        assert spaces is not None, "__init__ sets the spaces"
        obs_batch = spaces.preprocess(observations)
        state_rows: list | None = None
        extras: dict[str, np.ndarray] | None = None
        if stateful:
            dist_inputs, state_rows = self._recurrent_forward(obs_batch, explore)
            extras = getattr(module, "module_extras", None)
        elif module.framework is None:  # a numpy module: one forward for every phase
            dist_inputs = module.dist_inputs(obs_batch)
        else:  # a torch module's view: forward_exploration or forward_inference
            dist_inputs = module.dist_inputs(obs_batch, explore=explore)
            extras = getattr(module, "module_extras", None)
        if random_actions:
            env.action_space.seed(int(self._rng.integers(2**63)))
            actions = env.action_space.sample()
            env_actions = actions
            if spaces.action_layout is not None:  # a composite space: flat rows recorded
                actions = spaces.action_layout.flatten(actions)
            logp = np.zeros(self.num_envs, dtype=np.float32)
        else:
            acted = None if stateful else getattr(module, "module_acted", None)
            if self._module_to_env is not None:
                dist_inputs, acted, extras = self._module_to_env_outputs(
                    dist_inputs, acted, extras, explore
                )
            if acted is not None:  # the module (or a piece) drew them itself (RLlib's ACTIONS)
                actions, logp = acted
            else:
                actions, logp = self.exploration.get_exploration_action(
                    action_distribution=ActionDistribution(module.dist, dist_inputs, self._rng),
                    timestep=self.global_timestep,
                    explore=explore,
                )
            config = self.config
            env_actions = module.to_env_actions(
                actions, normalize=config.normalize_actions, clip=config.clip_actions
            )
        return actions, env_actions, logp, dist_inputs, state_rows, extras

    def _module_to_env_outputs(
        self,
        dist_inputs: Any,
        acted: tuple[Any, Any] | None,
        extras: dict[str, np.ndarray] | None,
        explore: bool,
    ) -> tuple[np.ndarray, tuple[Any, Any] | None, dict[str, np.ndarray] | None]:
        """The config's module-to-env pieces (RLlib's pipeline, in front of its default
        pieces) over the module's outputs: `Columns.ACTION_DIST_INPUTS`, `Columns.ACTIONS`
        / `Columns.ACTION_LOGP` of a module that acted itself and its other outputs (`extras`;
        torch tensors for a torch module, as RLlib's pieces get them), with every sub-env's
        episode (a new, empty one for a sub-env about to reset). Returns the distribution
        inputs they leave, the (actions, log-likelihoods) in the batch (a piece's
        `Columns.ACTION_LOGP`, else the distribution's) or None (the actions are then drawn as
        without pieces), and the other outputs they leave (recorded as the module's)."""
        module = self.module
        torch_module = module.framework == "torch"
        # One episode per sub-env, as RLlib's EnvRunner passes them: a sub-env whose episode
        # just ended (its next step resets it) has a new, empty one.
        episodes = [
            record.episode or record.cut_from or SingleAgentEpisode()
            for record in self._sub_env_records
        ]
        assert self._module_to_env is not None, "called only with module-to-env pieces"
        out = self._module_to_env(
            rl_module=getattr(module, "rl_module", module),
            batch=for_pieces(dist_inputs, acted, torch_module, extras),
            episodes=episodes,
            explore=explore,
            shared_data={},
            metrics=self.metrics,
        )
        layout = self.spaces.action_layout if self.spaces is not None else None
        left, acted, extras = pieces_left(
            out, torch_module, module.dist, layout, rows=self.num_envs
        )
        if left is None:
            raise missing_dist_inputs("the batch")
        return left, acted, extras

    def _finish_episode(self, record: SubEnvRecord) -> None:
        """The episode under way in `record` ended: fires `on_episode_end` (with its earlier
        chunks) and notes its return, length and duration for the metrics."""
        episode, prev_chunks = record.episode, record.prev_chunks
        assert episode is not None, _RECORD_HAS_EPISODE
        record.prev_chunks = []
        if self._callbacks.has("on_episode_end"):
            self._callbacks.fire_with(
                "on_episode_end", {**record.event_kwargs, "prev_episode_chunks": prev_chunks}
            )
        episode_return, episode_len = with_earlier_chunks(
            episode.get_return(), len(episode), prev_chunks
        )
        self._note_ended(episode, episode_return, episode_len)

    def _note_ended(
        self, episode: SingleAgentEpisode, episode_return: float, episode_len: int
    ) -> None:
        """Notes an ended episode's return, length (earlier chunks included) and duration
        for the metrics, and the old API's per-episode data."""
        self._ended_episodes.append((episode_return, episode_len, episode.get_duration_s()))
        if episode._old is not None:
            self._log_old_episode_data(episode._old, self.config.metrics_num_episodes_for_smoothing)

    def _log_episode_metrics(self) -> None:
        """Logs the return, length and duration of the episodes ended since the last call:
        one `log_values` per metric, not seven `log_value` calls per episode."""
        if not self._ended_episodes:
            return
        returns, lengths, durations = (
            list(column) for column in zip(*self._ended_episodes, strict=True)
        )
        self._ended_episodes.clear()
        # RLlib's window: the configured one shared by the runners, whose windows the
        # Algorithm's logger merges.
        window = max(
            1,
            math.ceil(
                self.config.metrics_num_episodes_for_smoothing / (self.config.num_env_runners or 1)
            ),
        )
        log = self.metrics.log_values
        log(EPISODE_RETURN_MEAN, returns, window=window)
        log(EPISODE_RETURN_MIN, returns, reduce="min", window=window)
        log(EPISODE_RETURN_MAX, returns, reduce="max", window=window)
        log(EPISODE_LEN_MEAN, lengths, window=window)
        log(EPISODE_LEN_MIN, lengths, reduce="min", window=window)
        log(EPISODE_LEN_MAX, lengths, reduce="max", window=window)
        log(EPISODE_DURATION_SEC_MEAN, durations, window=window)

    def _log_old_episode_data(self, old: dict, window: int) -> None:
        """The old API's per-episode `custom_metrics` (scalars: mean/min/max over the smoothing
        window, as RLlib's old stack reported them) and `hist_data` (lists: this iteration's
        values) into the metrics."""
        log = self.metrics.log_value
        for key, value in old["custom_metrics"].items():
            log(("custom_metrics", f"{key}_mean"), value, window=window)
            log(("custom_metrics", f"{key}_min"), value, reduce="min", window=window)
            log(("custom_metrics", f"{key}_max"), value, reduce="max", window=window)
        for key, values in old["hist_data"].items():
            # One item per episode, so that merging runners keeps each episode's values
            # together (`old_api.flatten_hist_stats` joins them for the results).
            values = values if isinstance(values, (list, tuple, np.ndarray)) else [values]
            log(("hist_stats", key), list(values), reduce="item_series")

    def _log_sample_metrics(self, steps: int, episodes: int) -> None:
        self._log_episode_metrics()
        log = self.metrics.log_value
        # Per sample() call (RLlib's "sum" starts over at each reduce) and lifetime counts.
        log(NUM_ENV_STEPS_SAMPLED, steps, reduce="sum")
        log(NUM_ENV_STEPS_SAMPLED_LIFETIME, steps, reduce="lifetime_sum", with_throughput=True)
        log(NUM_EPISODES, episodes, reduce="sum")
        log(NUM_EPISODES_LIFETIME, episodes, reduce="lifetime_sum")
        for key, value in self.exploration.get_info().items():
            log(key, value, window=1)

    def get_metrics(self) -> dict:
        """This runner's metrics reduced, as RLlib's `EnvRunner.get_metrics()`: a nested dict
        of `Stats` for the Algorithm's `MetricsLogger.aggregate()` (`check()` and
        `MetricsLogger.peek_results()` read their values). Per-call counters (`num_episodes`,
        `num_env_steps_sampled`) start over."""
        return self.metrics.reduce()

    def sample_with_metrics(
        self, **sample_kwargs: Any
    ) -> tuple[list[SingleAgentEpisode], dict, dict | None]:
        """`sample()`, `get_metrics()` and the state of stateful env-to-module connectors (for
        the group to merge) in one request: one round trip per iteration."""
        return self.sample(**sample_kwargs), self.get_metrics(), self.get_connector_state()

    def sample_metrics_only(self, **sample_kwargs: Any) -> dict:
        """`sample()`, returning only `get_metrics()` (evaluation needs no episodes)."""
        self.sample(**sample_kwargs)
        return self.get_metrics()

    def stop(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None


#: RLlib's name of the single-agent EnvRunner (`ray.rllib.env.single_agent_env_runner`).
SingleAgentEnvRunner = EnvRunner


def check_sample_request(runner: Any, num_timesteps: int | None, num_episodes: int | None) -> None:
    """Raises `SampleRequestError` for a `sample()` request that cannot be met (both counts,
    or a count that is not an int >= 0), and RuntimeError for a runner without env."""
    name = type(runner).__name__
    if num_timesteps is not None and num_episodes is not None:
        raise SampleRequestError(
            f"{name}.sample(num_timesteps={num_timesteps}, num_episodes={num_episodes}): "
            "give at most one of them"
        )
    for setting, count in (("num_timesteps", num_timesteps), ("num_episodes", num_episodes)):
        if count is not None and (not isinstance(count, int) or count < 0):
            raise SampleRequestError(f"{name}.sample({setting}={count!r}): a count of 0 or more")
    if runner.env is None:
        raise RuntimeError(
            f"{name} {runner.worker_index} has no env: with num_env_runners > 0 the local "
            "EnvRunner does not sample unless "
            ".env_runners(create_env_on_local_worker=True); the worker processes do"
        )
