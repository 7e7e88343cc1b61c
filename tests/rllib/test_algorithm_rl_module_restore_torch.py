# Ported from RLlib 2.60: rllib/algorithms/tests/test_algorithm_rl_module_restore.py, with
# RLlib's torch module: tests/rllib/test_algorithm_rl_module_restore.py is the same file over
# this project's numpy module; this one keeps RLlib's `PPOTorchRLModule` (2.60's name of
# `DefaultPPOTorchRLModule`), so the algorithm runs its torch module and learner.
#
# Changes besides the imports:
# - Left out: `test_e2e_load_simple_multi_rl_module`,
#   `test_e2e_load_complex_multi_rl_module` and
#   `test_e2e_load_complex_multi_rl_module_with_modules_to_load` (multi-agent: torch modules
#   train in single-agent runs here; a multi-agent config with torch modules is refused at
#   build, naming framework('numpy')), and with them `get_ppo_config`, `NUM_AGENTS` and the
#   imports only they use (MultiRLModuleSpec, MultiRLModule, MultiAgentCartPole, tree).
# - The specs' `catalog_class=PPOCatalog` is left out (catalogs do not exist here; the module
#   builds its networks from `model_config`).
# - `ray.init()` / `ray.shutdown()` start and end this project's named-objects registry.
import gymnasium as gym
import shutil
import tempfile
import unittest

from trainer import named_objects as ray  # was: import ray
from trainer.algorithms.ppo import PPOConfig  # was: from ray.rllib.algorithms.ppo import ...
from trainer.torch_rl.default_ppo_module import (  # was: ...ppo.torch.ppo_torch_rl_module
    DefaultPPOTorchRLModule as PPOTorchRLModule,
)
from trainer.compat.rllib_utils import DEFAULT_MODULE_ID  # was: from ray.rllib.core import ...
from trainer.core.models import DefaultModelConfig  # was: ...rl_module.default_model_config
from trainer.core.rl_module import RLModuleSpec  # was: ray.rllib.core.rl_module.rl_module
from trainer.torch_rl.rl_module import (  # was: from ray.rllib.utils.numpy import ...
    to_numpy as convert_to_numpy,
)
from trainer.testing import check  # was: from ray.rllib.utils.test_utils import check


class TestAlgorithmRLModuleRestore(unittest.TestCase):
    """Test RLModule loading from rl module spec across a local node."""

    def setUp(self) -> None:
        ray.init()

    def tearDown(self) -> None:
        ray.shutdown()

    def test_e2e_load_rl_module(self):
        """Test if we can train a PPO algorithm with a cpkt RL module e2e."""
        scaling_config = {
            "num_learners": 0,
            "num_gpus_per_learner": 0,
        }

        config = (
            PPOConfig()
            .api_stack(
                enable_rl_module_and_learner=True,
                enable_env_runner_and_connector_v2=True,
            )
            .env_runners(rollout_fragment_length=4)
            .learners(**scaling_config)
            .environment("CartPole-v1")
            .training(num_epochs=1, train_batch_size=8, minibatch_size=8)
        )
        env = gym.make("CartPole-v1")
        # create a multi_rl_module to load and save it to a checkpoint directory
        module_spec = RLModuleSpec(
            module_class=PPOTorchRLModule,
            observation_space=env.observation_space,
            action_space=env.action_space,
            # If we want to use this externally created module in the algorithm,
            # we need to provide the same config as the algorithm.
            model_config=DefaultModelConfig(fcnet_hiddens=[32]),
        )
        module = module_spec.build()

        module_ckpt_path = tempfile.mkdtemp()
        module.save_to_path(module_ckpt_path)

        module_to_load_spec = RLModuleSpec(
            module_class=PPOTorchRLModule,
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config=DefaultModelConfig(fcnet_hiddens=[32]),
            load_state_path=module_ckpt_path,
        )

        config = config.api_stack(enable_rl_module_and_learner=True).rl_module(
            rl_module_spec=module_to_load_spec,
        )

        # create the algorithm with multiple nodes and check if the weights
        # are the same as the original MultiRLModule
        algo = config.build()
        algo_module_weights = algo.learner_group.get_weights()

        check(
            algo_module_weights[DEFAULT_MODULE_ID],
            convert_to_numpy(module.get_state()),
        )
        algo.train()
        algo.stop()
        del algo
        shutil.rmtree(module_ckpt_path)


if __name__ == "__main__":
    import pytest
    import sys

    sys.exit(pytest.main(["-v", __file__]))
