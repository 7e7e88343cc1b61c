"""`RLlibCallback`: the hooks a user overrides to inject code into training.

Every hook is keyword-only, takes `**kwargs` (so new arguments never break old callbacks) and does
nothing by default. Their keyword-only parameters are what each event passes: the table
`callbacks.signatures` checks configured callbacks against (keep them in step with the firing
sites). Algorithm-side hooks run in the main process; EnvRunner-side hooks run inside each
EnvRunner process, on instances created there from the cloudpickled class, so instance attributes
are per-runner state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from trainer.compat.old_callbacks import warn_once

if TYPE_CHECKING:
    import gymnasium as gym

    from trainer.env.envs import EnvContext
    from trainer.env.episode import SingleAgentEpisode
    from trainer.env.multi_agent_episode import MultiAgentEpisode
    from trainer.metrics.metrics_logger import MetricsLogger

#: The objects that fire the events, as the hooks' arguments name them: the `Algorithm`, an
#: `EnvRunner` and the `EnvRunnerGroup`. They sit above this layer (each imports it), so their
#: classes are not imported here, not even for the type checker; and they are `Any`, not a
#: protocol, so that a callback may annotate its override's argument with the class itself
#: (`algorithm: Algorithm`), as RLlib's callbacks do.
AlgorithmArgument: TypeAlias = Any
EnvRunnerArgument: TypeAlias = Any
EnvRunnerGroupArgument: TypeAlias = Any

#: Events fired in the main process, on the Algorithm.
ALGORITHM_EVENTS = (
    "on_algorithm_init",
    "on_train_result",
    "on_evaluate_start",
    "on_evaluate_end",
    "on_evaluate_offline_start",
    "on_evaluate_offline_end",
    "on_env_runners_recreated",
    "on_checkpoint_loaded",
)
#: Events fired inside each EnvRunner (in its worker process, or in the main process when
#: `num_env_runners=0`).
ENV_RUNNER_EVENTS = (
    "on_environment_created",
    "on_episode_created",
    "on_episode_start",
    "on_episode_step",
    "on_episode_end",
    "on_sample_end",
    "on_sub_environment_created",
)
EVENTS = ALGORITHM_EVENTS + ENV_RUNNER_EVENTS


def _never_fired(method: Callable[..., None]) -> Callable[..., None]:
    """Marks one of `RLlibCallback`'s no-ops for events nothing fires under that name: a
    subclass's override is what `trainer.compat.old_callbacks` looks for."""
    method.__localrl_base_no_op__ = True  # type: ignore[attr-defined]
    return method


