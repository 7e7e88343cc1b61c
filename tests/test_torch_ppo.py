"""Torch as a framework, end to end through the public API: `framework("torch")` trains RLlib's
default torch module with the torch PPO learner, a user's `TorchRLModule` samples in EnvRunner
processes and learns, checkpoints hold arrays (no pickle) and resume exactly, and a run that
asks for nothing torch-specific never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_plain_data
from torch_modules import FrozenPPOTorchLearner, TwoHeadedTorchModule

from trainer import PPOConfig, RLModuleSpec
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.dqn.dqn import DQNConfig

REPO = Path(__file__).resolve().parents[1]


def torch_ppo(**training) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .env_runners(num_env_runners=2, rollout_fragment_length=250)
        .training(
            train_batch_size=1000,
            minibatch_size=250,
            num_epochs=6,
            lr=0.001,
            **training,
        )
        .rl_module(model_config={"fcnet_hiddens": [32], "fcnet_activation": "tanh"})
        .debugging(seed=1)
    )


def _mean_return(algo, iterations: int) -> float:
    best = float("-inf")
    for _ in range(iterations):
        result = algo.train()
        value = result["env_runners"].get("episode_return_mean", float("nan"))
        if np.isfinite(value):
            best = max(best, value)
    return best


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_framework_torch_trains_the_default_torch_module_in_worker_processes():
    from trainer.algorithms.ppo.torch_module import DefaultPPOTorchRLModule

    # The default module shares its encoder (RLlib's vf_share_layers), so the value loss
    # is weighted down as in RLlib's tuned CartPole example.
    algo = torch_ppo(vf_loss_coeff=0.01).env_runners(num_env_runners=1).build()
    try:
        # The learner's module: get_module() is the EnvRunner's inference-only copy.
        module = algo.learner_module()
        assert isinstance(module, DefaultPPOTorchRLModule)
        assert module.framework == "torch"
        # The EnvRunner processes sample with inference-only copies: no value function.
        runner_keys = algo.env_runner_group.foreach_env_runner(
            lambda runner: sorted(runner.module.get_weights()), local_env_runner=False
        )
        assert runner_keys and all(keys == runner_keys[0] for keys in runner_keys)
        assert not any(key.startswith("vf") for key in runner_keys[0])
        assert any(key.startswith("vf") for key in module.get_state())
        assert _mean_return(algo, 12) >= 100.0  # from ~20 at the start
    finally:
        algo.stop()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_users_torch_rl_module_samples_in_worker_processes_and_learns():
    config = (
        torch_ppo()
        .framework("numpy")
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=TwoHeadedTorchModule, model_config={"hidden": 32}
            )
        )
    )
    assert config.uses_torch  # the module class asks for torch, whatever the framework says
    algo = config.build()
    try:
        assert isinstance(algo.get_module(), TwoHeadedTorchModule)
        assert _mean_return(algo, 20) >= 100.0  # from ~20 at the start
    finally:
        algo.stop()


@pytest.mark.parametrize("where", ["training", "learners"])
def test_a_users_learner_class_computes_the_loss(where):
    config = torch_ppo().env_runners(num_env_runners=0)
    getattr(config, where)(learner_class=FrozenPPOTorchLearner)
    algo = config.build()
    try:
        assert type(algo.learner) is FrozenPPOTorchLearner
        before = algo.get_module().get_state()
        calls = FrozenPPOTorchLearner.calls
        algo.train()
        assert FrozenPPOTorchLearner.calls > calls
        after = algo.get_module().get_state()
        assert all(np.array_equal(before[k], after[k]) for k in before), "a zero loss moved weights"
    finally:
        algo.stop()
    with pytest.raises(ConfigError, match="learner_class must be None or a subclass of a torch"):
        PPOConfig().training(learner_class=dict)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_torch_checkpoint_holds_arrays_and_resumes_exactly_in_a_fresh_process(tmp_path):
    config = torch_ppo().env_runners(num_env_runners=0)
    algo = config.build()
    try:
        algo.train()
        path = algo.save_to_path(tmp_path / "checkpoint")
        assert_plain_data(algo.learner.get_state())
        # Only the layout's class_and_config.pkl (read only with allow_pickle=True); the
        # torch module's weights and the learner's state are msgpack arrays.
        assert [p.name for p in Path(path).rglob("*.pkl")] == ["class_and_config.pkl"]
        module_dir = Path(path) / "learner_group" / "learner" / "rl_module" / "default_policy"
        assert sorted(p.name for p in module_dir.iterdir()) == [
            "metadata.json",
            "module_state.msgpack",
        ]
        after = algo.train()
        expected = {key: value.tolist() for key, value in algo.get_module().get_state().items()}
    finally:
        algo.stop()
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        from trainer import Algorithm
        algo = Algorithm.from_checkpoint({str(path)!r})
        result = algo.train()
        state = {{k: v.tolist() for k, v in algo.get_module().get_state().items()}}
        print(json.dumps({{"state": state, "return": result["env_runners"]["episode_return_mean"]}}))
        algo.stop()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180, cwd=REPO
    )
    assert out.returncode == 0, out.stderr[-2000:]
    resumed = json.loads(out.stdout.strip().splitlines()[-1])
    assert resumed["state"] == expected
    assert resumed["return"] == after["env_runners"]["episode_return_mean"]


def test_torch_sampling_draws_with_the_runners_seeded_generator():
    from trainer.core.nn import Categorical
    from trainer.runners.env_runner import EnvRunner

    def episodes(seed: int):
        runner = EnvRunner(
            PPOConfig().environment("CartPole-v1").framework("torch").debugging(seed=seed),
            worker_index=1,
            num_workers=1,
        )
        try:
            # RLlib's TorchCategorical is drawn from by its numpy twin, with the runner's
            # generator; the weights come from one seeded module.
            assert runner.module.dist is Categorical
            runner.module.set_weights(weights)
            return [
                (ep.get_actions().tolist(), ep.get_extra_model_outputs("action_logp").tolist())
                for ep in runner.sample(num_timesteps=300)
            ]
        finally:
            runner.stop()

    weights = (
        PPOConfig()
        .environment("CartPole-v1")
        .framework("torch")
        .build_module(_cartpole_spaces(), seed=3, inference_only=True)
        .get_weights()
    )
    assert episodes(5) == episodes(5)
    assert episodes(5) != episodes(6)


def _cartpole_spaces():
    import gymnasium as gym

    from trainer.core.models import SpaceInfo

    env = gym.make("CartPole-v1")
    return SpaceInfo.from_spaces(env.observation_space, env.action_space)


@pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="needs a CUDA device (a GPU learner)"
)
def test_a_gpu_learner_learns_on_the_gpu_and_the_samplers_stay_on_the_cpu(tmp_path):
    algo = torch_ppo().learners(num_gpus_per_learner=1).build()
    try:
        module = algo.learner_module()
        assert all(p.device.type == "cuda" for p in module.parameters())
        assert _mean_return(algo, 12) >= 150.0
        runner_devices = algo.env_runner_group.foreach_env_runner(
            lambda runner: {p.device.type for p in runner.module.rl_module.parameters()},
            local_env_runner=False,
        )
        assert all(devices == {"cpu"} for devices in runner_devices)
        path = algo.save_to_path(tmp_path / "checkpoint")
    finally:
        algo.stop()
    from trainer import Algorithm

    again = Algorithm.from_checkpoint(path)
    try:
        assert all(p.device.type == "cuda" for p in again.learner_module().parameters())
        again.train()
    finally:
        again.stop()


@pytest.mark.slow
def test_torch_refusals_name_the_setting():
    if not __import__("torch").cuda.is_available():
        with pytest.raises(ConfigError, match=r"learners\(num_gpus_per_learner=1\): .*no CUDA"):
            torch_ppo().learners(num_gpus_per_learner=1).build()
    with pytest.raises(ConfigError, match="multi-agent"):
        (
            DQNConfig()
            .environment("CartPole-v1")
            .framework("torch")
            .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda *a, **k: "p0")
            .training(replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer"})
            .validate()
        )


@pytest.mark.slow
def test_a_numpy_run_imports_no_torch():
    script = textwrap.dedent(
        """
        import sys
        from trainer import PPOConfig
        algo = (
            PPOConfig().environment("CartPole-v1")
            .env_runners(num_env_runners=1, rollout_fragment_length=100)
            .training(train_batch_size=200, minibatch_size=100, num_epochs=1)
            .build()
        )
        algo.train()
        algo.stop()
        assert "torch" not in sys.modules, "torch was imported"
        print("no torch")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "no torch" in out.stdout
