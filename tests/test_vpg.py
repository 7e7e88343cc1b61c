"""VPG, RLlib's example custom algorithm, added as docs/ARCHITECTURE.md's "Adding an algorithm"
says: its folder (`trainer/algorithms/vpg/`) and one registry line. RLlib 2.60's
`rllib/examples/algorithms/vpg_custom_algorithm.py`, stored unmodified, runs through the launcher
to a CartPole return; the loss is the paper's; nothing outside the folder but the registry
names the algorithm."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from pathlib import Path

import numpy as np
import pytest
from cli_in_process import run_cli

from trainer import launcher
from trainer.algorithms import registry
from trainer.algorithms.algorithm_config import ConfigError
from trainer.algorithms.vpg import VPG, VPGConfig
from trainer.compat.rllib_utils import Columns
from trainer.metrics import ENV_RUNNER_RESULTS, LEARNER_RESULTS

try:
    import torch
except ImportError:  # the torch extra: VPG's learner and module need it
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="VPG's learner and module need torch")

REPO = Path(__file__).resolve().parent.parent
#: RLlib's script, byte for byte as the Ray 2.60.0 wheel ships it.
EXAMPLE = REPO / "examples" / "rllib" / "algorithms" / "vpg_custom_algorithm.py"
EXAMPLE_SHA256 = "28686b829078177d431dbece80791378913a26199a2e33fba3c4f4353126a02f"
#: The algorithm's folder, and the one file outside it that names it.
FOLDER = REPO / "trainer" / "algorithms" / "vpg"
REGISTRY = REPO / "trainer" / "algorithms" / "registry.py"


def test_the_stored_example_is_rllibs_unmodified():
    assert hashlib.sha256(EXAMPLE.read_bytes()).hexdigest() == EXAMPLE_SHA256
    spec = importlib.util.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        return  # (no Ray wheel to compare with: the hash above is the 2.60.0 wheel's file)
    installed = (
        Path(spec.submodule_search_locations[0])
        / "rllib"
        / "examples"
        / "algorithms"
        / "vpg_custom_algorithm.py"
    )
    if installed.exists():
        assert installed.read_bytes() == EXAMPLE.read_bytes()


@pytest.mark.slow
@pytest.mark.cli
@needs_torch
def test_rllibs_vpg_example_runs_unmodified_through_the_launcher(tmp_path):
    # The script's own config: 2 EnvRunner processes, 10 episodes per step, lr 0.0005; three
    # iterations here (bench/learning_targets.py runs it with --as-test to a return of 50).
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(launcher.ENV_VAR, None)
    # `python -m trainer run SCRIPT`, in this process (tests/cli_in_process.py).
    completed = run_cli(
        "run", str(EXAMPLE), "--stop-iters", "3", cwd=tmp_path, env=env, timeout=300
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-3000:]
    # RLlib's driver prints a progress line per iteration: three, with episodes in each.
    rows = re.findall(r"^iter +(\d+) \| total time \(s\) +[\d.]+ \| ts (\d+)", output, re.M)
    assert [int(i) for i, _ in rows] == [1, 2, 3], output[-3000:]
    assert int(rows[-1][1]) > int(rows[0][1]) > 0


@needs_torch
def test_rllibs_module_paths_import_the_folders_classes():
    launcher.install()
    try:
        from ray.rllib.examples.algorithms.classes.vpg import VPG as RLlibVPG
        from ray.rllib.examples.algorithms.classes.vpg import VPGConfig as RLlibVPGConfig
        from ray.rllib.examples.learners.classes.vpg_torch_learner import VPGTorchLearner
        from ray.rllib.examples.rl_modules.classes.vpg_torch_rlm import VPGTorchRLModule
    finally:
        launcher.uninstall()
    assert (RLlibVPG, RLlibVPGConfig) == (VPG, VPGConfig)
    assert VPGTorchLearner.__module__ == "trainer.algorithms.vpg.torch_learner"
    assert VPGTorchRLModule.__module__ == "trainer.algorithms.vpg.torch_module"
    assert registry.get_trainable_cls("VPG") is VPG


@pytest.mark.slow
@needs_torch
def test_a_training_step_samples_complete_episodes_on_the_runner_processes():
    config = (
        VPGConfig()
        .environment("CartPole-v1")
        .training(num_episodes_per_train_batch=10, lr=0.0005)
        .env_runners(num_env_runners=2)
    )
    algo = config.build()
    try:
        before = algo.get_weights()
        result = algo.train()
        assert algo.env_runner_group.num_healthy_remote_workers() == 2
        # 5 complete episodes from each of the 2 runners.
        assert result[ENV_RUNNER_RESULTS]["num_episodes"] == 10
        stats = result[LEARNER_RESULTS]["default_policy"]
        assert {"action_0_return_to_go_mean", "action_1_return_to_go_mean"} <= set(stats)
        assert stats["num_env_steps_trained"] == result[ENV_RUNNER_RESULTS]["num_env_steps_sampled"]
        after = algo.get_weights()
        assert any(not np.array_equal(before[k], after[k]) for k in before)
        # (float32 means summed in another order: equal to about 1e-7 of the weights' scale)
        assert stats["mean_weight"] == pytest.approx(
            np.mean([float(np.mean(w)) for w in after.values()]), abs=1e-6
        )
    finally:
        algo.stop()


@needs_torch
def test_returns_to_go_are_discounted_sums_to_the_episodes_end():
    from trainer.algorithms.vpg.torch_learner import returns_to_go

    np.testing.assert_allclose(
        returns_to_go(np.array([1.0, 2.0, 4.0]), gamma=0.5), [1 + 1 + 1, 2 + 2, 4]
    )


@needs_torch
def test_the_loss_is_minus_the_mean_of_log_pi_times_the_return_to_go():
    config = VPGConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    config.training(gamma=0.9)
    algo = config.build()
    try:
        episodes = algo.env_runner.sample(num_episodes=3)
        batch = algo.learner.build_train_batch(episodes)
        start = 0
        for episode in episodes:  # CartPole pays 1 a step: G_t = (1 - 0.9^(T - t)) / (1 - 0.9)
            T = len(episode)
            expected = (1 - 0.9 ** np.arange(T, 0, -1)) / (1 - 0.9)
            np.testing.assert_allclose(
                batch[Columns.RETURNS_TO_GO][start : start + T], expected, rtol=1e-5
            )
            start += T
        assert start == len(batch[Columns.ACTIONS])
        module = algo.learner.rl_module
        with torch.no_grad():
            logits = module._policy_net(torch.as_tensor(batch[Columns.OBS], dtype=torch.float32))
            log_pi = torch.log_softmax(logits, dim=-1)
            actions = torch.as_tensor(batch[Columns.ACTIONS]).long()
            log_pi_a = log_pi.gather(1, actions[:, None])[:, 0]
            G = torch.as_tensor(batch[Columns.RETURNS_TO_GO])
            expected_loss = float(-(log_pi_a * G).mean())
        stats = algo.learner.update_from_batch(batch)  # the loss before its gradient step
        assert stats["total_loss"] == pytest.approx(expected_loss, rel=1e-5)
    finally:
        algo.stop()


# -- what adding the algorithm touched ---------------------------------------------------------
#: A mention of the algorithm: its name, its package or its classes (RLlib's separate
#: shared-encoder example module, `vpg_using_shared_encoder_rlm`, is RLlib's, not VPG's).
_MENTION = re.compile(
    r"\bvpg\b|\bVPG(Config|TorchLearner|TorchRLModule)?\b|trainer\.algorithms\.vpg", re.I
)


def test_outside_its_folder_only_the_registry_line_names_vpg():
    mentions = {}
    for path in sorted((REPO / "trainer").rglob("*.py")):
        if FOLDER in path.parents:
            continue
        lines = [line for line in path.read_text().splitlines() if _MENTION.search(line)]
        if lines:
            mentions[str(path.relative_to(REPO))] = lines
    assert mentions == {
        str(REGISTRY.relative_to(REPO)): ['    "VPG": "trainer.algorithms.vpg",'],
    }
    assert sorted(p.name for p in FOLDER.glob("*.py")) == [
        "__init__.py",
        "config.py",
        "differences.py",
        "loss.py",
        "shared_optimizer_learner.py",
        "torch_learner.py",
        "torch_module.py",
        "vpg.py",
    ]


def test_a_numpy_framework_is_refused_when_validated_naming_the_torch_one():
    """VPG declares torch learners only: `framework("numpy")` is refused by `validate()`, not
    left to fail inside the learner's constructor."""
    config = VPGConfig().environment("CartPole-v1").framework("numpy")
    with pytest.raises(ConfigError, match=r"VPGConfig.framework\('numpy'\).*framework\('torch'\)"):
        config.validate()
