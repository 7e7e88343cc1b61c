"""SAC on MuJoCo's HalfCheetah-v5 for 50k env steps: env steps per second (learning included)
and return, this project against Stable-Baselines3 on the same machine in the same run.

The config is rl-zoo's for SAC on HalfCheetah (rl-baselines3-zoo `hyperparams/sac.yml`): 10k
random steps before learning, then one gradient step of a 256-transition batch per env step,
lr 3e-4 (policy, critics and temperature), tau 0.005, gamma 0.99, a 1M-transition buffer,
two 256-unit ReLU layers for the policy and each of the two critics, the entropy temperature
learned towards -|A|. RLlib's critic is no plain MLP over [obs, action]: the observation and
the action each go through their own encoder of `fcnet_hiddens`, then fusion layers
(`fusionnet_hiddens`, RLlib's default two of 256 fed [h, features] each) and an output layer
over [h, features]. Here it runs without fusion layers, the nearest RLlib's model config
comes to Stable-Baselines3's critic: two 256x256 encoders and a linear output over their 512
features, about twice the critic's arithmetic of Stable-Baselines3's 23-256-256-1 (with
RLlib's default fusion layers, about six times). One env, stepped in the learner's process (SB3's `DummyVecEnv` of one;
here `num_env_runners=0`).

Each library runs `--steps` env steps (default 50k) from before the algorithm is built; `env
steps/s` is env steps over that wall time and `return` the mean return of the last 5 episodes
(HalfCheetah's episodes are 1000 steps); `learner updates` is the wall time in the learner's
updates (Stable-Baselines3's `train()`, this project's `update_learners_on_batch`).

Prints one line per library, the ratio (this project's env steps/s over Stable-Baselines3's)
and the CPU model. Each library runs in a process of its own (`--only LIB` runs one, prints
JSON).

Run: python bench/mujoco_sac.py [--steps 50000] [--libs localrl sb3]
"""

from __future__ import annotations

import argparse
import json
import time

from libraries import print_ratios, run_each, timed_calls

ENV = "HalfCheetah-v5"
LEARNING_STARTS = 10_000


def run_localrl(steps: int) -> dict:
    from trainer.algorithms.sac import SACConfig

    start = time.perf_counter()
    config = (
        SACConfig()
        .environment(ENV)
        .env_runners(num_env_runners=0, rollout_fragment_length=1)
        .training(
            actor_lr=3e-4,
            critic_lr=3e-4,
            alpha_lr=3e-4,
            tau=0.005,
            gamma=0.99,
            train_batch_size=256,
            num_steps_sampled_before_learning_starts=LEARNING_STARTS,
            training_intensity=256,  # one batch of 256 per env step
            replay_buffer_config={"type": "EpisodeReplayBuffer", "capacity": 1_000_000},
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": [256, 256],
                "fcnet_activation": "relu",
                "fusionnet_hiddens": [],
            }
        )
        .reporting(min_sample_timesteps_per_iteration=1000)
        .debugging(seed=0)
    )
    algo = config.build()
    update = [0.0]
    timed_calls(algo, "update_learners_on_batch", update)
    returns: list[float] = []
    try:
        sampled = 0
        while sampled < steps:
            result = algo.train()
            runners = result["env_runners"]
            sampled = int(runners["num_env_steps_sampled_lifetime"])
            if runners.get("episode_return_mean") == runners.get("episode_return_mean"):
                returns.append(float(runners["episode_return_mean"]))
    finally:
        algo.stop()
    return {
        "env_steps": sampled,
        "seconds": time.perf_counter() - start,
        "return": returns[-1],
        "update_seconds": update[0],
    }


def run_sb3(steps: int) -> dict:
    from stable_baselines3 import SAC

    start = time.perf_counter()
    model = SAC("MlpPolicy", ENV, learning_starts=LEARNING_STARTS, seed=0, verbose=0)
    update = [0.0]
    timed_calls(model, "train", update)
    model.learn(total_timesteps=steps)
    buffer = list(model.ep_info_buffer)[-5:]
    return {
        "env_steps": model.num_timesteps,
        "seconds": time.perf_counter() - start,
        "return": sum(e["r"] for e in buffer) / len(buffer) if buffer else float("nan"),
        "update_seconds": update[0],
    }


RUNNERS = {"localrl": run_localrl, "sb3": run_sb3}
LABELS = {"localrl": "localrl", "sb3": "Stable-Baselines3"}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--libs", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    parser.add_argument("--only", choices=list(RUNNERS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps(RUNNERS[args.only](args.steps)))
        return
    rates = run_each(
        __file__,
        args.libs,
        ["--steps", str(args.steps)],
        LABELS,
        lambda out: (
            f"SAC {ENV}, {out['env_steps']} env steps in {out['seconds']:.1f} s: "
            f"{out['env_steps'] / out['seconds']:.1f} env steps/s, return {out['return']:.1f} "
            f"(last episodes); learner updates {out['update_seconds']:.1f} s"
        ),
    )
    print_ratios(rates, LABELS)


if __name__ == "__main__":
    main()
