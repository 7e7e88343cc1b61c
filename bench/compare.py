"""This project against Stable-Baselines3 on the same tasks, interleaved over seeds.

Tasks (target: the mean return of the last 100 training episodes, as both libraries report it):
- PPO CartPole-v1 to 450: here RLlib's tuned example (the main job's preset); SB3 rl-zoo's
  `ppo.yml` CartPole-v1 entry.
- DQN CartPole-v1 to 450: here RLlib's tuned example; SB3 rl-zoo's `dqn.yml` CartPole-v1 entry.
- PPO Pendulum-v1 to -300: here RLlib's tuned example (with MeanStdFilter); SB3 rl-zoo's
  `ppo.yml` Pendulum-v1 entry.
Each run is timed from before the algorithm is built to the iteration (or SB3 rollout) where
the target is reached, and stops at a cap of env steps (then it counts as not reached). For
each seed the two libraries run back to back, so the machine's drift hits both alike.

Prints one line per run, then the table of median wall times, env steps and the ratio
(Stable-Baselines3 / this project; above 1 means this project is faster). Without
Stable-Baselines3 installed (`pip install stable-baselines3`, which pulls torch) only this
project runs.

Run: python bench/compare.py [--seeds 0 1 2] [--tasks ppo_cartpole dqn_cartpole ppo_pendulum]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    algo: str
    env: str
    target: float
    max_env_steps: int


TASKS = {
    "ppo_cartpole": Task("PPO", "CartPole-v1", 450.0, 300_000),
    "dqn_cartpole": Task("DQN", "CartPole-v1", 450.0, 200_000),
    "ppo_pendulum": Task("PPO", "Pendulum-v1", -300.0, 600_000),
}


@dataclass
class Run:
    seconds: float
    env_steps: int
    reached: bool


def run_localrl(task: Task, seed: int) -> Run:
    from trainer import DQNConfig, PPOConfig
    from trainer.cli.presets import find_preset

    start = time.perf_counter()
    config = (PPOConfig() if task.algo == "PPO" else DQNConfig()).environment(task.env)
    preset = find_preset(task.algo, task.env)
    preset.apply(config)
    # The preset's evaluation runner is not needed: the target is on the training return.
    config.evaluation(
        evaluation_interval=None,
        evaluation_num_env_runners=0,
        evaluation_parallel_to_training=False,
    )
    algo = config.debugging(seed=seed).build()
    try:
        while True:
            result = algo.train()
            steps = result["num_env_steps_sampled_lifetime"]
            if result["env_runners"]["episode_return_mean"] >= task.target:
                return Run(time.perf_counter() - start, steps, True)
            if steps >= task.max_env_steps:
                return Run(time.perf_counter() - start, steps, False)
    finally:
        algo.stop()


def sb3_model(task: Task, seed: int):
    """rl-zoo's hyperparameters (rl-baselines3-zoo, hyperparams/ppo.yml and dqn.yml)."""
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_vec_env

    if task.algo == "DQN":
        return DQN(
            "MlpPolicy",
            task.env,
            learning_rate=2.3e-3,
            batch_size=64,
            buffer_size=100_000,
            learning_starts=1000,
            gamma=0.99,
            target_update_interval=10,
            train_freq=256,
            gradient_steps=128,
            exploration_fraction=0.16,
            exploration_final_eps=0.04,
            policy_kwargs={"net_arch": [256, 256]},
            seed=seed,
            device="cpu",
        )
    if task.env == "CartPole-v1":

        def linear(start):
            return lambda remaining: remaining * start

        return PPO(
            "MlpPolicy",
            make_vec_env(task.env, n_envs=8, seed=seed),
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=linear(0.001),
            clip_range=linear(0.2),
            seed=seed,
            device="cpu",
        )
    return PPO(
        "MlpPolicy",
        make_vec_env(task.env, n_envs=4, seed=seed),
        n_steps=1024,
        gae_lambda=0.95,
        gamma=0.9,
        n_epochs=10,
        ent_coef=0.0,
        learning_rate=1e-3,
        clip_range=0.2,
        use_sde=True,
        sde_sample_freq=4,
        seed=seed,
        device="cpu",
    )


def run_sb3(task: Task, seed: int) -> Run:
    from stable_baselines3.common.callbacks import BaseCallback

    class StopAtTarget(BaseCallback):
        reached = False

        def _on_step(self) -> bool:
            buffer = self.model.ep_info_buffer
            if buffer and len(buffer) >= 10:
                mean = sum(info["r"] for info in buffer) / len(buffer)
                if mean >= task.target:
                    StopAtTarget.reached = True
                    return False
            return True

    start = time.perf_counter()
    model = sb3_model(task, seed)
    model.learn(total_timesteps=task.max_env_steps, callback=StopAtTarget())
    return Run(time.perf_counter() - start, model.num_timesteps, StopAtTarget.reached)


def sb3_available() -> bool:
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        return False
    return True


def summary(runs: list[Run]) -> str:
    reached = sum(run.reached for run in runs)
    return (
        f"{statistics.median(run.seconds for run in runs):7.1f} s "
        f"{statistics.median(run.env_steps for run in runs):9.0f} steps "
        f"({reached}/{len(runs)} reached)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    args = parser.parse_args()
    with_sb3 = sb3_available()
    if not with_sb3:
        print(
            "Stable-Baselines3 is not installed: only this project runs "
            "(pip install stable-baselines3)"
        )
    table = []
    for name in args.tasks:
        task = TASKS[name]
        ours, theirs = [], []
        for seed in args.seeds:
            ours.append(run_localrl(task, seed))
            print(f"{name} seed {seed}: localrl {ours[-1]}", flush=True)
            if with_sb3:
                theirs.append(run_sb3(task, seed))
                print(f"{name} seed {seed}: SB3     {theirs[-1]}", flush=True)
        table.append((name, task, ours, theirs))
    print(
        f"\n{'task':<14} {'target':>7} | {'localrl (median)':<36} | "
        f"{'Stable-Baselines3 (median)':<36} | ratio SB3/localrl"
    )
    for name, task, ours, theirs in table:
        ratio = (
            (
                statistics.median(r.seconds for r in theirs)
                / statistics.median(r.seconds for r in ours)
            )
            if theirs
            else float("nan")
        )
        # A library that stopped at the cap took at least that long: the ratio is a bound.
        bound = ">=" if theirs and not all(r.reached for r in theirs) else ""
        print(
            f"{name:<14} {task.target:>7g} | {summary(ours):<36} | "
            f"{summary(theirs) if theirs else 'not installed':<36} | {bound}{ratio:.2f}"
        )


if __name__ == "__main__":
    main()
