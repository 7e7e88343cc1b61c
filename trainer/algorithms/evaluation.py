"""An Algorithm's evaluation: `EvaluationRounds` decides when a round runs and how (now, or in
parallel to the training step: on a thread, or thread-less), fires its callbacks and keeps the
evaluation runners' checkpoint state; `Evaluator` is the evaluation EnvRunners and one round on
them.

    Algorithm.train():  round = rounds.start_parallel(iteration)     (when due and parallel)
                        ... the training steps ...
                        metrics = rounds.finish(round)   or   rounds.evaluate()   (when due)
    Algorithm.evaluate():  rounds.evaluate()
        on_evaluate_start -> weights, env steps and connector state to the evaluation runners
        -> custom_evaluation_function(algorithm, group) or Evaluator.run() -> RLlib's older
        result keys added -> on_evaluate_end (may change the metrics) -> the metrics

The evaluation runners are an `EnvRunnerGroup` of their own, built from
`config.get_evaluation_config_object()` (the `evaluation_config` overrides applied,
`in_evaluation=True`). With `evaluation_num_env_runners=0` the single evaluation runner lives in
the main process. Worker processes run at lower CPU priority, so evaluation in parallel to training
takes the cycles training leaves idle.

How a round's duration is split (RLlib's rules):
- episodes: `duration // N` per runner, the remainder one each on the lowest indices;
- timesteps: `ceil(duration / N)` per runner (the total rounded up to a multiple of N);
- "auto" (parallel only): every runner samples small requests (1 episode, or
  `evaluation_auto_duration_min_env_steps_per_sample` timesteps, 100 by default) one after
  another until the training step ends; requests in flight then finish.

A runner that crashes, stalls past `evaluation_sample_timeout_s`, or raises in env or callback
code loses its part of the round (listed in `env_runner_failures`, as is one that fails in the
weight sync that starts the round, or between rounds); then the `fault_tolerance()`
settings apply as for training runners: it is restarted (`on_env_runners_recreated` fires with
`is_evaluation=True`), left out, or its error is raised. A round without any healthy runner is
skipped and says so.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from trainer.algorithms.checkpointing import runner_states
from trainer.compat.old_api import with_old_result_keys
from trainer.env.envs import make_env_creator
from trainer.errors import NoHealthyEnvRunners
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    MetricsLogger,
    add_episode_defaults,
)
from trainer.offline.recording import OfflineRecorder
from trainer.runners import protocol
from trainer.runners.env_runner_group import EnvRunnerGroup, learns_without_env, local_runner_of


class Evaluator:
    def __init__(
        self,
        config: Any,
        *,
        on_recreated: Callable[[list[int]], None] | None = None,
        tune_trial_id: str | None = None,
    ):
        self.config = config.get_evaluation_config_object()
        self.group = EnvRunnerGroup(
            self.config,
            make_env_creator(self.config.env),
            on_recreated=on_recreated,
            tune_trial_id=tune_trial_id,
        )
        self.metrics = MetricsLogger(root=True, stats_cls_lookup=self.config.stats_cls_lookup)
        self._auto_size: int | None = None  # "auto" request size of the thread-less rounds
        #: With `offline_data(output=...)`: the evaluation runners' episodes are recorded too
        #: (RLlib's evaluation runners are recording runners as well), so they come back with
        #: their metrics; otherwise only the metrics do.
        self.recorder = (
            OfflineRecorder(self.config, prefix="evaluation-run")
            if self.config.output is not None
            else None
        )
        self._sample = "sample_with_metrics" if self.recorder else "sample_metrics_only"

    # -- one round ---------------------------------------------------------------------------
    def run(self, stop: threading.Event | None = None) -> dict:
        """One evaluation round; returns `{"env_runners": {...}}` (plus `"skipped"` or
        `"env_runner_failures"` when runners were lost). `stop` ends an "auto" round."""
        ids, failed = self._round_runners()
        replies: list = []
        if not self.group.num_remote_workers():
            local = getattr(local_runner_of(self.group), self._sample)
            replies = [
                self._metrics_of(0, local(**request))
                for request in self._fixed_requests([0]).values()
            ]
        elif ids and self.config.evaluation_duration == "auto":
            replies = self._sample_auto(ids, stop, failed)
        elif ids:
            replies = self._sample_fixed(self._fixed_requests(ids), failed)
        return self._results(replies, failed)

    def begin(self) -> Callable[[], dict]:
        """Sends one round's requests and returns at once with the function that collects the
        round (RLlib's `_evaluation_parallel_to_training_wo_thread`: no thread; the runners
        sample while the caller trains). An "auto" round is one request per runner, sized from
        the previous such round: doubled if every runner had answered by collection time,
        halved if one had not, within `evaluation_auto_duration_min/max_env_steps_per_sample`
        (episodes: 1 to 16 per runner)."""
        ids, failed = self._round_runners()
        if not self.group.num_remote_workers() or not ids:
            return lambda: self.run()
        if self.config.evaluation_duration == "auto":
            requests = {i: self._auto_request(first=True, size=self._auto_size) for i in ids}
        else:
            requests = self._fixed_requests(ids)
        sent = self._send_requests(requests, failed)

        def collect() -> dict:
            if self.config.evaluation_duration == "auto":
                self._resize_auto(grow=all(self._has_answered(i) for i in sent))
            return self._results(self._gather_replies(sent, failed), failed)

        return collect

    def _round_runners(self) -> tuple[list[int], dict[int, Any]]:
        """The runners to send the round's requests to, and those found dead while idle (the
        round's first failures). The healthy ones are listed first: a runner that dies between
        the two looks is then among the dead ones, not silently missing from both (one that
        dies later fails its request)."""
        ids = self.group.healthy_env_runner_ids()
        failed: dict[int, Any] = {e.worker_index: e for e in self.group.collect_exited()}
        return [i for i in ids if i not in failed], failed

    def _metrics_of(self, index: int, reply: Any) -> dict:
        """Runner `index`'s metrics from its reply, its episodes recorded where they came."""
        if self.recorder is None:
            return reply
        episodes, metrics, _ = reply
        self.recorder.record(index, episodes)
        return metrics

    def _has_answered(self, index: int) -> bool:
        return self.group.pool.has_answered(index)

    def _results(self, replies: list, failed: dict[int, Any]) -> dict:
        if replies:
            self.metrics.aggregate(list(replies), key=ENV_RUNNER_RESULTS)
        results = self.metrics.compile()
        add_episode_defaults(results.setdefault(ENV_RUNNER_RESULTS, {}))
        try:
            self.group.handle_failures(failed)
        except NoHealthyEnvRunners:
            pass  # reported as skipped below; training goes on
        # Every failure since the last round's report, the group's record of them: the
        # round's own, and those the weight sync or probe that started the round handled
        # (a runner killed as the round starts fails there, and may be restarted already).
        report = self.group.take_failure_report()
        if report.failures:
            results["env_runner_failures"] = [report.failures[i] for i in sorted(report.failures)]
            results["env_runners_restarted"] = report.restarted
        if self.group.num_remote_workers() and not replies:
            results["skipped"] = (
                "no healthy evaluation EnvRunner is left"
                if not self.group.healthy_env_runner_ids()
                else "every evaluation EnvRunner failed in this round"
            )
        return results

    def _fixed_requests(self, ids: list[int]) -> dict[int, dict]:
        """Each runner's `sample()` arguments for a fixed duration: RLlib's split of the
        episodes or env steps, `duration // count` each and one more for the first
        `duration % count` runners (211 steps over 3: 71, 70, 70); a runner whose share is 0
        gets no request."""
        config = self.config
        duration, count = config.evaluation_duration, len(ids)
        shares = [duration // count + (1 if k < duration % count else 0) for k in range(count)]
        if config.evaluation_duration_unit == "episodes":
            request: dict[str, Any] = {}
            unit = "num_episodes"
        else:
            request = {"force_reset": config.evaluation_force_reset_envs_before_iteration}
            unit = "num_timesteps"
        return {
            i: {unit: share, **request} for i, share in zip(ids, shares, strict=True) if share > 0
        }

    def _read(self, index: int, failed: dict[int, Any]) -> list | None:
        """The reply of runner `index`, or None (its failure recorded) if it failed."""
        reply, failure = self.group.pool.read(index, self.config.evaluation_sample_timeout_s)
        if failure is not None:
            failed[index] = failure
        return reply

    def _sample_fixed(self, requests: dict[int, dict], failed: dict[int, Any]) -> list:
        return self._gather_replies(self._send_requests(requests, failed), failed)

    def _send_requests(self, requests: dict[int, dict], failed: dict[int, Any]) -> list[int]:
        """Sends each runner its `sample()` request; returns those that took it (the others'
        failures go into `failed`)."""
        sent, failures = self.group.pool.send(
            list(requests), lambda index: protocol.call(self._sample, **requests[index])
        )
        failed.update(failures)
        return sent

    def _gather_replies(self, sent: list[int], failed: dict[int, Any]) -> list:
        """The `get_metrics()` replies of `sent` in runner order (failures go into `failed`)."""
        replies, failures = self.group.pool.gather(sent, self.config.evaluation_sample_timeout_s)
        failed.update(failures)
        return [self._metrics_of(index, replies[index]) for index in sorted(replies)]

    def _auto_bounds(self) -> tuple[int, int]:
        """Smallest and largest "auto" request: env steps per runner, or episodes."""
        config = self.config
        if config.evaluation_duration_unit == "episodes":
            return 1, 16
        low = min(
            max(
                config.evaluation_auto_duration_min_env_steps_per_sample,
                config.num_envs_per_env_runner,
            ),
            config.evaluation_auto_duration_max_env_steps_per_sample,
        )
        return low, config.evaluation_auto_duration_max_env_steps_per_sample

    def _auto_request(self, *, first: bool, size: int | None = None) -> dict:
        """The `sample()` arguments of one "auto" request (`size` defaults to the smallest)."""
        size = size or self._auto_bounds()[0]
        if self.config.evaluation_duration_unit == "episodes":
            return {"num_episodes": size}
        request = {"num_timesteps": size}
        if first:
            request["force_reset"] = self.config.evaluation_force_reset_envs_before_iteration
        return request

    def _resize_auto(self, *, grow: bool) -> None:
        low, high = self._auto_bounds()
        size = self._auto_size or low
        self._auto_size = min(size * 2, high) if grow else max(size // 2, low)

    def _sample_auto(
        self, ids: list[int], stop: threading.Event | None, failed: dict[int, Any]
    ) -> list:
        pool = self.group.pool
        first = protocol.call(self._sample, **self._auto_request(first=True))
        pending, failures = pool.send(ids, first)
        failed.update(failures)
        replies = []
        while pending:
            # Wait for any reply; stop sending new requests once the training step has ended
            # (a standalone evaluate() sends one round).
            ready = pool.ready(pending, timeout=0.05)
            keep_going = stop is not None and not stop.is_set()
            if not ready and keep_going:
                continue
            for index in ready if keep_going else list(pending):
                pending.remove(index)
                reply = self._read(index, failed)
                if reply is None:
                    continue
                replies.append(self._metrics_of(index, reply))
                if stop is not None and not stop.is_set():
                    request = protocol.call(self._sample, **self._auto_request(first=False))
                    sent, failures = pool.send([index], request)
                    failed.update(failures)
                    pending.extend(sent)
        return replies

    # -- lifetime ----------------------------------------------------------------------------
    def sync_weights(
        self, weights: dict, global_timestep: int, connector_state: dict | None = None
    ) -> None:
        """The training weights and (merged) env-to-module connector state for the round."""
        self.group.sync_weights(
            weights, global_timestep=global_timestep, connector_state=connector_state
        )

    def stop(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()  # output_write_remaining_data
        self.group.stop()


class ThreadlessEvaluation:
    """A parallel evaluation round without a thread: its requests are out before the training
    step starts, `finish()` reads the replies after it (`Evaluator.begin`)."""

    def __init__(
        self, collect: Callable[[], dict], learner_threads: int, foreground: Callable[[], None]
    ):
        self._collect = collect
        self._foreground = foreground
        self._restore_blas_threads = limit_blas_threads(learner_threads)

    def finish(self) -> dict:
        self._restore_blas_threads()
        self._foreground()  # the algorithm now waits on the round's runners
        return self._collect()


def limit_blas_threads(num_threads: int) -> Callable[[], None]:
    """Caps this process's BLAS thread pools at `num_threads`; returns the function that puts
    them back. Does nothing when the pools are no larger already."""
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    if all(pool.num_threads <= num_threads for pool in controller.lib_controllers):
        return lambda: None
    limiter = controller.limit(limits=num_threads, user_api="blas")
    return limiter.restore_original_limits


def learner_blas_threads(num_evaluation_runners: int) -> int:
    """BLAS threads for the learner while evaluation runs in parallel: one core is left to
    each evaluation runner. A BLAS pool as large as the machine spins on every core between
    its calls, so background evaluation processes would get no cycles, and where the OS
    ignores their lower priority the pool's threads wait for each other behind them (measured
    in bench/evaluation.py)."""
    cores = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
    return max(1, cores - num_evaluation_runners)


class ParallelEvaluation:
    """An evaluation round on its own thread, while the training step runs in the main thread.

    The thread only talks to the evaluation runners' connections (the training runners' are
    the main thread's); results and errors are handed back by `finish()`. While the round
    runs, the main process's BLAS pools are capped at `learner_threads`."""

    def __init__(
        self,
        run: Callable[[threading.Event], dict],
        timeout_s: float,
        learner_threads: int,
        foreground: Callable[[], None],
    ):
        self._run_round = run
        self._foreground = foreground
        self._timeout_s = timeout_s
        self._stop = threading.Event()
        self._result: dict | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="localrl-evaluation", daemon=True)
        self._restore_blas_threads = limit_blas_threads(learner_threads)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._run_round(self._stop)
        except BaseException as error:  # handed to the main thread in finish()
            self._error = error

    def finish(self) -> dict:
        """Ends an "auto" round, waits for the round's last replies, returns its results."""
        self._stop.set()
        self._restore_blas_threads()
        self._foreground()  # the algorithm now waits on the round's runners
        # Every read in the round has its own timeout; this bound is a last resort.
        self._thread.join(timeout=self._timeout_s)
        if self._thread.is_alive():
            raise RuntimeError("the parallel evaluation round did not end in time")
        if self._error is not None:
            raise self._error
        return self._result or {}


class LocalRunnerEvaluation:
    """RLlib's `evaluate()` when no evaluation EnvRunners are configured (no
    `evaluation_interval`, `evaluation_num_env_runners=0`): the round samples on the training
    Algorithm's local EnvRunner, with its settings (as RLlib's `_evaluate_on_local_env_runner`
    does). That runner needs envs: `num_env_runners=0`, or `create_env_on_local_worker=True`.

    The round's metrics go to a logger of their own (swapped in on the runner while it samples),
    so evaluation episodes stay out of the training metrics and the other way round; the round
    starts fresh episodes and the next training sample starts fresh ones again."""

    def __init__(self, config: Any):
        self.config = config
        self.runner_metrics = MetricsLogger()
        self.metrics = MetricsLogger(root=True)

    @staticmethod
    def check_runner(runner: Any) -> None:
        """Raises RLlib's ValueError when the local EnvRunner has no env to evaluate on."""
        if runner.env is None:
            raise ValueError(
                "Can't evaluate on a local worker if this local worker does not have an "
                "environment! Try one of the following: 1) set `evaluation_interval` > 0 or "
                "`evaluation_num_env_runners` > 0 (evaluation EnvRunners of their own); 2) set "
                "`.env_runners(create_env_on_local_worker=True)` (the local EnvRunner gets envs "
                "to evaluate on)"
            )

    def run(self, runner: Any) -> dict:
        config = self.config
        duration = config.evaluation_duration
        if duration == "auto":  # only meaningful in parallel to training (refused there)
            duration = 10 if config.evaluation_duration_unit == "episodes" else 100
        training_metrics, runner.metrics = runner.metrics, self.runner_metrics
        try:
            if config.evaluation_duration_unit == "episodes":
                runner.sample(num_episodes=duration)
            else:
                runner.sample(
                    num_timesteps=duration,
                    force_reset=config.evaluation_force_reset_envs_before_iteration,
                )
            replies = [runner.get_metrics()]
        finally:
            runner.metrics = training_metrics
            # The sub-envs hold evaluation episodes now: training starts fresh ones.
            runner._needs_reset = True
        self.metrics.aggregate(replies, key=ENV_RUNNER_RESULTS)
        # Plain values, as the evaluation runners' rounds (`Evaluator._results`) and RLlib's
        # `evaluate()` (a peek of its logger) give, not the stats objects reduce() returns.
        results = self.metrics.compile()
        add_episode_defaults(results.setdefault(ENV_RUNNER_RESULTS, {}))
        return results


class EvaluationRounds:
    """An Algorithm's evaluation rounds (see the module docstring). The Evaluator is built with
    the Algorithm when `evaluation_interval` is set or `evaluation_num_env_runners` is above 0,
    else at the first round."""

    def __init__(self, algorithm: Any):
        self._algorithm = algorithm
        self.config = algorithm.config
        self.evaluator: Evaluator | None = None
        #: Rounds on the training local EnvRunner (no evaluation runners configured).
        self.local_round: LocalRunnerEvaluation | None = None
        #: Evaluation runner states from a checkpoint, for when the evaluation runners exist.
        self.pending_state: dict | None = None
        # RLlib's rule (`_should_create_evaluation_env_runners`): the evaluation runners are
        # built with the Algorithm when an interval is set or evaluation runners are asked for.
        if self.config.evaluation_interval or self.config.evaluation_num_env_runners > 0:
            self.evaluator = self._make_evaluator()

    def _built_evaluator(self) -> Evaluator:
        """The evaluator, which `_begin()` (or a state taken before it) has built by now."""
        if self.evaluator is None:
            raise RuntimeError("the evaluation runners are not built yet")
        return self.evaluator

    def _make_evaluator(self) -> Evaluator:
        algorithm = self._algorithm
        return Evaluator(
            self.config,
            on_recreated=lambda indices: algorithm._runners_recreated(indices, True),
            tune_trial_id=algorithm.trial_id,
        )

    @property
    def group(self) -> EnvRunnerGroup | None:
        return self.evaluator.group if self.evaluator is not None else None

    def due(self, iteration: int) -> bool:
        """Whether iteration `iteration` (counted from 1) ends with a round."""
        interval = self.config.evaluation_interval
        return bool(interval) and iteration % interval == 0

    # -- rounds ------------------------------------------------------------------------------
    def evaluate(self) -> dict:
        """One round now, with the current weights. Without evaluation runners configured
        (and without a custom evaluation function), the round runs on the training local
        EnvRunner, as in RLlib (`LocalRunnerEvaluation`)."""
        config = self.config
        if config.custom_evaluation_function is None:
            self._require_env()
        if (
            self.evaluator is None
            and not config.evaluation_interval
            and config.evaluation_num_env_runners == 0
            and config.custom_evaluation_function is None
        ):
            return self._evaluate_on_training_runner()
        self._begin()
        self._set_background(False)  # the algorithm waits on the round
        return self._end(self._run())

    def _set_background(self, background: bool) -> None:
        """The evaluation runners in the background (a round beside a training step) or at
        normal priority (a round the algorithm waits on): `EnvRunnerGroup.set_background`."""
        if self.evaluator is not None:
            self.evaluator.group.set_background(background)

    def _require_env(self) -> None:
        """An offline algorithm built without an env (`learns_without_env`) has none to
        evaluate in: a clear error, before any runner is asked to sample."""
        if learns_without_env(self.config.get_evaluation_config_object()):
            name = type(self._algorithm).__name__
            raise ValueError(
                f"{name}.evaluate(): evaluation runs episodes in an env, and the config has no "
                "env (environment(env=None): the networks were built for its observation_space "
                "and action_space, to train from recorded data); give one with "
                "environment(env) (or evaluation(evaluation_config={'env': ...})), or evaluate "
                "on recorded data with evaluate_offline() (evaluation("
                "offline_evaluation_interval=...))"
            )

    def _evaluate_on_training_runner(self) -> dict:
        algorithm = self._algorithm
        runner = algorithm.env_runner_group.local_env_runner
        LocalRunnerEvaluation.check_runner(runner)
        if self.local_round is None:
            self.local_round = LocalRunnerEvaluation(self.config)
        runner.set_weights(
            algorithm.learner.get_weights(),
            global_timestep=algorithm.num_env_steps_sampled_lifetime,
        )
        algorithm._callbacks.fire(
            "on_evaluate_start", algorithm=algorithm, metrics_logger=algorithm.metrics
        )
        return self._end(self.local_round.run(runner))

    def start_parallel(self, iteration: int) -> ParallelEvaluation | ThreadlessEvaluation | None:
        """When iteration `iteration` is due a round and evaluation runs in parallel to
        training: starts the round with the weights from before the training step, and
        returns it for `finish` (or `abandon`)."""
        config = self.config
        if not (self.due(iteration) and config.evaluation_parallel_to_training):
            return None
        self._set_background(True)  # the training step runs beside the round
        self._begin()
        learner_threads = learner_blas_threads(config.evaluation_num_env_runners)
        foreground = partial(self._set_background, False)
        if (
            config._evaluation_parallel_to_training_wo_thread
            and config.custom_evaluation_function is None
        ):
            return ThreadlessEvaluation(
                self._built_evaluator().begin(), learner_threads, foreground
            )
        return ParallelEvaluation(
            self._run,
            timeout_s=4 * config.evaluation_sample_timeout_s,
            learner_threads=learner_threads,
            foreground=foreground,
        )

    def finish(self, parallel_round: ParallelEvaluation | ThreadlessEvaluation) -> dict:
        """The metrics of a parallel round, after the training step."""
        return self._end(parallel_round.finish())

    @staticmethod
    def abandon(parallel_round: ParallelEvaluation | ThreadlessEvaluation) -> None:
        """Ends a parallel round whose training step raised (that error is the one to report)."""
        try:
            parallel_round.finish()
        except Exception:  # noqa: BLE001 - the training step's error is raised instead
            pass

    def _begin(self) -> None:
        algorithm = self._algorithm
        if self.evaluator is None:
            self.evaluator = self._make_evaluator()
            self.apply_pending_state()
        algorithm._callbacks.fire(
            "on_evaluate_start", algorithm=algorithm, metrics_logger=algorithm.metrics
        )
        group = self._built_evaluator().group
        # A round is an iteration of the evaluation runners: those left out in the last one
        # come back now (restarted at most once per round, as training runners). A runner
        # that fails here is handled and reported with the round (`Evaluator._results`);
        # with none left, the round is skipped and says so instead of raising.
        group.begin_iteration()
        with contextlib.suppress(NoHealthyEnvRunners):
            algorithm.restore_env_runners(group)
        with contextlib.suppress(NoHealthyEnvRunners):
            self.sync()

    def sync(self) -> None:
        """The learner's weights, the env steps so far and the training runners' merged
        env-to-module connector state, to the evaluation runners."""
        algorithm = self._algorithm
        self._built_evaluator().sync_weights(
            algorithm.learner.get_weights(),
            algorithm.num_env_steps_sampled_lifetime,
            local_runner_of(algorithm.env_runner_group).get_connector_state(),
        )

    def _run(self, stop: threading.Event | None = None) -> dict:
        function = self.config.custom_evaluation_function
        if function is None:
            return self._built_evaluator().run(stop)
        metrics = function(self._algorithm, self.group)
        # RLlib's new stack returns (metrics, env_steps, agent_steps); the old one a dict.
        if isinstance(metrics, tuple):
            metrics = metrics[0]
        return dict(metrics or {})

    def _end(self, evaluation_metrics: dict) -> dict:
        # Both evaluate() and the parallel round end here: both answer RLlib's old result keys.
        algorithm = self._algorithm
        evaluation_metrics = with_old_result_keys(evaluation_metrics)
        algorithm._fire_queued_recoveries()
        algorithm._callbacks.fire(
            "on_evaluate_end",
            algorithm=algorithm,
            metrics_logger=algorithm.metrics,
            evaluation_metrics=evaluation_metrics,
        )
        return evaluation_metrics

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict:
        """The evaluation runners' states (`eval_env_runner_<i>`) and metrics, or those waiting
        for the runners to exist."""
        if self.evaluator is None:
            return dict(self.pending_state or {})
        state = {
            f"eval_env_runner_{index}": runner_state
            for index, runner_state in self.evaluator.group.get_runner_states().items()
        }
        state["evaluation_metrics"] = self.evaluator.metrics.get_state()
        return state

    def set_state(self, state: dict, *, strict: bool = False) -> None:
        """Takes the evaluation part of an Algorithm state: applied now when the evaluation
        runners exist (after the current weights), else when they are built."""
        self.pending_state = state
        if self.evaluator is not None:
            self.sync()
            self.apply_pending_state(strict=strict)

    def apply_pending_state(self, *, strict: bool = False) -> None:
        state, self.pending_state = self.pending_state, None
        if state is None:
            return
        evaluator = self._built_evaluator()
        if "evaluation_metrics" in state:
            evaluator.metrics.set_state(state["evaluation_metrics"])
        # Weights are not runner state: set_state() and _begin() send them.
        evaluator.group.set_runner_states(
            runner_states(state, "eval_env_runner_"), strict=strict, prefix="eval_env_runner_"
        )

    def stop(self) -> None:
        if self.evaluator is not None:
            self.evaluator.stop()
