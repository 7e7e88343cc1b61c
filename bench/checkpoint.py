"""Save and restore of PPO on CartPole-v1 with a 256x256 network and 2 EnvRunners.

Measures, each as the median of several rounds:
- `save_to_path` (state from the learner and both runner processes, msgpack, checksums, fsync of
  every file, atomic rename) onto an existing checkpoint;
- `restore_from_path` into the running algorithm (verify, unpack, weights and runner states
  pushed to both processes, `on_checkpoint_loaded`);
- the checkpoint's size against the raw bytes of the weights and Adam's two moment vectors.

Baseline, measured in the same run: writing those raw arrays with `numpy.save` and fsync (the
least a durable snapshot of them costs). RLlib's own save/restore is measured beside ours when
`ray[rllib]` and torch are installed.

Targets (issue 5): save and restore each under 100 ms; size within 1.2x of the raw bytes.
Run: python bench/checkpoint.py
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np

from trainer import PPOConfig

ROUNDS = 15


def median_ms(function, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def raw_arrays(algo) -> list[np.ndarray]:
    optimizer = algo.learner.optimizer
    return [algo.learner.module.flat_params, optimizer.m, optimizer.v]


def numpy_save_baseline(arrays: list[np.ndarray], directory: str) -> None:
    for i, array in enumerate(arrays):
        with open(os.path.join(directory, f"array_{i}.npy"), "wb") as handle:
            np.save(handle, array)
            handle.flush()
            os.fsync(handle.fileno())


def rllib_times(directory: str) -> str:
    try:
        from ray.rllib.algorithms.ppo import PPOConfig as RLlibPPOConfig
    except ImportError:
        return "RLlib: not installed here (pip install 'ray[rllib]' torch to compare)"
    config = (
        RLlibPPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2)
        .training(train_batch_size=400, num_epochs=1)
    )
    algo = config.build_algo()
    algo.train()
    path = os.path.join(directory, "rllib")
    save = median_ms(lambda: algo.save_to_path(path), rounds=5)
    restore = median_ms(lambda: algo.restore_from_path(path), rounds=5)
    algo.stop()
    return f"RLlib: save {save:.1f} ms, restore {restore:.1f} ms"


def main() -> None:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2)
        .training(train_batch_size=400, num_epochs=1)
        .debugging(seed=0)
    )
    with tempfile.TemporaryDirectory() as directory, config.build() as algo:
        algo.train()
        path = os.path.join(directory, "checkpoint")
        algo.save_to_path(path)
        save = median_ms(lambda: algo.save_to_path(path))
        restore = median_ms(lambda: algo.restore_from_path(path))
        # Every file, the module checkpoints in learner_group/ included.
        size = sum(
            os.path.getsize(os.path.join(folder, name))
            for folder, _, names in os.walk(path)
            for name in names
        )
        arrays = raw_arrays(algo)
        raw = sum(array.nbytes for array in arrays)
        baseline_dir = os.path.join(directory, "baseline")
        os.mkdir(baseline_dir)
        baseline = median_ms(lambda: numpy_save_baseline(arrays, baseline_dir))
        parameters = algo.learner.module.flat_params.size
        print(f"PPO, 256x256 policy and value nets ({parameters:,} parameters), 2 EnvRunners")
        print(
            f"save     {save:6.1f} ms  ({save / baseline:4.1f}x numpy.save + fsync of the raw "
            f"arrays, {baseline:.1f} ms)   target < 100 ms"
        )
        print(f"restore  {restore:6.1f} ms   target < 100 ms")
        print(
            f"size     {size / 1e6:6.2f} MB  ({size / raw:.3f}x the raw weights + Adam moments, "
            f"{raw / 1e6:.2f} MB)   target <= 1.2x"
        )
        print(rllib_times(directory))


if __name__ == "__main__":
    main()
