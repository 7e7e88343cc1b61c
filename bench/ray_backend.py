"""The Ray backend against the process backend, measured in the same run (issue 19's targets).

- Sampling throughput: 2 EnvRunners (8 CartPole sub-envs each, a 64x64 policy), as Ray actors
  and as worker processes, each driven through `env_runner_group.sample`; measured `--repeats`
  times, interleaved, the best of each compared. Target: Ray at least 0.8x the processes.
- `build()` with 2 Ray actors, Ray already started. Target: under 2 s.
- From an actor's death to its replacement answering a sample: median over `--kills`, half
  `ray.kill` of the actor, half SIGKILL of its process, on an algorithm whose samples are short
  (10 steps of each sub-env), so that the time is the restart's and not a long sample's; the
  config's default `delay_between_env_runner_restarts_s` (0.1 s) included. Target: under 2 s.

Run: python bench/ray_backend.py [--steps 40000] [--repeats 3] [--kills 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import ray
from sampling import env_runner_steps_per_s as steps_per_s  # bench/ is this script's path

from trainer import PPOConfig

NUM_ENVS = 8
MODEL = {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"}


def config(backend: str, steps: int, rounds: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            backend=backend,
            num_env_runners=2,
            num_envs_per_env_runner=NUM_ENVS,
            rollout_fragment_length=steps // rounds // NUM_ENVS // 2,
        )
        # One sampling round is one train batch (PPO's validate() checks that they fit).
        .training(train_batch_size=steps // rounds // NUM_ENVS // 2 * NUM_ENVS * 2)
        .rl_module(model_config=MODEL)
        .debugging(seed=0)
    )


def restart_seconds(kills: int) -> list[float]:
    """Kills actor 1, then samples until it answers again: the time from the kill."""
    import os
    import signal

    algo = (config("ray", NUM_ENVS * 10 * 2, 1).env_runners(rollout_fragment_length=10)).build()
    group = algo.env_runner_group
    group.sample(min_env_steps=NUM_ENVS)  # warm up
    times = []
    for kill in range(kills):
        handle = group.remote_runner(1)
        killed_at = time.perf_counter()
        if kill % 2:
            os.kill(handle.pid, signal.SIGKILL)
        else:
            ray.kill(handle.actor)
        while group.num_remote_worker_restarts() < len(times) + 1:
            group.sample(min_env_steps=NUM_ENVS)
        group.sample(min_env_steps=NUM_ENVS)  # the replacement samples
        times.append(time.perf_counter() - killed_at)
    algo.stop()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args()
    rounds = 4
    ray.init(include_dashboard=False, configure_logging=False)
    started = time.perf_counter()
    on_ray = config("ray", args.steps, rounds).build()
    build_s = time.perf_counter() - started
    on_processes = config("processes", args.steps, rounds).build()
    for algo in (on_ray, on_processes):
        algo.env_runner_group.sample(min_env_steps=NUM_ENVS)  # warm up
    ray_runs, process_runs = [], []
    for _ in range(args.repeats):
        process_runs.append(steps_per_s(on_processes, args.steps, rounds))
        ray_runs.append(steps_per_s(on_ray, args.steps, rounds))
    on_processes.stop()
    on_ray.stop()
    restarts = restart_seconds(args.kills)
    ray.shutdown()
    ours, base = max(ray_runs), max(process_runs)
    print(f"build(), 2 Ray actors (Ray started):      {build_s:6.2f} s   (target < 2 s)")
    print(
        f"actor killed -> replacement sampled:      median {statistics.median(restarts):.2f} s, "
        f"max {max(restarts):.2f} s over {len(restarts)} kills   (target median < 2 s)"
    )
    print(f"sampling, 2 worker processes:             {base:9.0f} env steps/s")
    print(f"sampling, 2 Ray actors:                   {ours:9.0f} env steps/s")
    print(f"ratio {ours / base:.2f}  (Ray / processes, target >= 0.8)")


if __name__ == "__main__":
    main()
