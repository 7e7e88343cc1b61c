"""IMPALA: the `IMPALA` algorithm, which learns while its EnvRunners sample (its settings,
`IMPALAConfig`, are config.py's; this module re-exports it, RLlib's
`ray.rllib.algorithms.impala.impala` holding both).

One training step (the driver; `min_time_s_per_iteration` of them make an iteration):

1. collect: the EnvRunners' sample replies that have arrived (each EnvRunner keeps
   `max_requests_in_flight_per_env_runner` sample requests in flight, so it samples on while
   the learner learns); a request carries the newest broadcast weights to an EnvRunner that
   has older ones (`weights_seq_no`);
2. queue: the episodes, `total_train_batch_size` env steps at a time, go to the learner
   thread's queue (learner_thread.py: IMPALA's waits for room, holding the EnvRunners' next
   requests back; APPO's circular buffer drops its oldest batch);
3. results: the learner thread's finished updates are logged under RLlib's keys;
4. broadcast: after `broadcast_interval` training steps with new updates, the learner's
   weights become the next `weights_seq_no`, which the next requests carry (those of its last
   finished update: a step never waits for an update in progress, whose weights go out at a
   later step).

Without remote EnvRunners (`num_env_runners=0`) the local EnvRunner samples in the driver, one
fragment per training step. The learner (impala_learner.py; torch_learner.py) runs V-trace
(vtrace.py) and IMPALA's loss (loss.py).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.impala.config import IMPALAConfig
from trainer.algorithms.impala.impala_learner import (
    IMPALALearner,
    TrajectoryBatch,
    minibatch_plan,
    minibatch_size_of,
    num_minibatches,
    take_steps,
)
from trainer.algorithms.impala.learner_thread import (
    BatchQueue,
    CircularBuffer,
    LearnerThread,
    TrainBatch,
)
from trainer.algorithms.learner_pieces import run_learner_pieces
from trainer.algorithms.multi_agent_learner import MultiAgentLearner, episodes_by_module
from trainer.core.blas import BlasThreads
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_SYNCH_WORKER_WEIGHTS,
    NUM_TRAINING_STEP_CALLS_SINCE_LAST_SYNCH_WORKER_WEIGHTS,
    TIMERS,
    WEIGHTS_SEQ_NO,
)

#: RLlib's result keys (`ray.rllib.utils.metrics`, `impala_learner`).
NUM_ENV_STEPS_TRAINED = "num_env_steps_trained"
NUM_MODULE_STEPS_TRAINED = "num_module_steps_trained"
QUEUE_SIZE_LEARNER_THREAD_QUEUE = "queue_size_learner_thread_queue"
#: This project's: env steps the learner queue dropped, and how many broadcasts behind the
#: learner's weights the sampled steps' weights were.
NUM_ENV_STEPS_DROPPED_LIFETIME = "num_env_steps_dropped_lifetime"
ENV_RUNNER_STALENESS = "env_runner_staleness"
#: The async requests' tag.
SAMPLE_TAG = "sample"
#: How long a training step waits for a sample reply when none has arrived (seconds): the
#: driver sleeps on the EnvRunners' pipes instead of spinning on them.
_REPLY_WAIT_S = 0.05
#: How long a training step that samples in this process (no remote EnvRunners) waits for the
#: learner thread to take the queued batches before it samples again (seconds).
_LOCAL_SAMPLE_WAIT_S = 1.0


@dataclass
class SampleRequest:
    """What one async request asks of an EnvRunner (cloudpickled to it): take `weights` if
    given (the broadcast `seq_no`) and `connector_state` if given (the EnvRunners' merged
    env-to-module states, e.g. a MeanStdFilter's), sample, and return the episodes, the
    connector state, the metrics and the seq no of the weights it sampled with."""

    weights: Any
    seq_no: int
    global_timestep: int | None
    connector_state: Any = None

    def __call__(self, runner: Any) -> tuple[list, Any, dict, int]:
        if self.weights is not None:
            runner.set_weights(self.weights, self.global_timestep)
        if self.connector_state is not None:
            runner.set_connector_state(self.connector_state)
        episodes, connector_state, metrics = runner.sample_get_state_and_metrics()
        return episodes, connector_state, metrics, self.seq_no


class IMPALA(Algorithm):
    """See the module docstring."""

    config: IMPALAConfig
    #: `training(learner_connector=...)` runs here: its pieces rewrite each train batch's
    #: episodes in the learner thread, before the learner makes its batch.
    RUNS_LEARNER_CONNECTOR: ClassVar[bool] = True
    DATA_PARALLEL_LEARNERS: ClassVar[tuple[str, ...]] = ("single-agent", "multi-agent", "recurrent")
    #: The learner, or a learner per trained module (multi-agent).
    learner: Any

    @classmethod
    def get_default_config(cls) -> IMPALAConfig:
        return IMPALAConfig()

    # -- the learner and its thread ----------------------------------------------------------
    def learner_queue(self) -> BatchQueue | CircularBuffer:
        """The learner thread's queue: `learner_queue_size` batches, first in, first out."""
        return BatchQueue(self.config.learner_queue_size)

    def setup_learner(self) -> None:
        """The learner (`Algorithm.learner_for`) and the learner pieces, and the learner
        thread (started paused) with what it runs in."""
        super().setup_learner()
        #: The algorithm's iterations run inside these: numpy's products on one BLAS thread
        #: (and a torch learner's on one torch thread), while the EnvRunners sample on the
        #: other cores.
        self._update_threads: list[Any] = [BlasThreads()]
        learners = (
            self.learner.learners.values()
            if isinstance(self.learner, MultiAgentLearner)
            else [self.learner]
        )
        # The learner's own (a torch learner's torch threads): a process-wide setting, so the
        # first learner's is enough.
        self._update_threads += [learner.update_threads for learner in learners][:1]
        self._learner_thread: LearnerThread | None = None
        #: Broadcast weights: their seq no (0: the weights the EnvRunners started with) and
        #: the copy sent to EnvRunners whose seq no is older.
        self._weights_seq_no = 0
        self._broadcast_weights: Any = None
        self._runner_seq_no: dict[int, int] = {}
        #: The EnvRunners' merged connector state, its version, and each runner's version.
        self._connector_state: Any = None
        self._connector_version = 0
        self._runner_connector_version: dict[int, int] = {}
        self._pending: list[Any] = []
        self._pending_steps = 0
        self._updates_at_broadcast = 0
        self._steps_since_broadcast = 0
        #: A broadcast asked for while the learner thread was in an update: its weights go
        #: out at the next training steps (`_broadcast`).
        self._broadcast_pending = False
        #: The env steps sampled so far, as the learner thread's schedules read them at each
        #: update (RLlib's learner gets the newest count with each update call): an int the
        #: driver sets after each collection, so the thread never reads the metrics.
        self._sampled_for_learner = 0
        # The learner thread starts with the algorithm, paused until training runs (as
        # RLlib's learner starts its thread when it is built).
        self._thread()

    def _thread(self) -> LearnerThread:
        thread = self._learner_thread
        if thread is None or not thread.is_alive():
            if thread is not None and thread.error is not None:
                error, thread.error = thread.error, None
                self._learner_thread = None
                raise error
            thread = LearnerThread(self._update_on, self.learner_queue())
            thread.num_updates = self._updates_at_broadcast
            thread.start()
            self._learner_thread = thread
            # RLlib's learner holds its thread (`learner._learner_thread`); here the
            # algorithm runs it and the learner gets a reference.
            self.learner._learner_thread = thread
        return thread

    def _update_on(self, batch: TrainBatch) -> dict:
        """One update of each trained module on its part of `batch`: `{module_id: results}`
        (`DEFAULT_MODULE_ID` alone without multi-agent), and the batch's env steps under
        `ALL_MODULES`."""
        clock = self._learner_clock(batch, first_use=batch.arrays is None)
        if batch.arrays is None:
            if self.learner_connector is not None:
                # (In the learner thread: the driver's MetricsLogger is not handed over.)
                run_learner_pieces(self.learner_connector, self.learner.module, batch.episodes)
            batch.arrays = self._module_batches(batch.episodes)
        if self.learner_replicas is not None:
            results: dict = self._data_parallel_update(batch, clock)
            results[ALL_MODULES] = {NUM_ENV_STEPS_TRAINED: batch.env_steps}
            return results
        plan = self._minibatch_plan(batch)
        results = {
            module_id: self._learner_of(module_id).update(
                arrays, num_env_steps_sampled_lifetime=self._sampled_for_learner, **plan, **clock
            )
            for module_id, arrays in batch.arrays.items()
        }
        results[ALL_MODULES] = {NUM_ENV_STEPS_TRAINED: batch.env_steps}
        return results

    def _learner_clock(self, batch: TrainBatch, *, first_use: bool) -> dict[str, Any]:
        """What each learner update on `batch` gets beyond the batch and the schedules' step
        count (`first_use`: the batch's first update): nothing here; APPO's target network
        counts the batch's env steps at its first use."""
        return {}

    def _data_parallel_update(self, batch: TrainBatch, clock: dict[str, Any]) -> dict:
        """One update of the data-parallel learners (`learners(num_learners=N)`, N >= 2):
        `{module_id: results}`, each module's reduced over the learners. Learner r trains on
        the r-th run of each module's consecutive steps (a chunk cut there bootstraps from the
        observation after its piece, `take_steps`; a module with fewer steps than learners
        gives each all of them), every learner taking the minibatches the shortest shard's
        plan gives, so that all step equally often. A recurrent module's shards are the
        learner's minibatches of those steps: each chunk's piece as sequences from the state
        recorded before its first row."""
        replicas = self.learner_replicas
        assert replicas is not None and batch.arrays is not None
        count = replicas.num_learners
        shards: dict[Any, list[TrajectoryBatch]] = {}
        for module_id, arrays in batch.arrays.items():
            if arrays.num_steps < count:
                shards[module_id] = [arrays] * count
                continue
            bounds = [arrays.num_steps * rank // count for rank in range(count + 1)]
            # (a recurrent module's learner cuts its pieces into sequences of their own)
            cut = getattr(self._learner_of(module_id), "minibatch", take_steps)
            shards[module_id] = [cut(arrays, [(bounds[r], bounds[r + 1])]) for r in range(count)]
        kwargs: dict[str, Any] = {
            "num_env_steps_sampled_lifetime": self._sampled_for_learner,
            **clock,
        }
        shortest = {module_id: min(s.num_steps for s in each) for module_id, each in shards.items()}
        if isinstance(self.learner, MultiAgentLearner):
            size = minibatch_size_of(self.config, max(batch.env_steps // count, 1))
            if size is not None:
                kwargs.update(
                    minibatch_size=size,
                    num_minibatches=num_minibatches(
                        list(shortest.values()), self.config.num_epochs, size
                    ),
                )
            return {
                module_id: replicas.run_calls(
                    [("update_module", (module_id, shard), kwargs) for shard in module_shards]
                )
                for module_id, module_shards in shards.items()
            }
        plan = minibatch_plan(self.config, shortest[DEFAULT_MODULE_ID])
        if plan is not None:
            kwargs.update(minibatch_size=plan.minibatch_size, num_minibatches=plan.count)
        return {
            DEFAULT_MODULE_ID: replicas.run_calls(
                [("update", (shard,), kwargs) for shard in shards[DEFAULT_MODULE_ID]]
            )
        }

    def _minibatch_plan(self, batch: TrainBatch) -> dict[str, int]:
        """The minibatches every module's update on `batch` takes, multi-agent: each module
        as many of `minibatch_size` steps (None: the batch's env steps, with `num_epochs >
        1`) as the module with the most steps needs to cover its steps `num_epochs` times, so
        all train on equally many steps (RLlib's `MiniBatchCyclicIterator`). Empty (a learner
        makes its own from the config) single-agent or without minibatches."""
        assert batch.arrays is not None
        config = self.config
        if not isinstance(self.learner, MultiAgentLearner):
            return {}
        size = minibatch_size_of(config, batch.env_steps)
        if size is None:
            return {}
        steps = [arrays.num_steps for arrays in batch.arrays.values()]
        return {
            "minibatch_size": size,
            "num_minibatches": num_minibatches(steps, config.num_epochs, size),
        }

    def _learner_of(self, module_id: Any) -> IMPALALearner:
        learner = self.learner
        if isinstance(learner, MultiAgentLearner):
            return cast(IMPALALearner, learner.learners[module_id])
        return learner

    def _module_batches(self, episodes: list[Any]) -> dict[Any, TrajectoryBatch]:
        """The episodes as each trained module's `TrajectoryBatch` (made once per train batch,
        kept for the circular buffer's further uses of it)."""
        learner = self.learner
        if not isinstance(learner, MultiAgentLearner):
            return {DEFAULT_MODULE_ID: learner.trajectory_batch(episodes)}
        chunks = episodes_by_module(episodes)
        return {
            module_id: self._learner_of(module_id).trajectory_batch(chunks[module_id])
            for module_id in learner.trained
            if chunks.get(module_id)
        }

    # -- the training step -------------------------------------------------------------------
    def _run_training_steps(self, start: float) -> None:
        """The iteration's training steps, the learner thread learning meanwhile; after them
        it pauses (its last results logged), so the learner stands still between iterations."""
        thread = self._thread()
        # numpy's products on one BLAS thread for the whole iteration, while the EnvRunners
        # sample on the other cores. (Capped and restored around each update instead, the
        # pool's idle thread, woken at each restore, spun on a core of its own: 0.8 of a
        # core, which the EnvRunners lacked.)
        with ExitStack() as threads:
            for limit in self._update_threads:
                threads.enter_context(limit())
            thread.resume()
            try:
                super()._run_training_steps(start)
            finally:
                thread.pause()
                self._log_learner_results(thread)

    def training_step(self) -> None:
        thread = self._thread()
        thread.resume()
        metrics = self.metrics
        with metrics.log_time((TIMERS, "env_runner_sampling_timer")):
            replies = self._collect_samples()
        sampled = 0
        for episodes, runner_metrics, seq_no in replies:
            metrics.aggregate([runner_metrics], key=ENV_RUNNER_RESULTS)
            metrics.log_value((ENV_RUNNER_RESULTS, WEIGHTS_SEQ_NO), seq_no, window=1)
            metrics.log_value(
                (ENV_RUNNER_RESULTS, ENV_RUNNER_STALENESS), self._weights_seq_no - seq_no
            )
            steps = sum(len(ep) for ep in episodes)
            sampled += steps
            self._pending.extend(episodes)
            self._pending_steps += steps
        metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, sampled, reduce="lifetime_sum")
        self._sampled_for_learner = self.num_env_steps_sampled_lifetime
        # Train batches for the learner thread.
        dropped_before = thread.queue.dropped_env_steps
        while self._pending_steps >= self.config.total_train_batch_size:
            batch = TrainBatch(self._pending, self._pending_steps)
            self._pending, self._pending_steps = [], 0
            while not thread.queue.put(batch, timeout=_REPLY_WAIT_S):
                thread = self._thread()  # (raises the error that ended the thread, if one did)
        learner_key = (LEARNER_RESULTS, ALL_MODULES)
        metrics.log_value(
            (*learner_key, NUM_ENV_STEPS_DROPPED_LIFETIME),
            thread.queue.dropped_env_steps - dropped_before,
            reduce="lifetime_sum",
        )
        metrics.log_value((*learner_key, QUEUE_SIZE_LEARNER_THREAD_QUEUE), len(thread.queue))
        self._log_learner_results(thread)
        # Broadcast once broadcast_interval training steps have seen new updates (the count
        # starts again when it is asked for, as RLlib's; one asked for during an update goes
        # out at a later step).
        if not self._broadcast_pending:
            if thread.num_updates > self._updates_at_broadcast:
                self._steps_since_broadcast += 1
            if self._steps_since_broadcast >= self.config.broadcast_interval:
                self._steps_since_broadcast = 0
                self._broadcast_pending = True
        if self._broadcast_pending:
            with metrics.log_time((TIMERS, "synch_weights")):
                self._broadcast_pending = not self._broadcast()
        metrics.log_value(
            NUM_TRAINING_STEP_CALLS_SINCE_LAST_SYNCH_WORKER_WEIGHTS,
            self._steps_since_broadcast,
            window=1,
        )

    def _log_learner_results(self, thread: LearnerThread) -> None:
        """The statistics of the updates the thread finished since the last call."""
        metrics = self.metrics
        learner_key = (LEARNER_RESULTS, ALL_MODULES)
        for results in thread.take_results():
            counts = {
                NUM_ENV_STEPS_TRAINED: int(results.pop(ALL_MODULES)[NUM_ENV_STEPS_TRAINED]),
                NUM_MODULE_STEPS_TRAINED: 0,
            }
            for module_id, module_results in results.items():
                metrics.log_dict(module_results, key=(LEARNER_RESULTS, module_id), window=1)
                # (APPO: a module without steps whose target followed has no count)
                counts[NUM_MODULE_STEPS_TRAINED] += int(
                    module_results.get(NUM_MODULE_STEPS_TRAINED, 0)
                )
            for key, count in counts.items():
                metrics.log_value((*learner_key, key), count, reduce="sum")
                metrics.log_value((*learner_key, f"{key}_lifetime"), count, reduce="lifetime_sum")

    def _collect_samples(self) -> list[tuple[list, dict, int]]:
        """The sample replies that have arrived (episodes, metrics, the weights' seq no); sends
        a new request to every EnvRunner with room for one."""
        group = self.env_runner_group
        if not group.num_remote_env_runners():
            # Sampled here, in the learner thread's process: without a pause the sampling holds
            # the GIL the torch learner gives up at each of its small operations, and waits up
            # to the switch interval for each (3 updates in 10 s where it made 65 with a 0.1 ms
            # interval). So the step first waits (bounded) for the learner to take what is
            # queued, as a remote EnvRunner's learner keeps up.
            thread = self._learner_thread
            assert thread is not None  # (started by `training_step`)
            thread.queue.wait_empty(_LOCAL_SAMPLE_WAIT_S)
            episodes, runner_metrics = group.sample(min_env_steps=1)  # one local sample
            return [(episodes, runner_metrics[0], self._weights_seq_no)]
        # A runner that died with a request in flight may never answer: its exit is the sign.
        exited = group.collect_exited()
        if exited:
            group.handle_failures({error.worker_index: error for error in exited})
        wait = self.config.timeout_s_sampler_manager
        ready = group.fetch_ready_async_reqs(tags=SAMPLE_TAG, timeout_seconds=wait)
        if not ready:  # (returns at once when no request is in flight)
            ready = group.fetch_ready_async_reqs(tags=SAMPLE_TAG, timeout_seconds=_REPLY_WAIT_S)
        replies, connector_states = [], []
        for index, (episodes, connector_state, runner_metrics, seq_no) in ready:
            if group.recorder is not None:
                group.recorder.record(index, episodes)
            replies.append((episodes, runner_metrics, seq_no))
            if connector_state:
                connector_states.append(connector_state)
        if connector_states:
            # (a MeanStdFilter's new observations): out with each runner's next request
            self._connector_state = group.merge_connector_states(connector_states)
            self._connector_version += 1
        self._send_sample_requests()
        return replies

    def _send_sample_requests(self) -> None:
        group = self.env_runner_group
        limit = max(1, int(self.config["max_requests_in_flight_per_env_runner"] or 1))
        ids, requests = [], []
        for index in group.healthy_env_runner_ids():
            if group.num_in_flight_async_reqs_of(index) >= limit:
                continue
            stale = self._runner_seq_no.get(index, 0) < self._weights_seq_no
            weights = self._broadcast_weights if stale else None
            behind = self._runner_connector_version.get(index, 0) < self._connector_version
            ids.append(index)
            requests.append(
                SampleRequest(
                    weights,
                    self._weights_seq_no,
                    self.num_env_steps_sampled_lifetime,
                    self._connector_state if behind else None,
                )
            )
            self._runner_seq_no[index] = self._weights_seq_no
            self._runner_connector_version[index] = self._connector_version
        if ids:
            group.foreach_env_runner_async(requests, SAMPLE_TAG, remote_worker_ids=ids)

    def _broadcast(self) -> bool:
        """The learner's weights after its last finished update become the next seq no; the
        local EnvRunner takes them now, the remote ones with their next request. False (no
        broadcast) while the learner thread is in an update: it keeps its weights for a
        later training step (`LearnerThread.snapshot`), so that the driver goes on reading
        replies and sending requests meanwhile."""
        thread = self._learner_thread
        if thread is None:
            weights, self._updates_at_broadcast = self.learner.get_weights(), 0
        else:
            snapshot = thread.snapshot(self.learner.get_weights)
            if snapshot is None:
                return False
            weights, self._updates_at_broadcast = snapshot
        self._weights_seq_no += 1
        self._broadcast_weights = weights
        self.metrics.log_value(NUM_SYNCH_WORKER_WEIGHTS, 1, reduce="sum")
        local = self.env_runner_group.local_env_runner
        if local is not None:
            local.set_weights(weights, self.num_env_steps_sampled_lifetime)
        return True

    # -- the learner, safe from the thread -------------------------------------------------
    def _learner_held(self) -> AbstractContextManager:
        """Holds the learner between two of the thread's updates (no thread yet: nothing);
        `LearnerThreadTimeout` if the update in progress does not end within its bound."""
        thread = self._learner_thread
        return thread.held() if thread is not None else nullcontext()

    def _full_state(self) -> dict:
        with self._learner_held():
            return super()._full_state()

    def _apply_state(self, state: dict, *, strict: bool = False) -> None:
        with self._learner_held():
            super()._apply_state(state, strict=strict)
            self._sampled_for_learner = self.num_env_steps_sampled_lifetime
            # Every EnvRunner got the restored weights (sync_weights): a new seq no.
            self._weights_seq_no += 1
            self._broadcast_weights = self.learner.get_weights()
            self._runner_seq_no = dict.fromkeys(self._runner_seq_no, self._weights_seq_no)

    def get_weights(self, *args: Any, **kwargs: Any) -> Any:
        with self._learner_held():
            return super().get_weights(*args, **kwargs)

    def set_weights(self, *args: Any, **kwargs: Any) -> None:
        with self._learner_held():
            super().set_weights(*args, **kwargs)

    def cleanup(self) -> None:
        thread: LearnerThread | None = getattr(self, "_learner_thread", None)
        if thread is not None:
            thread.stop()
        super().cleanup()


__all__ = ["IMPALA", "IMPALAConfig", "SampleRequest"]
