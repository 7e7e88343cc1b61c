# Ported from RLlib 2.60: rllib/algorithms/ppo/tests/test_ppo.py (renamed here: tests/test_ppo.py
# is this project's own test of the numpy PPO).
#
# Changes besides the imports:
# - The config asks for `.framework("torch")`: RLlib's default framework is torch, this
#   project's is numpy, and this file tests the torch modules and learner.
# - `ray.init()` / `ray.shutdown()` start and end this project's named-objects registry (its
#   stand-in for Ray); the algorithm runs its EnvRunners in local worker processes.
# - Left out: `test_ppo_compilation_and_schedule_mixins`. It schedules `entropy_coeff` (a list
#   of [timestep, value] pairs; here a number only), evaluates on remote EnvRunners in
#   parallel to training, and reads the learner's `get_optimizer()`,
#   `entropy_coeff_schedulers_per_module` and the results key
#   `default_optimizer_learning_rate`, none of which this project's torch learner has (it
#   reports the learning rate as `curr_lr`). Its module-level helpers (`get_model_config`,
#   `on_train_result`) and their imports go with it.
import unittest

from trainer import named_objects as ray  # was: import ray
import trainer.algorithms.ppo as ppo  # was: import ray.rllib.algorithms.ppo as ppo
from trainer.compat.rllib_utils import DEFAULT_MODULE_ID  # was: from ray.rllib.core import ...
from trainer.core.models import DefaultModelConfig  # was: ...rl_module.default_model_config


class TestPPO(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ray.init()

    @classmethod
    def tearDownClass(cls):
        ray.shutdown()

    def test_ppo_free_log_std(self):
        """Tests the free log std option works."""
        config = (
            ppo.PPOConfig()
            .framework("torch")
            .environment("Pendulum-v1")
            .env_runners(
                num_env_runners=1,
            )
            .rl_module(
                model_config=DefaultModelConfig(
                    fcnet_hiddens=[10],
                    fcnet_activation="linear",
                    free_log_std=True,
                    vf_share_layers=True,
                ),
            )
            .training(
                gamma=0.99,
            )
        )

        algo = config.build()
        module = algo.get_module(DEFAULT_MODULE_ID)

        # Check the free log std var is created.
        matching = [v for (n, v) in module.named_parameters() if "log_std" in n]
        assert len(matching) == 1, matching
        log_std_var = matching[0]

        def get_value(log_std_var=log_std_var):
            return log_std_var.detach().cpu().numpy()[0]

        # Check the variable is initially zero.
        init_std = get_value()
        assert init_std == 0.0, init_std
        algo.train()

        # Check the variable is updated.
        post_std = get_value()
        assert post_std != 0.0, post_std
        algo.stop()


if __name__ == "__main__":
    import sys

    import pytest

    sys.exit(pytest.main(["-v", __file__]))
