"""APPO against PPO here, and APPO's sampling while it learns against sampling alone.

1. Time to solve: APPO with the main job's preset for the env (on 2 cores: one EnvRunner and
   the learner thread on the other core; `trainer/algorithms/appo/presets.py`) against PPO
   with the main job's preset (bench/compare.py's `run_localrl` for both), to the mean return
   of the last 100 training episodes at CartPole 450 and Pendulum -300 (bench/compare.py's
   targets and `ReturnWindow`). Each seed runs both back to back; the medians over `--seeds`
   are compared (ratio PPO / APPO: above 1, APPO solves sooner). `--preset rllib` runs APPO
   with RLlib 2.60's tuned examples instead (`appo/cartpole_appo.py`, `pendulum_appo.py`, on
   IMPALA's default 2 EnvRunners).
2. Throughput on CartPole, for the main job's preset and for RLlib's example: env steps per
   second sampled during `--seconds` of APPO training, against the same EnvRunners sampling
   alone (the same async requests, nobody learning); and the learner thread's busy fraction
   (its seconds in updates over the training's wall time).

Targets: APPO's times at or below PPO's; sampling while training >= 0.8 of sampling alone.

Run: python bench/appo.py [--seeds 0 1 2] [--tasks cartpole pendulum] [--max-seconds 300]
     [--seconds 20] [--preset fast|rllib]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from compare import WINDOW, Task, ratio_cell, run_localrl, summary  # noqa: E402

from trainer.algorithms.appo import APPOConfig  # noqa: E402
from trainer.cli.presets import PRESET_FAST, PRESET_RLLIB, find_preset  # noqa: E402

#: task name -> (APPO's task, PPO's task): the same env, target and env-step cap.
TASKS = {
    "cartpole": (
        Task("APPO", "CartPole-v1", 450.0, 2_000_000),
        Task("PPO", "CartPole-v1", 450.0, 2_000_000),
    ),
    "pendulum": (
        Task("APPO", "Pendulum-v1", -300.0, 20_000_000),
        Task("PPO", "Pendulum-v1", -300.0, 20_000_000),
    ),
}


def preset_config(preset_choice: str, seed: int = 0) -> APPOConfig:
    """APPO on CartPole with the main job's preset (`preset_choice`)."""
    config = APPOConfig().environment("CartPole-v1")
    preset = find_preset("APPO", "CartPole-v1", preset_choice)
    assert preset is not None
    preset.apply(config)
    # Iterations of 1 s (RLlib's default is 10): the throughput is read after each.
    return config.reporting(min_time_s_per_iteration=1, metrics_num_episodes_for_smoothing=WINDOW)


def throughput(config: APPOConfig, seconds: float) -> tuple[float, float, float]:
    """(env steps/s while APPO trains, env steps/s sampling alone, learner busy fraction)."""
    algo = config.build()
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
    parser.add_argument("--preset", choices=(PRESET_FAST, PRESET_RLLIB), default=PRESET_FAST)
    args = parser.parse_args()
    for name in args.tasks:
        appo_task, ppo_task = TASKS[name]
        appo_runs, ppo_runs = [], []
        for seed in args.seeds:
            appo_runs.append(run_localrl(appo_task, seed, args.max_seconds, None, args.preset))
            ppo_runs.append(run_localrl(ppo_task, seed, args.max_seconds))
            print(f"{name} seed {seed}: APPO {appo_runs[-1]}, PPO {ppo_runs[-1]}", flush=True)
        print(
            f"{name} {appo_task.target:g} | APPO ({args.preset} preset) {summary(appo_runs)} "
            f"| PPO {summary(ppo_runs)} | ratio PPO / APPO {ratio_cell(appo_runs, ppo_runs)}"
        )
    for preset_choice in (PRESET_FAST, PRESET_RLLIB):
        config = preset_config(preset_choice)
        training_rate, alone_rate, busy = throughput(config, args.seconds)
        print(
            f"throughput cartpole, {preset_choice} preset ({config.num_env_runners} EnvRunners "
            f"x {config.num_envs_per_env_runner} envs): {training_rate:.0f} env steps/s while "
            f"training, {alone_rate:.0f} sampling alone: ratio "
            f"{training_rate / alone_rate:.2f}; learner busy {busy:.2f}"
        )


if __name__ == "__main__":
    main()