class RLlibCallback:
    """Base class for callbacks; subclass it and override the events you need.

    The constructor takes no arguments: the class (not an instance) goes into
    `config.callbacks(MyCallbacks)`, and every process makes its own instance.
    """

    # ----------------------------------------------------------------------------------------
    # Algorithm-bound events (main process).
    # ----------------------------------------------------------------------------------------
    def on_algorithm_init(
        self,
        *,
        algorithm: AlgorithmArgument,
        metrics_logger: MetricsLogger | None = None,
        **kwargs: Any,
    ) -> None:
        """Fires once, at the end of `Algorithm.__init__`, after the EnvRunners are up and the
        first weights were sent to them. May change the algorithm (for example set weights)."""

    def on_train_result(
        self,
        *,
        algorithm: AlgorithmArgument,
        metrics_logger: MetricsLogger | None = None,
        result: dict,
        **kwargs: Any,
    ) -> None:
        """Fires at the end of every `Algorithm.train()`, before the result is returned.
        May mutate `result` in place: the caller sees the changes."""

    def on_evaluate_start(
        self,
        *,
        algorithm: AlgorithmArgument,
        metrics_logger: MetricsLogger | None = None,
        **kwargs: Any,
    ) -> None:
        """Fires at the start of `Algorithm.evaluate()`, before evaluation EnvRunners sample."""

    def on_evaluate_end(
        self,
        *,
        algorithm: AlgorithmArgument,
        metrics_logger: MetricsLogger | None = None,
        evaluation_metrics: dict,
        **kwargs: Any,
    ) -> None:
        """Fires at the end of `Algorithm.evaluate()`. May mutate `evaluation_metrics`: the
        changes show in the returned results."""

    def on_evaluate_offline_start(
        self,
        *,
        algorithm: AlgorithmArgument,
        metrics_logger: MetricsLogger | None = None,
        **kwargs: Any,
    ) -> None:
        """Fires at the start of `Algorithm.evaluate_offline()` (an offline algorithm's loss on
        recorded data, `evaluation(offline_evaluation_interval=...)`)."""

    def on_evaluate_offline_end(
        self,
        *,
        algorithm: AlgorithmArgument,
        metrics_logger: MetricsLogger | None = None,
        evaluation_metrics: dict,
        **kwargs: Any,
    ) -> None:
        """Fires at the end of `Algorithm.evaluate_offline()`. May mutate
        `evaluation_metrics`: the changes show in the returned results."""

    def on_env_runners_recreated(
        self,
        *,
        algorithm: AlgorithmArgument,
        env_runner_group: EnvRunnerGroupArgument | None,
        env_runner_indices: list[int],
        is_evaluation: bool,
        **kwargs: Any,
    ) -> None:
        """Fires once per recovery, in the main process, after failed EnvRunner processes were
        restarted and re-synced; `env_runner_indices` are exactly the restarted ones.
        `env_runner_group` is None for a recovery while the group is still being built."""

    def on_checkpoint_loaded(
        self,
        *,
        algorithm: AlgorithmArgument,
        metrics_logger: MetricsLogger | None = None,
        **kwargs: Any,
    ) -> None:
        """Fires after `restore_from_path` / `from_checkpoint` loaded a checkpoint's state into
        the algorithm and pushed it to every EnvRunner. Not fired by saving. `metrics_logger`
        goes only to callbacks that can take it (RLlib passes `algorithm` alone)."""

    # ----------------------------------------------------------------------------------------
    # EnvRunner-bound events (inside each EnvRunner).
    # ----------------------------------------------------------------------------------------
    def on_environment_created(
        self,
        *,
        env_runner: EnvRunnerArgument,
        metrics_logger: MetricsLogger | None = None,
        env: gym.vector.VectorEnv,
        env_context: EnvContext,
        **kwargs: Any,
    ) -> None:
        """Fires when an EnvRunner has created its vector env (`gymnasium.vector.SyncVectorEnv`),
        before the first reset. May configure the sub-envs (`env.envs[i]`)."""

    def on_episode_created(
        self,
        *,
        episode: SingleAgentEpisode | MultiAgentEpisode,
        env_runner: EnvRunnerArgument | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: gym.Env | None = None,
        rl_module: Any = None,
        env_index: int,
        **kwargs: Any,
    ) -> None:
        """Fires when a new episode object exists, before its sub-env is reset. The episode is
        still empty; a good place to initialise `episode.custom_data`. (Episodes are
        `SingleAgentEpisode`s, or `MultiAgentEpisode`s on multi-agent envs, in every episode
        event.)"""

    def on_episode_start(
        self,
        *,
        episode: SingleAgentEpisode | MultiAgentEpisode,
        env_runner: EnvRunnerArgument | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: gym.Env | None = None,
        rl_module: Any = None,
        env_index: int,
        **kwargs: Any,
    ) -> None:
        """Fires after the sub-env was reset and the first observation was logged into
        `episode` (after the env-to-module pieces rewrote it, as in RLlib)."""

    def on_episode_step(
        self,
        *,
        episode: SingleAgentEpisode | MultiAgentEpisode,
        env_runner: EnvRunnerArgument | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: gym.Env | None = None,
        rl_module: Any = None,
        env_index: int,
        **kwargs: Any,
    ) -> None:
        """Fires after every env step was logged into `episode`, the episode's final step
        included, and the env-to-module pieces rewrote its observation (as in RLlib: the
        episode holds what the module gets). May add data to the episode (`custom_data`,
        temporary timestep data)."""

    def on_episode_end(
        self,
        *,
        episode: SingleAgentEpisode | MultiAgentEpisode,
        prev_episode_chunks: list[SingleAgentEpisode] | list[MultiAgentEpisode] | None = None,
        env_runner: EnvRunnerArgument | None = None,
        metrics_logger: MetricsLogger | None = None,
        env: gym.Env | None = None,
        rl_module: Any = None,
        env_index: int,
        **kwargs: Any,
    ) -> None:
        """Fires once per episode, after its final (terminated or truncated) step was logged
        and `on_episode_step` ran for it. `episode` is the last chunk; `prev_episode_chunks`
        holds the earlier chunks of the same episode returned by previous `sample()` calls."""

    def on_sample_end(
        self,
        *,
        env_runner: EnvRunnerArgument | None = None,
        metrics_logger: MetricsLogger | None = None,
        samples: list[SingleAgentEpisode] | list[MultiAgentEpisode],
        **kwargs: Any,
    ) -> None:
        """Fires last in `EnvRunner.sample()`, with the list of episodes about to be returned.
        May mutate `samples` (drop or edit episodes) in place."""

    def on_sub_environment_created(
        self,
        *,
        worker: Any,
        sub_environment: gym.Env,
        env_context: EnvContext,
        env_index: int | None = None,
        **kwargs: Any,
    ) -> None:
        """RLlib's older event (use `on_environment_created`): fires after each sub-env was
        created, before the first reset, and again for a sub-env re-created after a failure."""

    # ----------------------------------------------------------------------------------------
    # Events RLlib 2.60's class still defines that nothing here fires (no-ops, as there).
    # ----------------------------------------------------------------------------------------
    @_never_fired
    def on_workers_recreated(
        self,
        *,
        algorithm: AlgorithmArgument,
        worker_set: EnvRunnerGroupArgument | None,
        worker_ids: list[int],
        is_evaluation: bool,
        **kwargs: Any,
    ) -> None:
        """RLlib's older name of `on_env_runners_recreated`: an override fires there, with
        `worker_set` the EnvRunnerGroup and `worker_ids` the restarted indices."""

    @_never_fired
    def on_offline_eval_runners_recreated(
        self,
        *,
        algorithm: AlgorithmArgument,
        offline_eval_runner_group: Any,
        offline_eval_runner_indices: list[int],
        **kwargs: Any,
    ) -> None:
        """Never fires here: offline evaluation runs in the driver, with no runner processes to
        recreate. An override gets a warning saying so."""

    @_never_fired
    def on_create_policy(self, *, policy_id: str, policy: Any) -> None:
        """RLlib's old-stack event; never fires here (there are no Policy objects). An override
        gets a warning saying so."""

    @_never_fired
    def on_postprocess_trajectory(
        self,
        *,
        worker: Any,
        episode: Any,
        agent_id: Any,
        policy_id: str,
        policies: dict,
        postprocessed_batch: Any,
        original_batches: dict,
        **kwargs: Any,
    ) -> None:
        """RLlib's old-stack event; never fires here (edit episodes in `on_episode_end`)."""

    @_never_fired
    def on_learn_on_batch(
        self, *, policy: Any, train_batch: Any, result: dict, **kwargs: Any
    ) -> None:
        """RLlib's old-stack event; never fires here (see `on_sample_end`, `on_train_result`)."""


