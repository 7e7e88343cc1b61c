"""Torch PPO with RLlib's default CNN on image observations: time to a return on DotToTarget.

DotToTarget (trainer/examples/envs/classes/dot_to_target.py): a 10x10 RGB image, a red dot to
move onto a green target. Random play returns about 0.15, the optimal policy about 1.67.
`framework("torch")` builds RLlib's CNN encoder for the image (RLlib's 10x10 preset, one 64-unit
head layer); settings: train_batch_size 1000, minibatch_size 200, 4 epochs, lr 1e-3, gamma 0.95,
entropy_coeff 0.01, 4 sub-envs in all. Two layouts:

- shared: one CNN for policy and value function (`vf_share_layers=True`), 1 EnvRunner process;
- separate: a critic CNN of its own (`vf_share_layers=False`), 2 EnvRunner processes.

Stop when `env_runners/episode_return_mean` reaches 1.5 (90% of the optimal return) or 200k env
steps are sampled. Wall time includes the build.
Target: under 45 s on 2 cores for each layout, median of 3 seeds.

Run: python bench/cnn_ppo.py [--seeds 0 1 2] [--stop-return 1.5] [--layouts shared separate]
"""

from __future__ import annotations

import argparse
import statistics
import time

from trainer import PPOConfig
from trainer.examples.envs.classes.dot_to_target import DotToTarget

STOP_ENV_STEPS = 200_000
TARGET_S = 45.0


def cnn_config(seed: int, layout: str) -> PPOConfig:
    """PPO with the default torch CNN on DotToTarget (the settings above) in `layout`."""
    shared = layout == "shared"
    runners = 1 if shared else 2
    return (
        PPOConfig()
        .environment(DotToTarget)
        .framework("torch")
        .env_runners(
            num_env_runners=runners,
            num_envs_per_env_runner=4 // runners,
            rollout_fragment_length=250,  # 4 sub-envs x 250 = one train batch
        )
        .training(
            train_batch_size=1000,
            minibatch_size=200,
            num_epochs=4,
            lr=0.001,
            gamma=0.95,
            entropy_coeff=0.01,
        )
        .rl_module(model_config={"vf_share_layers": shared, "head_fcnet_hiddens": [64]})
        .debugging(seed=seed)
    )


def train_to_stop(seed: int, layout: str, stop_return: float) -> tuple[float, float, int, int]:
    """(seconds including the build, final return, env steps, iterations)."""
    start = time.perf_counter()
    algo = cnn_config(seed, layout).build()
    try:
        iterations = 0
        while True:
            result = algo.train()
            iterations += 1
            episode_return = result["env_runners"].get("episode_return_mean", float("nan"))
            steps = result["num_env_steps_sampled_lifetime"]
            if episode_return >= stop_return or steps >= STOP_ENV_STEPS:
                return time.perf_counter() - start, episode_return, steps, iterations
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--stop-return", type=float, default=1.5)
    parser.add_argument(
        "--layouts", nargs="+", choices=["shared", "separate"], default=["shared", "separate"]
    )
    args = parser.parse_args()
    for layout in args.layouts:
        times = []
        for seed in args.seeds:
            seconds, episode_return, steps, iterations = train_to_stop(
                seed, layout, args.stop_return
            )
            times.append(seconds)
            print(
                f"{layout}, seed {seed}: return {episode_return:.2f} after {steps} env steps "
                f"({iterations} iterations) in {seconds:.1f} s (build included)"
            )
        print(
            f"{layout}: median {statistics.median(times):.1f} s to return "
            f"{args.stop_return:.2f} on DotToTarget with the default torch CNN (target < "
            f"{TARGET_S:.0f} s on 2 cores; random play 0.15, optimal 1.67)"
        )


if __name__ == "__main__":
    main()
