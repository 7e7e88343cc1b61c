"""APPO against PPO here, and APPO's sampling while it learns against sampling alone.

1. Time to solve: APPO with RLlib 2.60's tuned example settings (`appo/cartpole_appo.py`:
   circular_buffer_iterations_per_batch=2, vf_loss_coeff=0.05, entropy_coeff=0.0,
   vf_share_layers, 16 envs per EnvRunner; `appo/pendulum_appo.py`: 20 envs per EnvRunner,
   batch 500, a circular buffer of 16 x 10, lr 3e-4, gamma 0.95, the KL term towards 0.04,
   relu), with 2 EnvRunners (the machine's cores; RLlib's examples ask for 5 and 4), against
   PPO with the main job's preset for the env (bench/compare.py's `run_localrl`), to the
   mean return of the last 100 training episodes at CartPole 450 and Pendulum -300
   (bench/compare.py's targets and `ReturnWindow`). APPO's iterations are 1 s
   (`min_time_s_per_iteration`), so that the target is seen within a second. Each seed runs
   both back to back; the medians over `--seeds` are compared (ratio PPO / APPO: above 1,
   APPO solves sooner).
2. Throughput on CartPole with the example's settings: env steps per second sampled during
   `--seconds` of APPO training, against the same EnvRunners sampling alone (the same async
   requests, nobody learning); and the learner thread's busy fraction (its seconds in updates
   over the training's wall time).

Targets: APPO's times at or below PPO's; sampling while training >= 0.8 of sampling alone.

Run: python bench/appo.py [--seeds 0 1 2] [--tasks cartpole pendulum] [--max-seconds 300]
     [--seconds 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from compare import WINDOW, Run, Task, ratio_cell, run_localrl, summary, train_until  # noqa: E402

from trainer.algorithms.appo import APPOConfig  # noqa: E402


@dataclass(frozen=True)
class AppoTask:
    """A task, APPO's settings for it and PPO's run of it (bench/compare.py's Task)."""

    name: str
    ppo: Task
    env_runners: dict[str, Any]
    training: dict[str, Any]
    model: dict[str, Any]


TASKS = {
    "cartpole": AppoTask(
        "cartpole",
        Task("PPO", "CartPole-v1", 450.0, 2_000_000),
        {"num_env_runners": 2, "num_envs_per_env_runner": 16},
        {"circular_buffer_iterations_per_batch": 2, "vf_loss_coeff": 0.05, "entropy_coeff": 0.0},
        {"vf_share_layers": True},
    ),
    "pendulum": AppoTask(
        "pendulum",
        Task("PPO", "Pendulum-v1", -300.0, 20_000_000),
        {"num_env_runners": 2, "num_envs_per_env_runner": 20},
        {
            "train_batch_size_per_learner": 500,
            "circular_buffer_num_batches": 16,
            "circular_buffer_iterations_per_batch": 10,
            "target_network_update_freq": 2,
            "clip_param": 0.4,
            "lr": 0.0003,
            "gamma": 0.95,
            "entropy_coeff": 0.0,
            "use_kl_loss": True,
            "kl_coeff": 1.0,
            "kl_target": 0.04,
        },
        {"fcnet_activation": "relu"},
    ),
}


def appo_config(task: AppoTask, seed: int) -> APPOConfig:
    return (
        APPOConfig()
        .environment(task.ppo.env)
        .env_runners(**task.env_runners)
        .training(**task.training)
        .rl_module(model_config=task.model)
        .reporting(min_time_s_per_iteration=1, metrics_num_episodes_for_smoothing=WINDOW)
        .debugging(seed=seed)
    )


def run_appo(task: AppoTask, seed: int, max_seconds: float) -> Run:
    """APPO from before its build until the training return reaches the target (or a cap)."""
    start = time.perf_counter()
    return train_until(appo_config(task, seed).build(), task.ppo, start, max_seconds)


def throughput(task: AppoTask, seconds: float) -> tuple[float, float, float]:
    """(env steps/s while APPO trains, env steps/s sampling alone, learner busy fraction)."""
    algo = appo_config(task, 0).build()
    try:
        algo.train()  # warm-up: the runners' first requests, the learner thread started
        thread = algo._learner_thread
        assert thread is not None
        busy_before, sampled_before = thread.busy_s, algo.num_env_steps_sampled_lifetime
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            algo.train()
        elapsed = time.perf_counter() - start
        training_rate = (algo.num_env_steps_sampled_lifetime - sampled_before) / elapsed
        busy = (thread.busy_s - busy_before) / elapsed
        # Sampling alone: the same EnvRunners and requests, the learner thread paused.
        group = algo.env_runner_group
        group.fetch_ready_async_reqs(timeout_seconds=5.0)
        steps = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for index in group.healthy_env_runner_ids():
                if not group.num_in_flight_async_reqs_of(index):
                    group.foreach_env_runner_async("sample", "alone", remote_worker_ids=[index])
            for _, episodes in group.fetch_ready_async_reqs(tags="alone", timeout_seconds=0.05):
                steps += sum(len(ep) for ep in episodes)
        alone_rate = steps / (time.perf_counter() - start)
    finally:
        algo.stop()
    return training_rate, alone_rate, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    for name in args.tasks:
        task = TASKS[name]
        appo_runs, ppo_runs = [], []
        for seed in args.seeds:
            appo_runs.append(run_appo(task, seed, args.max_seconds))
            ppo_runs.append(run_localrl(task.ppo, seed, args.max_seconds))
            print(f"{name} seed {seed}: APPO {appo_runs[-1]}, PPO {ppo_runs[-1]}", flush=True)
        print(
            f"{name} {task.ppo.target:g} | APPO {summary(appo_runs)} | PPO {summary(ppo_runs)} "
            f"| ratio PPO / APPO {ratio_cell(appo_runs, ppo_runs)}"
        )
    training_rate, alone_rate, busy = throughput(TASKS["cartpole"], args.seconds)
    print(
        f"throughput cartpole: {training_rate:.0f} env steps/s while training, "
        f"{alone_rate:.0f} sampling alone: ratio {training_rate / alone_rate:.2f}; "
        f"learner busy {busy:.2f}"
    )


if __name__ == "__main__":
    main()
