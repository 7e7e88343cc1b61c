"""Torch modules loaded from module checkpoints: `RLModuleSpec(load_state_path=)` into an
algorithm's torch learner, and `TorchRLModule.check_weights` refusing weights that do not fit."""

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from trainer.algorithms.ppo import PPOConfig  # noqa: E402
from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule  # noqa: E402
from trainer.core.rl_module import RLModuleSpec  # noqa: E402
from trainer.errors import CheckpointError  # noqa: E402
from trainer.util.state_checks import StateError  # noqa: E402

ENV = gym.make("CartPole-v1")


def _module(hiddens: list[int]) -> DefaultPPOTorchRLModule:
    return DefaultPPOTorchRLModule(
        observation_space=ENV.observation_space,
        action_space=ENV.action_space,
        model_config={"fcnet_hiddens": hiddens},
    )


def test_check_weights_takes_a_full_or_inference_only_state():
    module = _module([8])
    module.check_weights(module.get_state())
    module.check_weights(module.get_state(inference_only=True))


@pytest.mark.parametrize(
    "spoil, message",
    [
        (lambda s: s.update({"pi.net.mlp.0.bias": np.zeros(3, np.float32)}), "has shape"),
        (lambda s: s.update({"extra.weight": np.zeros(1, np.float32)}), "lacks"),
        (lambda s: s.pop("pi.net.mlp.0.bias"), "has no"),
        (lambda s: s["pi.net.mlp.0.bias"].fill(np.nan), "non-finite"),
        (lambda s: s.update({"pi.net.mlp.0.bias": s["pi.net.mlp.0.bias"].astype(int)}), "dtype"),
    ],
)
def test_check_weights_refuses_weights_that_do_not_fit(spoil, message):
    module = _module([8])
    before = module.get_state()
    state = module.get_state()
    spoil(state)
    with pytest.raises(StateError, match=message):
        module.check_weights(state, "weights")
    for key, value in module.get_state().items():
        np.testing.assert_array_equal(value, before[key])


def test_a_checkpoint_of_another_network_size_is_refused_at_build(tmp_path):
    _module([16]).save_to_path(tmp_path)
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=DefaultPPOTorchRLModule,
                # The saved module's one shared encoder (a module's own default), 8 wide.
                model_config={"fcnet_hiddens": [8], "vf_share_layers": True},
                load_state_path=str(tmp_path),
            )
        )
    )
    with pytest.raises(CheckpointError, match="has shape"):
        config.build()
