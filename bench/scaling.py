"""Sampling across cores: env steps per second of 1, 2, 4, ... EnvRunner processes (up to the
machine's cores), each with the same vector env and policy, and the ratio of N runners to N
times one runner, measured in the same run.

Measured: an `EnvRunnerGroup` of N worker processes built from a PPO config (CartPole-v1,
`--num-envs` sub-envs per runner, the default 256x256 tanh policy), driven through its public
`sample(min_env_steps=...)`: every round asks each runner for `--fragment` steps per sub-env
and waits for all of them, so the time includes recording the episodes and shipping them back
to the main process, which merges them (the main process is one more busy process beside the N
runners). Sampling only: no learner update.

Baseline, the machine's own ceiling: N plain loops in N processes started together (the loop
of bench/sampling.py: the same sub-envs, forward pass and draws written plainly, one BLAS thread,
no episodes kept, nothing shipped), their summed env steps/s, twice: free-running, and meeting at
a barrier after every round of `--fragment` steps per sub-env, as the runners' rounds do (each
round waits for the slowest process). Where the plain loops fall short of N x one, the machine
does (cores of unequal speed, shared caches, memory bandwidth, cores that slow down when all are
busy), not the runners. "runners at" compares the runners' env steps/s with the plain
loops' (the sampling loop's overhead, as bench/sampling.py's ratio is for one runner).
"main process busy" is the main process's CPU time over the wall time of the sampling rounds:
the one process that merges every runner's episodes, the part of N runners' work that does not
spread over cores.

Each count is measured `--repeats` times, interleaved with the others, and the best of each is
kept (as timeit does: the best run is the one least disturbed by the rest of the machine).

Target: 2 runners at >= 1.8x one runner on a 2-core machine.
Run: python bench/scaling.py [--num-envs 8] [--fragment 128] [--rounds 10] [--repeats 5]
     [--max-runners N]

`--learners 1 2 4 8` measures learners instead of runners: PPO's learner throughput with that
many data-parallel learners against one (bench/learner_scaling.py, whose options it takes).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time

from sampling import PlainLoop  # bench/ is this script's path
from threadpoolctl import threadpool_limits

from trainer import PPOConfig
from trainer.runners.env_runner_group import EnvRunnerGroup


def runner_counts(max_runners: int) -> list[int]:
    """1, 2, 4, ... up to `max_runners`, and `max_runners` itself."""
    counts, count = [], 1
    while count < max_runners:
        counts.append(count)
        count *= 2
    return [*counts, max_runners]


def build_group(num_runners: int, num_envs: int, fragment: int) -> EnvRunnerGroup:
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=num_runners,
            num_envs_per_env_runner=num_envs,
            rollout_fragment_length=fragment,
        )
        .training(train_batch_size=num_runners * num_envs * fragment)
        .debugging(seed=0)
    )
    return EnvRunnerGroup(config=config)


def steps_per_s(group: EnvRunnerGroup, rounds: int, round_steps: int) -> tuple[float, float]:
    """Env steps per second over `rounds` sampling rounds (after one to warm up), and the
    fraction of that wall time the main process was busy."""
    group.sample(min_env_steps=round_steps)
    started, cpu_started = time.perf_counter(), time.process_time()
    steps = 0
    for _ in range(rounds):
        episodes, _ = group.sample(min_env_steps=round_steps)
        steps += sum(len(episode) for episode in episodes)
    wall = time.perf_counter() - started
    return steps / wall, (time.process_time() - cpu_started) / wall


def _plain_loop(
    start: multiprocessing.synchronize.Barrier,
    rates: multiprocessing.SimpleQueue,
    rounds: int,
    round_steps: int,
    num_envs: int,
) -> None:
    with threadpool_limits(1, user_api="blas"):
        loop = PlainLoop(num_envs)
        # Untimed: a fresh process on a core that was idle ran its first timed block up to
        # 1.2x slower than its later ones on the 16-core machine.
        loop.run(3 * round_steps)
        start.wait(timeout=60)
        began = time.perf_counter()
        free_running = loop.run(rounds * round_steps) / (time.perf_counter() - began)
        start.wait(timeout=60)
        began, steps = time.perf_counter(), 0
        for _ in range(rounds):
            steps += loop.run(round_steps)
            start.wait(timeout=60)
        rates.put((free_running, steps / (time.perf_counter() - began)))
        loop.close()


def plain_loops_steps_per_s(
    count: int, rounds: int, round_steps: int, num_envs: int
) -> tuple[float, float]:
    """The summed env steps/s of `count` plain loops in as many processes, started together:
    free-running, and meeting after every round of `round_steps` (as the runners' rounds do)."""
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    start, rates = context.Barrier(count), context.SimpleQueue()
    loops = [
        context.Process(
            target=_plain_loop, args=(start, rates, rounds, round_steps, num_envs), daemon=True
        )
        for _ in range(count)
    ]
    for loop in loops:
        loop.start()
    for loop in loops:
        loop.join(timeout=120)
        if loop.exitcode != 0:
            raise RuntimeError(f"a plain loop process ended with exit code {loop.exitcode}")
    free_running, meeting = zip(*(rates.get() for _ in loops), strict=True)
    return sum(free_running), sum(meeting)


def main() -> None:
    if "--learners" in sys.argv[1:]:
        import learner_scaling  # bench/ is this script's path

        learner_scaling.main(sys.argv[1:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--fragment", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-runners", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    counts = runner_counts(args.max_runners)
    print(
        f"{os.cpu_count()} cores; CartPole-v1, {args.num_envs} sub-envs per runner, "
        f"{args.fragment} steps per sub-env and round, {args.rounds} rounds, best of "
        f"{args.repeats}"
    )
    best: dict[int, float] = dict.fromkeys(counts, 0.0)
    busy: dict[int, float] = dict.fromkeys(counts, 0.0)
    free_running: dict[int, float] = dict.fromkeys(counts, 0.0)
    meeting: dict[int, float] = dict.fromkeys(counts, 0.0)
    #: Steps per round of one runner, and of one plain loop.
    round_steps = args.num_envs * args.fragment
    groups = {count: build_group(count, args.num_envs, args.fragment) for count in counts}
    try:
        for _ in range(args.repeats):
            for count in counts:
                group_round_steps = count * round_steps
                rate, main_busy = steps_per_s(groups[count], args.rounds, group_round_steps)
                if rate > best[count]:
                    best[count], busy[count] = rate, main_busy
                free, met = plain_loops_steps_per_s(count, args.rounds, round_steps, args.num_envs)
                free_running[count] = max(free_running[count], free)
                meeting[count] = max(meeting[count], met)
    finally:
        for group in groups.values():
            group.stop()
    one, plain_one = best[1], free_running[1]
    for count in counts:
        print(
            f"{count} runner{'s' if count > 1 else ' '}: {best[count]:7.0f} env steps/s, "
            f"{best[count] / one:.2f}x one runner ({best[count] / (count * one):.2f} of "
            f"{count} x one; main process busy {busy[count]:.0%}); {count} plain loop"
            f"{'s' if count > 1 else ''}: {free_running[count]:7.0f} env steps/s free-running "
            f"({free_running[count] / (count * plain_one):.2f} of {count} x one), "
            f"{meeting[count]:7.0f} meeting every round; runners at "
            f"{best[count] / free_running[count]:.2f} of the free-running plain loops, "
            f"{best[count] / meeting[count]:.2f} of those meeting every round"
        )


if __name__ == "__main__":
    main()
