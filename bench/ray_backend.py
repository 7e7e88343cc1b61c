"""The Ray backend against the process backend, measured in the same run (issue 19's targets).

- Sampling throughput: 2 EnvRunners (8 CartPole sub-envs each, a 64x64 policy), as Ray actors
  and as worker processes, each driven through `env_runner_group.sample`; measured `--repeats`
  times, interleaved, the best of each compared. Target: Ray at least 0.8x the processes.
- `build()` with 2 Ray actors, Ray already started. Target: under 2 s.
- From an actor's death (`ray.kill`) to its replacement answering a sample: median over
  `--kills`. Target: under 2 s.

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
    return (PPOConfig().environment("CartPole-v1")
            .env_runners(backend=backend, num_env_runners=2, num_envs_per_env_runner=NUM_ENVS,
                         rollout_fragment_length=steps // rounds // NUM_ENVS // 2)
            .rl_module(model_config=MODEL).debugging(seed=0))


def restart_seconds(algo, kills: int) -> list[float]:
    """ray.kill of actor 1, then sample until it answers again: the time from the kill."""
    group = algo.env_runner_group
    times = []
    for _ in range(kills):
        killed_at = time.perf_counter()
        ray.kill(group.remote_runner(1).actor)
        while group.num_remote_worker_restarts() < len(times) + 1:
            group.sample(min_env_steps=NUM_ENVS)
        group.sample(min_env_steps=NUM_ENVS)  # the replacement samples
        times.append(time.perf_counter() - killed_at)
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
    restarts = restart_seconds(on_ray, args.kills)
    on_ray.stop()
    ray.shutdown()
    ours, base = max(ray_runs), max(process_runs)
    print(f"build(), 2 Ray actors (Ray started):      {build_s:6.2f} s   (target < 2 s)")
    print(f"actor killed -> replacement sampled:      median {statistics.median(restarts):.2f} s, "
          f"max {max(restarts):.2f} s over {len(restarts)} kills   (target median < 2 s)")
    print(f"sampling, 2 worker processes:             {base:9.0f} env steps/s")
    print(f"sampling, 2 Ray actors:                   {ours:9.0f} env steps/s")
    print(f"ratio {ours / base:.2f}  (Ray / processes, target >= 0.8)")


if __name__ == "__main__":
    main()
