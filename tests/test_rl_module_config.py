"""RLlib's deprecated `RLModuleConfig`, which RLlib 2.60 still sets on every module as
`module.config` and its own tests read (`mod0.config.observation_space`): every module here
answers it, the default numpy and torch modules and a user's subclass alike, through the
`trainer` imports and RLlib's import paths under the launcher."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from test_launcher import run_script

from trainer.algorithms.ppo import PPOConfig
from trainer.core.rl_module import RLModule, RLModuleConfig, RLModuleSpec

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)


class _Mine(RLModule):
    """A user's module: nothing but its constructor arguments."""


def test_a_users_module_answers_its_constructor_arguments():
    module = _Mine(observation_space=OBS, action_space=ACT, model_config={"fcnet_hiddens": [4]})
    config = module.config
    assert isinstance(config, RLModuleConfig)
    assert (config.observation_space, config.action_space) == (OBS, ACT)
    assert (config.inference_only, config.learner_only) == (False, False)
    assert config.model_config_dict == {"fcnet_hiddens": [4]}
    assert config.get_catalog() is None
    # RLlib's plain attribute: a module may set its own.
    module.config = RLModuleConfig(observation_space=ACT)
    assert module.config.observation_space == ACT


def test_a_spec_gives_the_config_and_it_survives_to_dict():
    spec = RLModuleSpec(
        module_class=_Mine, observation_space=OBS, action_space=ACT, inference_only=True
    )
    config = spec.get_rl_module_config()
    assert (config.observation_space, config.inference_only) == (OBS, True)
    again = RLModuleConfig.from_dict(config.to_dict())
    assert again == config
    assert spec.build().config == config


def test_the_default_modules_answer_it():
    for framework in ("numpy", "torch"):
        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .framework(framework)
            .env_runners(num_env_runners=0)
            .build()
        )
        try:
            for module in (algo.get_module(), algo.learner_module()):
                assert module.config.observation_space == module.observation_space
                assert module.config.observation_space.shape == (4,)
                assert module.config.action_space == gym.spaces.Discrete(2)
        finally:
            algo.stop()


def test_rllibs_names_serve_it_under_the_launcher(tmp_path):
    done = run_script(
        tmp_path,
        """
        import gymnasium as gym
        from ray.rllib.core.rl_module.rl_module import RLModuleConfig, RLModuleSpec
        from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
            DefaultPPOTorchRLModule,
        )

        spec = RLModuleSpec(
            module_class=DefaultPPOTorchRLModule,
            observation_space=gym.spaces.Box(-1.0, 1.0, (4,)),
            action_space=gym.spaces.Discrete(2),
            model_config={"fcnet_hiddens": [8]},
        )
        module = spec.build()
        assert isinstance(module.config, RLModuleConfig)
        print("obs", module.config.observation_space.shape, module.config.model_config_dict["fcnet_hiddens"])
        """,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "obs (4,) [8]" in done.stdout
