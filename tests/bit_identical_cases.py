"""The seeded runs whose trained weights tests/test_bit_identical_weights.py holds fixed.

Small runs of every algorithm of trainer/algorithms/registry.py, each with the numpy and the
torch learner where it has both (VPG has only torch), single-agent and, where the algorithm
trains several policies, multi-agent (two agents, two policies: MultiAgentCartPole,
MultiAgentPendulum for SAC); some sample in this process (`num_env_runners=0`), some in one
EnvRunner process (every algorithm has one such case):

- PPO and DQN on CartPole (one PPO run normalizes observations with an env-to-module
  MeanStdFilter; multi-agent DQN has only the numpy learner: it runs once sampling here and
  once in a worker); SAC on Pendulum; IMPALA, APPO and VPG on CartPole;
- BC, MARWIL (CartPole) and CQL, IQL (Pendulum) learn offline from the steps recorded in
  tests/data/bit_identical/offline_*.parquet (`write_offline_data`); their EnvRunner only
  takes the weights. They train single-agent only.
- IMPALA and APPO learn in a thread while the driver samples: their cases run them through a
  queue that lets the driver go on only once the thread has trained on its batch
  (`_TrainsEachBatchAtOnce`), so that which weights sample which steps does not depend on
  the threads' timing. Their updates, sampling and broadcasts are the algorithms' own.

Each run trains two iterations and its arrays (every module's weights, the learner's whole state
with the optimizer's moments, and the filter's statistics) are compared with the arrays
recorded in tests/data/bit_identical/<case>.npz.

A change that is meant to keep training identical must leave these arrays bit for bit as they
are. A change that deliberately changes training re-records them:

    python tests/bit_identical_cases.py --record            # every case
    python tests/bit_identical_cases.py --record ppo_single_numpy_local

(`--record-data` first rewrites the offline cases' recorded steps, which changes their runs.)
Each file stores a fingerprint of the machine and libraries it was recorded with; on another
(other CPU, numpy, torch or BLAS), floating-point results may differ in the last bits, and the
test compares with a tight tolerance instead.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from trainer import (
    APPO,
    IMPALA,
    AlgorithmConfig,
    APPOConfig,
    BCConfig,
    CQLConfig,
    DQNConfig,
    IMPALAConfig,
    IQLConfig,
    MARWILConfig,
    PPOConfig,
    SACConfig,
    VPGConfig,
)
from trainer.connectors.env_to_module import MeanStdFilter
from trainer.examples.envs.classes.multi_agent import MultiAgentCartPole, MultiAgentPendulum

DATA_DIR = Path(__file__).parent / "data" / "bit_identical"
#: The npz key of the fingerprint (a JSON string); every other key is an array of the run.
FINGERPRINT_KEY = "__fingerprint__"
#: Prefixes of the recorded arrays' keys.
MODULE_PREFIX = "module"
LEARNER_PREFIX = "learner"
FILTER_PREFIX = "filter"
#: The recorded steps the offline algorithms' cases learn from (`write_offline_data`).
OFFLINE_DATA = {
    "cartpole": DATA_DIR / "offline_cartpole_steps.parquet",
    "pendulum": DATA_DIR / "offline_pendulum_steps.parquet",
}
OFFLINE_DATA_STEPS = 400
#: The MeanStdFilter's key in an EnvRunner's connector state (its index and class name).
FILTER_CONNECTOR = "00_MeanStdFilter"
SEED = 11
NUM_ITERATIONS = 2
#: Separate policy and value networks (the cases were recorded with them).
MODEL_CONFIG = {"fcnet_hiddens": [16, 16], "vf_share_layers": False}
DQN_MODEL_CONFIG = {"fcnet_hiddens": [16], "head_fcnet_hiddens": [8]}
SAC_MODEL_CONFIG = {"fcnet_hiddens": [16], "fusionnet_hiddens": [8]}
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


def _sac(framework: str, num_env_runners: int, multi_agent: bool = False) -> SACConfig:
    # Learning starts after 32 steps: two iterations of 64 steps, 8 a training step, update the
    # networks a dozen times.
    return (
        SACConfig()
        .environment("Pendulum-v1")
        .framework(framework)
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=8)
        .training(
            train_batch_size_per_learner=16,
            num_steps_sampled_before_learning_starts=32,
            actor_lr=1e-3,
            critic_lr=1e-3,
            alpha_lr=1e-3,
            replay_buffer_config={
                "type": MULTI_AGENT_BUFFER if multi_agent else SINGLE_AGENT_BUFFER,
                "capacity": 2000,
            },
        )
        .rl_module(model_config=SAC_MODEL_CONFIG)
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=64)
        .debugging(seed=SEED)
    )


def _two_pendulums_two_policies(config: AlgorithmConfig) -> AlgorithmConfig:
    return config.environment(MultiAgentPendulum, env_config={"num_agents": 2}).multi_agent(
        policies=MULTI_AGENT_POLICIES, policy_mapping_fn=_policy_of_agent
    )


class _DrainedQueue:
    """The learner thread's queue (IMPALA's `BatchQueue`, APPO's `CircularBuffer`), whose `put`
    returns only once the thread has trained on everything queued (every use of an APPO batch)
    and asks for more: the driver's next step then sees every update made, as a synchronous
    learner's would. Which updates a weight broadcast holds, and with which weights the
    EnvRunners sample, no longer depend on the threads' timing."""

    #: Seconds `put` waits for the learner thread before it gives up.
    TIMEOUT_S = 60.0

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        #: Batches trained on through this queue (the case checks that it was used).
        self.batches = 0
        self._idle = threading.Condition()
        self._drained = True

    @property
    def dropped_env_steps(self) -> int:
        return self.queue.dropped_env_steps

    def __len__(self) -> int:
        return len(self.queue)

    def wait_empty(self, timeout: float) -> bool:
        return self.queue.wait_empty(timeout)

    def put(self, batch: Any, timeout: float) -> bool:
        with self._idle:
            if not self.queue.put(batch, timeout):
                return False
            self._drained = False
            self.batches += 1
            if not self._idle.wait_for(lambda: self._drained, timeout=self.TIMEOUT_S):
                raise RuntimeError(
                    f"the learner thread did not train on a batch in {self.TIMEOUT_S} s"
                )
        return True

    def get(self, timeout: float) -> Any:
        with self._idle:
            if len(self.queue) == 0:  # (the thread is back, its last update done)
                self._drained = True
                self._idle.notify_all()
        return self.queue.get(timeout)


