"""Offline data: reading throughput against pyarrow's own read, and the offline algorithms' time
to a return from recorded datasets against RLlib 2.60's, reading the same files with Ray Data,
in the same run.

1. The datasets: the main job trains PPO on CartPole-v1 (RLlib's tuned preset) until solved,
   then `python -m trainer record` plays the greedy policy for `--env-steps` env steps into
   parquet (RLlib's column format, `--rows-per-file` rows a file); likewise SAC on Pendulum-v1
   (the main job's preset) and its stochastic policy for `--env-steps` steps.
2. Reading: rows per second of `trainer.offline.OfflineData` handing out one epoch of the
   CartPole dataset in batches of 1024 (row groups read, converted to arrays, shuffled; the
   rows it read, the epoch's and those read ahead into its pool, over the time taken), against
   pyarrow reading the same files whole (`pq.read_table`) and converting the same columns to
   numpy; median of `--repeats`, ratio ours / pyarrow's.
3. BC to a greedy evaluation return of 450 on CartPole, and CQL to -300 on Pendulum (5
   episodes after every iteration), from before the build: this project's (numpy, then torch)
   and RLlib 2.60's (torch, Ray Data, `ray.init(num_cpus=max(4, cores))`: with the machine's 2
   its read task waits for a CPU the map_batches actor and the evaluation EnvRunner hold, and
   no row is read; in a fresh process; left out with a line saying why when RLlib cannot be
   imported), one run per seed of `--seeds` (the median compared), each capped at
   `--max-seconds`. The settings are RLlib's tuned examples'
   (`bc/cartpole_bc.py`: batch 1024, lr 8e-4, 5 updates an iteration, 256x256;
   `cql/pendulum_cql.py`: batch 1024, 5 updates an iteration, its rates, tau and
   min_q_weight), the same for both libraries, with two changes to CQL's: `bc_iters` at
   CQL's default (20000), so that both clone the recorded actions throughout the run while
   their critics learn (RLlib 2.60's CQL never ends cloning with bc_iters above its
   updates per training step; here bc_iters counts training iterations), and 64x64
   networks without fusion layers (RLlib's default 256x256 critics with fusion layers take
   about 2 s an update on 2 cores).

Targets: reading ratio >= 0.8; BC and CQL here at least as fast as RLlib's.

Run: python bench/offline.py [--env-steps 50000] [--repeats 3] [--max-seconds 600]
     [--seeds 0 1 2] [--tasks BC CQL] [--skip-rllib]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BATCH = 1024


@dataclass(frozen=True)
class Task:
    """An offline algorithm's run to a greedy evaluation return, with settings both libraries
    take (RLlib's builder keywords)."""

    algo: str
    env: str
    target: float
    training: dict[str, Any]
    model: dict[str, Any]
    offline: dict[str, Any] = field(default_factory=lambda: {"dataset_num_iters_per_learner": 5})


BC_TASK = Task(
    "BC",
    "CartPole-v1",
    450.0,
    {"train_batch_size_per_learner": BATCH, "lr": 8e-4},
    {"fcnet_hiddens": [256, 256]},
)
CQL_TASK = Task(
    "CQL",
    "Pendulum-v1",
    -300.0,
    {
        "bc_iters": 20000,
        "tau": 9.5e-3,
        "min_q_weight": 5.0,
        "train_batch_size_per_learner": BATCH,
        "twin_q": True,
        "actor_lr": 1.7e-3,
        "critic_lr": 2.5e-3,
        "alpha_lr": 1e-3,
        "lr": None,
    },
    {"fcnet_hiddens": [64, 64], "fusionnet_hiddens": []},
)


def record_dataset(
    folder: Path, algo: str, env_id: str, env_steps: int, rows_per_file: int, explore: bool
) -> list[str]:
    """Trains the main job's `algo` on `env_id` until solved, records its policy into
    `folder / "data"`; returns the files."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    run = folder / "run"
    main_job = ["--algo", algo, "--env", env_id, "--output-dir", str(run), "--seed", "0"]
    subprocess.run(
        [sys.executable, "-m", "trainer", *main_job],
        check=True,
        capture_output=True,
        env=env,
        timeout=900,
    )
    record = ["--output", str(folder / "data"), "--env-steps", str(env_steps)]
    record += ["--rows-per-file", str(rows_per_file), "--explore" if explore else "--no-explore"]
    subprocess.run(
        [sys.executable, "-m", "trainer", "record", str(run), *record],
        check=True,
        capture_output=True,
        env=env,
        timeout=900,
    )
    return sorted(glob.glob(str(folder / "data" / "**" / "*.parquet"), recursive=True))


def pyarrow_rows_per_s(files: list[str]) -> float:
    import numpy as np
    import pyarrow.parquet as pq

    start = time.perf_counter()
    rows = 0
    for path in files:
        table = pq.read_table(path)
        for name in ("obs", "new_obs"):
            np.asarray(table.column(name).combine_chunks().flatten()).reshape(len(table), -1)
        for name in ("actions", "rewards", "terminateds", "truncateds"):
            table.column(name).to_numpy()
        rows += len(table)
    return rows / (time.perf_counter() - start)


def offline_data_rows_per_s(folder: Path) -> float:
    import gymnasium as gym

    from trainer import BCConfig
    from trainer.offline.reading import OfflineData

    config = BCConfig().environment("CartPole-v1").offline_data(input_=str(folder))
    env = gym.make("CartPole-v1")
    start = time.perf_counter()
    data = OfflineData(config, env.observation_space, env.action_space, seed=0)
    while data.epochs < 1:
        data.sample(BATCH)
    # The rows read (an epoch and the pieces read ahead into the pool) over the time taken.
    return data.rows_read / (time.perf_counter() - start)


def time_here(
    task: Task, folder: Path, framework: str, max_seconds: float, seed: int
) -> tuple[float, int, bool]:
    """Seconds from before the build to the first evaluation at `task.target`, the
    iterations, and whether it got there (else capped at `max_seconds`)."""
    import trainer

    start = time.perf_counter()
    algo = (
        getattr(trainer, f"{task.algo}Config")()
        .environment(task.env)
        .framework(framework)
        .offline_data(input_=str(folder), **task.offline)
        .training(**task.training)
        .rl_module(model_config=task.model)
        .reporting(min_time_s_per_iteration=0)
        .evaluation(
            evaluation_interval=1,
            evaluation_num_env_runners=1,
            evaluation_duration=5,
            evaluation_config={"explore": False},
        )
        .debugging(seed=seed)
        .build()
    )
    try:
        while True:
            result = algo.train()
            seconds = time.perf_counter() - start
            if result["evaluation"]["env_runners"]["episode_return_mean"] >= task.target:
                return seconds, result["training_iteration"], True
            if seconds >= max_seconds:
                return seconds, result["training_iteration"], False
    finally:
        algo.stop()


RLLIB_RUN = textwrap.dedent("""
    import json, os, sys, time
    start = time.perf_counter()
    import ray
    from ray.rllib.algorithms.{module} import {algo}Config
    # Logical CPUs: the read task, the map_batches actor and the evaluation EnvRunner each
    # hold one; with only the machine's 2 the read task never starts (0 rows/s).
    ray.init(num_cpus=max(4, os.cpu_count() or 1), include_dashboard=False, log_to_driver=False)
    folder, max_seconds, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    algo = (
        {algo}Config()
        .environment({env!r})
        .offline_data(input_=[folder], **{offline!r},
                      map_batches_kwargs={{"concurrency": 1, "num_cpus": 1}},
                      iter_batches_kwargs={{"prefetch_batches": 1}})
        .training(**{training!r})
        .rl_module(model_config={model!r})
        .reporting(min_time_s_per_iteration=0)
        .evaluation(evaluation_interval=1, evaluation_num_env_runners=1, evaluation_duration=5,
                    evaluation_config={{"explore": False}})
        .debugging(seed=seed)
        .build()
    )
    reached = False
    while True:
        result = algo.train()
        seconds = time.perf_counter() - start
        ret = result.get("evaluation", {{}}).get("env_runners", {{}}).get("episode_return_mean")
        if ret is not None and ret >= {target}:
            reached = True
            break
        if seconds >= max_seconds:
            break
    print(json.dumps([seconds, result["training_iteration"], reached]))
    algo.stop()
    ray.shutdown()
""")


def time_rllib(
    task: Task, folder: Path, max_seconds: float, seed: int
) -> tuple[float, int, bool] | str:
    """RLlib 2.60's run in a fresh process without this project on the path, or why not."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    module = task.algo.lower()
    check = subprocess.run(
        [sys.executable, "-c", f"import ray.rllib.algorithms.{module}, ray.data"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    if check.returncode != 0:
        return "RLlib 2.60 cannot be imported here: " + check.stderr.strip().splitlines()[-1]
    script = RLLIB_RUN.format(
        module=module,
        algo=task.algo,
        env=task.env,
        offline=task.offline,
        training=task.training,
        model=task.model,
        target=task.target,
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, str(folder), str(max_seconds), str(seed)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
            timeout=max_seconds + 300,
        )
    except subprocess.TimeoutExpired:
        return f"RLlib's {task.algo} did not end within {max_seconds + 300:.0f} s"
    if done.returncode != 0:
        return f"RLlib's {task.algo} failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    seconds, iterations, reached = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds, iterations, reached


def cells(runs: list[tuple[float, int, bool]]) -> str:
    """Each seed's run ("capped" where it ran out of time), then the median time."""
    each = ", ".join(
        f"{seconds:.1f} s/{iterations} it" + ("" if reached else " capped")
        for seconds, iterations, reached in runs
    )
    return f"{each}; median {median_run(runs)[0]:.1f} s"


def median_run(runs: list[tuple[float, int, bool]]) -> tuple[float, int, bool]:
    """The run of median time (a capped run counts at its cap)."""
    return sorted(runs)[len(runs) // 2]


def compare(task: Task, data: Path, max_seconds: float, seeds: list[int], skip_rllib: bool) -> None:
    """Prints the task's runs here (numpy, torch) and RLlib's, one per seed, their medians and
    the ratios of the medians."""
    name = f"{task.algo} to {task.target:g}"
    medians: dict[str, tuple[float, int, bool]] = {}
    for fw in ("numpy", "torch"):
        runs = [time_here(task, data, fw, max_seconds, seed) for seed in seeds]
        medians[fw] = median_run(runs)
        print(f"{name} here ({fw}): {cells(runs)}", flush=True)
    if skip_rllib:
        print(f"{name} RLlib 2.60 (torch, Ray Data): left out (--skip-rllib)")
        return
    theirs = []
    for seed in seeds:
        run = time_rllib(task, data, max_seconds, seed)
        if isinstance(run, str):
            print(f"{name} RLlib 2.60 (torch, Ray Data): {run}")
            return
        theirs.append(run)
    rllib = median_run(theirs)
    print(f"{name} RLlib 2.60 (torch, Ray Data): {cells(theirs)}")
    for fw, run in medians.items():
        print(
            f"ratio {task.algo} median time RLlib / here ({fw}) {rllib[0] / run[0]:.2f}"
            + ("" if run[2] and rllib[2] else " (a capped run: a bound)")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env-steps", type=int, default=50_000)
    parser.add_argument("--rows-per-file", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--skip-rllib", action="store_true")
    parser.add_argument("--tasks", nargs="+", choices=("BC", "CQL"), default=["BC", "CQL"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work) / "cartpole"
        files = record_dataset(
            folder, "PPO", "CartPole-v1", args.env_steps, args.rows_per_file, explore=False
        )
        data = folder / "data"
        print(f"dataset: {len(files)} files, {args.env_steps}+ env steps of a solved PPO policy")
        ours = [offline_data_rows_per_s(data) for _ in range(args.repeats)]
        theirs = [pyarrow_rows_per_s(files) for _ in range(args.repeats)]
        mine, base = statistics.median(ours), statistics.median(theirs)
        print(
            f"reading: OfflineData {mine:,.0f} rows/s; pyarrow read_table + numpy "
            f"{base:,.0f} rows/s"
        )
        print(f"ratio reading OfflineData / pyarrow {mine / base:.2f}", flush=True)
        if "BC" in args.tasks:
            compare(BC_TASK, data, args.max_seconds, args.seeds, args.skip_rllib)
        if "CQL" in args.tasks:
            folder = Path(work) / "pendulum"
            files = record_dataset(
                folder, "SAC", "Pendulum-v1", args.env_steps, args.rows_per_file, explore=True
            )
            print(
                f"dataset: {len(files)} files, {args.env_steps}+ env steps of a SAC policy "
                "(the main job's preset, until solved; sampled actions)"
            )
            compare(CQL_TASK, folder / "data", args.max_seconds, args.seeds, args.skip_rllib)


if __name__ == "__main__":
    main()
