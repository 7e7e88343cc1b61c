"""The seeded runs whose trained weights tests/test_bit_identical_weights.py holds fixed.

Eight small runs: PPO and DQN, single-agent (CartPole-v1) and multi-agent (MultiAgentCartPole,
two agents, two policies), with the numpy and the torch learners (multi-agent DQN has only the
numpy one: it runs once sampling here and once in a worker). Half sample in this process
(`num_env_runners=0`), half in one EnvRunner process; one PPO run normalizes observations with
an env-to-module MeanStdFilter. Each run trains a few iterations and its arrays (every module's
weights, the learner's whole state with the optimizer's moments, and the filter's statistics)
are compared with the arrays recorded in tests/data/bit_identical/<case>.npz.

A change that is meant to keep training identical must leave these arrays bit for bit as they
are. A change that deliberately changes training re-records them:

    python tests/bit_identical_cases.py --record            # every case
    python tests/bit_identical_cases.py --record ppo_single_numpy_local

Each file stores a fingerprint of the machine and libraries it was recorded with; on another
(other CPU, numpy, torch or BLAS), floating-point results may differ in the last bits, and the
test compares with a tight tolerance instead.
"""

from __future__ import annotations

import argparse
import json
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from trainer import AlgorithmConfig, DQNConfig, PPOConfig
from trainer.connectors.env_to_module import MeanStdFilter
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole

DATA_DIR = Path(__file__).parent / "data" / "bit_identical"
#: The npz key of the fingerprint (a JSON string); every other key is an array of the run.
FINGERPRINT_KEY = "__fingerprint__"
#: Prefixes of the recorded arrays' keys.
MODULE_PREFIX = "module"
LEARNER_PREFIX = "learner"
FILTER_PREFIX = "filter"
#: The MeanStdFilter's key in an EnvRunner's connector state (its index and class name).
FILTER_CONNECTOR = "00_MeanStdFilter"
SEED = 11
NUM_ITERATIONS = 2
#: Separate policy and value networks (the cases were recorded with them).
MODEL_CONFIG = {"fcnet_hiddens": [16, 16], "vf_share_layers": False}
DQN_MODEL_CONFIG = {"fcnet_hiddens": [16], "head_fcnet_hiddens": [8]}
MULTI_AGENT_POLICIES = {"p0", "p1"}
SINGLE_AGENT_BUFFER = "PrioritizedEpisodeReplayBuffer"
MULTI_AGENT_BUFFER = "MultiAgentPrioritizedEpisodeReplayBuffer"


def _policy_of_agent(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    """Agent i acts with policy p{i}."""
    return f"p{agent_id}"


def _two_agents_two_policies(config: AlgorithmConfig) -> AlgorithmConfig:
    return config.environment(MultiAgentCartPole, env_config={"num_agents": 2}).multi_agent(
        policies=MULTI_AGENT_POLICIES, policy_mapping_fn=_policy_of_agent
    )


def _ppo(framework: str, num_env_runners: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=num_env_runners)
        .training(train_batch_size=256, minibatch_size=64, num_epochs=2, lr=3e-4)
        .rl_module(model_config=MODEL_CONFIG)
        .debugging(seed=SEED)
    )


def _dqn(framework: str, num_env_runners: int, multi_agent: bool = False) -> DQNConfig:
    # Learning starts after 64 steps and the target network is synced every 80: two iterations
    # (208 steps) sync it twice and update the online network after the last sync.
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=8)
        .training(
            train_batch_size=32,
            lr=1e-3,
            num_steps_sampled_before_learning_starts=64,
            target_network_update_freq=80,
            replay_buffer_config={
                "type": MULTI_AGENT_BUFFER if multi_agent else SINGLE_AGENT_BUFFER,
                "capacity": 2000,
            },
        )
        .rl_module(model_config=DQN_MODEL_CONFIG)
        .reporting(min_sample_timesteps_per_iteration=100)
        .debugging(seed=SEED)
    )


def _mean_std_filter(env: Any = None, spaces: Any = None, device: Any = None) -> MeanStdFilter:
    return MeanStdFilter(clip_by_value=5.0)


