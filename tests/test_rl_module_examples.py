"""RLlib 2.60's custom-RLModule examples (`rllib/examples/rl_modules/`): the module classes
answer their docstrings' calls, and the scripts run unmodified through the launcher with the
wheel's own files. Reaching the scripts' targets is `bench/rllib_examples.py`'s job."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from cli_in_process import run_cli
from helpers import rllib_example

from trainer import launcher
from trainer.compat.rllib_utils import Columns
from trainer.core.apis import TARGET_NETWORK_ACTION_DIST_INPUTS
from trainer.examples.rl_modules.classes.lstm_containing_rlm import (
    LSTMContainingRLModule,
    LSTMContainingRLModuleWithTargetNetwork,
)

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 240


def run_example(relative: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(tmp_path))  # ~/ray_results
    env.pop(launcher.ENV_VAR, None)
    # `python -m trainer run SCRIPT`, in this process (tests/cli_in_process.py).
    return run_cli(
        "run", str(rllib_example(relative)), *args, cwd=tmp_path, env=env, timeout=RUN_TIMEOUT_S
    )


def lstm_batch(module: LSTMContainingRLModule, batch_size: int, seq_len: int, obs_dim: int):
    state_in = {
        key: torch.from_numpy(value).unsqueeze(0).repeat(batch_size, 1)
        for key, value in module.get_initial_state().items()
    }
    obs = torch.from_numpy(np.random.random_sample((batch_size, seq_len, obs_dim)))
    return {Columns.OBS: obs.float(), Columns.STATE_IN: state_in}


def test_lstm_containing_module_answers_its_docstring_calls():
    """RLlib's docstring: B=10, T=5, e=25, cell 32; every forward gives (B, T, 4) logits and a
    (B, 32) state out, the value head (B, T)."""
    module = LSTMContainingRLModule(
        observation_space=gym.spaces.Box(-1.0, 1.0, (25,), np.float32),
        action_space=gym.spaces.Discrete(4),
        model_config={"lstm_cell_size": 32},
    )
    batch = lstm_batch(module, 10, 5, 25)
    assert module.is_stateful()
    for forward in (module.forward_inference, module.forward_exploration, module.forward_train):
        out = forward(batch)
        assert tuple(out[Columns.ACTION_DIST_INPUTS].shape) == (10, 5, 4)
        assert {key: tuple(v.shape) for key, v in out[Columns.STATE_OUT].items()} == {
            "h": (10, 32),
            "c": (10, 32),
        }
    train_out = module.forward_train(batch)
    assert tuple(module.compute_values(batch, train_out[Columns.EMBEDDINGS]).shape) == (10, 5)
    torch.testing.assert_close(
        module.compute_values(batch), module.compute_values(batch, train_out[Columns.EMBEDDINGS])
    )


def test_lstm_module_with_target_network_keeps_frozen_copies():
    module = LSTMContainingRLModuleWithTargetNetwork(
        observation_space=gym.spaces.Box(-1.0, 1.0, (6,), np.float32),
        action_space=gym.spaces.Discrete(3),
        model_config={"lstm_cell_size": 8, "dense_layers": [16]},
    )
    module.make_target_networks()
    batch = lstm_batch(module, 4, 3, 6)
    target = module.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS]
    torch.testing.assert_close(target, module.forward_train(batch)[Columns.ACTION_DIST_INPUTS])
    assert len(module.get_target_network_pairs()) == 3
    assert not any(p.requires_grad for p in module._old_lstm.parameters())
    with torch.no_grad():  # a step of the main network leaves the target where it was
        module._pi_head.bias.add_(1.0)
    assert not torch.allclose(
        module.forward_target(batch)[TARGET_NETWORK_ACTION_DIST_INPUTS],
        module.forward_train(batch)[Columns.ACTION_DIST_INPUTS],
    )
    assert set(module.get_non_inference_attributes()) == {
        "_old_lstm",
        "_old_fc_net",
        "_old_pi_head",
        "_values",
    }


@pytest.mark.slow
def test_custom_lstm_rl_module_script_runs_unmodified(tmp_path):
    """`custom_lstm_rl_module.py` (StatelessCartPole, the LSTM module in an RLModuleSpec): two
    iterations in an EnvRunner process through the launcher."""
    result = run_example(
        "rl_modules/custom_lstm_rl_module.py",
        "--stop-iters=2",
        "--num-env-runners=1",
        tmp_path=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r"^iter +2 \| ", result.stdout, re.MULTILINE), result.stdout
