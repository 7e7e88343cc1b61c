"""Sampling throughput of one EnvRunner process against a plain loop, measured in the same run.

Baseline: gymnasium's SyncVectorEnv of 8 CartPole-v1 envs stepped in one loop with the same numpy
forward pass (a 64x64 tanh policy) and categorical sampling, no bookkeeping.
Measured: 1 EnvRunner worker process (8 envs, the same policy) with an `on_episode_step` callback,
driven through the public API (`env_runner_group.sample`), so the time includes recording
episodes, firing callbacks and shipping the episodes back to the main process.

Target (issue 2): ratio >= 0.6.   Run: python bench/sampling.py [--steps 80000]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

from trainer import PPOConfig
from trainer.models import PolicyModule, SpaceInfo

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
        actions, _, _ = module.compute_actions(obs, rng, True)
        obs, *_ = env.step(actions)
    elapsed = time.perf_counter() - start
    env.close()
    return total_steps / elapsed


def env_runner_steps_per_s(total_steps: int, rounds: int = 4) -> float:
    def on_episode_step(episode, **kwargs):
        episode.custom_data["steps"] = episode.custom_data.get("steps", 0) + 1

    per_round = total_steps // rounds
    algo = (PPOConfig().environment("CartPole-v1")
            .env_runners(num_env_runners=1, num_envs_per_env_runner=NUM_ENVS,
                         rollout_fragment_length=per_round // NUM_ENVS)
            .rl_module(model_config=MODEL)
            .callbacks(on_episode_step=on_episode_step)
            .debugging(seed=0).build())
    group = algo.env_runner_group
    group.sample(min_env_steps=NUM_ENVS)  # warm up the worker
    start = time.perf_counter()
    sampled = 0
    for _ in range(rounds):
        episodes, _ = group.sample(min_env_steps=per_round)
        sampled += sum(len(ep) for ep in episodes)
    elapsed = time.perf_counter() - start
    algo.stop()
    return sampled / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=80_000)
    args = parser.parse_args()
    base = baseline_steps_per_s(args.steps)
    ours = env_runner_steps_per_s(args.steps)
    print(f"baseline  SyncVectorEnv x{NUM_ENVS} + numpy 64x64 forward: {base:9.0f} env steps/s")
    print(f"EnvRunner process (8 envs, on_episode_step callback):  {ours:9.0f} env steps/s")
    print(f"ratio {ours / base:.2f}  (target >= 0.6)")


if __name__ == "__main__":
    main()
