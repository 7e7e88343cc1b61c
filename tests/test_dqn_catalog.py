"""RLlib's `DQNCatalog`: the default torch DQN module builds its encoder and heads through the
spec's catalog, as RLlib's does, so a subclass's `_get_encoder_config` gives the module an encoder
of its own (RLlib's way to serve Dict observations), an overridden head replaces the default
one, and such a module trains in torch; the default catalog builds exactly the default module,
with RLlib's sizes; a numpy module refuses overridden builders, naming the fix."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="catalogs build torch networks")

from trainer import Algorithm, DQNConfig, RLModuleSpec  # noqa: E402
from trainer.algorithms.dqn.catalog import DQNCatalog  # noqa: E402
from trainer.algorithms.dqn.torch_module import DefaultDQNTorchRLModule  # noqa: E402
from trainer.compat.rllib_utils import Columns  # noqa: E402
from trainer.core.catalog import overridden_builders  # noqa: E402
from trainer.core.model_configs import ENCODER_OUT  # noqa: E402
from trainer.errors import ConfigError  # noqa: E402

CARTPOLE = gym.make("CartPole-v1")
DICT_SPACE = gym.spaces.Dict(
    {
        "sensors": gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
        "mode": gym.spaces.Discrete(3),
    }
)


class DictEncoder(torch.nn.Module):
    """RLlib's encoder protocol: the batch in, `{ENCODER_OUT: features}` out."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(5, 8)

    def forward(self, batch):
        obs = batch[Columns.OBS]
        flat = torch.cat([obs["mode"].reshape(-1, 1), obs["sensors"]], dim=-1).float()
        return {ENCODER_OUT: torch.relu(self.net(flat))}


class DictEncoderConfig:
    output_dims = (8,)

    def build(self, framework):
        return DictEncoder()


class DictObsCatalog(DQNCatalog):
    @classmethod
    def _get_encoder_config(cls, observation_space, model_config_dict, action_space=None):
        return DictEncoderConfig()


class LinearQCatalog(DQNCatalog):
    """A Q head of one linear layer over the encoder's features."""

    def build_af_head(self, framework):
        return torch.nn.Linear(self.latent_dims[0], int(self.action_space.n) * self.num_atoms)


def _dict_batch(rows: int) -> dict:
    samples = [DICT_SPACE.sample() for _ in range(rows)]
    return {
        "sensors": torch.as_tensor(np.stack([s["sensors"] for s in samples])),
        "mode": torch.as_tensor(np.array([s["mode"] for s in samples], np.float32)),
    }


def test_the_default_catalog_builds_what_the_module_builds_without_one():
    spaces = {"observation_space": CARTPOLE.observation_space}
    spaces["action_space"] = CARTPOLE.action_space
    model_config = {"fcnet_hiddens": [16], "num_atoms": 3}
    torch.manual_seed(0)
    plain = DefaultDQNTorchRLModule(**spaces, model_config=model_config)
    torch.manual_seed(0)
    cataloged = DefaultDQNTorchRLModule(
        **spaces, model_config=model_config, catalog_class=DQNCatalog
    )
    assert cataloged.catalog.latent_dims == (16,) and cataloged.catalog.num_atoms == 3
    assert cataloged.has_default_parts()
    plain_state, cataloged_state = plain.state_dict(), cataloged.state_dict()
    assert list(plain_state) == list(cataloged_state)
    for key, value in plain_state.items():
        torch.testing.assert_close(value, cataloged_state[key])


def test_an_encoder_config_of_a_subclass_serves_dict_observations():
    module = DefaultDQNTorchRLModule(
        observation_space=DICT_SPACE,
        action_space=gym.spaces.Discrete(2),
        model_config={"num_atoms": 5, "dueling": True, "double_q": True},
        catalog_class=DictObsCatalog,
    )
    assert type(module.encoder) is DictEncoder and not module.has_default_parts()
    assert overridden_builders(DictObsCatalog) == ["_get_encoder_config"]
    batch = {Columns.OBS: _dict_batch(4), Columns.NEXT_OBS: _dict_batch(4)}
    out = module.forward_train(batch)
    assert out["qf_preds"].shape == (4, 2) and out["qf_next_preds"].shape == (4, 2)
    assert out["qf_probs"].shape == (8, 2, 5) and out["qf_target_next_probs"].shape == (4, 2, 5)
    out["qf_preds"].sum().backward()
    assert module.encoder.net.weight.grad is not None
    assert module.forward_inference({Columns.OBS: _dict_batch(1)})[Columns.ACTIONS].shape == (1,)


class DictCartPole(gym.ObservationWrapper):
    """CartPole with Dict observations: positions and velocities."""

    def __init__(self, config=None):
        super().__init__(gym.make("CartPole-v1"))
        box = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.observation_space = gym.spaces.Dict({"pos": box, "vel": box})

    def observation(self, observation):
        return {"pos": observation[[0, 2]], "vel": observation[[1, 3]]}


class PosVelEncoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Linear(4, 16)

    def forward(self, batch):
        obs = batch[Columns.OBS]
        return {ENCODER_OUT: torch.relu(self.net(torch.cat([obs["pos"], obs["vel"]], dim=-1)))}


class PosVelEncoderConfig:
    output_dims = (16,)

    def build(self, framework):
        return PosVelEncoder()


class PosVelCatalog(DQNCatalog):
    @classmethod
    def _get_encoder_config(cls, observation_space, model_config_dict, action_space=None):
        return PosVelEncoderConfig()


def _config(env, catalog_class) -> DQNConfig:
    return (
        DQNConfig()
        .environment(env)
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(num_steps_sampled_before_learning_starts=0, train_batch_size=16)
        .rl_module(
            model_config={"fcnet_hiddens": [16]},
            rl_module_spec=RLModuleSpec(catalog_class=catalog_class),
        )
        .reporting(min_sample_timesteps_per_iteration=64)
        .debugging(seed=0)
    )


@pytest.mark.slow
def test_an_overridden_head_trains_in_torch_and_restores_from_a_checkpoint(tmp_path):
    algo = _config("CartPole-v1", LinearQCatalog).build()
    try:
        module = algo.learner_group._learner.rl_module
        assert type(module.catalog) is LinearQCatalog and type(module.af) is torch.nn.Linear
        before = module.af.weight.detach().clone()
        result = algo.train()
        # The numpy twin mirrors the default networks only: the update ran in torch.
        assert algo.learner_group._learner.numpy_update is None
        assert np.isfinite(result["learners"]["default_policy"]["qf_loss"])
        assert not torch.equal(before, module.af.weight)
        path = algo.save_to_path(str(tmp_path / "checkpoint"))
        weights = {key: value.clone() for key, value in module.state_dict().items()}
    finally:
        algo.stop()
    restored = Algorithm.from_checkpoint(path)
    try:
        module = restored.learner_group._learner.rl_module
        assert type(module.catalog) is LinearQCatalog and type(module.af) is torch.nn.Linear
        for key, value in module.state_dict().items():
            torch.testing.assert_close(value, weights[key])
    finally:
        restored.stop()


@pytest.mark.slow
def test_dict_observations_train_through_a_catalog_encoder():
    algo = _config(DictCartPole, PosVelCatalog).build()
    try:
        module = algo.learner_group._learner.rl_module
        before = module.encoder.net.weight.detach().clone()
        result = algo.train()
        assert np.isfinite(result["learners"]["default_policy"]["qf_loss"])
        assert not torch.equal(before, module.encoder.net.weight)
    finally:
        algo.stop()


def test_overridden_builders_on_a_numpy_module_are_refused_when_validated():
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rl_module(rl_module_spec=RLModuleSpec(catalog_class=DictObsCatalog))
    )
    with pytest.raises(ConfigError, match=r"overrides _get_encoder_config.*framework\('torch'\)"):
        config.validate()
    # The catalog itself, as a name, is accepted on the numpy module (RLlib's default).
    DQNConfig().environment("CartPole-v1").rl_module(
        rl_module_spec=RLModuleSpec(catalog_class=DQNCatalog)
    ).validate()


@pytest.mark.ray
@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.Box(-1.0, 1.0, (8,), np.float32),
        gym.spaces.Box(0, 255, (64, 64, 3), np.uint8),
        gym.spaces.Box(0, 255, (84, 84, 4), np.uint8),
    ],
    ids=["box", "image64", "image84"],
)
def test_latent_dims_and_head_sizes_are_rllibs(space):
    from ray.rllib.algorithms.dqn.dqn_catalog import DQNCatalog as RLlibDQNCatalog

    model_config = {"fcnet_hiddens": [32, 24], "num_atoms": 7, "v_min": -1.0, "v_max": 1.0}
    rllib = RLlibDQNCatalog(space, gym.spaces.Discrete(3), {**model_config, "epsilon": 0.1})
    ours = DQNCatalog(space, gym.spaces.Discrete(3), model_config)
    assert ours.latent_dims == tuple(rllib.latent_dims)
    assert ours.num_atoms == rllib.num_atoms
    af_head, vf_head = ours.build_af_head("torch"), ours.build_vf_head("torch")
    assert af_head.net.mlp[-1].out_features == rllib.af_head_config.output_layer_dim == 21
    assert vf_head.net.mlp[-1].out_features == rllib.vf_head_config.output_layer_dim == 1
    encoder = ours.build_encoder("torch")
    assert encoder.output_dim == ours.latent_dims[0]
