"""RLlib's torch testing modules (`ray.rllib.core.testing.torch.bc_module`): built from specs,
a shared encoder really shared, forward passes, states and checkpoints, and the RLlib import
paths through the launcher (and RLlib's older `PPOTorchRLModule` name)."""

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer import launcher  # noqa: E402
from trainer.core.multi_rl_module import MultiRLModule, MultiRLModuleSpec  # noqa: E402
from trainer.core.rl_module import RLModuleSpec  # noqa: E402
from trainer.core.testing.torch.bc_module import (  # noqa: E402
    BCTorchMultiAgentModuleWithSharedEncoder,
    BCTorchRLModuleWithSharedGlobalEncoder,
    DiscreteBCTorchModule,
)
from trainer.testing import check  # noqa: E402


def _shared_encoder_spec() -> MultiRLModuleSpec:
    def agent(local_dim: int, actions: int) -> RLModuleSpec:
        return RLModuleSpec(
            module_class=BCTorchRLModuleWithSharedGlobalEncoder,
            observation_space=gym.spaces.Dict(
                {
                    "global": gym.spaces.Box(-1, 1, shape=(10,)),
                    "local": gym.spaces.Box(-1, 1, shape=(local_dim,)),
                }
            ),
            action_space=gym.spaces.Discrete(actions),
            model_config={"fcnet_hiddens": [128]},
        )

    return MultiRLModuleSpec(
        multi_rl_module_class=BCTorchMultiAgentModuleWithSharedEncoder,
        rl_module_specs={"agent_1": agent(16, 2), "agent_2": agent(32, 4)},
    )


def test_the_shared_encoder_is_one_set_of_weights():
    module = _shared_encoder_spec().build()
    bias = module["agent_1"].encoder[0].bias
    bias.data = torch.ones_like(bias.data)
    assert torch.allclose(module["agent_2"].encoder[0].bias, bias)
    out = module.forward_train(
        {"agent_2": {"obs": {"global": torch.randn(3, 10), "local": torch.randn(3, 32)}}}
    )
    assert out["agent_2"]["action_dist_inputs"].shape == (3, 4)
    out["agent_2"]["action_dist_inputs"].sum().backward()
    assert module["agent_1"].encoder[0].weight.grad is not None


def test_shared_encoder_states_round_trip():
    module, other = _shared_encoder_spec().build(), _shared_encoder_spec().build()
    check(module.get_state(), other.get_state(), false=True)
    other.set_state(module.get_state())
    check(module.get_state(), other.get_state())


def test_discrete_bc_module_acts_and_restores_from_a_checkpoint(tmp_path):
    env = gym.make("CartPole-v1")
    spec = RLModuleSpec(
        module_class=DiscreteBCTorchModule,
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={"fcnet_hiddens": [32]},
    )
    module = spec.build().as_multi_rl_module()
    obs = torch.as_tensor(np.stack([env.observation_space.sample() for _ in range(5)]))
    logits = module.forward_inference({"default_policy": {"obs": obs}})["default_policy"][
        "action_dist_inputs"
    ]
    actions = module["default_policy"].get_inference_action_dist_cls().from_logits(logits)
    assert actions.sample().shape == (5,)
    module.save_to_path(tmp_path)
    restored = MultiRLModule.from_checkpoint(tmp_path)
    check(module.get_state(), restored.get_state())
    loaded = MultiRLModuleSpec(
        rl_module_specs={"default_policy": spec}, load_state_path=str(tmp_path)
    )
    fresh = loaded.build()
    loaded.load_states(fresh)
    check(module.get_state(), fresh.get_state())


def test_rllib_import_path_maps_to_the_testing_modules():
    launcher.install()
    try:
        from ray.rllib.core.testing.torch.bc_module import (
            DiscreteBCTorchModule as RLlibName,
        )
    finally:
        launcher.uninstall()
    assert RLlibName is DiscreteBCTorchModule


def test_rllib_older_ppo_torch_module_name_is_the_default_torch_module():
    from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule

    launcher.install()
    try:
        from ray.rllib.algorithms.ppo.torch.ppo_torch_rl_module import PPOTorchRLModule
    finally:
        launcher.uninstall()
    assert PPOTorchRLModule is DefaultPPOTorchRLModule
