# Ported from RLlib 2.60: rllib/core/rl_module/torch/tests/test_torch_rl_module.py.
#
# Changes besides the imports:
# - Left out: `TestRLModuleGPU.test_torch_compile_no_memory_leak_gpu` (it needs a CUDA device
#   and `torch.compile` of the module, RLlib's TorchCompileConfig, which do not exist here; the
#   torch modules run on the CPU). Its imports (`gc`, TorchCompileConfig, _dynamo_is_available)
#   go with it.
import tempfile
import unittest

import gymnasium as gym
import torch

from trainer.compat.rllib_utils import Columns  # was: ray.rllib.core.columns
from trainer.torch_rl.rl_module import TorchRLModule  # was: ray.rllib.core.rl_module.torch
from trainer.algorithms.vpg.torch_module import (  # was: ray.rllib.examples....
    VPGTorchRLModule,
)
from trainer.testing import check  # was: ray.rllib.utils.test_utils


class TestRLModule(unittest.TestCase):
    def test_compilation(self):

        env = gym.make("CartPole-v1")
        module = VPGTorchRLModule(
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config={"hidden_dim": 32},
        )

        self.assertIsInstance(module, TorchRLModule)

    def test_forward_train(self):

        bsize = 1024
        env = gym.make("CartPole-v1")
        module = VPGTorchRLModule(
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config={"hidden_dim": 32},
        )

        obs_shape = env.observation_space.shape
        obs = torch.randn((bsize,) + obs_shape)
        actions = torch.stack(
            [torch.tensor(env.action_space.sample()) for _ in range(bsize)]
        )
        output = module.forward_train({"obs": obs})

        self.assertIsInstance(output, dict)
        self.assertIn(Columns.ACTION_DIST_INPUTS, output)

        action_dist_inputs = output[Columns.ACTION_DIST_INPUTS]
        action_dist_class = module.get_train_action_dist_cls()
        action_dist = action_dist_class.from_logits(action_dist_inputs)

        loss = -action_dist.logp(actions.view(-1)).mean()
        loss.backward()

        # check that all neural net parameters have gradients
        for param in module.parameters():
            self.assertIsNotNone(param.grad)

    def test_forward(self):
        """Test forward inference and exploration of"""

        env = gym.make("CartPole-v1")
        module = VPGTorchRLModule(
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config={"hidden_dim": 32},
        )

        obs_shape = env.observation_space.shape
        obs = torch.randn((1,) + obs_shape)

        # just test if the forward pass runs fine
        module.forward_inference({"obs": obs})
        module.forward_exploration({"obs": obs})

    def test_get_set_state(self):

        env = gym.make("CartPole-v1")
        module = VPGTorchRLModule(
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config={"hidden_dim": 32},
        )

        state = module.get_state()
        self.assertIsInstance(state, dict)

        module2 = VPGTorchRLModule(
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config={"hidden_dim": 32},
        )
        state2 = module2.get_state()
        check(state, state2, false=True)

        module2.set_state(state)
        state2_after = module2.get_state()
        check(state, state2_after)

    def test_checkpointing(self):
        env = gym.make("CartPole-v1")
        module = VPGTorchRLModule(
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config={"hidden_dim": 32},
        )
        with tempfile.TemporaryDirectory() as tmpdir:
            tmpdir = "/tmp/rl_module_test"
            module.save_to_path(tmpdir)
            new_module = VPGTorchRLModule.from_checkpoint(tmpdir)

        check(module.get_state(), new_module.get_state())
        self.assertNotEqual(id(module), id(new_module))


if __name__ == "__main__":
    import sys

    import pytest

    # One can specify the specific TestCase class to run.
    # None for all unittest.TestCase classes in this file.
    class_ = sys.argv[1] if len(sys.argv) > 1 else None
    sys.exit(pytest.main(["-v", __file__ + ("" if class_ is None else "::" + class_)]))
