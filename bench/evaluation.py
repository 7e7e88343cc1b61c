"""Cost of evaluating in parallel to training: PPO on CartPole-v1 (RLlib's defaults, 2 EnvRunners)
with `evaluation_parallel_to_training=True`, `evaluation_duration="auto"` (timesteps) on
`--eval-runners` evaluation EnvRunners (default 2), against the same iterations without
evaluation, measured in the same run.

Each side runs `--iters` iterations after a warm-up one, `--repeats` times, alternating; the
median iteration time of each side's best run is compared. The evaluation env steps per
iteration show that "auto" evaluation gets real work done, not only that it stays out of the way.

Target (issue 15): ratio <= 1.3 with 2 evaluation runners (issue 4: <= 1.2 with 1).
Run: python bench/evaluation.py [--eval-runners 2] [--iters 4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

from trainer import PPOConfig


def iteration_seconds(evaluate: bool, iters: int, eval_runners: int) -> tuple[float, int]:
    config = PPOConfig().environment("CartPole-v1").debugging(seed=0)
    if evaluate:
        config.evaluation(
            evaluation_interval=1,
            evaluation_parallel_to_training=True,
            evaluation_duration="auto",
            evaluation_duration_unit="timesteps",
            evaluation_num_env_runners=eval_runners,
        )
    algo = config.build()
    try:
        algo.train()  # warm-up
        times, eval_steps = [], 0
        for _ in range(iters):
            start = time.perf_counter()
            result = algo.train()
            times.append(time.perf_counter() - start)
            if evaluate:
                eval_steps += result["evaluation"]["env_runners"]["num_env_steps_sampled"]
        return statistics.median(times), eval_steps
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--eval-runners", type=int, default=2)
    args = parser.parse_args()
    plain, with_eval, steps = [], [], 0
    for _ in range(args.repeats):
        plain.append(iteration_seconds(False, args.iters, 0)[0])
        seconds, steps = iteration_seconds(True, args.iters, args.eval_runners)
        with_eval.append(seconds)
    base, ours = min(plain), min(with_eval)
    print(f"iteration without evaluation:               {base:6.3f} s")
    print(
        f"iteration with parallel 'auto' evaluation on {args.eval_runners} runner(s): "
        f"{ours:6.3f} s  "
        f"({steps / args.iters:.0f} evaluation env steps per iteration)"
    )
    target = 1.2 if args.eval_runners == 1 else 1.3
    print(f"ratio {ours / base:.2f}  (target <= {target})")


if __name__ == "__main__":
    main()
