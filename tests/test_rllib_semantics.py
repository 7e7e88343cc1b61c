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
