"""RLlib 2.60's semantics where scripts depend on them: the Algorithm's mutable `_counters`,
`evaluate()` without evaluation runners, checkpoint paths as `file://` URIs and other
filesystems, `RLModuleSpec` for the default modules, and RLlib's value ranges (a learning rate
of 0). Real builds, worker processes, envs and files throughout."""

import math

import numpy as np
import pytest
from helpers import LevelEnv, small_ppo

from callbacks import RLlibCallback


class TaskCounter(RLlibCallback):
    """RLlib's curriculum example keeps its current task in `algorithm._counters`."""

    def on_train_result(self, *, algorithm, result, **kwargs):
        result["task_seen"] = algorithm._counters["current_env_task"]
        algorithm._counters["current_env_task"] += 1


def test_counters_are_one_mutable_dict_that_keeps_script_writes():
    algo = small_ppo(1).environment(LevelEnv).callbacks(TaskCounter).build()
    try:
        counters = algo._counters
        assert counters["never_written"] == 0  # a defaultdict(int), as in RLlib
        seen = [algo.train()["task_seen"] for _ in range(3)]
        assert seen == [0, 1, 2] and algo._counters is counters
        assert counters["current_env_task"] == 3
        # The step counters stay current alongside the script's own keys.
        assert counters["training_iteration"] == 3
        assert counters["num_env_steps_sampled"] == algo.num_env_steps_sampled_lifetime >= 600
        assert counters["num_env_steps_trained"] > 0
    finally:
        algo.stop()


def test_evaluate_without_evaluation_runners_samples_on_the_local_runner():
    events = []
    config = (small_ppo(0).environment(LevelEnv)
              .callbacks(on_evaluate_start=lambda **kw: events.append("start"),
                         on_evaluate_end=lambda **kw: events.append("end"))
              .evaluation(evaluation_duration=3))
    algo = config.build()
    try:
        first = algo.train()["env_runners"]
        evaluation = algo.evaluate()["env_runners"]
        assert events == ["start", "end"] and algo.eval_env_runner_group is None
        assert evaluation["num_episodes"] == 3 and evaluation["episode_len_mean"] == 10
        second = algo.train()["env_runners"]
        # Evaluation episodes stay out of the training counts.
        assert second["num_episodes_lifetime"] == first["num_episodes_lifetime"] + \
            second["num_episodes"]
    finally:
        algo.stop()
    algo = small_ppo(1).environment(LevelEnv).build()
    try:
        with pytest.raises(ValueError, match="create_env_on_local_worker=True"):
            algo.evaluate()
    finally:
        algo.stop()
