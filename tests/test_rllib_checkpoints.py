"""Checkpoints RLlib 2.60 wrote, read here: RLlib itself trains and saves them in a subprocess
(the test extra installs Ray 2.60 with what RLlib imports), then this project's public API reads
them without Ray (`Algorithm.from_checkpoint`, `RLModule.from_checkpoint`, `python -m trainer
evaluate`): the same module outputs as RLlib's module on the same observations, MeanStdFilter
statistics restored, and training continued here."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from cli_in_process import run_cli
from helpers import run_rllib_script, written_once

pytest.importorskip("ray.rllib", reason="needs Ray 2.60 with RLlib's imports (the test extra)")
torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

#: RLlib trains one iteration of each (PPO on CartPole and on Pendulum with a MeanStdFilter, DQN,
#: SAC) and saves it, pickled or msgpack; it writes the module's outputs on fixed observations
#: beside (RLlib's own `RLModule.from_checkpoint` of the saved module; DQN's Q-values).
RLLIB_SCRIPT = r"""
import json, pickle, sys
import numpy as np
import torch
from ray.rllib.algorithms.dqn import DQNConfig
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.algorithms.sac import SACConfig
from ray.rllib.connectors.env_to_module import MeanStdFilter
from ray.rllib.core.rl_module.rl_module import RLModule

out = sys.argv[1]
# RLlib's EnvRunnerGroup puts its config into Ray's object store even without remote EnvRunners,
# which starts Ray: a Ray of its own (never another process's), without CPUs (nothing here runs
# as a Ray task or actor: no worker process is prestarted) and without the dashboard, starts in
# about half the time of `ray.init()`'s defaults.
import ray

ray.init(address="local", num_cpus=0, include_dashboard=False)
cartpole = (
    PPOConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=0, num_envs_per_env_runner=4)
    .training(lr=0.0003, num_epochs=6, vf_loss_coeff=0.01, train_batch_size_per_learner=2000,
              minibatch_size=128)
    .rl_module(model_config={"fcnet_hiddens": [32], "fcnet_activation": "linear",
                             "vf_share_layers": True})
    .debugging(seed=0)
)
pendulum = (
    PPOConfig()
    .environment("Pendulum-v1")
    .env_runners(num_env_runners=0,
                 env_to_module_connector=lambda env, spaces=None, device=None: MeanStdFilter())
    .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
    .debugging(seed=0)
)
dqn = (
    DQNConfig()
    .environment("CartPole-v1")
    .env_runners(num_env_runners=0)
    .training(num_steps_sampled_before_learning_starts=100)
    # (an iteration of 120 env steps, not DQN's 1000: about 20 updates, not 900)
    .reporting(min_sample_timesteps_per_iteration=120)
    .debugging(seed=0)
)
sac = (
    SACConfig()
    .environment("Pendulum-v1")
    .env_runners(num_env_runners=0)
    .training(num_steps_sampled_before_learning_starts=10)
    # (an iteration of 20 env steps, not SAC's 100 and at least 1 s: about 10 updates in RLlib's
    # iteration, and 20, not 100 or more, in the one the restored algorithm trains in the tests)
    .reporting(min_sample_timesteps_per_iteration=20, min_time_s_per_iteration=0)
    .debugging(seed=0)
)
runs = (
    ("cartpole", cartpole, False, 4),
    ("pendulum", pendulum, True, 3),
    ("dqn", dqn, False, 4),
    ("sac", sac, True, 3),
)
for name, config, msgpack, dim in runs:
    algo = config.build_algo()
    algo.train()
    path = f"{out}/{name}"
    algo.save_to_path(path, use_msgpack=msgpack)
    algo.stop()
    module = RLModule.from_checkpoint(f"{path}/learner_group/learner/rl_module/default_policy")
    obs = np.random.default_rng(1).standard_normal((32, dim)).astype(np.float32)
    with torch.no_grad():
        batch = {"obs": torch.from_numpy(obs)}
        if name == "dqn":
            inputs = module.compute_q_values(batch)["qf_preds"]
        else:
            inputs = module.forward_inference(batch)["action_dist_inputs"]
    extra = {}
    if name == "cartpole":  # the value head's bias's first Adam moment, the last parameter
        with open(f"{path}/learner_group/learner/state.pkl", "rb") as file:
            optimizer = pickle.load(file)["optimizer"]["default_policy_default_optimizer"]
        moments = optimizer["state"]["state"]
        extra["vf_bias_exp_avg"] = np.asarray(moments[max(moments)]["exp_avg"])
    np.savez(f"{out}/{name}_outputs.npz", obs=obs, action_dist_inputs=inputs.numpy(), **extra)