#: case name -> a function that makes its config.
CASES: dict[str, Callable[[], AlgorithmConfig]] = {
    "ppo_single_numpy_local": lambda: _ppo("numpy", 0),
    "ppo_single_torch_worker_filter": lambda: _ppo("torch", 1).env_runners(
        env_to_module_connector=_mean_std_filter
    ),
    "ppo_multi_numpy_worker": lambda: _two_agents_two_policies(_ppo("numpy", 1)),
    "ppo_multi_torch_local": lambda: _two_agents_two_policies(_ppo("torch", 0)),
    "dqn_single_numpy_worker": lambda: _dqn("numpy", 1),
    "dqn_single_torch_local": lambda: _dqn("torch", 0),
    "dqn_multi_numpy_local": lambda: _two_agents_two_policies(_dqn("numpy", 0, multi_agent=True)),
    # Multi-agent DQN trains numpy Q-modules only (torch DQN is single-agent): its second
    # case samples in an EnvRunner process instead.
    "dqn_multi_numpy_worker": lambda: _two_agents_two_policies(_dqn("numpy", 1, multi_agent=True)),
}


def _flatten(tree: Any, prefix: str, out: dict[str, np.ndarray]) -> None:
    """Every numeric leaf of `tree` (dicts, lists, arrays, numbers) as an array under its
    slash-separated path. Strings (an RNG's name, a scheduler's name) are skipped; an RNG's
    integer state counts as a number."""
    if isinstance(tree, dict):
        for key in sorted(tree, key=str):
            _flatten(tree[key], f"{prefix}/{key}", out)
    elif isinstance(tree, (list, tuple)):
        for index, item in enumerate(tree):
            _flatten(item, f"{prefix}/{index}", out)
    elif isinstance(tree, (bool, int, float, np.number, np.bool_)):
        out[prefix] = np.asarray(tree)
    elif isinstance(tree, np.ndarray) and tree.dtype.kind in "biuf":
        out[prefix] = tree
    elif isinstance(tree, str) and tree.isdigit():
        # numpy's PCG64 state holds 128-bit integers, which the learner's state keeps as text.
        out[prefix] = np.asarray(tree)
    elif hasattr(tree, "detach"):  # a torch tensor
        out[prefix] = tree.detach().cpu().numpy()


def run_case(name: str) -> dict[str, np.ndarray]:
    """Trains case `name` for NUM_ITERATIONS iterations; returns its arrays by key."""
    config = CASES[name]()
    arrays: dict[str, np.ndarray] = {}
    algo = config.build()
    try:
        for _ in range(NUM_ITERATIONS):
            algo.train()
        module_ids = sorted(MULTI_AGENT_POLICIES) if config.is_multi_agent else ["default_policy"]
        for module_id in module_ids:
            _flatten(algo.get_module(module_id).get_state(), f"{MODULE_PREFIX}/{module_id}", arrays)
        _flatten(algo.learner_group.get_state(), LEARNER_PREFIX, arrays)
        runner_state = algo.env_runner.get_state(include_env=False)
        filter_state = runner_state.get("connector_state", {}).get(FILTER_CONNECTOR)
        if filter_state is not None:
            _flatten(filter_state, FILTER_PREFIX, arrays)
    finally:
        algo.stop()
    return arrays


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _blas() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # numpy's config format is not a stable API
        return "unknown"


def fingerprint() -> dict[str, str]:
    """What a run's last bits depend on besides the code: the libraries and the CPU."""
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = "none"
    return {
        "numpy": np.__version__,
        "torch": torch_version,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "blas": _blas(),
    }


def data_path(name: str) -> Path:
    return DATA_DIR / f"{name}.npz"


def record(name: str) -> Path:
    """Runs case `name` and writes its arrays with this machine's fingerprint."""
    arrays = run_case(name)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    path = data_path(name)
    np.savez_compressed(path, **arrays, **{FINGERPRINT_KEY: np.asarray(json.dumps(fingerprint()))})
    return path


def load(name: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The recorded arrays of case `name` and the fingerprint they were recorded with."""
    with np.load(data_path(name)) as data:
        arrays = {key: data[key] for key in data.files if key != FINGERPRINT_KEY}
        return arrays, json.loads(str(data[FINGERPRINT_KEY]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="run and write the arrays")
    parser.add_argument("cases", nargs="*", help=f"cases (default all): {', '.join(CASES)}")
    args = parser.parse_args(argv)
    if not args.record:
        parser.error("--record is the only mode (the test compares)")
    for name in args.cases or CASES:
        print(record(name))


if __name__ == "__main__":
    main()
