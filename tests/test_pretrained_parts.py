"""A module trained offline, then continued by another algorithm whose module has more parts, as
RLlib's `offline_rl/train_w_bc_finetune_w_ppo.py` does: BC trains a policy built from RLlib's
model configs; PPO's module is that policy plus a zero-initialized value branch, loaded from
the BC checkpoint's `learner_group/learner/rl_module` (`load_state_path`, or
`restore_from_path(component=...)`). The weights the checkpoint lacks keep their values, saying
so; weights the module lacks are still refused, changing nothing. A module class the running
script defines (`__main__`) is saved by its place in the script. Real files, through the
public API."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_offline import _expert_table

from trainer import BCConfig, PPOConfig, RLModuleSpec
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import ValueFunctionAPI
from trainer.core.model_configs import ENCODER_OUT, MLPEncoderConfig, MLPHeadConfig
from trainer.core.rl_module import RLModule
from trainer.errors import CheckpointError

torch = pytest.importorskip("torch", reason="the modules are torch's")

from trainer.torch_rl.rl_module import TorchRLModule  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
MODULES = "learner_group/learner/rl_module"


class BCPolicy(TorchRLModule):
    """RLlib's example BC module: an MLP encoder and a policy head, from RLlib's configs."""

    def setup(self):
        self._encoder = MLPEncoderConfig(input_dims=[4], hidden_layer_dims=[32]).build("torch")
        self._pi = MLPHeadConfig(input_dims=[32], hidden_layer_dims=[], output_layer_dim=2).build(
            "torch"
        )

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self._pi(self._encoder(batch)[ENCODER_OUT])}


class PPOPolicy(BCPolicy, ValueFunctionAPI):
    """The BC module plus a value branch that starts at zero (RLlib's example's)."""

    def setup(self):
        super().setup()
        self._vf = MLPHeadConfig(
            input_dims=[32],
            hidden_layer_dims=[],
            output_layer_dim=1,
            output_layer_weights_initializer=torch.nn.init.zeros_,
            output_layer_bias_initializer=torch.nn.init.zeros_,
        ).build("torch")

    def compute_values(self, batch, embeddings=None):
        if embeddings is None:
            embeddings = self._encoder(batch)[ENCODER_OUT]
        return self._vf(embeddings).squeeze(-1)


class SmallerPolicy(TorchRLModule):
    """A module without the BC module's encoder: its checkpoint does not fit."""

    def setup(self):
        self._pi = MLPHeadConfig(input_dims=[4], hidden_layer_dims=[], output_layer_dim=2).build()

    def _forward(self, batch, **kwargs):
        return {Columns.ACTION_DIST_INPUTS: self._pi(batch[Columns.OBS])}


@pytest.fixture(scope="module")
def bc_checkpoint(tmp_path_factory) -> Path:
    """BC's checkpoint after a few updates on a hand-played CartPole dataset."""
    folder = tmp_path_factory.mktemp("bc")
    pq.write_table(_expert_table(2000), folder / "expert.parquet", row_group_size=500)
    algo = bc(folder, BCPolicy).build()
    try:
        for _ in range(3):
            algo.train()
        return Path(algo.save_to_path(str(folder / "checkpoint")))
    finally:
        algo.stop()


def bc(data: Path, module_class: type) -> BCConfig:
    return (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=f"local://{data}", dataset_num_iters_per_learner=4)
        .training(train_batch_size_per_learner=256, lr=3e-3)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=module_class))
        .debugging(seed=0)
    )


def ppo(**spec) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=PPOPolicy, **spec))
        .debugging(seed=1)
    )


def bc_weights(checkpoint: Path) -> dict:
    return RLModule.from_checkpoint(checkpoint / MODULES / "default_policy").get_state()


def assert_continues_the_bc_policy(module, checkpoint: Path) -> None:
    state = module.get_state()
    for key, value in bc_weights(checkpoint).items():
        np.testing.assert_array_equal(state[key], value)
    assert not any(state[key].any() for key in state if key.startswith("_vf.net"))


@pytest.mark.slow
def test_load_state_path_of_the_bc_modules_folder_loads_the_policy_and_keeps_the_value_branch(
    bc_checkpoint,
):
    with pytest.warns(UserWarning, match=r"holds 5 of the module's 8 weights; _vf\.") as caught:
        algo = ppo(load_state_path=str(bc_checkpoint / MODULES)).build()
    try:
        assert "keep their current values" in str(caught[0].message)
        assert_continues_the_bc_policy(algo.get_module(), bc_checkpoint)
        # The EnvRunner acts with the loaded policy: its greedy action is BC's.
        obs = np.array([0.01, 0.2, 0.03, -0.2], np.float32)
        bc = RLModule.from_checkpoint(bc_checkpoint / MODULES / "default_policy")
        expected = int(
            bc.forward_inference({Columns.OBS: torch.as_tensor(obs[None])})[
                Columns.ACTION_DIST_INPUTS
            ].argmax()
        )
        assert algo.compute_single_action(obs, explore=False) == expected
        algo.train()  # and PPO trains on from there
    finally:
        algo.stop()


def test_restore_from_path_of_the_modules_component_does_the_same(bc_checkpoint):
    algo = ppo().build()
    try:
        with pytest.warns(UserWarning, match="keep their current values"):
            algo.restore_from_path(str(bc_checkpoint / MODULES), component=MODULES)
        assert_continues_the_bc_policy(algo.get_module(), bc_checkpoint)
    finally:
        algo.stop()


def test_a_checkpoint_with_weights_the_module_lacks_is_refused_and_changes_nothing(
    bc_checkpoint,
):
    algo = bc(bc_checkpoint.parent, SmallerPolicy).build()
    try:
        before = algo.get_module().get_state()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no "kept" warning for a state that does not fit)
            with pytest.raises(CheckpointError, match=r"has weights this module lacks"):
                algo.restore_from_path(str(bc_checkpoint / MODULES), component=MODULES)
        after = algo.get_module().get_state()
        assert all(np.array_equal(after[k], before[k]) for k in before)
    finally:
        algo.stop()


@pytest.mark.slow
def test_a_module_class_of_the_running_script_is_saved_by_its_place_in_it(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\n"
        "import gymnasium as gym\n"
        "import torch\n"
        "from trainer.core.rl_module import RLModule\n"
        "from trainer.torch_rl.rl_module import TorchRLModule\n"
        "class ScriptModule(TorchRLModule):\n"
        "    def setup(self):\n"
        "        self.net = torch.nn.Linear(4, 2)\n"
        "    def _forward(self, batch, **kwargs):\n"
        "        return {'action_dist_inputs': self.net(batch['obs'])}\n"
        "env = gym.make('CartPole-v1')\n"
        "module = ScriptModule(observation_space=env.observation_space,\n"
        "                      action_space=env.action_space, model_config={})\n"
        "module.save_to_path(sys.argv[1])\n"
        "again = RLModule.from_checkpoint(sys.argv[1])\n"
        "print('reloaded', type(again).__name__,\n"
        "      all((again.get_state()[k] == v).all() for k, v in module.get_state().items()))\n"
    )
    saved = tmp_path / "module"
    completed = subprocess.run(
        [sys.executable, str(script), str(saved)],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "reloaded ScriptModule True" in completed.stdout, completed.stderr[-3000:]
    # Elsewhere the script's class is not there to rebuild it: said so, naming the way out.
    with pytest.raises(CheckpointError, match=r"'__main__:ScriptModule'.*the script that saved"):
        RLModule.from_checkpoint(saved)
