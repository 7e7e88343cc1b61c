# Ported from RLlib 2.60: rllib/core/models/tests/test_catalog.py.
#
# Changes besides the imports:
# - Dropped: `test_atari_help` and `test_get_encoder_config` (the base Catalog's encoder
#   configs, `_get_encoder_config`, and `CNNEncoderConfig`, built for "tf2" and "torch": the
#   catalogs here build this project's torch networks, not RLlib's encoder configs; see
#   docs/deliberate_differences.md), with `_check_model_outputs`, which only they use.
# - `test_get_dist_cls_from_action_space`: the expected classes name torch's only (TensorFlow
#   is not supported here: RLlib's `Tf*` distributions do not exist).
# - `tree.map_structure` (dm-tree, not installed here) is a small local function over dicts
#   and tuples.
import functools
import unittest
from collections import namedtuple

import gymnasium as gym
import numpy as np
import torch
from gymnasium.spaces import Box, Dict, Discrete, MultiDiscrete, Tuple

from trainer.algorithms.ppo import PPOConfig  # was: ray.rllib.algorithms.ppo.ppo
from trainer.algorithms.ppo.catalog import PPOCatalog  # was: ray.rllib.algorithms.ppo....
from trainer.algorithms.ppo.torch_module import (  # was: ray.rllib.algorithms.ppo.torch....
    PPOTorchRLModule,
)
from trainer.compat.rllib_utils import Columns  # was: from ray.rllib.core.columns import ...
from trainer.core.catalog import (  # was: from ray.rllib.core.models.catalog import (
    Catalog,
    _multi_action_dist_partial_helper,
    _multi_categorical_dist_partial_helper,
)
from trainer.core.model_configs import (  # was: from ray.rllib.core.models.base import (
    ENCODER_OUT,
    Encoder,
    ModelConfig,  # was: from ray.rllib.core.models.configs import ...
)
from trainer.core.models import MODEL_DEFAULTS  # was: from ray.rllib.models import ...
from trainer.core.rl_module import RLModuleSpec  # was: ray.rllib.core.rl_module.rl_module
from trainer.torch_rl.distributions import (  # was: ray.rllib.models.torch.torch_distributions
    TorchCategorical,
    TorchDiagGaussian,
    TorchMultiCategorical,
    TorchMultiDistribution,
)
from trainer.torch_rl.model_config_networks import (  # was: ray.rllib.core.models.torch.base
    TorchModel,
)
from trainer.torch_rl.rl_module import (  # was: from ray.rllib.utils.numpy import ...
    to_numpy as convert_to_numpy,
)


class tree:  # was: import tree (dm-tree)
    @staticmethod
    def map_structure(func, structure):
        if isinstance(structure, dict):
            return {key: tree.map_structure(func, value) for key, value in structure.items()}
        if isinstance(structure, tuple):
            return tuple(tree.map_structure(func, value) for value in structure)
        return func(structure)