# Modules RLlib saves on their own: APPO's (with the learner's target networks), BC's, and CQL's
# and IQL's (without target networks: RLlib's learner makes those).
import gymnasium as gym
from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.algorithms.bc import BCConfig
from ray.rllib.algorithms.cql import CQLConfig
from ray.rllib.algorithms.iql import IQLConfig

modules = (
    ("appo_module", APPOConfig(), "CartPole-v1"),
    ("bc_module", BCConfig(), "CartPole-v1"),
    ("cql_module", CQLConfig(), "Pendulum-v1"),
    ("iql_module", IQLConfig(), "Pendulum-v1"),
)
for name, config, env in modules:
    spec = config.environment(env).get_rl_module_spec(env=gym.make(env))
    module = spec.build()
    if name == "appo_module":
        module.make_target_networks()
    module.save_to_path(f"{out}/{name}")
    dim = gym.make(env).observation_space.shape[0]
    obs = np.random.default_rng(1).standard_normal((32, dim)).astype(np.float32)
    with torch.no_grad():
        inputs = module.forward_inference({"obs": torch.from_numpy(obs)})["action_dist_inputs"]
    np.savez(f"{out}/{name}_outputs.npz", obs=obs, action_dist_inputs=inputs.numpy())
ray.shutdown()
print("saved", flush=True)
# Every file is written and closed, and Ray's processes are gone: the interpreter's teardown
# (torch's and Ray's modules, seconds on a busy machine) is skipped.
import os

os._exit(0)
"""


@pytest.fixture(scope="module")
def rllib_checkpoints(tmp_path_factory) -> Path:
    """The folder RLLIB_SCRIPT wrote (about 15 s of RLlib), once per test run."""
    return written_once(
        tmp_path_factory,
        "rllib_checkpoints",
        lambda out: run_rllib_script(RLLIB_SCRIPT, str(out), timeout=400),
    )


def outputs(module, obs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        batch = {"obs": torch.from_numpy(obs)}
        if "DQN" in type(module).__name__:
            inputs = module.compute_q_values(batch)["qf_preds"]
        else:
            inputs = module.forward_inference(batch)["action_dist_inputs"]
    return inputs.numpy() if hasattr(inputs, "numpy") else np.asarray(inputs)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cartpole", "pendulum", "dqn", "sac"])
def test_an_rllib_module_gives_rllib_s_outputs(rllib_checkpoints, name):
    from trainer import RLModule

    saved = np.load(rllib_checkpoints / f"{name}_outputs.npz")
    module_path = rllib_checkpoints / name / "learner_group/learner/rl_module/default_policy"
    module = RLModule.from_checkpoint(module_path)
    np.testing.assert_allclose(
        outputs(module, saved["obs"]), saved["action_dist_inputs"], atol=1e-5
    )
    # The MultiRLModule folder above it loads too, with the same module inside.
    multi = RLModule.from_checkpoint(module_path.parent)
    np.testing.assert_allclose(
        outputs(multi["default_policy"], saved["obs"]), saved["action_dist_inputs"], atol=1e-5
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dqn", "sac"])
def test_rllib_s_dqn_and_sac_algorithms_build_here_and_train(rllib_checkpoints, name):
    from trainer import Algorithm

    saved = np.load(rllib_checkpoints / f"{name}_outputs.npz")
    algo = Algorithm.from_checkpoint(rllib_checkpoints / name)
    try:
        assert type(algo).__name__ == name.upper() and algo.training_iteration == 1
        np.testing.assert_allclose(
            outputs(algo.get_module(), saved["obs"]), saved["action_dist_inputs"], atol=1e-5
        )
        assert algo.train()["training_iteration"] == 2
    finally:
        algo.stop()


@pytest.mark.parametrize(
    "name, module_class",
    [
        # APPO's module is PPO's and its learner's target copies (dropped: APPO here keeps its
        # own); BC's is an encoder and a policy head under other names (PPO's module here, whose
        # value head RLlib's lacks).
        ("appo_module", "DefaultPPOTorchRLModule"),
        ("bc_module", "DefaultPPOTorchRLModule"),
        # Saved without the target networks the module here holds: they start as copies.
        ("cql_module", "DefaultCQLTorchRLModule"),
        ("iql_module", "DefaultIQLTorchRLModule"),
    ],
)
def test_rllib_s_other_algorithms_modules_load_here(rllib_checkpoints, name, module_class):
    from trainer import RLModule

    module = RLModule.from_checkpoint(rllib_checkpoints / name)
    assert type(module).__name__ == module_class
    saved = np.load(rllib_checkpoints / f"{name}_outputs.npz")
    np.testing.assert_allclose(
        outputs(module, saved["obs"]), saved["action_dist_inputs"], atol=1e-5
    )


def test_the_pendulum_algorithm_restores_rllib_s_mean_std_filter(rllib_checkpoints):
    from trainer import Algorithm

    saved = np.load(rllib_checkpoints / "pendulum_outputs.npz")
    algo = Algorithm.from_checkpoint(rllib_checkpoints / "pendulum")
    try:
        assert algo.config.env == "Pendulum-v1" and algo.training_iteration == 1
        assert algo.num_env_steps_sampled_lifetime == 400
        np.testing.assert_allclose(
            outputs(algo.get_module(), saved["obs"]), saved["action_dist_inputs"], atol=1e-5
        )
        # RLlib's statistics (msgpack: no pickle runs): the 400 steps' observations and the
        # two episodes' first ones.
        [piece] = algo.config.env_to_module_connector()
        state = piece.get_state()["synced"]
        assert state["n"] == 402 and np.all(np.abs(state["mean"]) < 1.5)
        algo.train()
    finally:
        algo.stop()


def test_the_cartpole_checkpoint_continues_training_here_to_450(rllib_checkpoints):
    from trainer import Algorithm

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every setting and the optimizer's moments restored
        algo = Algorithm.from_checkpoint(rllib_checkpoints / "cartpole")
    try:
        assert algo.config.lr == 0.0003 and algo.config.num_epochs == 6
        moments = algo.learner.get_state()["optimizer"]["default_optimizer"]["param_state"]
        np.testing.assert_array_equal(
            moments["vf.net.mlp.0.bias"]["exp_avg"],
            np.load(rllib_checkpoints / "cartpole_outputs.npz")["vf_bias_exp_avg"],
        )
        assert algo.config.model_config["fcnet_hiddens"] == [32]
        best = -np.inf
        for _ in range(60):
            result = algo.train()
            best = max(best, result["env_runners"]["episode_return_mean"])
            if best >= 450:
                break
        assert best >= 450, best
    finally:
        algo.stop()


@pytest.mark.slow
def test_evaluate_reads_an_rllib_checkpoint(rllib_checkpoints, tmp_path):
    # `python -m trainer evaluate`, in this process (tests/cli_in_process.py).
    command = ["evaluate", str(rllib_checkpoints / "pendulum")]
    done = run_cli(*command, "--episodes", "2", "--json", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["env"] == "Pendulum-v1" and report["training_iteration"] == 1, report
    assert report["num_episodes"] == 2 and report["episode_return_mean"] < 0, report


def test_a_layout_of_another_version_is_named(tmp_path):
    from trainer import Algorithm
    from trainer.checkpoints import CheckpointError

    (tmp_path / "rllib_checkpoint.json").write_text(
        json.dumps({"checkpoint_version": "1.1", "ray_version": "2.9.0"})
    )
    (tmp_path / "class_and_ctor_args.pkl").write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"layout version '1.1' \(Ray 2.9.0\)"):
        Algorithm.from_checkpoint(tmp_path)


# -- modules written here, loaded by RLlib ------------------------------------------------------
RLLIB_LOADS_SCRIPT = r"""
import sys
import numpy as np
import torch
from ray.rllib.core.rl_module.rl_module import RLModule

