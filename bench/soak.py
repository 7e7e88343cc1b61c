"""A soak run: PPO on CartPole-v1 for 1,000 iterations while an EnvRunner is SIGKILLed every 10
iterations, a checkpoint is saved every 10, and a callback counts every finished episode on a
named object (the named-object server). It watches for what a long run leaks or loses:

- resources of the main process and its children, at iteration 100 (the baseline, after the
  first checkpoints, kills and restarts have happened) and at the end: the main process's RSS,
  its open file descriptors, its child processes, and their RSS together;
- restarts: every kill must come back as exactly one restart (`num_remote_worker_restarts`);
- checkpoints: each one is restored, right after it was saved, into a second algorithm built
  from the first checkpoint (`Algorithm.from_checkpoint`), whose weights must then equal the
  saved algorithm's exactly;
- the named object: the callback's count must be at least the episodes the results counted
  (episodes finished in a request lost to a kill were counted by the callback but not returned).

Target: RSS growth of the main process from iteration 100 to the end under 5%; open files and
children the same at both points; restarts == kills; every checkpoint restored exactly.

Run: python bench/soak.py [--iterations 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import tempfile
import time

import numpy as np

from callbacks import RLlibCallback
from trainer import PPOConfig
from trainer.algorithms.algorithm import Algorithm
from trainer.named_objects import create_named_object, get_named_object, shutdown_named_objects
from trainer.testing import assert_no_env_runner_processes

KILL_EVERY = 10
CHECKPOINT_EVERY = 10
BASELINE_ITERATION = 100
COUNTER = "soak_episodes"


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n

    def get(self) -> int:
        return self.count


class CountEpisodes(RLlibCallback):
    """Counts each finished episode on the named object (one call to the server each)."""

    def on_episode_end(self, **kwargs) -> None:
        get_named_object(COUNTER).inc(1)


def _children(pid: int) -> list[int]:
    """Every descendant process of `pid` (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        parents.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def resources() -> dict:
    me = os.getpid()
    children = _children(me)
    return {
        "rss_mib": _rss_mib(me),
        "fds": len(os.listdir(f"/proc/{me}/fd")),
        "children": len(children),
        "children_rss_mib": sum(_rss_mib(child) for child in children),
    }


def describe(label: str, measured: dict) -> str:
    return (
        f"{label}: main RSS {measured['rss_mib']:.1f} MiB, {measured['fds']} open files, "
        f"{measured['children']} child processes ({measured['children_rss_mib']:.0f} MiB)"
    )


def config(seed: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2)
        .training(train_batch_size=400, minibatch_size=200, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32]})
        .callbacks(CountEpisodes)
        .fault_tolerance(delay_between_env_runner_restarts_s=0.0)
        .debugging(seed=seed)
    )


def kill_runner(algo: Algorithm, index: int) -> None:
    """SIGKILLs runner `index` and waits until its process is gone, so the next train() sees
    the crash (it restarts it as the first thing it does)."""
    handle = algo.env_runner_group.remote_runner(index)
    os.kill(handle.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while handle.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)


def weights_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="soak_")
    counter = create_named_object(COUNTER, Counter)
    algo = config(args.seed).build()
    verifier: Algorithm | None = None
    kills = checkpoints = restored = episodes = 0
    baseline: dict | None = None
    started = time.perf_counter()
    try:
        for iteration in range(1, args.iterations + 1):
            result = algo.train()
            episodes += result["env_runners"]["num_episodes"]
            if iteration % CHECKPOINT_EVERY == 0:
                # One directory, overwritten each time (the atomic replace is part of the test).
                path = os.path.join(directory, "checkpoint")
                algo.save_to_path(path)
                checkpoints += 1
                saved = algo.get_weights()
                if verifier is None:
                    verifier = Algorithm.from_checkpoint(path)
                else:
                    verifier.restore_from_path(path)
                restored += weights_equal(verifier.get_weights(), saved)
            if iteration % KILL_EVERY == KILL_EVERY // 2:
                kill_runner(algo, 1 + kills % 2)
                kills += 1
            if iteration == BASELINE_ITERATION:
                baseline = resources()
                print(describe(f"iteration {iteration}", baseline), flush=True)
            if iteration % 100 == 0:
                print(
                    f"iteration {iteration}: {time.perf_counter() - started:.0f} s, return "
                    f"{result['env_runners']['episode_return_mean']:.1f}, restarts "
                    f"{algo.env_runner_group.num_remote_worker_restarts()} of {kills} kills",
                    flush=True,
                )
        # A kill after the last train(): the next train() would restart it; do it now.
        algo.restore_env_runners(algo.env_runner_group)
        end = resources()
        restarts = algo.env_runner_group.num_remote_worker_restarts()
        counted = counter.get()
    finally:
        algo.stop()
        if verifier is not None:
            verifier.stop()
        shutdown_named_objects()
        shutil.rmtree(directory, ignore_errors=True)
    assert_no_env_runner_processes()
    print(describe(f"iteration {args.iterations}", end))
    if baseline is not None:
        growth = 100 * (end["rss_mib"] / baseline["rss_mib"] - 1)
        print(
            f"main RSS growth from iteration {BASELINE_ITERATION} to {args.iterations}: "
            f"{growth:+.1f}% (target < 5%); open files {baseline['fds']} -> {end['fds']}, "
            f"children {baseline['children']} -> {end['children']} (target: flat)"
        )
    print(f"restarts: {restarts} of {kills} kills (target: equal)")
    print(f"checkpoints: {restored} of {checkpoints} restored with exactly the saved weights")
    print(
        f"named object: the callback counted {counted} episodes, the results {episodes} "
        f"(target: at least as many)"
    )
    print(f"wall time: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
