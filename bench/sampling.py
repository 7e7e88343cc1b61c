"""Sampling throughput of one EnvRunner process against a plain loop, measured in the same run.

Baseline: gymnasium's SyncVectorEnv of 8 CartPole-v1 envs stepped in one loop with the same numpy
forward pass (a 64x64 tanh policy) and categorical sampling, no bookkeeping.
Measured: 1 EnvRunner worker process (8 envs, the same policy) with an `on_episode_step` callback,
driven through the public API (`env_runner_group.sample`), so the time includes recording
episodes, firing callbacks and shipping the episodes back to the main process.

Each side is measured `--repeats` times, interleaved, and the best of each is compared (as
timeit does: the best run is the one least disturbed by the rest of the machine).

Target (issue 2): ratio >= 0.6.   Run: python bench/sampling.py [--steps 80000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

from trainer import PPOConfig
from trainer.core.models import PolicyModule, SpaceInfo

NUM_ENVS = 8
MODEL = {"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"}


def baseline_steps_per_s(total_steps: int) -> float:
    env = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(NUM_ENVS)])
    spaces = SpaceInfo.from_spaces(env.single_observation_space, env.single_action_space)
    module = PolicyModule(spaces, MODEL, seed=0)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(total_steps // NUM_ENVS):
        logits = module.dist_inputs(spaces.preprocess(obs))
        actions, _ = module.dist.act(logits, rng, True)
        obs, *_ = env.step(actions)
    elapsed = time.perf_counter() - start
    env.close()
    return total_steps / elapsed


def build_runner(total_steps: int, rounds: int):
    def on_episode_step(episode, **kwargs):
        episode.custom_data["steps"] = episode.custom_data.get("steps", 0) + 1

    algo = (PPOConfig().environment("CartPole-v1")
            .env_runners(num_env_runners=1, num_envs_per_env_runner=NUM_ENVS,
                         rollout_fragment_length=total_steps // rounds // NUM_ENVS)
            .rl_module(model_config=MODEL)
            .callbacks(on_episode_step=on_episode_step)
            .debugging(seed=0).build())
    algo.env_runner_group.sample(min_env_steps=NUM_ENVS)  # warm up the worker
    return algo


def env_runner_steps_per_s(algo, total_steps: int, rounds: int = 4) -> float:
    start = time.perf_counter()
    sampled = 0
    for _ in range(rounds):
        episodes, _ = algo.env_runner_group.sample(min_env_steps=total_steps // rounds)
        sampled += sum(len(ep) for ep in episodes)
    return sampled / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=80_000)
    parser.add_argument("--repeats", type=int, default=3,
                        help="measurements of each side, interleaved; the best of each counts")
    args = parser.parse_args()
    algo = build_runner(args.steps, rounds=4)
    base_runs, our_runs = [], []
    for _ in range(args.repeats):
        base_runs.append(baseline_steps_per_s(args.steps))
        our_runs.append(env_runner_steps_per_s(algo, args.steps))
    algo.stop()
    base, ours = max(base_runs), max(our_runs)
    print(f"baseline  SyncVectorEnv x{NUM_ENVS} + numpy 64x64 forward: {base:9.0f} env steps/s")
    print(f"EnvRunner process (8 envs, on_episode_step callback):  {ours:9.0f} env steps/s")
    print(f"ratio {ours / base:.2f}  (target >= 0.6)")


if __name__ == "__main__":
    main()