for folder in sys.argv[1:]:
    data = np.load(f"{folder}.npz")
    module = RLModule.from_checkpoint(folder)
    batch = {"obs": torch.from_numpy(data["obs"])}
    with torch.no_grad():
        if hasattr(module, "compute_q_values") and "Q" in type(module).__name__:  # DQN
            out = module.compute_q_values(batch)["qf_preds"]
        else:
            out = module.forward_inference(batch)["action_dist_inputs"]
    np.save(f"{folder}_rllib.npy", out.numpy())
    print(type(module).__module__, type(module).__name__)
"""


def _our_outputs(module, obs: np.ndarray) -> np.ndarray:
    if hasattr(module, "state_dict"):  # a torch module
        with torch.no_grad():
            out = module.forward_inference({"obs": torch.from_numpy(obs)})
        return out["action_dist_inputs"].numpy()
    return np.asarray(module.forward_inference({"obs": obs})["action_dist_inputs"])


@pytest.mark.slow
def test_modules_written_here_load_in_rllib_with_the_same_outputs(tmp_path):
    from trainer import PPOConfig
    from trainer.algorithms.dqn import DQNConfig
    from trainer.algorithms.sac import SACConfig
    from trainer.export import RLLIB, export_policy

    cases = {
        # numpy PPO trained through an EnvRunner process, exported by the command line
        "ppo_numpy": PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=1)
        .training(train_batch_size=256, minibatch_size=64, num_epochs=2),
        "ppo_torch_pendulum": PPOConfig()
        .environment("Pendulum-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=256, minibatch_size=64, num_epochs=2)
        .rl_module(model_config={"vf_share_layers": True, "fcnet_activation": "relu"}),
        "dqn_numpy": DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=0),
        "sac_torch": SACConfig()
        .environment("Pendulum-v1")
        .framework("torch")
        .env_runners(num_env_runners=0),
    }
    folders = []
    for name, config in cases.items():
        algo = config.build()
        try:
            if name.startswith("ppo"):
                algo.train()
            folder = tmp_path / name
            if name == "ppo_numpy":
                checkpoint = algo.save_to_path(tmp_path / "checkpoint")
                # (in this process, tests/cli_in_process.py: RLlib reads what it wrote in a
                # fresh interpreter below)
                command = ["export", str(checkpoint), "--format", RLLIB, "--output", str(folder)]
                done = run_cli(*command, cwd=tmp_path, timeout=120)
                assert done.returncode == 0, done.stderr[-2000:]
            elif name == "dqn_numpy":  # RLlib's name for it
                algo.export_policy_checkpoint(str(folder))
                with pytest.raises(KeyError, match="Policy with ID p9 not found"):
                    algo.export_policy_checkpoint(str(tmp_path / "none"), policy_id="p9")
            else:
                export_policy(algo, str(folder), format=RLLIB)
            dim = algo.get_module().observation_space.shape[0]
            obs = np.random.default_rng(2).standard_normal((16, dim)).astype(np.float32)
            np.savez(f"{folder}.npz", obs=obs, ours=_our_outputs(algo.get_module(), obs))
            folders.append(str(folder))
        finally:
            algo.stop()
    done = subprocess.run(
        [sys.executable, "-c", RLLIB_LOADS_SCRIPT, *folders],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # RLlib built its own classes.
    assert done.stdout.count("ray.rllib.algorithms.") == 4, done.stdout
    for folder in folders:
        ours = np.load(f"{folder}.npz")["ours"]
        np.testing.assert_allclose(np.load(f"{folder}_rllib.npy"), ours, atol=1e-5)


def test_a_module_of_a_class_rllib_does_not_ship_is_refused_by_name(tmp_path):
    from trainer import PPOConfig, RLModuleSpec
    from trainer.examples.rl_modules.classes.lstm_containing_rlm import LSTMContainingRLModule
    from trainer.export import RLLIB, ExportError, export_policy

    algo = (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=0)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=LSTMContainingRLModule))
        .build()
    )
    try:
        with pytest.raises(ExportError, match="cannot hold a LSTMContainingRLModule for RLlib"):
            export_policy(algo, str(tmp_path / "own"), format=RLLIB)
    finally:
        algo.stop()
    assert not (tmp_path / "own").exists()
    with pytest.raises(ExportError, match="format='tf'"):
        export_policy(None, str(tmp_path / "x"), format="tf")


def test_a_module_class_of_the_user_s_is_named_and_nothing_of_it_runs(rllib_checkpoints, tmp_path):
    import shutil

    from trainer import RLModule
    from trainer.checkpoints import CheckpointError
    from trainer.compat import rllib_checkpoint

    folder = tmp_path / "own_module"
    shutil.copytree(
        rllib_checkpoints / "cartpole/learner_group/learner/rl_module/default_policy", folder
    )
    # The class a user's RLlib project pickles there: a module class of theirs, which RLlib
    # imports (running its code) when it reads the file; here it is named, never imported.
    with open(folder / "class_and_ctor_args.pkl", "wb") as file:
        rllib_checkpoint._RLlibPickler(file).dump(
            {
                "class": rllib_checkpoint._RLlibGlobal("my_project.models.MyModule"),
                "ctor_args_and_kwargs": ((), {}),
            }
        )
    with pytest.raises(CheckpointError, match=r"names my_project\.models\.MyModule, which this"):
        RLModule.from_checkpoint(folder)
    assert "my_project" not in sys.modules


def test_inspect_prints_what_an_rllib_checkpoint_holds(rllib_checkpoints, tmp_path):
    # `python -m trainer inspect`, in this process (tests/cli_in_process.py).
    command = ["inspect", str(rllib_checkpoints / "pendulum")]
    done = run_cli(*command, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "written by RLlib 2.60.0" in done.stdout
    assert "env_runner/env_to_module_connector/MeanStdFilter" in done.stdout
    assert "encoder.actor_encoder.net.mlp.0.weight (256, 3)" in done.stdout
    done = run_cli(*command, "--json", cwd=tmp_path, timeout=120)
    info = json.loads(done.stdout)
    [algorithm] = [c for c in info["components"] if c["component"] == "."]
    assert algorithm["class"] == "ray.rllib.algorithms.ppo.ppo.PPO"
    assert algorithm["env"] == "'Pendulum-v1'" and algorithm["training_iteration"] == 1
