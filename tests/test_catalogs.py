"""A PPOCatalog subclass shapes the default torch PPO module's networks, as in RLlib: the module
builds its encoder and heads through the spec's catalog, so overridden builders give its own
heads; such a run trains in torch (the numpy twin mirrors the default networks only) with real
EnvRunner processes, checkpoints restore it, and a numpy module refuses it, naming the fix."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="catalogs build torch networks")

from trainer import Algorithm, PPOConfig, RLModuleSpec  # noqa: E402
from trainer.algorithms.ppo.catalog import PPOCatalog  # noqa: E402
from trainer.algorithms.ppo.torch_module import PPOTorchRLModule  # noqa: E402
from trainer.errors import ConfigError  # noqa: E402
from trainer.torch_rl.networks import MLPHead  # noqa: E402

CARTPOLE = gym.make("CartPole-v1")


class LinearValueCatalog(PPOCatalog):
    """A value head of one linear layer over the encoder's features."""

    def build_vf_head(self, framework):
        return torch.nn.Linear(self.latent_dims[0], 1)


class PlainEncoderCatalog(PPOCatalog):
    """Returns an encoder without the module's encoder API."""

    def build_actor_critic_encoder(self, framework):
        return torch.nn.Linear(4, 8)


def config_with(catalog_class, framework: str = "torch") -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=1)
        .training(train_batch_size=400, minibatch_size=100, num_epochs=2)
        .rl_module(
            model_config={"fcnet_hiddens": [16]},
            rl_module_spec=RLModuleSpec(catalog_class=catalog_class),
        )
        .debugging(seed=0)
    )


def test_the_default_catalog_builds_what_the_module_builds_without_one():
    spaces = {"observation_space": CARTPOLE.observation_space}
    spaces["action_space"] = CARTPOLE.action_space
    torch.manual_seed(0)
    plain = PPOTorchRLModule(**spaces, model_config={"fcnet_hiddens": [16]})
    torch.manual_seed(0)
    cataloged = PPOTorchRLModule(
        **spaces, model_config={"fcnet_hiddens": [16]}, catalog_class=PPOCatalog
    )
    assert cataloged.catalog.latent_dims == (16,)
    plain_state, cataloged_state = plain.state_dict(), cataloged.state_dict()
    assert list(plain_state) == list(cataloged_state)
    for key, value in plain_state.items():
        torch.testing.assert_close(value, cataloged_state[key])


@pytest.mark.slow
def test_an_overridden_head_trains_in_torch_and_restores_from_a_checkpoint(tmp_path):
    algo = config_with(LinearValueCatalog).build()
    try:
        # The learner's module: get_module() is the EnvRunner's inference-only copy (no vf).
        module = algo.learner_module()
        assert type(module.catalog) is LinearValueCatalog
        assert type(module.vf) is torch.nn.Linear and type(module.pi) is MLPHead
        # The numpy twin mirrors the default networks only: this update runs in torch.
        assert algo.learner_group._learner.numpy_update is None
        before = module.vf.weight.detach().clone()
        result = algo.train()
        assert np.isfinite(result["learners"]["default_policy"]["vf_loss"])
        assert not torch.equal(before, module.vf.weight)
        path = algo.save_to_path(str(tmp_path / "checkpoint"))
        weights = {key: value.clone() for key, value in module.state_dict().items()}
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        module = restored.learner_module()
        assert type(module.catalog) is LinearValueCatalog and type(module.vf) is torch.nn.Linear
        for key, value in module.state_dict().items():
            torch.testing.assert_close(value, weights[key])
        assert restored.train()["training_iteration"] == 2
    finally:
        restored.stop()


def test_overridden_builders_on_a_numpy_module_are_refused_when_validated():
    config = config_with(LinearValueCatalog, framework="numpy")
    with pytest.raises(ConfigError, match=r"overrides build_vf_head.*framework\('torch'\)"):
        config.validate()


def test_an_encoder_without_the_modules_api_is_refused_naming_the_builder():
    with pytest.raises(TypeError, match=r"PlainEncoderCatalog.build_actor_critic_encoder\(\)"):
        PPOTorchRLModule(
            observation_space=CARTPOLE.observation_space,
            action_space=CARTPOLE.action_space,
            catalog_class=PlainEncoderCatalog,
        )