class _TrainsEachBatchAtOnce:
    """An IMPALA or APPO whose learner thread trains each train batch before the driver goes
    on (`_DrainedQueue`): its seeded runs are deterministic; the updates, the sampling and the
    broadcasts are the algorithm's own."""

    def learner_queue(self) -> _DrainedQueue:
        self.drained_queue = _DrainedQueue(super().learner_queue())  # type: ignore[misc]
        return self.drained_queue


class _SynchronousIMPALA(_TrainsEachBatchAtOnce, IMPALA):
    pass


class _SynchronousAPPO(_TrainsEachBatchAtOnce, APPO):
    pass


def _impala(config_class: type[IMPALAConfig], framework: str, num_env_runners: int) -> IMPALAConfig:
    # Each sample (a rollout fragment of one env) is one train batch, trained on at once
    # (`_TrainsEachBatchAtOnce`); with one sample request in flight, each request carries the
    # weights of the updates on all replies but the last.
    appo = config_class is APPOConfig
    config = (
        config_class(algo_class=_SynchronousAPPO if appo else _SynchronousIMPALA)
        .environment("CartPole-v1")
        .framework(framework)
        .env_runners(
            num_env_runners=num_env_runners,
            rollout_fragment_length=32,
            max_requests_in_flight_per_env_runner=1,
        )
        .training(train_batch_size_per_learner=32, lr=1e-3)
        .rl_module(model_config=MODEL_CONFIG)
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=96)
        .debugging(seed=SEED)
    )
    if appo:
        # Each batch trained on twice, the target network updated every 2 x 2 updates (three
        # times in two iterations), with the KL term.
        config.training(
            circular_buffer_num_batches=2,
            circular_buffer_iterations_per_batch=2,
            target_network_update_freq=1,
            use_kl_loss=True,
        )
    return config


