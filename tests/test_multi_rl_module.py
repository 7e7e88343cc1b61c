"""RLlib 2.60's `rllib/core/rl_module/tests/test_multi_rl_module.py`, ported to numpy.

RLlib's file builds its modules from `DiscreteBCTorchModule` (a torch module) with
`RLModuleConfig`, and its envs with `make_multi_agent("CartPole-v0")`. Here every case runs with
`DiscreteBCNumpyModule` below (a numpy RLModule subclass: an MLP of `fcnet_hiddens` whose
logits pick CartPole's actions), built with RLlib's keyword constructor (`RLModuleConfig` is
RLlib's removed form), on CartPole's spaces (what `make_multi_agent("CartPole-v0")` gives each
agent). `test_from_config` checks the built modules' class (RLlib's asserts a class,
`VPGTorchRLModule`, that its own modules are not: a bug of that test). `check(state, state2,
false=True)` becomes an explicit "some weight differs". Otherwise the cases and their
assertions are RLlib's.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from trainer.compat.rllib_utils import DEFAULT_MODULE_ID, Columns
from trainer.core.multi_rl_module import MultiRLModule
from trainer.core.rl_module import RLModule, RLModuleSpec
from trainer.testing import check


class DiscreteBCNumpyModule(RLModule):
    """A behaviour-cloning policy for Discrete actions: an MLP (tanh) to action logits."""

    def setup(self) -> None:
        hiddens = list((self.model_config or {}).get("fcnet_hiddens", [256, 256]))
        sizes = [int(np.prod(self.observation_space.shape)), *hiddens, int(self.action_space.n)]
        rng = np.random.default_rng()
        self.weights = {}
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            self.weights[f"layer{i}.weight"] = rng.normal(0, n_in**-0.5, (n_in, n_out))
            self.weights[f"layer{i}.bias"] = np.zeros(n_out)
        self.num_layers = len(sizes) - 1

    def _logits(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float64)
        for i in range(self.num_layers):
            x = x @ self.weights[f"layer{i}.weight"] + self.weights[f"layer{i}.bias"]
            if i < self.num_layers - 1:
                x = np.tanh(x)
        return x

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTIONS: self._logits(batch[Columns.OBS]).argmax(axis=-1)}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._forward_inference(batch, **kwargs)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTION_DIST_INPUTS: self._logits(batch[Columns.OBS])}

    def get_state(self, components=None, *, not_components=None, inference_only=False, **kw):
        return {name: value.copy() for name, value in self.weights.items()}

    def set_state(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            self.weights[name][...] = value


def _spaces() -> tuple[gym.Space, gym.Space]:
    env = gym.make("CartPole-v1")
    return env.observation_space, env.action_space


def _module(hiddens: list[int]) -> DiscreteBCNumpyModule:
    observation_space, action_space = _spaces()
    return DiscreteBCNumpyModule(
        observation_space=observation_space,
        action_space=action_space,
        model_config={"fcnet_hiddens": hiddens},
    )


def _some_weight_differs(state_a: dict, state_b: dict) -> bool:
    return any(not np.array_equal(state_a[name], state_b[name]) for name in state_a)


def test_from_config():
    """Tests whether a MultiRLModule can be constructed from a config."""
    observation_space, action_space = _spaces()
    module1 = RLModuleSpec(
        module_class=DiscreteBCNumpyModule,
        observation_space=observation_space,
        action_space=action_space,
        model_config={"fcnet_hiddens": [32]},
    )
    module2 = RLModuleSpec(
        module_class=DiscreteBCNumpyModule,
        observation_space=observation_space,
        action_space=action_space,
        model_config={"fcnet_hiddens": [32]},
    )

    multi_rl_module = MultiRLModule(
        rl_module_specs={"module1": module1, "module2": module2},
    )

    assert set(multi_rl_module.keys()) == {"module1", "module2"}
    assert isinstance(multi_rl_module["module1"], DiscreteBCNumpyModule)
    assert isinstance(multi_rl_module["module2"], DiscreteBCNumpyModule)
    # Each module is its own (independently initialised) instance.
    assert multi_rl_module["module1"] is not multi_rl_module["module2"]


def test_as_multi_rl_module():
    multi_rl_module = _module([32]).as_multi_rl_module()

    assert not isinstance(multi_rl_module, DiscreteBCNumpyModule)
    assert isinstance(multi_rl_module, MultiRLModule)
    assert {DEFAULT_MODULE_ID} == set(multi_rl_module.keys())

    # Check as_multi_rl_module() for the second time
    multi_rl_module2 = multi_rl_module.as_multi_rl_module()
    assert id(multi_rl_module) == id(multi_rl_module2)


def test_get_state_and_set_state():
    module = _module([32]).as_multi_rl_module()

    state = module.get_state()
    assert isinstance(state, dict)
    assert set(state.keys()) == set(module.keys())
    assert set(state[DEFAULT_MODULE_ID].keys()) == set(module[DEFAULT_MODULE_ID].get_state().keys())

    module2 = _module([32]).as_multi_rl_module()
    state2 = module2.get_state()
    assert _some_weight_differs(state[DEFAULT_MODULE_ID], state2[DEFAULT_MODULE_ID])

    module2.set_state(state)
    state2_after = module2.get_state()
    check(state, state2_after)


def test_add_remove_modules():
    module = _module([32]).as_multi_rl_module()

    module.add_module("test", _module([32]))
    assert set(module.keys()) == {DEFAULT_MODULE_ID, "test"}
    module.remove_module("test")
    assert set(module.keys()) == {DEFAULT_MODULE_ID}

    # test if add works with a conflicting name
    with pytest.raises(ValueError):
        module.add_module(DEFAULT_MODULE_ID, _module([32]))

    module.add_module(DEFAULT_MODULE_ID, _module([32]), override=True)


def test_save_to_path_and_from_checkpoint():
    """Test saving and loading from checkpoint after adding / removing modules."""
    module = _module([32]).as_multi_rl_module()
    module.add_module("test", _module([32]))
    module.add_module("test2", _module([128]))

    with tempfile.TemporaryDirectory() as tmpdir:
        module.save_to_path(tmpdir)
        module2 = MultiRLModule.from_checkpoint(tmpdir)
        check(module.get_state(), module2.get_state())
        assert module.keys() == module2.keys()
        assert module.keys() == {"test", "test2", DEFAULT_MODULE_ID}
        assert id(module) != id(module2)

    module.remove_module("test")

    # Check that - after removing a module - the checkpoint is correct.
    with tempfile.TemporaryDirectory() as tmpdir:
        module.save_to_path(tmpdir)
        module2 = MultiRLModule.from_checkpoint(tmpdir)
        check(module.get_state(), module2.get_state())
        assert module.keys() == module2.keys()
        assert module.keys() == {"test2", DEFAULT_MODULE_ID}
        assert id(module) != id(module2)

    # Check that - after adding a new module - the checkpoint is correct.
    module.add_module("test3", _module([120]))
    # Check that - after adding a module - the checkpoint is correct.
    with tempfile.TemporaryDirectory() as tmpdir:
        tmpdir = os.path.join(tmpdir, "test_multi_rl_module")  # RLlib: a fixed /tmp path
        module.save_to_path(tmpdir)
        module2 = MultiRLModule.from_checkpoint(tmpdir)
        check(module.get_state(), module2.get_state())
        assert module.keys() == module2.keys()
        assert module.keys() == {"test2", "test3", DEFAULT_MODULE_ID}
        assert id(module) != id(module2)
