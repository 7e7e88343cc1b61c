"""Learners across cores: PPO's learner throughput (env steps of train batch per second of
update) with 1, 2, 4, ... data-parallel learners (`learners(num_learners=N)`), and the ratio to
one learner, measured in the same run.

Measured: one fixed list of CartPole-v1 episodes (`--batch` env steps, sampled once, seeded),
and for each learner count an algorithm (no EnvRunner processes: the learners alone) whose
`update_learners(episodes)` runs PPO's update (`--epochs` passes, minibatches of `--minibatch`
rows per learner, the `--hidden` x `--hidden` tanh networks of policy and value function) on N
shards, the N learners stepping on the mean of their gradients. One learner is the
algorithm's own learner in the main process (no all-reduce, no worker). Each count runs
`--repeats` updates after one warm-up update, interleaved with the other counts, and the best
of each is kept (the least disturbed). Throughput: the batch's env steps over the update's wall
time; ratio: that over one learner's.

Target (on 16 cores): 4 learners >= 3x one learner.
Run: python bench/scaling.py --learners 1 2 4 8 [--framework torch] [--batch 16000]
     [--minibatch 128] [--epochs 4] [--hidden 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from report import cpu_model  # bench/ is this script's path

from trainer import PPOConfig


def config(args: argparse.Namespace, num_learners: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .framework(args.framework)
        .env_runners(num_env_runners=0)
        .learners(num_learners=num_learners)
        .training(
            train_batch_size=args.batch,
            minibatch_size=args.minibatch,
            num_epochs=args.epochs,
            lr=1e-4,
        )
        .rl_module(model_config={"fcnet_hiddens": [args.hidden] * 2, "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )


def update_seconds(algo: Any, episodes: list) -> float:
    started = time.perf_counter()
    algo.update_learners(episodes, num_env_steps_sampled_lifetime=0)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, nargs="+", required=True)
    parser.add_argument("--framework", choices=("numpy", "torch"), default="numpy")
    parser.add_argument("--batch", type=int, default=16000)
    parser.add_argument("--minibatch", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    counts = sorted(set(args.learners))
    if counts[0] != 1:
        counts = [1, *counts]
    sampler = config(args, 0).build()
    try:
        episodes, _ = sampler.env_runner_group.sample(min_env_steps=args.batch)
    finally:
        sampler.stop()
    steps = sum(len(episode) for episode in episodes)
    algos = {n: config(args, n if n > 1 else 0).build() for n in counts}
    try:
        for algo in algos.values():
            update_seconds(algo, episodes)  # warm-up
        best = {n: float("inf") for n in counts}
        for _ in range(args.repeats):
            for n, algo in algos.items():
                best[n] = min(best[n], update_seconds(algo, episodes))
    finally:
        for algo in algos.values():
            algo.stop()
    print(
        f"{cpu_model()}, {os.cpu_count()} cores; PPO {args.framework} learners, "
        f"{steps} env steps per update, {args.epochs} epochs of {args.minibatch}-row "
        f"minibatches per learner, {args.hidden}x{args.hidden} networks; best of {args.repeats}"
    )
    one = steps / best[1]
    for n in counts:
        throughput = steps / best[n]
        print(
            f"{n} learner{'s' if n > 1 else ''}: {throughput:,.0f} env steps/s "
            f"({best[n]:.2f} s per update), ratio to one learner {throughput / one:.2f}"
        )


if __name__ == "__main__":
    main()