def _vpg(num_env_runners: int) -> VPGConfig:
    return (
        VPGConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=num_env_runners)
        .training(num_episodes_per_train_batch=4, lr=1e-3)
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=SEED)
    )


def _offline(
    config_class: type[AlgorithmConfig], framework: str, num_env_runners: int
) -> AlgorithmConfig:
    """BC and MARWIL on CartPole steps, CQL and IQL on Pendulum steps (OFFLINE_DATA): two
    iterations of two updates on 64 recorded steps. The EnvRunners only take the weights."""
    continuous = config_class in (CQLConfig, IQLConfig)
    data = OFFLINE_DATA["pendulum" if continuous else "cartpole"]
    config = (
        config_class()
        .environment("Pendulum-v1" if continuous else "CartPole-v1")
        .framework(framework)
        .env_runners(num_env_runners=num_env_runners)
        .offline_data(input_=str(data), dataset_num_iters_per_learner=2)
        .reporting(min_time_s_per_iteration=0)
        .debugging(seed=SEED)
    )
    if continuous:
        return config.training(
            train_batch_size_per_learner=64, actor_lr=1e-3, critic_lr=1e-3
        ).rl_module(model_config=SAC_MODEL_CONFIG)
    return config.training(train_batch_size_per_learner=64, lr=1e-3).rl_module(
        model_config=MODEL_CONFIG
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
    "sac_single_numpy_local": lambda: _sac("numpy", 0),
    "sac_single_torch_worker": lambda: _sac("torch", 1),
    "sac_multi_numpy_worker": lambda: _two_pendulums_two_policies(_sac("numpy", 1, True)),
    "sac_multi_torch_local": lambda: _two_pendulums_two_policies(_sac("torch", 0, True)),
    "impala_single_numpy_worker": lambda: _impala(IMPALAConfig, "numpy", 1),
    "impala_single_torch_local": lambda: _impala(IMPALAConfig, "torch", 0),
    "impala_multi_numpy_local": lambda: _two_agents_two_policies(_impala(IMPALAConfig, "numpy", 0)),
    "appo_single_numpy_local": lambda: _impala(APPOConfig, "numpy", 0),
    "appo_single_torch_worker": lambda: _impala(APPOConfig, "torch", 1),
    "appo_multi_torch_worker": lambda: _two_agents_two_policies(_impala(APPOConfig, "torch", 1)),
    "bc_single_numpy_worker": lambda: _offline(BCConfig, "numpy", 1),
    "bc_single_torch_local": lambda: _offline(BCConfig, "torch", 0),
    "marwil_single_numpy_local": lambda: _offline(MARWILConfig, "numpy", 0),
    "marwil_single_torch_worker": lambda: _offline(MARWILConfig, "torch", 1),
    "cql_single_numpy_worker": lambda: _offline(CQLConfig, "numpy", 1),
    "cql_single_torch_local": lambda: _offline(CQLConfig, "torch", 0),
    "iql_single_numpy_local": lambda: _offline(IQLConfig, "numpy", 0),
    "iql_single_torch_worker": lambda: _offline(IQLConfig, "torch", 1),
    "vpg_single_torch_worker": lambda: _vpg(1),
    "vpg_multi_torch_local": lambda: _two_agents_two_policies(_vpg(0)),
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


def case_module_ids(config: AlgorithmConfig) -> list[str]:
    """The ids of the modules a case's run trains."""
    return sorted(MULTI_AGENT_POLICIES) if config.is_multi_agent else ["default_policy"]


def run_case(
    name: str,
    configure: Callable[[AlgorithmConfig], AlgorithmConfig] | None = None,
    after_training: Callable[[Any], None] | None = None,
) -> dict[str, np.ndarray]:
    """Trains case `name` for NUM_ITERATIONS iterations; returns its arrays by key.
    `configure` changes the case's config first (a GPU learner's run); `after_training` looks
    at the trained algorithm before it stops."""
    config = CASES[name]()
    if configure is not None:
        config = configure(config)
    arrays: dict[str, np.ndarray] = {}
    algo = config.build()
    try:
        for _ in range(NUM_ITERATIONS):
            algo.train()
        if after_training is not None:
            after_training(algo)
        if isinstance(algo, _TrainsEachBatchAtOnce):
            # (an IMPALA that no longer asks `learner_queue()` would be nondeterministic)
            assert algo.drained_queue.batches > 0, f"{name}: no batch went through learner_queue()"
        for module_id in case_module_ids(config):
            # The learner's whole module (get_module() is the EnvRunner's inference-only copy).
            module = algo.learner_module(module_id)
            _flatten(module.get_state(), f"{MODULE_PREFIX}/{module_id}", arrays)
        _flatten(algo.learner.get_state(), LEARNER_PREFIX, arrays)  # (this project's layout)
        runner_state = algo.env_runner.get_state(include_env=False)
        filter_state = runner_state.get("connector_state", {}).get(FILTER_CONNECTOR)
        if filter_state is not None:
            _flatten(filter_state, FILTER_PREFIX, arrays)
    finally:
        algo.stop()
    return arrays


def _offline_table(env_id: str, steps: int, seed: int) -> Any:
    """`steps` steps of env `env_id` in RLlib's column layout, played by a hand-written
    controller with noise: CartPole pushes towards where the pole falls (a random action a
    quarter of the time), Pendulum swings up and holds (normalized actions in [-1, 1])."""
    import gymnasium as gym
    import pyarrow as pa

    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    keys = ("eps_id", "obs", "actions", "rewards", "new_obs", "terminateds", "truncateds")
    rows: dict[str, list] = {key: [] for key in keys}
    episode = 0
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        if env_id == "CartPole-v1":
            push = int(obs[2] + 0.5 * obs[3] > 0)
            action: Any = int(rng.integers(2)) if rng.random() < 0.25 else push
            new_obs, reward, terminated, truncated, _ = env.step(action)
        else:
            cos, sin, velocity = obs
            energy = 0.5 * velocity * velocity + 15.0 * (cos - 1.0)
            if cos > 0.8:
                torque = -(10.0 * math.atan2(sin, cos) + 2.0 * velocity) / 2.0
            else:
                torque = -0.3 * velocity * energy
            action = [float(np.tanh(torque + 0.3 * rng.normal()))]
            new_obs, reward, terminated, truncated, _ = env.step([2.0 * action[0]])
        values = (str(episode), obs.tolist(), action, float(reward), new_obs.tolist())
        for key, value in zip(keys, (*values, bool(terminated), bool(truncated)), strict=True):
            rows[key].append(value)
        obs = new_obs
        if terminated or truncated:
            episode += 1
            obs, _ = env.reset()
    return pa.table(rows)


def write_offline_data() -> list[Path]:
    """Writes OFFLINE_DATA (the offline cases' input; rewriting it changes their runs)."""
    import pyarrow.parquet as pq

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for name, env_id in (("cartpole", "CartPole-v1"), ("pendulum", "Pendulum-v1")):
        pq.write_table(_offline_table(env_id, OFFLINE_DATA_STEPS, SEED), OFFLINE_DATA[name])
    return list(OFFLINE_DATA.values())


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


def _blas_kernel() -> str:
    """The kernels of numpy's BLAS (OpenBLAS picks them per CPU; `OPENBLAS_CORETYPE` forces
    others, whose sums round differently in the last bits)."""
    from threadpoolctl import threadpool_info

    return ", ".join(
        f"{pool.get('internal_api')} {pool.get('architecture')}"
        for pool in threadpool_info()
        if pool.get("user_api") == "blas" and "numpy" in str(pool.get("filepath"))
    )


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
        "blas_kernel": _blas_kernel(),
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
    parser.add_argument(
        "--record-data",
        action="store_true",
        help="first write the offline cases' recorded steps (which changes those cases' runs)",
    )
    parser.add_argument("cases", nargs="*", help=f"cases (default all): {', '.join(CASES)}")
    args = parser.parse_args(argv)
    if not args.record:
        parser.error("--record is the only mode (the test compares)")
    if args.record_data:
        for path in write_offline_data():
            print(path)
    for name in args.cases or CASES:
        print(record(name))


if __name__ == "__main__":
    main()
