"""`EnvRunnerGroup`: starts the remote EnvRunners, samples from them, and applies the
fault-tolerance settings when one fails. This is where a crashed runner is restarted
(`handle_failures` -> `restart_policy.decide` -> `_restart`).

The group talks to its runners only through a `RunnerPool` of `RunnerHandle`s started by a
`RunnerBackend` (`trainer.runners.handle`): worker processes here (`ProcessBackend`), and any
other backend that implements those two interfaces.

With `num_env_runners=0` the group holds one local EnvRunner that samples in the main process.
With N > 0 it starts N remote runners (indices 1..N) in parallel and keeps a local EnvRunner
without env (index 0), as RLlib does, so `foreach_env_runner(..., local_env_runner=True)` answers
from the main process too. The local runner always holds the latest weights: a restarted
process is re-synced from it.

Failure states of a remote runner, as the group sees them (see `trainer.errors`):
- crashed: its process exited or was killed (noticed on the next read, or while idle by
  `collect_exited`);
- timeout: no answer within the wait's timeout (`sample_timeout_s` for sampling); it is killed;
- exception: env code or the runner raised (`EnvRunnerError`), or a callback did
  (`CallbackError`); the process is killed, since its episodes may be half-stepped.
`handle_failures` then restarts, ignores or raises, per `fault_tolerance()`.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import cloudpickle

from trainer import named_objects
from trainer.callbacks import CallbackError
from trainer.capabilities import OLD_API_STACK, RAY_INTERNALS
from trainer.compat.old_names import OldEnvRunnerGroupNames
from trainer.core.models import DEFAULT_MODULE_ID, RL_MODULE_STATE, SpaceInfo
from trainer.core.nn import weights_set_later
from trainer.env.envs import EnvCreator, make_env_creator
from trainer.errors import (
    EnvRunnerCrashed,
    EnvRunnerTimeout,
    NoHealthyEnvRunners,
    RunnerStateRejected,
)
from trainer.runners import protocol, restart_policy
from trainer.runners.async_requests import AsyncRequestsMixin
from trainer.runners.env_runner import EnvRunner
from trainer.runners.handle import RunnerBackend, RunnerHandle
from trainer.runners.pool import Failure, RunnerPool
from trainer.runners.process_runner import ProcessBackend
from trainer.runners.ray_runner import RayBackend
from trainer.runners.runner_class import env_runner_class
from trainer.runners.worker_forkserver import prestart_template
from trainer.util.import_paths import resolve_import_path
from trainer.util.pickling import travel_dumps
from trainer.util.rllib_members import refuse

if TYPE_CHECKING:
    from trainer.algorithms.algorithm_config import AlgorithmConfig

logger = logging.getLogger("trainer")

#: Longest wait for a worker process to start (import, build its env, answer).
STARTUP_TIMEOUT_S = 120.0


class FailureReport(NamedTuple):
    """What `EnvRunnerGroup.take_failure_report()` returns: the failures and restarts since
    the previous report, wherever they were handled (in an iteration or round, or in a call
    between them), so that each is reported once."""

    #: Each failed runner's latest failure, as text, by index.
    failures: dict[int, str]
    #: The runners restarted, in index order.
    restarted: list[int]
    #: The first line of every failure, in the order they were handled (a runner that failed
    #: twice is there twice).
    headlines: list[str]


def failure_kind(error: BaseException) -> str:
    """ "crashed", "timeout", "exception" or "callback"."""
    return "callback" if isinstance(error, CallbackError) else getattr(error, "kind", "failure")


def _add_note(error: BaseException, note: str) -> None:
    if hasattr(error, "add_note"):  # Python 3.11+
        error.add_note(note)


def call_with_deadline(
    func: Callable[[], Any], timeout_s: float | None, *, worker_index: int, method: str
) -> Any:
    """`func()` in this thread, raising `EnvRunnerTimeout` (with the stack where it was) if it
    has not returned after `timeout_s`. A SIGALRM timer interrupts it, so this bounds only calls
    made in the main thread of a process whose SIGALRM is not taken (elsewhere `func` runs
    unbounded); a hang inside C code that never returns to Python is not interrupted."""
    if (
        not timeout_s
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
        or signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN, None)
    ):
        return func()

    def expire(signum: int, frame: Any) -> None:
        stack = "\n".join(
            f'File "{f.filename}", line {f.lineno} in {f.name}'
            for f in reversed(traceback.extract_stack(frame)[-8:])
        )
        raise EnvRunnerTimeout(worker_index, method, timeout_s, stack)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return func()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _headline(text: str) -> str:
    """A failure's first line, for results and repeated warnings; one that announces what
    follows ("It was in:", a timeout's stack) keeps the next line too (the innermost frame)."""
    lines = text.splitlines()
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {lines[1].strip()}"
    return lines[0]


def _call_method(name: str, runner: EnvRunner, **kwargs: Any) -> Any:
    return getattr(runner, name)(**kwargs)


def _call_reporting_tasks(
    func: Callable, runner: EnvRunner, **kwargs: Any
) -> tuple[Any, list | None]:
    """Runs in a worker: `func`'s result and the runner's tasks after it."""
    return func(runner, **kwargs), runner.get_tasks()


#: The config class `EnvRunnerGroup(config=None or a dict)` builds: RLlib's AlgorithmConfig,
#: which lives in the algorithms layer above this one, so it is named by its import path.
DEFAULT_CONFIG_CLASS = "trainer.algorithms.algorithm_config:AlgorithmConfig"


def _group_config(
    config: AlgorithmConfig | dict | None, num_env_runners: int | None
) -> AlgorithmConfig:
    """RLlib's `EnvRunnerGroup(config=...)`: None (a default AlgorithmConfig), a config dict,
    or a config; `num_env_runners` (if given) overrides the config's, on a copy."""
    resolved: AlgorithmConfig
    if config is None:
        resolved = resolve_import_path(DEFAULT_CONFIG_CLASS)()
    elif isinstance(config, dict):
        resolved = resolve_import_path(DEFAULT_CONFIG_CLASS).from_dict(config)
    else:
        resolved = config
    if num_env_runners is not None and num_env_runners != resolved.num_env_runners:
        resolved = resolved.copy(copy_frozen=False).env_runners(num_env_runners=num_env_runners)
    return resolved


#: What the EnvRunners of a torch module import: the worker template imports it once (about
#: 1.5 s of CPU) instead of each worker and each restart.
TORCH_PRELOAD = ("torch", "trainer.torch_rl.runner_view")
#: What the main process of a torch config imports while it waits for the worker template
#: (`prestart_template`'s `meanwhile`): the torch modules its Algorithm builds next. (Not
#: torch._dynamo, ~1 s of CPU, which torch.optim's first use imports: the default optimizer
#: of a torch learner is built on its first use, see `trainer.torch_rl.learner`.)
TORCH_MAIN_PRELOAD = ("trainer.torch_rl.runner_view",)


def prestart_workers(config: AlgorithmConfig) -> None:
    """Starts the worker template ahead of the EnvRunner processes of a torch `config`, with
    torch imported (`worker_forkserver.prestart_template`): called first thing in a build, so
    that the template's imports (~1.5 s of CPU) run while the main process imports its own
    torch and validates the config, and the main process imports the torch modules of its
    Algorithm if it then still has to wait for them. Nothing for a numpy config, Ray actors
    or no remote runners."""
    remote = config.num_env_runners > 0 or config.evaluation_num_env_runners > 0
    if remote and config.backend != "ray" and config.runners_import_torch:
        prestart_template(TORCH_PRELOAD, meanwhile=TORCH_MAIN_PRELOAD)


def backend_for(config: AlgorithmConfig) -> RunnerBackend:
    """The backend `env_runners(backend=...)` names: worker processes, or Ray actors."""
    if config.backend == "ray" and config.num_env_runners > 0:
        return RayBackend(config)
    return ProcessBackend(preload=worker_preload(config))


def worker_preload(config: AlgorithmConfig) -> tuple[str, ...]:
    """What the worker template imports before it forks a config's runners, so that each
    runner does not import it again when its `Init` unpickles the config: the config's own
    module where it is one of this package's (a user's module may not import outside the
    user's process: a runner imports it itself), and torch for a torch config."""
    config_module = type(config).__module__
    own = (config_module,) if config_module.startswith("trainer.") else ()
    return (*(TORCH_PRELOAD if config.runners_import_torch else ()), *own)


def _group_env_creator(config: AlgorithmConfig) -> EnvCreator:
    """The env creator of the config's env (`config.env`), which a group built without
    `env_creator` needs."""
    if config.env is None:
        raise ValueError(
            "EnvRunnerGroup(config=...): the config has no env; set it "
            "with config.environment(env) or give env_creator="
        )
    return make_env_creator(config.env)


def learns_without_env(config: Any) -> bool:
    """Whether `config` is an offline algorithm's (BC, MARWIL, CQL, IQL) without an env: its
    networks are built for `environment(observation_space=..., action_space=...)` and it trains
    from recorded data. Its group is the local EnvRunner alone, without env (RLlib builds no
    EnvRunners for an offline algorithm): it holds the inference module, and no runner
    processes start whatever `num_env_runners` says."""
    return (
        config.env is None
        and config.env_runner_cls is None
        and bool(getattr(config, "_LEARNS_OFFLINE", False))
    )


def _weights_fully_synced(config: AlgorithmConfig) -> bool:
    """Whether a weight sync overwrites every parameter of a runner's networks: true of this
    package's EnvRunner and modules (`set_weights` takes exactly the module's parameters), not
    known of a user's EnvRunner subclass that overrides `set_weights` or of a config that
    builds its own module."""
    runner_cls = env_runner_class(config)
    return getattr(runner_cls, "set_weights", None) is EnvRunner.set_weights and type(
        config
    ).build_module.__module__.startswith("trainer.")


@refuse(
    "ray.rllib.env.env_runner_group.EnvRunnerGroup",
    OLD_API_STACK,
    "RLlib's old API stack (Policy objects on RolloutWorkers); the new stack's modules are "
    "reached with foreach_env_runner(lambda runner: runner.module)",
    "add_policy",
    "foreach_policy",
    "foreach_policy_to_train",
    "is_policy_to_train",
)
@refuse(
    "ray.rllib.env.env_runner_group.EnvRunnerGroup",
    RAY_INTERNALS,
    "it works on Ray actor handles (replacing the group's runners, serving RLlib's state "
    "server for aggregator actors); the runners here are worker processes the group starts "
    "itself (add_workers() adds more; sync_env_runner_states() merges and broadcasts states)",
    "reset",
    "get_merged_env_runner_state",
)
class EnvRunnerGroup(AsyncRequestsMixin, OldEnvRunnerGroupNames):
    """The EnvRunners of one algorithm (or of its evaluation). Built by the Algorithm, or by
    hand as RLlib's: `EnvRunnerGroup(config=config)` (a config or config dict; the env comes
    from `config.env` unless `env_creator` is given; `num_env_runners` overrides the config's).
    RLlib's other arguments are accepted: `local_env_runner` (the local runner always exists
    here: restarted runners are synced from it), `validate_env`, `default_policy_class`,
    `logdir` and `pg_offset` (old-stack and Ray/Tune placement arguments, unused by RLlib's new
    stack as here); `tune_trial_id` is every runner's (`EnvRunner.tune_trial_id`, as in RLlib:
    the Algorithm gives its `trial_id`); `_setup=False` builds the group without any runner.
    `weights_synced_at_start`: the caller syncs weights to every runner right after this group
    is built, before anything uses them (the Algorithm does, from its learner); the remote
    runners then skip their networks' random initialisation."""

    def __init__(
        self,
        config: AlgorithmConfig | dict | None = None,
        env_creator: EnvCreator | None = None,
        *,
        validate_env: Callable | None = None,
        default_policy_class: Any = None,
        local_env_runner: bool = True,
        logdir: str | None = None,
        _setup: bool = True,
        tune_trial_id: str | None = None,
        pg_offset: int = 0,
        num_env_runners: int | None = None,
        on_recreated: Callable[[list[int]], None] | None = None,
        backend: RunnerBackend | None = None,
        weights_synced_at_start: bool = False,
    ):
        """Builds the group in steps: its config and env creator (`_group_config`,
        `_group_env_creator`), its bookkeeping (`_init_async`, `_init_failure_records`), then
        its runners: the local one alone (`num_env_runners=0`), or the remote ones first
        (`_start_remote_runners`, whose first reply gives the spaces), then the local one
        (`_build_local_runner`), then the failures of those that did not start."""
        config = _group_config(config, num_env_runners)
        without_env = learns_without_env(config)
        if without_env:
            config = _group_config(config, 0)
        if env_creator is None and _setup:
            env_creator = _group_env_creator(config)
        self._init_async()
        #: Remote replies dropped because a call's timeout passed (RLlib's counter).
        self._num_env_runners_dropped_lifetime = 0
        self.config = config
        #: Where sampled episodes are recorded (`offline_data(output=...)`; the Algorithm
        #: sets it on its training group), else None.
        self.recorder: Any = None
        self._tune_trial_id = tune_trial_id
        self._skip_initial_weights = weights_synced_at_start and _weights_fully_synced(config)
        self._env_creator = env_creator
        self._backend = backend or backend_for(config)
        #: The remote runners: every send and gather goes through it.
        self.pool = RunnerPool()
        self._stopped = False
        #: Called with the indices of the runners restarted in one recovery.
        self.on_recreated = on_recreated
        #: Each remote runner's sub-env tasks, as last seen (envs with tasks only; see
        #: `trainer.env.curriculum`): a restarted runner is put back on them.
        self._tasks: dict[int, list] = {}
        self._init_failure_records()
        #: The spaces the module sees (None only in a group built with `_setup=False`).
        self.spaces: SpaceInfo | None = None
        #: The env's spaces (observation, action), before the env-to-module connectors.
        self.env_spaces: tuple | None = None
        #: The class each EnvRunner is made of (RLlib's attribute).
        self.env_runner_cls = env_runner_class(config)
        #: The runner in this process (index 0); None only with `_setup=False`.
        self.local_env_runner: EnvRunner | None
        if not _setup:  # RLlib's testing switch: a group without runners
            self.local_env_runner = None
            return
        num = config.num_env_runners
        if num == 0:
            self._build_local_runner(num, create_env=not without_env)
            return
        replies, failures = self._start_remote_runners(num)
        first = replies[min(replies)]
        self.spaces, self.env_spaces = first["spaces"], first["env_spaces"]
        self._tasks = {
            i: reply["tasks"] for i, reply in replies.items() if reply["tasks"] is not None
        }
        self._build_local_runner(num)
        if failures:
            # validate_env_runners_after_construction=False: the runners that did not start
            # are failures like any other, handled by the fault-tolerance settings.
            self.handle_failures(failures)

    def _init_failure_records(self) -> None:
        """`__init__`'s bookkeeping of failures and restarts: none yet."""
        self._restarts: Counter[int] = Counter()
        #: The iteration (see `begin_iteration`) and the runners restarted in it: a runner is
        #: restarted at most once per iteration (`restart_policy`).
        self._iteration = 0
        self._restarted_this_iteration: set[int] = set()
        #: Per runner: its last failure and the iterations in a row it failed that way.
        self._repeats: dict[int, restart_policy.Repeats] = {}
        #: The failures of this iteration, as text: whether it failed, for the streak of
        #: failed iterations (`result["fault_tolerance"]` reports `take_failure_report()`).
        self.iteration_failures: list[str] = []
        #: The latest failure of this iteration, the error itself: what `train()` raises when
        #: the failure turns out deterministic (`restart_policy.gives_up`).
        self.last_failure: BaseException | None = None
        #: Env steps `sample()` returned in this iteration (a training step that samples
        #: otherwise logs its own count; either one makes the iteration a sampling one).
        self.iteration_env_steps = 0
        self.failures_by_kind: Counter[str] = Counter()
        #: Env steps of failed sample requests (the most they could have held).
        self.num_env_steps_lost = 0
        #: Each runner's latest failure (its text), every failure's headline and the runners
        #: restarted, since the last `take_failure_report()`: kept across iterations, so a
        #: failure noticed outside an iteration or round (by the weight sync at its start, a
        #: probe, a `foreach_env_runner` call, a checkpoint between them) is still in the next
        #: one's report (a train() result, an evaluation round).
        self._unreported_failures: dict[int, str] = {}
        self._unreported_headlines: list[str] = []
        self._unreported_restarts: set[int] = set()
        #: Set by `set_background` (None until then: see `background`).
        self._background: bool | None = None

    def _start_remote_runners(self, num: int) -> tuple[dict[int, Any], dict[int, Failure]]:
        """Starts remote runners 1..`num` and returns their replies and failures (by index);
        raises, with every runner stopped, where one failed and the config validates the
        runners after construction, or where none started."""
        config = self.config
        started = time.perf_counter()
        try:
            replies, failures = self._start(
                list(range(1, num + 1)), recreated=False, timeout=STARTUP_TIMEOUT_S
            )
            if failures and (config.validate_env_runners_after_construction or not replies):
                raise failures[min(failures)]
        except BaseException:
            self.stop()
            raise
        logger.info(
            "started %d %sEnvRunner process%s in %.2f s (pids %s)",
            num,
            "evaluation " if config.in_evaluation else "",
            "es" if num > 1 else "",
            time.perf_counter() - started,
            ", ".join(str(reply["pid"]) for _, reply in sorted(replies.items())),
        )
        return replies, failures

    def _build_local_runner(self, num: int, *, create_env: bool = True) -> None:
        """The runner in this process (index 0), of a group of `num` remote runners: with
        none, it samples (its own env, its spaces the group's; without env, `create_env=False`,
        the config's spaces, see `learns_without_env`); else it has an env only with
        `create_env_on_local_worker`, and the spaces the remote runners reported."""
        config, runner_cls = self.config, self.env_runner_cls
        with self._initial_weights():
            if num == 0:
                self.local_env_runner = runner_cls(
                    config,
                    self._env_creator,
                    worker_index=0,
                    num_workers=0,
                    tune_trial_id=self._tune_trial_id,
                    **({} if create_env else {"create_env": False}),
                )
            else:
                self.local_env_runner = runner_cls(
                    config,
                    self._env_creator,
                    worker_index=0,
                    num_workers=num,
                    create_env=config.create_env_on_local_worker,
                    spaces=self.spaces,
                    env_spaces=self.env_spaces,
                    tune_trial_id=self._tune_trial_id,
                )
        if num == 0:
            self.spaces = self.local_env_runner.spaces

    def _initial_weights(self) -> contextlib.AbstractContextManager:
        """Where the local runner is built: its networks skip their random initialisation
        when the caller syncs weights to every runner right after the build (as the remote
        runners' do, see `_init_request`)."""
        return weights_set_later() if self._skip_initial_weights else contextlib.nullcontext()

    def _init_request(self, index: int, *, recreated: bool) -> protocol.Init:
        """The `Init` of runner `index`: its spec, each callback pickled on its own (so one
        that the runner cannot unpickle is reported by name, a `CallbackError`)."""
        spec = {
            "config": self.config,
            "env_creator": self._env_creator,
            "worker_index": index,
            "num_workers": self.config.num_env_runners,
            "spaces": self.spaces,
            "env_spaces": self.env_spaces,
            "recreated": recreated,
            "tune_trial_id": self._tune_trial_id,
            "named_objects": named_objects.client_settings(),
            "weights_set_later": self._skip_initial_weights and not recreated,
        }
        named = {id(obj): label for label, obj in self.config.callback_labels()}
        return protocol.Init(protocol.next_request_id(), list(sys.path), travel_dumps(spec, named))

    def _start(
        self,
        indices: list[int],
        *,
        recreated: bool,
        timeout: float,
        state_for: Callable[[int], dict] | None = None,
        state_timeout: float = 0.0,
    ) -> tuple[dict[int, Any], dict[int, Failure]]:
        """Starts the runners of `indices` together (one fork request for all: see
        `worker_forkserver`) and sends each its `Init`, so they build their EnvRunners in
        parallel; then `state_for(index)` and a ping to each.
        Returns the init replies and the failures. The init replies must come within
        `timeout`, the state's and ping's within `state_timeout` more.

        The runners start at normal priority, background ones too (`background`): this call
        waits for them, and in the idle class any other busy process on the machine would
        starve their start past `timeout`. Once ready they move to the background."""
        sent: list[int] = []
        failures: dict[int, Failure] = {}

        def init_request(index: int) -> protocol.Init:
            return self._init_request(index, recreated=recreated)

        for handle in self._backend.start_many(indices, first_request=init_request):
            self.pool.put(handle)
            if handle.has_pending():  # its Init went with the start
                sent.append(handle.worker_index)
        late = [index for index in indices if index not in sent]
        sent_now, failed_now = self.pool.send(late, init_request)
        sent += sent_now
        failures.update(failed_now)
        replies, init_failures = self.pool.gather(sent, timeout)
        failures.update(init_failures)
        if state_for is not None and replies:
            # The restored state, then a ping (RLlib's health probe, which an EnvRunner
            # subclass may override): a runner that answers both is ready to sample. Both
            # within one `state_timeout`.
            state_deadline = time.monotonic() + state_timeout

            def call_each_started(request: Any) -> None:
                ids = [i for i in replies if i not in failures]
                _, call_failures = self.pool.call(
                    ids, request, max(state_deadline - time.monotonic(), 0.01)
                )
                failures.update(call_failures)

            call_each_started(lambda index: protocol.call("set_state", state=state_for(index)))
            call_each_started(protocol.call("ping"))
        started = {i: reply for i, reply in replies.items() if i not in failures}
        if self.background:
            for index in started:
                self.pool[index].set_background(True)
        return started, failures

    # -- who is there ------------------------------------------------------------------------
    def healthy_env_runner_ids(self) -> list[int]:
        return self.pool.healthy_ids()

    def healthy_worker_ids(self) -> list[int]:
        """RLlib's other name of `healthy_env_runner_ids()`."""
        return self.healthy_env_runner_ids()

    def num_healthy_remote_workers(self) -> int:
        return len(self.healthy_env_runner_ids())

    def num_remote_workers(self) -> int:
        return len(self.pool)

    def num_remote_env_runners(self) -> int:
        return len(self.pool)

    def num_healthy_remote_env_runners(self) -> int:
        return len(self.healthy_env_runner_ids())

    def num_healthy_env_runners(self) -> int:
        """The healthy runners, the local one included."""
        return int(self.local_env_runner is not None) + self.num_healthy_remote_env_runners()

    def num_healthy_workers(self) -> int:
        return self.num_healthy_env_runners()

    def probe_unhealthy_env_runners(self, timeout_seconds: float | None = None) -> list[int]:
        """Restarts the remote runners that failed and were left out: those waiting for the
        next iteration (failed again after their restart in this one) and, with
        `ignore_env_runner_failures`, any other the restart settings still allow. Each comes
        back as a new process synced from the local runner, started within `timeout_seconds`
        (default `env_runner_health_probe_timeout_s`). Returns the indices restored. The
        Algorithm calls this (through `restore_env_runners`) when each iteration starts, as
        RLlib does."""
        waiting = self._waiting()
        if not waiting:
            return []
        timeout = timeout_seconds or self.config.env_runner_health_probe_timeout_s
        return self._restart(waiting, timeout=timeout)

    def _waiting(self) -> list[int]:
        """The remote runners that failed and whose restart the settings still allow: left
        out until `probe_unhealthy_env_runners` restarts them (a failed runner that may be
        restarted now is restarted at once, in `handle_failures`)."""
        if not self.config.restart_failed_env_runners:
            return []
        budget = self.config.max_num_env_runner_restarts
        return [
            index
            for index, handle in sorted(self.pool.items())
            if not handle.healthy and self._restarts[index] < budget
        ]

    @property
    def background(self) -> bool:
        """Whether the remote runners run in the background (see `set_background`); until
        it is first called: evaluation runners in parallel to training do."""
        if self._background is None:
            config = self.config
            return bool(config.in_evaluation and config.evaluation_parallel_to_training)
        return self._background

    def set_background(self, background: bool) -> None:
        """Evaluation runners run in the background while a training step runs beside them:
        they take the cycles the training processes leave idle instead of slowing training.
        Whenever the algorithm waits on them (the end of a parallel round, `evaluate()`)
        they run at normal priority: there, in the idle class, any other busy process on the
        machine would starve them. Runners started later (restarts) follow the latest call."""
        self._background = background
        for _, handle in self.pool.items():
            if handle.is_alive():
                handle.set_background(background)

    def begin_iteration(self) -> None:
        """A new iteration (of `train()`, or an evaluation round) starts: each runner may be
        restarted once more in it."""
        self._iteration += 1
        self._restarted_this_iteration.clear()
        self.iteration_failures = []
        self.last_failure = None
        self.iteration_env_steps = 0

    def num_waiting_env_runners(self) -> int:
        """Remote runners left out until the next iteration restarts them."""
        return len(self._waiting())

    def num_remote_worker_restarts(self) -> int:
        return sum(self._restarts.values())

    def remote_pids(self) -> dict[int, int | None]:
        return {i: r.pid for i, r in self.pool.items()}

    def collect_exited(self) -> list[EnvRunnerCrashed]:
        """Runners that ended while idle (killed, crashed) since the last look, as failures."""
        return self.pool.collect_exited()

    def take_failure_report(self) -> FailureReport:
        """The failures `handle_failures` handled and the runners restarted since the last
        call; forgets them. Whoever reports failures per iteration or round (train()'s result,
        the evaluation rounds) reads them here, wherever they were noticed: in the iteration's
        or round's own requests, in the weight sync or probe that started it, or in a call
        made between two of them (`begin_iteration` does not clear this record)."""
        report = FailureReport(
            self._unreported_failures,
            sorted(self._unreported_restarts),
            self._unreported_headlines,
        )
        self._unreported_failures, self._unreported_headlines = {}, []
        self._unreported_restarts = set()
        return report

    # -- failures and restarts ---------------------------------------------------------------
    def handle_failures(self, failures: dict[int, Failure]) -> list[int]:
        """Applies `fault_tolerance()` to runners that just failed (`restart_policy.decide`):
        restarts those it may now (and re-syncs them), leaves those restarted once in this
        iteration already out until the next one (a warning names each, with how many
        iterations in a row it failed the same way), goes on without those it gives up on with
        `ignore_env_runner_failures`, and otherwise raises the failure (with a note on why it
        was not restarted). Returns the restarted indices. Raises `NoHealthyEnvRunners` when
        none is left, neither healthy nor waiting."""
        if not failures:
            return []
        to_restart = []
        for index, error in sorted(failures.items()):
            kind = failure_kind(error)
            self.failures_by_kind[kind] += 1
            self.pool[index].kill()
            # The text, not the error (here and below): a kept log record or result must not
            # keep the error's traceback, and through it this group, alive.
            text = str(error)
            headline = _headline(text) if text else repr(error)
            self._unreported_failures[index] = text or repr(error)
            self._unreported_headlines.append(headline)
            self.iteration_failures.append(headline)
            self.last_failure = error
            previous = self._repeats.get(index, restart_policy.Repeats())
            repeats = restart_policy.repeats(
                previous, restart_policy.signature(kind, error), self._iteration
            )
            self._repeats[index] = repeats
            if repeats.signature == previous.signature:
                # Logged in full before: its first line is enough to name it again.
                text = f"{headline} (as before, traceback above)"
            decision = restart_policy.decide(
                restart_policy.RunnerRecord(
                    self._restarts[index], index in self._restarted_this_iteration
                ),
                restart_policy.Settings.from_config(self.config),
            )
            if decision.action == restart_policy.RESTART:
                logger.warning("%s Restarting it.", text)
                to_restart.append(index)
            elif decision.action == restart_policy.WAIT:
                same = (
                    f" It failed the same way in {repeats.iterations} iterations in a row."
                    if repeats.iterations > 1
                    else ""
                )
                logger.warning(
                    "%s EnvRunner %d is left out until the next iteration: %s.%s",
                    text,
                    index,
                    decision.reason,
                    same,
                )
            elif self.config.ignore_env_runner_failures:
                logger.warning(
                    "EnvRunner %d failed and is not restarted (%s); training goes on "
                    "with the others: %s",
                    index,
                    decision.reason,
                    str(error),
                )
            else:
                _add_note(error, f"EnvRunner {index} was not restarted: {decision.reason}.")
                raise error
        restarted = self._restart(to_restart) if to_restart else []
        if self.pool and not self.healthy_env_runner_ids() and not self._waiting():
            raise NoHealthyEnvRunners(
                f"no healthy EnvRunner is left (of {len(self.pool)}); last failure: "
                f"{failures[max(failures)]}"
            )
        return restarted

    def _restart(self, indices: list[int], timeout: float | None = None) -> list[int]:
        """New processes for `indices`, each synced from the local runner (weights, global
        timestep), put back on its sub-envs' tasks, starting within
        `env_runner_health_probe_timeout_s`, and taking its state and answering a ping within
        `env_runner_restore_timeout_s` more before it samples; fires `on_recreated` with those
        that came up. One that fails to come up counts as failing again."""
        delay = self.config.delay_between_env_runner_restarts_s
        if delay:
            time.sleep(delay)
        for index in indices:
            self._restarts[index] += 1
            self._restarted_this_iteration.add(index)
        self._forget_async(indices)
        local = local_runner_of(self)
        state = {
            RL_MODULE_STATE: local.get_weights(),
            "global_timestep": local.global_timestep,
            "connector_state": local.get_connector_state(),
        }

        def state_for(index: int) -> dict:
            tasks = self._tasks.get(index)
            return state if tasks is None else {**state, "tasks": tasks}

        _, failed = self._start(
            indices,
            recreated=True,
            state_for=state_for,
            timeout=timeout or self.config.env_runner_health_probe_timeout_s,
            state_timeout=self.config.env_runner_restore_timeout_s,
        )
        restarted = [index for index in indices if index not in failed]
        self._unreported_restarts.update(restarted)
        if restarted:
            logger.warning(
                "restarted EnvRunner%s %s",
                "s" if len(restarted) > 1 else "",
                ", ".join(map(str, restarted)),
            )
            if self.on_recreated is not None:
                self.on_recreated(restarted)
        return restarted + self.handle_failures(failed)

    # -- running code on the runners ---------------------------------------------------------
    def _timeout(self, timeout_seconds: float | None) -> float:
        return (
            timeout_seconds
            if timeout_seconds is not None
            else max(self.config.sample_timeout_s, 60.0)
        )

    def foreach_env_runner(
        self,
        func: Callable | str,
        *,
        local_env_runner: bool = True,
        remote_worker_ids: list[int] | None = None,
        timeout_seconds: float | None = None,
        kwargs: dict | None = None,
        healthy_only: bool = True,
        return_obj_refs: bool = False,
        mark_healthy: bool = False,
    ) -> list:
        """Calls `func(env_runner, **kwargs)` (or the EnvRunner method named `func`) on the local
        runner (first, if `local_env_runner`) and on every healthy remote runner (or those in
        `remote_worker_ids`), in index order; returns the results. Remote calls run in parallel,
        in the worker processes: `func` travels with cloudpickle, so lambdas work. A runner that
        fails is handled per `fault_tolerance()` (restarted, ignored, or its error raised) and
        gives no result; one that does not answer within `timeout_seconds` counts in
        `num_env_runners_dropped_lifetime()`. `healthy_only=False` includes runners left out
        after a failure whose process still runs; `mark_healthy` has nothing to do here (a
        failed runner is restarted or left out at once). With `return_obj_refs=True` the remote
        runners' results come as references to read with `ray.get` (ready ones: there is no
        object store, the results are here already; Ray's own on the "ray" backend), the local
        runner's as a value, as in RLlib."""
        kwargs = kwargs or {}
        results = []
        if local_env_runner and (self.local_env_runner is not None):
            if isinstance(func, str):
                results.append(getattr(self.local_env_runner, func)(**kwargs))
            else:
                results.append(func(self.local_env_runner, **kwargs))
        if remote_worker_ids is None:
            ids = (
                self.healthy_env_runner_ids()
                if healthy_only
                else [i for i, handle in sorted(self.pool.items()) if handle.is_alive()]
            )
        else:
            ids = [i for i in remote_worker_ids if i in self.pool]
        if not ids:
            return results
        self._settle_async(ids)
        if healthy_only:
            ids = [i for i in ids if i in self.healthy_env_runner_ids()]
        watch_tasks = bool(self._tasks)
        request: protocol.Call | protocol.Apply
        if isinstance(func, str) and not watch_tasks:
            request = protocol.call(func, **kwargs)
        else:
            if isinstance(func, str):
                func = partial(_call_method, func)
            if watch_tasks:
                # `func` may have changed tasks: each runner reports them with the result.
                func = partial(_call_reporting_tasks, func)
            request = protocol.apply(cloudpickle.dumps(func), **kwargs)
        replies, failures = self.pool.call(ids, request, self._timeout(timeout_seconds))
        self._num_env_runners_dropped_lifetime += sum(
            1 for failure in failures.values() if failure_kind(failure) == "timeout"
        )
        if watch_tasks:
            for index, (_, tasks) in replies.items():
                self._tasks[index] = tasks
            replies = {index: result for index, (result, _) in replies.items()}
        self.handle_failures(failures)
        remote_results = [replies[i] for i in ids if i in replies]
        if return_obj_refs:
            remote_results = self._backend.object_refs(remote_results)
        return results + remote_results

    def sync_weights(
        self,
        weights: dict | None = None,
        global_timestep: int | None = None,
        connector_state: dict | None = None,
        *,
        policies: Any = None,
        from_worker_or_learner_group: Any = None,
        to_worker_indices: list[int] | None = None,
        global_vars: dict | None = None,
        timeout_seconds: float | None = 0.0,
        inference_only: bool = False,
    ) -> None:
        """Sends `weights` (and the env steps sampled so far, for exploration schedules, and a
        merged env-to-module connector state) to every runner (or those of
        `to_worker_indices`). Remote runners apply them before their next request; a failure
        to apply surfaces with that request's reply. RLlib's form works too: without
        `weights`, they are taken from `from_worker_or_learner_group` (an EnvRunner or
        `algo.learner_group`; default: the local runner), and `global_vars["timestep"]` is the
        global timestep. (`policies`, `timeout_seconds` and `inference_only` change nothing:
        there is one module, the send does not wait, and runners hold the whole module.)"""
        if weights is None:
            source = from_worker_or_learner_group or local_runner_of(self)
            weights = source.get_weights()
            if isinstance(weights, dict) and isinstance(weights.get(DEFAULT_MODULE_ID), dict):
                weights = weights[DEFAULT_MODULE_ID]  # a learner group's {module id: weights}
        if global_timestep is None and global_vars:
            global_timestep = global_vars.get("timestep")
        if self.local_env_runner is not None and to_worker_indices is None:
            self.local_env_runner.set_weights(weights, global_timestep, connector_state)
        # A restarted runner gets these weights from the local one.
        self._broadcast(
            "set_weights",
            {
                "weights": weights,
                "global_timestep": global_timestep,
                "connector_state": connector_state,
            },
            ids=to_worker_indices,
        )

    def sync_env_runner_states(
        self,
        *,
        config: Any,
        from_worker: Any = None,
        env_steps_sampled: int | None = None,
        connector_states: list[dict] | None = None,
        rl_module_state: dict | None = None,
        env_runner_indices_to_update: list[int] | None = None,
        env_to_module: Any = None,
        module_to_env: Any = None,
    ) -> None:
        """RLlib's state sync after a training step: the module's weights (`rl_module_state`:
        `{"rl_module": {"default_policy": weights}}` as RLlib passes it, or the weights; else
        those of `from_worker`, default the local runner), the global env-step count
        (`env_steps_sampled`) and the env-to-module connectors' states (`connector_states`,
        merged) go to the local runner and the remote runners (all, or
        `env_runner_indices_to_update`). `config`, `env_to_module` and `module_to_env` are
        accepted as RLlib's (this group's config and pipelines are used)."""
        if rl_module_state:
            weights = rl_module_state.get(RL_MODULE_STATE, rl_module_state)
            if isinstance(weights.get(DEFAULT_MODULE_ID), dict):
                weights = weights[DEFAULT_MODULE_ID]
        else:
            weights = (from_worker or local_runner_of(self)).get_weights()
        connector_state = None
        pipeline = self.local_env_runner.env_to_module if self.local_env_runner else None
        if connector_states and pipeline is not None:
            connector_state = pipeline.merge_states([c for c in connector_states if c])
        global_timestep = None if env_steps_sampled is None else int(env_steps_sampled)
        if self.local_env_runner is not None:
            self.local_env_runner.set_weights(weights, global_timestep, connector_state)
        self._broadcast(
            "set_weights",
            {
                "weights": weights,
                "global_timestep": global_timestep,
                "connector_state": connector_state,
            },
            ids=env_runner_indices_to_update,
        )

    def _broadcast(self, method: str, kwargs: dict, ids: list[int] | None = None) -> None:
        """Calls `method(**kwargs)` on every healthy remote runner (of `ids`), the request
        pickled once; each applies it before its next request (the reply is read with that
        one's)."""
        if not self.pool:
            return
        self._settle_async()
        healthy = self.healthy_env_runner_ids()
        targets = healthy if ids is None else [i for i in ids if i in healthy]
        self.handle_failures(self.pool.broadcast(targets, protocol.call(method, **kwargs)))

    def _sample_locally(self, explore: bool | None) -> Any:
        """The local runner's sample (num_env_runners=0), bounded by `sample_timeout_s` like a
        remote one: an env that hangs raises `EnvRunnerTimeout` with where it hung (see
        `call_with_deadline`), and the runner starts fresh episodes on its next sample."""
        local = local_runner_of(self)
        try:
            return call_with_deadline(
                partial(local.sample_with_metrics, explore=explore),
                self.config.sample_timeout_s,
                worker_index=0,
                method="sample",
            )
        except EnvRunnerTimeout:
            local.abandon_episodes()  # its episodes stopped mid-step
            raise

    def get_runner_states(self, timeout_seconds: float | None = None) -> dict[int, dict]:
        """Worker index -> `EnvRunner.get_state()` without weights (the learner holds them), for
        the local runner (0) and every healthy remote runner."""
        ids = self.healthy_env_runner_ids()
        states = self.foreach_env_runner(
            lambda runner: (runner.worker_index, runner.get_state(include_weights=False)),
            remote_worker_ids=ids,
            timeout_seconds=timeout_seconds,
        )
        return dict(states)

    def set_runner_states(
        self,
        states: dict[int, dict],
        timeout_seconds: float | None = None,
        *,
        strict: bool = False,
        prefix: str = "env_runner_",
    ) -> None:
        """Gives each runner its state from `states` (keyed by worker index); runners without an
        entry keep theirs. A runner that fails is handled per `fault_tolerance()`; with `strict`
        (a restore), its failure is then raised as `RunnerStateRejected` naming
        `<prefix><index>`, so the restore can be rolled back."""
        if 0 in states and self.local_env_runner is not None:
            try:
                self.local_env_runner.set_state(states[0])
            except Exception as error:
                if strict:
                    raise RunnerStateRejected(f"{prefix}0", error) from error
                raise
        self._settle_async()
        ids = [i for i in self.healthy_env_runner_ids() if i in states]
        _, failures = self.pool.call(
            ids,
            lambda index: protocol.call("set_state", state=states[index]),
            self._timeout(timeout_seconds),
        )
        for index in ids:
            # A runner that refused its state is restarted on the tasks it had.
            if "tasks" in states[index] and index not in failures:
                self._tasks[index] = states[index]["tasks"]
        if strict and failures:
            index = min(failures)
            try:
                self.handle_failures(failures)  # restart them, so the rollback reaches them
            except Exception as error:  # noqa: BLE001 - the state's failure is the one to raise
                logger.warning("after a runner refused its restored state: %s", error)
            raise RunnerStateRejected(f"{prefix}{index}", failures[index])
        self.handle_failures(failures)

    def sample(self, *, min_env_steps: int, explore: bool | None = None) -> tuple[list[Any], list]:
        """Samples from every runner (in parallel, in rounds) until at least `min_env_steps`
        env steps were collected; returns the episodes and each call's `get_metrics()`, in
        runner order within a round. A runner that fails costs only its request in flight: the
        others' samples are kept, it is handled per `fault_tolerance()`, and the next round
        includes it again if it was restarted."""
        episodes: list[Any] = []  # SingleAgentEpisodes, or a multi-agent group's MultiAgentEpisodes
        runner_metrics: list = []
        connector_states: list = []
        steps = 0
        # A multi-agent batch counts what count_steps_by says (agent steps: one per acting
        # agent and env step).
        by_agents = self.config.is_multi_agent and self.config.count_steps_by == "agent_steps"
        while steps < min_env_steps:
            if not self.pool:
                replies = {0: self._sample_locally(explore)}
            else:
                self._settle_async()
                self.handle_failures({e.worker_index: e for e in self.collect_exited()})
                ids = self.healthy_env_runner_ids()
                if not ids and self._waiting():
                    break  # every runner failed twice in this iteration: return what it gave
                if not ids:
                    raise NoHealthyEnvRunners("no healthy EnvRunner is left to sample from")
                request = protocol.call("sample_with_metrics", explore=explore)
                replies, failures = self.pool.call(ids, request, self.config.sample_timeout_s)
                request_size = (
                    self.config.get_rollout_fragment_length() * self.config.num_envs_per_env_runner
                )
                self.num_env_steps_lost += request_size * len(failures)
                self._num_env_runners_dropped_lifetime += sum(
                    1 for failure in failures.values() if failure_kind(failure) == "timeout"
                )
                self.handle_failures(failures)
            for index in sorted(replies):
                batch, metrics, connector_state = replies[index]
                episodes.extend(batch)
                if self.recorder is not None:
                    self.recorder.record(index, batch)
                runner_metrics.append(metrics)
                if connector_state is not None:
                    connector_states.append(connector_state)
                steps += sum(ep.agent_steps() if by_agents else len(ep) for ep in batch)
        self.iteration_env_steps += steps
        if connector_states:
            self._sync_connector_states(connector_states)
        return episodes, runner_metrics

    def merge_connector_states(self, states: list[dict]) -> dict:
        """Merges the runners' env-to-module connector states (a `MeanStdFilter`'s new
        observations) into the local runner's; returns the merged state, which each remote
        runner is to take before its next sample. Each runner's new observations are counted
        once: a runner's state starts collecting anew when it takes the merged one."""
        local = local_runner_of(self)
        if local.env_to_module is None:  # it is built with the runner's spaces
            raise RuntimeError(
                "the local EnvRunner has no env-to-module pipeline to merge the "
                "runners' connector states into"
            )
        merged = local.env_to_module.merge_states(states)
        local.set_connector_state(merged)
        return merged

    def _sync_connector_states(self, states: list[dict]) -> None:
        """`merge_connector_states`, the result sent to every remote runner, which applies
        it before its next request."""
        self._broadcast("set_connector_state", {"state": self.merge_connector_states(states)})

    def num_env_runners_dropped_lifetime(self) -> int:
        """Remote replies dropped since the group started because a call's timeout passed
        (`sample_timeout_s` in sampling; those runners were timeouts, see the module doc)."""
        return self._num_env_runners_dropped_lifetime

    def get_spaces(self) -> dict:
        """RLlib's spaces dict (`EnvRunner.get_spaces()`) of the first remote runner, or of the
        local runner when there is none."""
        ids = self.healthy_env_runner_ids()[:1]
        return self.foreach_env_runner(
            lambda runner: runner.get_spaces(), remote_worker_ids=ids, local_env_runner=not ids
        )[0]

    def foreach_env(self, func: Callable[[Any], Any]) -> list[list]:
        """`func(sub_env)` for every sub-env of every runner (the local one first, [] when it
        has no env): one list per runner (see `EnvRunner.foreach_env`)."""
        return self.foreach_env_runner(lambda runner: runner.foreach_env(func))

    def foreach_env_with_context(self, func: Callable[[Any, Any], Any]) -> list[list]:
        """`func(sub_env, env_context)` for every sub-env of every runner: one list per
        runner."""
        return self.foreach_env_runner(
            lambda runner: (
                []
                if runner.env is None
                else runner.foreach_sub_env(func, "foreach_env_with_context()")
            )
        )

    def add_workers(self, num_workers: int, validate: bool = False) -> None:
        """Starts `num_workers` more remote runners (the next indices), synced from the local
        runner before they sample. With `validate`, one that does not start raises; without,
        it is handled per `fault_tolerance()`."""
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"add_workers(num_workers={num_workers!r}): a count of 0 or more")
        if num_workers == 0:
            return
        first = max((index for index, _ in self.pool.items()), default=0) + 1
        indices = list(range(first, first + num_workers))
        if self.spaces is None and self.local_env_runner is not None:
            self.spaces = self.local_env_runner.spaces
            self.env_spaces = self.local_env_runner.env_spaces
        local = local_runner_of(self)
        state = {
            RL_MODULE_STATE: local.get_weights(),
            "global_timestep": local.global_timestep,
            "connector_state": local.get_connector_state(),
        }
        replies, failures = self._start(
            indices,
            recreated=False,
            timeout=STARTUP_TIMEOUT_S,
            state_for=lambda index: state,
            state_timeout=self.config.env_runner_restore_timeout_s,
        )
        for index, reply in replies.items():
            if reply.get("tasks") is not None:
                self._tasks[index] = reply["tasks"]
        if failures and validate:
            raise failures[min(failures)]
        self.handle_failures(failures)

    def remote_runner(self, index: int) -> RunnerHandle:
        """The handle on remote runner `index` (its `pid`, `is_alive()`, `kill()`)."""
        return self.pool[index]

    # -- shutdown ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Ends every worker process (politely, then by force) and closes the local env."""
        if self._stopped:
            return
        self._stopped = True
        self.pool.stop()
        local: EnvRunner | None = getattr(self, "local_env_runner", None)
        if local is not None:
            local.stop()


def local_runner_of(group: EnvRunnerGroup) -> EnvRunner:
    """`group.local_env_runner` of a group built with its runners (every group an Algorithm
    builds; only RLlib's `_setup=False` testing switch leaves it None)."""
    if group.local_env_runner is None:
        raise RuntimeError(
            "this EnvRunnerGroup was built with _setup=False: it has no local EnvRunner"
        )
    return group.local_env_runner


def spaces_of(group: EnvRunnerGroup) -> Any:
    """`group.spaces` of a group built with its runners (see `local_runner_of`): a
    `SpaceInfo`, or a multi-agent group's `{module_id: (observation space, action space)}`."""
    if group.spaces is None:
        raise RuntimeError("this EnvRunnerGroup was built with _setup=False: it has no spaces")
    return group.spaces
