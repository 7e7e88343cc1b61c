"""The off-policy algorithms' training step (RLlib's DQN loop, which SAC inherits in RLlib):
`OffPolicyAlgorithm`, the base of DQN and SAC.

One training step: the EnvRunners sample `rollout_fragment_length` steps per sub-env, the steps
go into `local_replay_buffer`; once `num_steps_sampled_before_learning_starts` env steps were
sampled, the learner takes `train_batch_size` n-step transitions from the buffer per update, the
priorities follow the TD errors its update returns (under `TD_ERROR_KEY`), and the new weights
go to the EnvRunners. `training_intensity` sets how many replayed steps are trained on per
sampled step (RLlib's round-robin weights, `calculate_rr_weights`). A multi-agent run keeps a
learner and a buffer per module.

`setup_learner` builds the learner (`Algorithm.learner_for`, from the classes the config
declares) and the buffer (`make_replay_buffer`); the learner's `update(batch,
num_env_steps_sampled_lifetime=...)` takes `as_train_batch`'s batch.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.multi_agent_learner import MultiAgentLearner
from trainer.algorithms.replay import (
    EpisodeReplayBuffer,
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
    PrioritizedEpisodeReplayBuffer,
    make_replay_buffer,
    sample_train_batch,
    sample_train_batches,
)
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_RESULTS,
    TD_ERROR_KEY,
    TIMERS,
)
from trainer.util.state_checks import check_loads


def calculate_rr_weights(config: Any) -> list[int]:
    """RLlib's round-robin weights of a training step (`ray.rllib.algorithms.dqn.dqn.
    calculate_rr_weights`): [sampling rounds, training rounds]. Without `training_intensity`
    [1, 1]; else it is the ratio of replayed to sampled steps asked for, against the natural
    ratio total_train_batch_size / (rollout fragment * envs per runner * (runners + 1)): below
    the natural ratio several sampling rounds per training round, above it several training
    rounds per sampling round (rounded half to even)."""
    if not config.training_intensity:
        return [1, 1]
    native_ratio = config.total_train_batch_size / (
        config.get_rollout_fragment_length()
        * config.num_envs_per_env_runner
        * max(config.num_env_runners + 1, 1)
    )
    weight = config.training_intensity / native_ratio
    if weight < 1:
        return [round(1 / weight), 1]
    return [1, round(weight)]


class OffPolicyAlgorithm(Algorithm):
    """See the module docstring."""

    DATA_PARALLEL_LEARNERS: ClassVar[tuple[str, ...]] = ("single-agent", "multi-agent")

    #: The subclass's config (DQNConfig, SACConfig): the step reads their settings of the same
    #: names (replay_buffer_config, n_step, training_intensity, ...).
    config: Any
    #: The algorithm's learner, or a learner per module (`MultiAgentLearner`).
    learner: Any
    #: RLlib's name: the replay buffer the training step samples into and learns from (in a
    #: multi-agent run, a MultiAgentEpisodeReplayBuffer: a buffer per module).
    local_replay_buffer: EpisodeReplayBuffer | MultiAgentEpisodeReplayBuffer

    def setup_learner(self) -> None:
        """The learner, and the replay buffer: `_create_local_replay_buffer_if_necessary`'s
        (RLlib's hook; by default the one `replay_buffer_config` names)."""
        super().setup_learner()
        config = self.config
        buffer = self._create_local_replay_buffer_if_necessary(config)
        if buffer is None:  # (an override that makes none: the configured one)
            buffer = make_replay_buffer(config.replay_buffer_config, seed=config.seed)
        self.local_replay_buffer = buffer

    def training_step(self) -> None:
        config, metrics, buffer = self.config, self.metrics, self.local_replay_buffer
        sampling_rounds, training_rounds = calculate_rr_weights(config)
        # 1. Sample with the current weights and store the steps in the replay buffer.
        for _ in range(sampling_rounds):
            with metrics.log_time((TIMERS, "env_runner_sampling_timer")):
                episodes, runner_metrics = self.env_runner_group.sample(min_env_steps=1)
            metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
            metrics.log_value(
                NUM_ENV_STEPS_SAMPLED_LIFETIME,
                sum(len(ep) for ep in episodes),
                reduce="lifetime_sum",
            )
            with metrics.log_time((TIMERS, "replay_buffer_add_data_timer")):
                buffer.add(episodes)
        if (
            self._steps_sampled_for_learning_start()
            < config.num_steps_sampled_before_learning_starts
        ):
            return
        # 2. Learn on n-step transitions replayed from the buffer; priorities follow the TD
        #    errors.
        if isinstance(self.learner, MultiAgentLearner):
            self._learn_per_module(training_rounds)
        else:
            self._learn(training_rounds)
        # 3. Send the new weights (and the sampled-steps count) to the EnvRunners.
        with metrics.log_time((TIMERS, "synch_weights")):
            self.sync_weights()

    def _steps_sampled_for_learning_start(self) -> int:
        """The steps `num_steps_sampled_before_learning_starts` counts, as RLlib counts them:
        env steps, or with `count_steps_by="agent_steps"` every agent's steps."""
        if self.config.count_steps_by == "agent_steps":
            per_agent = self.metrics.peek(
                (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}
            )
            if isinstance(per_agent, dict):
                return int(sum(per_agent.values()))
        return self.num_env_steps_sampled_lifetime

    def _learn(self, training_rounds: int) -> None:
        """`training_rounds` updates of the (single) learner on replayed batches."""
        config, metrics, buffer = self.config, self.metrics, self.local_replay_buffer
        assert isinstance(buffer, EpisodeReplayBuffer)
        assert not isinstance(self.learner, MultiAgentLearner)
        sampled = self.num_env_steps_sampled_lifetime
        beta = config.replay_buffer_config.get("beta")
        update_results: list[dict] = []
        # One BLAS thread for the whole round of updates (see BlasThreads; entering it for
        # each update of about 0.5 ms would add a quarter to it).
        with self.learner.update_threads():
            for _ in range(training_rounds):
                with metrics.log_time((TIMERS, "replay_buffer_sample_timer")):
                    batch = sample_train_batch(
                        buffer,
                        config.total_train_batch_size,
                        n_step=config.n_step,
                        gamma=config.gamma,
                        beta=beta,
                    )
                with metrics.log_time((TIMERS, "learner_update_timer")):
                    results = self.update_learners_on_batch(
                        batch, num_env_steps_sampled_lifetime=sampled
                    )
                # The TD errors are per replayed row: they set priorities and are not logged.
                td_errors = results.pop(TD_ERROR_KEY)
                if isinstance(buffer, PrioritizedEpisodeReplayBuffer):
                    buffer.update_priorities(np.abs(td_errors))
                update_results.append(results)
                metrics.log_value(
                    (LEARNER_RESULTS, "__all_modules__", "num_env_steps_trained_lifetime"),
                    len(td_errors),
                    reduce="lifetime_sum",
                )
        self._log_update_means({"default_policy": update_results})

    def _learn_per_module(self, training_rounds: int) -> None:
        """`training_rounds` updates of each trained module's learner, each on a batch from
        its own module's buffer (RLlib's "independent" replay); its priorities follow its TD
        errors. A module without stored steps yet is not updated."""
        config, metrics, buffer = self.config, self.metrics, self.local_replay_buffer
        learner = self.learner
        assert isinstance(buffer, MultiAgentEpisodeReplayBuffer)
        assert isinstance(learner, MultiAgentLearner)
        sampled = self.num_env_steps_sampled_lifetime
        beta = config.replay_buffer_config.get("beta")
        update_results: dict[Any, list[dict]] = {}
        for _ in range(training_rounds):
            with metrics.log_time((TIMERS, "replay_buffer_sample_timer")):
                batches = sample_train_batches(
                    buffer,
                    config.total_train_batch_size,
                    n_step=config.n_step,
                    gamma=config.gamma,
                    beta=beta,
                    modules=learner.trained,
                )
            if not batches:
                return
            with metrics.log_time((TIMERS, "learner_update_timer")):
                for module_id, batch in batches.items():
                    module_learner: Any = learner.learners[module_id]
                    with module_learner.update_threads():
                        results = self.update_learners_on_batch(
                            batch, module_id=module_id, num_env_steps_sampled_lifetime=sampled
                        )
                    td_errors = np.asarray(results.pop(TD_ERROR_KEY))
                    if isinstance(buffer, MultiAgentPrioritizedEpisodeReplayBuffer):
                        buffer.update_priorities(np.abs(td_errors), module_id)
                    update_results.setdefault(module_id, []).append(results)
                    metrics.log_value(
                        (LEARNER_RESULTS, module_id, "num_module_steps_trained_lifetime"),
                        len(td_errors),
                        reduce="lifetime_sum",
                    )
            metrics.log_value(
                (LEARNER_RESULTS, "__all_modules__", "num_env_steps_trained_lifetime"),
                config.train_batch_size,
                reduce="lifetime_sum",
            )
        self._log_update_means(update_results)

    def _log_update_means(self, update_results: dict[Any, list[dict]]) -> None:
        """Each module's learner statistics: their means over this step's updates."""
        for module_id, results in update_results.items():
            if results:
                self.metrics.log_dict(
                    {key: float(np.mean([r[key] for r in results])) for key in results[0]},
                    key=(LEARNER_RESULTS, module_id),
                    window=1,
                )

    def _compile_result(self, time_this_iter: float) -> dict:
        # The buffer's metrics (RLlib's "replay_buffer" results), once per iteration: the buffer
        # counts its adds and samples itself, so one aggregate carries all training steps'.
        self.metrics.aggregate([self.local_replay_buffer.get_metrics()], key=REPLAY_BUFFER_RESULTS)
        return super()._compile_result(time_this_iter)

    # -- state (checkpoints) -----------------------------------------------------------------
    def _full_state(self) -> dict:
        """The Algorithm's state, plus the replay buffer with `store_buffer_in_checkpoints`."""
        state = super()._full_state()
        if self.config.store_buffer_in_checkpoints:
            state["replay_buffer"] = self.local_replay_buffer.get_state()
        return state

    def check_state(self, state: dict) -> None:
        super().check_state(state)
        if "replay_buffer" in state:
            # Loaded into an empty buffer of the same config (cheaper than copying this one).
            check_loads(
                make_replay_buffer(self.config.replay_buffer_config),
                state["replay_buffer"],
                "replay_buffer",
            )

    def _apply_state(self, state: dict, *, strict: bool = False) -> None:
        super()._apply_state(state, strict=strict)
        # Last: a restore that fails before this point leaves the buffer as it was.
        if "replay_buffer" in state:
            self.local_replay_buffer.set_state(state["replay_buffer"])