def make_multi_callbacks(callback_class_list: list[type]) -> type[RLlibCallback]:
    """Returns one callback class that calls the classes' methods in list order, for every
    event: instances of each class are created together with the combined instance."""
    warn_once("make_multi_callbacks([A, B])", "config.callbacks([A, B])")
    return _combined(callback_class_list, "make_multi_callbacks")


def MultiCallbacks(callback_class_list: list[type]) -> type[RLlibCallback]:  # noqa: N802
    """RLlib's oldest spelling, `MultiCallbacks([A, B])`: the same as `make_multi_callbacks`."""
    warn_once("MultiCallbacks([A, B])", "config.callbacks([A, B])")
    return _combined(callback_class_list, "MultiCallbacks")


def _combined(callback_class_list: list[type], caller: str) -> type[RLlibCallback]:
    classes = list(callback_class_list)
    for cls in classes:
        if not isinstance(cls, type):
            raise TypeError(
                f"{caller}: expected classes (subclasses of RLlibCallback), got "
                f"{cls!r} of type {type(cls).__name__}"
            )

    class MultiCallbacks(RLlibCallback):
        #: The classes combined (`config.callbacks()` checks their handlers' signatures).
        combined_classes = tuple(classes)

        def __init__(self) -> None:
            super().__init__()
            self._callback_list = [cls() for cls in classes]

    def _forward(event: str) -> Callable[..., None]:
        def call_all(self: MultiCallbacks, **kwargs: Any) -> None:
            for callback in self._callback_list:
                getattr(callback, event)(**kwargs)

        call_all.__name__ = event
        return call_all

    for event in EVENTS:
        setattr(MultiCallbacks, event, _forward(event))
    MultiCallbacks.__qualname__ = "MultiCallbacks[" + ", ".join(c.__name__ for c in classes) + "]"
    return MultiCallbacks