class TestCatalog(unittest.TestCase):
    def test_get_dist_cls_from_action_space(self):
        """Tests if we can create a bunch of action distributions.

        Action distributions are created from the base catalog class. Things this
        test checks:
            - Whether we output the correct action distributions classes.
            - Whether we can instantiate the action distributions, query their
                required input dimensions and sample from them.

        """
        TestConfig = namedtuple("TestConfig", ("action_space", "expected_dist_cls_dict"))
        test_configs = [
            # Box
            TestConfig(
                Box(-np.inf, np.inf, (7,), dtype=np.float32),
                {"torch": TorchDiagGaussian},
            ),
            # Discrete
            TestConfig(Discrete(5), {"torch": TorchCategorical}),
            # Nested Dict
            TestConfig(
                Dict(
                    {
                        "a": Box(-np.inf, np.inf, (7,), dtype=np.float32),
                        "b": Dict({"c": Discrete(5)}),
                    }
                ),
                {
                    "torch": TorchMultiDistribution,
                },
            ),
            # Nested Tuple
            TestConfig(
                Tuple(
                    (
                        Box(-np.inf, np.inf, (7,), dtype=np.float32),
                        Tuple((Discrete(5), Discrete(5))),
                    )
                ),
                {
                    "torch": TorchMultiDistribution,
                },
            ),
            # Tuple nested inside Dict
            TestConfig(
                Dict(
                    {
                        "a": Box(-np.inf, np.inf, (7,), dtype=np.float32),
                        "b": Dict(
                            {
                                "c": Tuple(
                                    (
                                        Box(-np.inf, np.inf, (7,), dtype=np.float32),
                                        Tuple((Discrete(5), Discrete(5))),
                                    )
                                )
                            }
                        ),
                    }
                ),
                {
                    "torch": TorchMultiDistribution,
                },
            ),
            # Dict nested inside Tuple
            TestConfig(
                Tuple(
                    (
                        Box(-np.inf, np.inf, (7,), dtype=np.float32),
                        Tuple(
                            (
                                Discrete(5),
                                Dict(
                                    {
                                        "a": Box(-np.inf, np.inf, (7,), dtype=np.float32),
                                        "b": Dict({"c": Discrete(5)}),
                                    }
                                ),
                            )
                        ),
                    )
                ),
                {
                    "torch": TorchMultiDistribution,
                },
            ),
            # MultiDiscrete
            TestConfig(
                MultiDiscrete([5, 5, 5]),
                {"torch": TorchMultiCategorical},
            ),
        ]

        for (
            action_space,
            expected_cls_dict,
        ) in test_configs:
            print(f"Testing action space: {action_space}:")
            catalog = Catalog(
                observation_space=Box(-1.0, 1.0, (84, 84, 1), dtype=np.float32),
                action_space=action_space,
                model_config_dict=MODEL_DEFAULTS.copy(),
            )

            dist_cls = catalog._get_dist_cls_from_action_space(
                action_space=action_space,
                framework="torch",
            )

            # Check if we can query the required input dimensions
            expected_cls = expected_cls_dict["torch"]
            if expected_cls is TorchMultiDistribution:
                # For these special cases, we need to create partials of the
                # expected classes so that we can calculate the required inputs
                expected_cls = _multi_action_dist_partial_helper(
                    catalog_cls=catalog,
                    action_space=action_space,
                    framework="torch",
                )
            elif expected_cls is TorchMultiCategorical:
                # For these special cases, we need to create partials of the
                # expected classes so that we can calculate the required inputs
                expected_cls = _multi_categorical_dist_partial_helper(
                    action_space=action_space, framework="torch"
                )

            # Now that we have sorted out special cases, we can finally get the
            # input_dim
            input_dim = expected_cls.required_input_dim(action_space)
            logits = np.ones((32, input_dim), dtype=np.float32)
            logits = torch.from_numpy(logits)
            # We don't need a model if we input tensors
            dist = dist_cls.from_logits(logits=logits)
            self.assertTrue(
                isinstance(dist, expected_cls_dict["torch"]),
                msg=f"Expected {expected_cls_dict['torch']}, got {type(dist)}",
            )
            # Test if sampling works
            actions = dist.sample()
            # Test is logp works
            dist.logp(actions)

            # For any array of actions in a possibly nested space, convert to
            # numpy and pick the first one to check if it is in the action space.
            action = tree.map_structure(lambda a: convert_to_numpy(a)[0], actions)
            self.assertTrue(action_space.contains(action))

    def test_customize_catalog_from_algorithm_config(self):
        """Test if we can pass catalog to algorithm config and it ends up inside
        RLModule and is used to build models there."""

        class MyCatalog(PPOCatalog):
            def build_vf_head(self, framework):
                return torch.nn.Linear(self.latent_dims[0], 1)

        config = (
            PPOConfig()
            .rl_module(
                rl_module_spec=RLModuleSpec(catalog_class=MyCatalog),
            )
            .framework("torch")
        )

        algo = config.build(env="CartPole-v0")
        self.assertEqual(type(algo.get_module("default_policy").catalog), MyCatalog)

        # Test if we can pass custom catalog to algorithm config and train with it.
        config = (
            PPOConfig()
            .rl_module(
                rl_module_spec=RLModuleSpec(module_class=PPOTorchRLModule, catalog_class=MyCatalog)
            )
            .framework("torch")
        )

        algo = config.build(env="CartPole-v0")
        algo.train()

    def test_post_init_overwrite(self):
        """Test if we can overwrite post_init method of a catalog class.

        This tests:
            - Defines a custom encoder and its config.
            - Defines a custom catalog class that uses the custom encoder by
                overwriting the __post_init__ method and defining a custom
                Catalog.encoder_config.
            - Defines a custom RLModule that uses the custom catalog.
            - Runs a forward pass through the custom RLModule to check if
                everything is working together as expected.

        """
        env = gym.make("CartPole-v0")

        class MyCostumTorchEncoderConfig(ModelConfig):
            def build(self, framework):
                return MyCostumTorchEncoder(self)

        class MyCostumTorchEncoder(TorchModel, Encoder):
            def __init__(self, config):
                super().__init__(config)
                self.net = torch.nn.Linear(env.observation_space.shape[0], 10)

            def _forward(self, input_dict, **kwargs):
                return {
                    ENCODER_OUT: (self.net(input_dict["obs"])),
                    Columns.STATE_OUT: None,
                }

        class MyCustomCatalog(PPOCatalog):
            def _determine_components(self):
                self._action_dist_class_fn = functools.partial(
                    self._get_dist_cls_from_action_space, action_space=self.action_space
                )
                self.latent_dims = (10,)
                self.encoder_config = MyCostumTorchEncoderConfig(
                    input_dims=self.observation_space.shape,
                )

        spec = RLModuleSpec(
            module_class=PPOTorchRLModule,
            observation_space=env.observation_space,
            action_space=env.action_space,
            model_config=MODEL_DEFAULTS.copy(),
            catalog_class=MyCustomCatalog,
        )
        module = spec.build()

        module.forward_inference(batch={"obs": torch.ones((32, *env.observation_space.shape))})


if __name__ == "__main__":
    import sys

    import pytest

    sys.exit(pytest.main(["-v", __file__]))
