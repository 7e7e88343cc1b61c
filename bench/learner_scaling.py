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

With `--solve`: time to solve instead. For each task (PPO and SAC on Pendulum-v1, APPO on
CartPole-v1: the main job's fast preset and its stop reward, seed 0) and each learner count,
the main job trains in a fresh process until the preset's stop reward or `SOLVE_BUDGETS` env
steps; printed: seconds (the process's wall time, its start included), env steps, whether it
solved, and the ratio of one learner's seconds to these (above 1: faster). The preset's train
batch stays the total (RLlib's `train_batch_size`), split over the learners.

Target (on 16 cores): 4 learners >= 3x one learner.
Run: python bench/scaling.py --learners 1 2 4 8 [--framework torch] [--batch 16000]
     [--minibatch 128] [--epochs 4] [--hidden 256] [--repeats 3] [--solve]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
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


#: (algorithm, env) -> the env steps a run to the preset's stop reward may take.
SOLVE_BUDGETS = {
    ("PPO", "Pendulum-v1"): 400_000,
    ("SAC", "Pendulum-v1"): 40_000,
    ("APPO", "CartPole-v1"): 400_000,
}
REPO = Path(__file__).resolve().parents[1]


def solve(algo: str, env: str, num_learners: int) -> tuple[float, int, bool]:
    """The main job on `algo`/`env` with `num_learners` learners (0: the one in the main
    process) to its preset's stop reward: (seconds, env steps, solved)."""
    from trainer.cli.presets import find_preset

    preset = find_preset(algo, env)
    assert preset is not None, (algo, env)
    with tempfile.TemporaryDirectory() as folder:
        settings = Path(folder) / "learners.toml"
        settings.write_text(f"[learners]\nnum_learners = {num_learners}\n")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "trainer", "train", "--algo", algo, "--env", env]
            + ["--seed", "0", "--config", str(settings)]
            + ["--stop-reward", str(preset.stop_reward)]
            + ["--stop-timesteps", str(SOLVE_BUDGETS[(algo, env)])]
            + ["--output-dir", str(Path(folder) / "run")],
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=REPO,
        )
        seconds = time.perf_counter() - started
    found = re.search(r"^stopped \((.*)\) after \d+ iterations, (\d+) env steps", done.stdout, re.M)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{algo} {env}: exit {done.returncode}: {done.stderr[-500:]}")
    return seconds, int(found.group(2)), found.group(1).startswith("reached mean return")


def main_solve(counts: list[int]) -> None:
    print(f"{cpu_model()}, {os.cpu_count()} cores; time to solve, main job's fast preset, seed 0")
    for algo, env in SOLVE_BUDGETS:
        runs = {n: solve(algo, env, n if n > 1 else 0) for n in counts}
        one = runs[1][0]
        for n, (seconds, steps, solved) in runs.items():
            print(
                f"{algo} {env}, {n} learner{'s' if n > 1 else ''}: {seconds:.1f} s, "
                f"{steps} env steps, {'solved' if solved else 'NOT solved'}, "
                f"ratio to one learner {one / seconds:.2f}"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, nargs="+", required=True)
    parser.add_argument("--framework", choices=("numpy", "torch"), default="numpy")
    parser.add_argument("--batch", type=int, default=16000)
    parser.add_argument("--minibatch", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--solve", action="store_true", help="time to solve instead")
    args = parser.parse_args(argv)
    counts = sorted(set(args.learners))
    if counts[0] != 1:
        counts = [1, *counts]
    if args.solve:
        main_solve(counts)
        return
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
