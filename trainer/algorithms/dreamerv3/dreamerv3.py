"""DreamerV3: the `DreamerV3` algorithm (RLlib 2.60's `ray.rllib.algorithms.dreamerv3.DreamerV3`;
`DreamerV3Config`, from `config.py`, is importable from here as from RLlib's module).

One training step, as RLlib's:

1. sample: the EnvRunners step `rollout_fragment_length` steps per sub-env with the current
   world model and actor (carrying each sub-env's RSSM state), and the steps go into the replay
   buffer (RLlib's `EpisodeReplayBuffer`, `replay_buffer_config["capacity"]` env steps). The
   first step of a run also samples random actions until the buffer holds
   `batch_size_B * batch_length_T` steps, and a step samples again while the buffer holds
   fewer or the trained/sampled ratio is at or above `training_ratio`;
2. learn: updates on `batch_size_B` x `batch_length_T` sequences replayed from the buffer
   (rows running on into a next episode, `is_first` where one starts) until the replayed steps
   of this step reach `training_ratio` times the env steps just sampled (`DreamerV3TorchLearner`:
   world model, critic and actor, `loss.py`);
3. sync: the new weights (the encoder, the RSSM and the actor) go to the EnvRunners.

The learner and the module are built by `Algorithm.setup_learner` from the classes
`DreamerV3Config` declares; the replay buffer is set up beside the learner and saved in
checkpoints (it is the data the next updates draw from).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.dreamerv3.config import DreamerV3Config
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    LEARN_ON_BATCH_TIMER,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    NUM_GRAD_UPDATES_LIFETIME,
    NUM_SYNCH_WORKER_WEIGHTS,
    REPLAY_BUFFER_RESULTS,
    SAMPLE_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)
from trainer.replay_buffers import EpisodeReplayBuffer
from trainer.util.state_checks import check_loads

#: RLlib's result key of the trained/sampled ratio after each step.
ACTUAL_TRAINING_RATIO = "actual_training_ratio"


class DreamerV3(Algorithm):
    """DreamerV3 (see the module docstring)."""

    config: DreamerV3Config
    #: A `DreamerV3TorchLearner` (or the config's learner_class, a subclass of it).
    learner: Any
    #: RLlib's names: the buffer of the sampled episodes.
    replay_buffer: EpisodeReplayBuffer
    #: N >= 2 learners each train on batch_size_B / N of each replayed batch's sequences.
    DATA_PARALLEL_LEARNERS: ClassVar[tuple[str, ...]] = ("single-agent",)

    @classmethod
    def get_default_config(cls) -> DreamerV3Config:
        return DreamerV3Config()

    def setup_learner(self) -> None:
        """The learner, and the replay buffer (`replay_buffer_config["capacity"]` env steps,
        B x T sequences)."""
        super().setup_learner()
        self.replay_buffer = self._new_buffer()
        self._num_env_steps_trained = 0

    def _new_buffer(self) -> EpisodeReplayBuffer:
        config = self.config
        return EpisodeReplayBuffer(
            capacity=config.replay_buffer_config["capacity"],
            batch_size_B=config.batch_size_B,
            batch_length_T=config.batch_length_T,
            seed=config.seed,
        )

    @property
    def local_replay_buffer(self) -> EpisodeReplayBuffer:
        """RLlib's other name of the buffer."""
        return self.replay_buffer

    @property
    def training_ratio(self) -> float:
        """The actual training ratio: env steps trained on (replayed) over env steps sampled,
        over the whole run (RLlib's property)."""
        return self._num_env_steps_trained / max(self.num_env_steps_sampled_lifetime, 1e-4)

    def training_step(self) -> None:
        """Sample, learn from replayed sequences, sync (see the module docstring); logs into
        `self.metrics` under RLlib's keys."""
        config, metrics, buffer = self.config, self.metrics, self.replay_buffer
        batch_steps = config.batch_size_B * config.batch_length_T
        have_sampled = False
        env_steps_last_regular_sample = 0
        # 1. Sample into the buffer.
        with metrics.log_time((TIMERS, SAMPLE_TIMER)):
            while (
                buffer.get_num_timesteps() < batch_steps
                or self.training_ratio >= config.training_ratio
                or not have_sampled
            ):
                first = self.num_env_steps_sampled_lifetime == 0
                episodes, runner_metrics = self.env_runner_group.sample(min_env_steps=1)
                if not episodes:
                    return  # every EnvRunner failed (handled per fault_tolerance())
                self._store(episodes, runner_metrics)
                have_sampled = True
                env_steps_last_regular_sample = max(sum(len(ep) for ep in episodes), 1)
                if first:  # the run's start: random actions up to one batch's steps
                    self._sample_random(batch_steps - env_steps_last_regular_sample)
        metrics.log_value(
            (REPLAY_BUFFER_RESULTS, "num_timesteps"), buffer.get_num_timesteps(), window=1
        )
        metrics.log_value(
            (REPLAY_BUFFER_RESULTS, "num_episodes"), buffer.get_num_episodes(), window=1
        )
        # 2. Learn on replayed B x T sequences until this step's ratio is reached.
        replayed = 0
        sampled = self.num_env_steps_sampled_lifetime
        while replayed / env_steps_last_regular_sample < config.training_ratio:
            with metrics.log_time((TIMERS, LEARN_ON_BATCH_TIMER)):
                sample = buffer.sample(
                    batch_size_B=config.batch_size_B, batch_length_T=config.batch_length_T
                )
                with self.learner.update_threads():  # (N >= 2: each learner on B / N rows)
                    results = self.update_learners_on_batch(
                        sample, num_env_steps_sampled_lifetime=sampled
                    )
            replayed += batch_steps
            self._num_env_steps_trained += batch_steps
            self._log_learner_results(results)
            metrics.log_value(NUM_GRAD_UPDATES_LIFETIME, 1, reduce="lifetime_sum")
            metrics.log_value(
                (LEARNER_RESULTS, ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME),
                batch_steps,
                reduce="lifetime_sum",
            )
        # 3. The new weights to the EnvRunners.
        with metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            metrics.log_value(NUM_SYNCH_WORKER_WEIGHTS, 1, reduce="sum")
            self.sync_weights()
        metrics.log_value(ACTUAL_TRAINING_RATIO, self.training_ratio, window=1)

    def _store(self, episodes: list, runner_metrics: list) -> None:
        """Episodes into the buffer, their runners' metrics and steps into the results."""
        self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        self.metrics.log_value(
            NUM_ENV_STEPS_SAMPLED_LIFETIME,
            sum(len(ep) for ep in episodes),
            reduce="lifetime_sum",
        )
        # The buffer keeps what the world model learns from (observations, actions, rewards,
        # flags): the EnvRunners' per-step outputs (distribution inputs, RSSM states; none
        # where the actions were random) are left out.
        for episode in episodes:
            episode.extra_model_outputs = {}
        self.replay_buffer.add(episodes)

    def _sample_random(self, num_steps: int) -> None:
        """`num_steps` env steps of random actions (at least one per runner), spread over the
        EnvRunners, into the buffer."""
        if num_steps <= 0:
            return
        group = self.env_runner_group
        runners = max(group.num_remote_workers(), 1)
        sampled = group.foreach_env_runner(
            "sample_with_metrics",
            kwargs={"num_timesteps": -(-num_steps // runners), "random_actions": True},
            local_env_runner=group.num_remote_workers() <= 0,
        )
        episodes = [episode for runner_episodes, _, _ in sampled for episode in runner_episodes]
        if episodes:
            self._store(episodes, [runner_metrics for _, runner_metrics, _ in sampled])

    def _log_learner_results(self, results: dict[str, Any]) -> None:
        """One update's statistics under `learners/default_policy` (arrays as item series)."""
        scalars = {}
        for key, value in results.items():
            if isinstance(value, np.ndarray) and value.ndim > 0:
                self.metrics.log_value(
                    (LEARNER_RESULTS, DEFAULT_MODULE_ID, *key.split("/")),
                    value,
                    reduce="item_series",
                    window=1,
                )
            else:
                scalars[key] = value
        self.metrics.log_dict(scalars, key=(LEARNER_RESULTS, DEFAULT_MODULE_ID), window=1)

    # -- state (checkpoints): the replay buffer and the trained-steps count ---------------------
    def _full_state(self) -> dict:
        state = super()._full_state()
        state["replay_buffer"] = self.replay_buffer.get_state()
        state["num_env_steps_trained"] = self._num_env_steps_trained
        return state

    def check_state(self, state: dict) -> None:
        super().check_state(state)
        if "replay_buffer" in state:
            check_loads(self._new_buffer(), state["replay_buffer"], "replay_buffer")

    def _apply_state(self, state: dict, *, strict: bool = False) -> None:
        super()._apply_state(state, strict=strict)
        # Last: a restore that fails before this point leaves the buffer as it was.
        if "replay_buffer" in state:
            self.replay_buffer.set_state(state["replay_buffer"])
        self._num_env_steps_trained = int(state.get("num_env_steps_trained", 0))


__all__ = ["DreamerV3", "DreamerV3Config"]
