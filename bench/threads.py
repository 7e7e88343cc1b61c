"""BLAS threading, decided by measurement: numpy's OpenBLAS starts one thread per core in every
process, and on 2 cores the learner and 2 EnvRunners would oversubscribe them.

Measures, each in a fresh process with OPENBLAS_NUM_THREADS / OMP_NUM_THREADS set:
- one PPO learner update (4000 steps, 30 epochs, minibatch 128) with RLlib's default 256x256 net,
  and with a 64x64 net, at 1 and at 2 BLAS threads;
- a full PPO iteration with 2 EnvRunners whose BLAS threads are 1 or 2 (the learner keeps the
  default), since workers run batches of 1-8 rows.

and both again with no variable set: the library's own choice, where workers get 1 BLAS thread
(trainer/runners/worker_template.py) and an unseeded PPO update times its minibatches on 1 and 2
threads and keeps the faster (trainer/core/blas.py, `AdaptiveBlasThreads`); the learner update
also seeded, which does the same where its steps give the same bits on both counts, else stays
on 1 (the line says which).

Prints ratios against 1 thread.
Run: python bench/threads.py
"""

from __future__ import annotations

import os
import subprocess
import sys

from trainer.core.blas import BLAS_THREAD_VARS

LEARNER_CODE = r"""
import time, numpy as np, gymnasium as gym, sys
from trainer import PPOConfig, SingleAgentEpisode
from trainer.algorithms.ppo.ppo_learner import PPOLearner
from trainer.core.models import SpaceInfo
hiddens = [int(h) for h in sys.argv[1].split(",")]
seed = None if sys.argv[2] == "none" else int(sys.argv[2])
config = (PPOConfig().environment("CartPole-v1").rl_module(model_config={"fcnet_hiddens": hiddens})
          .debugging(seed=seed))
env = gym.make("CartPole-v1")
learner = PPOLearner(config, SpaceInfo.from_spaces(env.observation_space, env.action_space))
rng = np.random.default_rng(0)
episodes = []
for _ in range(20):
    ep = SingleAgentEpisode(); ep.add_env_reset(rng.standard_normal(4).astype(np.float32))
    for t in range(200):
        ep.add_env_step(rng.standard_normal(4).astype(np.float32), int(rng.integers(2)), 1.0,
                        extra_model_outputs={"action_logp": -0.69,
                                             "action_dist_inputs": np.zeros(2, np.float32)})
    episodes.append(ep.to_numpy())
learner.update(episodes)
times = []
for _ in range(3):
    t = time.perf_counter(); learner.update(episodes); times.append(time.perf_counter() - t)
print(all(learner.update_threads.thread_invariant.values()))
print(min(times))
"""

ITERATION_CODE = r"""
import time
from trainer import PPOConfig
algo = (PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2,
        num_envs_per_env_runner=8).training(num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [256, 256]}).build())
algo.train()
times = []
for _ in range(3):
    t = time.perf_counter(); algo.train(); times.append(time.perf_counter() - t)
algo.stop()
print(min(times))
"""


def run_lines(code: str, threads: int | None, *args: str) -> list[str]:
    """The lines `code` printed, run with every BLAS variable set to `threads` (None: all
    unset, the library's choice)."""
    env = dict(os.environ)
    for var in BLAS_THREAD_VARS:
        if threads is None:
            env.pop(var, None)
        else:
            env[var] = str(threads)
    out = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.strip().splitlines()


def run(code: str, threads: int | None, *args: str) -> float:
    """`code`'s last printed number (see `run_lines`)."""
    return float(run_lines(code, threads, *args)[-1])


def main() -> None:
    for hiddens in ("256,256", "64,64"):
        one, two, chosen = (run(LEARNER_CODE, threads, hiddens, "none") for threads in (1, 2, None))
        *_, same_bits, seeded = run_lines(LEARNER_CODE, None, hiddens, "0")
        seeded_s = float(seeded)
        print(
            f"learner update [{hiddens}]: 1 thread {one:.3f} s, 2 threads {two:.3f} s "
            f"(2/1 = {two / one:.2f}), chosen by timing {chosen:.3f} s (/1 = {chosen / one:.2f}), "
            f"seeded {seeded_s:.3f} s (/1 = {seeded_s / one:.2f}; same bits on 1 and 2 threads: "
            f"{same_bits})"
        )
    # Worker threads follow the environment (the template only sets a default of 1).
    one, two, chosen = (run(ITERATION_CODE, threads) for threads in (1, 2, None))
    print(
        f"PPO iteration, 2 runners x 8 envs, all processes at 1 thread {one:.3f} s, "
        f"at 2 threads {two:.3f} s (2/1 = {two / one:.2f}), the library's choice {chosen:.3f} s "
        f"(/1 = {chosen / one:.2f})"
    )


if __name__ == "__main__":
    main()
