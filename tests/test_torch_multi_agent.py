"""Multi-agent PPO with torch modules, and torch modules loaded from numpy checkpoints, through
the public API: a MultiRLModuleSpec of `PPOTorchRLModule` specs (with `catalog_class=PPOCatalog`,
as RLlib's scripts write them) trains each torch module with its own torch learner while the
EnvRunner processes sample with them, checkpoints resume exactly; `RLModuleSpec(load_state_path=)`
on the default torch PPO module loads a numpy default PPO module's checkpoint, and the loaded
module computes what the numpy module computes; networks that differ are refused."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from trainer import Algorithm, MultiRLModuleSpec, PPOConfig, RLModuleSpec
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.ppo.catalog import PPOCatalog
from trainer.algorithms.ppo.module import PolicyModule
from trainer.algorithms.ppo.state_conversion import StateConversionError, numpy_ppo_state_to_torch
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule, PPOTorchRLModule
from trainer.checkpoints.format import CheckpointError
from trainer.compat.rllib_utils import Columns
from trainer.core.catalog import Catalog
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

CARTPOLE = gym.make("CartPole-v1")
BOX_ACTIONS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
DISCRETE_OBS = gym.spaces.Discrete(5)


def _numpy_module(obs_space, action_space, model_config, seed=3) -> PolicyModule:
    spec = RLModuleSpec(
        module_class=PolicyModule,
        observation_space=obs_space,
        action_space=action_space,
        model_config=model_config,
    )
    return PolicyModule.from_rl_module_spec(spec, seed=seed)


def _torch_module(obs_space, action_space, model_config) -> DefaultPPOTorchRLModule:
    return PPOTorchRLModule(
        observation_space=obs_space,
        action_space=action_space,
        model_config=model_config,
        catalog_class=PPOCatalog,
    )


def _observations(space, n=16):
    space.seed(0)
    return np.stack([space.sample() for _ in range(n)])


def _assert_same_outputs(numpy_module, torch_module, obs_space):
    obs = _observations(obs_space)
    with torch.no_grad():
        out = torch_module.forward_inference({Columns.OBS: torch.as_tensor(obs)})
        values = torch_module.compute_values({Columns.OBS: torch.as_tensor(obs)})
    rows = numpy_module.spaces.preprocess(obs)
    np.testing.assert_allclose(
        out[Columns.ACTION_DIST_INPUTS].numpy(), numpy_module.dist_inputs(rows), atol=1e-5
    )
    np.testing.assert_allclose(values.numpy(), numpy_module.values(rows), atol=1e-5)


@pytest.mark.parametrize(
    "obs_space, action_space, model_config",
    [
        (CARTPOLE.observation_space, CARTPOLE.action_space, {"fcnet_hiddens": [64]}),
        (
            CARTPOLE.observation_space,
            BOX_ACTIONS,
            {
                "fcnet_hiddens": [16, 8],
                "fcnet_activation": "relu",
                "head_fcnet_hiddens": [8],
                "vf_share_layers": True,
                "free_log_std": True,
            },
        ),
        (DISCRETE_OBS, BOX_ACTIONS, {"fcnet_hiddens": [], "head_fcnet_hiddens": [4]}),
    ],
    ids=["two-towers", "shared-encoder-free-log-std", "no-encoder-discrete-obs"],
)
def test_a_numpy_ppo_state_converts_into_the_torch_module_and_computes_the_same(
    obs_space, action_space, model_config
):
    numpy_module = _numpy_module(obs_space, action_space, model_config)
    if model_config.get("free_log_std"):
        numpy_module.log_std[:] = [0.3, -0.2]  # not zero: its conversion shows
    torch_module = _torch_module(obs_space, action_space, model_config)
    converted = numpy_ppo_state_to_torch(numpy_module.get_state(), model_config, torch_module)
    assert sorted(converted) == sorted(torch_module.state_dict())
    torch_module.set_state(converted)
    _assert_same_outputs(numpy_module, torch_module, obs_space)


def test_networks_that_differ_are_refused_naming_what_differs():
    numpy_module = _numpy_module(CARTPOLE.observation_space, CARTPOLE.action_space, {})
    state = numpy_module.get_state()
    cases = [
        ({"fcnet_activation": "relu"}, r"model_config\['fcnet_activation'\]='tanh'.*'relu'"),
        ({"fcnet_hiddens": [256]}, r"model_config\['fcnet_hiddens'\]"),
        ({"vf_share_layers": False}, r"vf_share_layers differs"),
    ]
    for torch_config, message in cases:
        torch_module = _torch_module(
            CARTPOLE.observation_space, CARTPOLE.action_space, torch_config
        )
        with pytest.raises(StateConversionError, match=message):
            numpy_ppo_state_to_torch(state, {}, torch_module)
    # Same config, other spaces: the shapes say so.
    other = _torch_module(gym.spaces.Box(-1, 1, (6,), np.float32), CARTPOLE.action_space, {})
    with pytest.raises(StateConversionError, match=r"shape \(256, 4\).*\(256, 6\)"):
        numpy_ppo_state_to_torch(state, {}, other)


def _load_state_config(path, model_config) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=64, minibatch_size=32, num_epochs=1)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=PPOTorchRLModule,
                model_config=model_config,
                catalog_class=PPOCatalog,
                load_state_path=path,
            )
        )
    )


def test_load_state_path_loads_a_numpy_module_checkpoint_into_the_torch_module(tmp_path):
    model_config = {"fcnet_hiddens": [32], "vf_share_layers": True}
    numpy_module = _numpy_module(CARTPOLE.observation_space, CARTPOLE.action_space, model_config)
    path = numpy_module.save_to_path(tmp_path / "numpy_module")
    algo = _load_state_config(path, model_config).build()
    try:
        module = algo.learner_module()  # (its value function: get_module() is inference-only)
        assert isinstance(module, DefaultPPOTorchRLModule)
        assert isinstance(module.catalog, PPOCatalog)
        _assert_same_outputs(numpy_module, module, CARTPOLE.observation_space)
        # The EnvRunner samples with the loaded weights too.
        runner_state = algo.env_runner.module.rl_module.get_state()
        for key, value in runner_state.items():
            np.testing.assert_array_equal(value, module.get_state()[key])
    finally:
        algo.stop()
    with pytest.raises(CheckpointError, match=r"does not convert.*fcnet_hiddens"):
        _load_state_config(path, {"fcnet_hiddens": [16], "vf_share_layers": True}).build()


def test_catalogs_must_be_a_default_modules_catalog_or_a_subclass():
    catalog = PPOCatalog(CARTPOLE.observation_space, CARTPOLE.action_space, {})
    from trainer.torch_rl.distributions import TorchCategorical

    assert catalog.get_action_dist_cls(framework="torch") is TorchCategorical
    # The base Catalog builds RLlib's default encoder (its MLP encoder config, built).
    encoder = Catalog(CARTPOLE.observation_space, CARTPOLE.action_space, {}).build_encoder("torch")
    assert type(encoder).__name__ == "TorchMLPEncoder"

    class MyCatalog(PPOCatalog):
        pass

    PPOConfig().rl_module(rl_module_spec=RLModuleSpec(catalog_class=MyCatalog))  # accepted
    for spec, message in [
        (RLModuleSpec(catalog_class=Catalog), r"catalog_class=Catalog is not supported"),
        (RLModuleSpec(catalog_class=dict), r"catalog_class=dict is not supported"),
    ]:
        with pytest.raises(ConfigError, match=message):
            PPOConfig().rl_module(rl_module_spec=spec)
    with pytest.raises(ConfigError, match=r"the spec of module 'p0'.*Catalog is not supported"):
        PPOConfig().rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "p0": RLModuleSpec(module_class=PPOTorchRLModule, catalog_class=Catalog)
                }
            )
        )


def agent_to_module(agent_id, *args, **kwargs) -> str:
    """Agent i acts with module "pi" (importable: a checkpoint's config names it by path)."""
    return f"p{agent_id}"


def _multi_agent_torch_config() -> PPOConfig:
    specs = {
        "p0": RLModuleSpec(
            module_class=PPOTorchRLModule,
            model_config={"fcnet_hiddens": [16]},
            catalog_class=PPOCatalog,
        ),
        # A numpy default module beside it: each module trains with its own framework.
        "p1": RLModuleSpec(module_class=PolicyModule, model_config={"fcnet_hiddens": [8]}),
    }
    return (
        PPOConfig()
        .environment(MultiAgentCartPole, env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=agent_to_module)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .env_runners(num_env_runners=1, rollout_fragment_length=100)
        .training(train_batch_size=200, minibatch_size=100, num_epochs=2, lr=0.001)
        .debugging(seed=5)
    )


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_multi_agent_torch_modules_train_sync_and_resume_exactly(tmp_path):
    from trainer.algorithms.ppo.ppo_learner import PPOLearner
    from trainer.algorithms.ppo.torch_learner import PPOTorchLearner

    algo = _multi_agent_torch_config().build()
    try:
        learners = algo.learner.learners
        assert isinstance(learners["p0"], PPOTorchLearner)
        assert isinstance(learners["p1"], PPOLearner)
        assert isinstance(algo.get_module("p0"), DefaultPPOTorchRLModule)
        before = algo.get_module("p0").get_state()
        result = algo.train()
        for module_id in ("p0", "p1"):
            assert np.isfinite(result["learners"][module_id]["total_loss"])
        after = algo.get_module("p0").get_state()
        assert any(not np.array_equal(before[k], after[k]) for k in before)
        # The EnvRunner process samples with the learner's (inference-only) weights.
        remote = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.get_weights(), local_env_runner=False
        )[0]
        expected = algo.learner.module.get_weights()
        assert sorted(remote["p0"]) == sorted(expected["p0"])
        assert not any(key.startswith("vf.") for key in remote["p0"])
        for module_id in ("p0", "p1"):
            for key, value in expected[module_id].items():
                np.testing.assert_array_equal(remote[module_id][key], value)
        path = algo.save_to_path(tmp_path / "checkpoint")
        algo.train()
        continued = algo.learner_group.get_weights()
    finally:
        algo.stop()
    again = Algorithm.from_checkpoint(path)
    try:
        again.train()
        resumed = again.learner_group.get_weights()
    finally:
        again.stop()
    for module_id in ("p0", "p1"):
        assert sorted(resumed[module_id]) == sorted(continued[module_id])
        for key, value in continued[module_id].items():
            np.testing.assert_array_equal(resumed[module_id][key], value)
