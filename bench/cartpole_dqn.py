"""DQN on CartPole-v1 until `env_runners/episode_return_mean >= 450`, with RLlib's tuned-example
settings (double dueling DQN, prioritized replay, n-step 2..5, epsilon 1.0 -> 0.02 over 10k steps,
one hidden layer of 256 plus a head layer of 256, tanh).

Prints, per seed, wall seconds (build included) and env steps; then the median.
Target: under 100k env steps and under 90 seconds on 2 cores (numpy). With `--framework torch`
the same run trains RLlib's DefaultDQNTorchRLModule with the DQNTorchLearner (the torch extra);
its target is the same 450 return within the step budget.

Run: python bench/cartpole_dqn.py [--seeds 0 1 2] [--max-steps 150000] [--framework torch]
"""

from __future__ import annotations

import argparse
import statistics
import time

from trainer import DQNConfig


def config(seed: int, framework: str = "numpy") -> DQNConfig:
    return (
        DQNConfig()
        .environment("CartPole-v1")
        .framework(framework)
        .training(
            lr=0.0005,
            train_batch_size_per_learner=32,
            replay_buffer_config={
                "type": "PrioritizedEpisodeReplayBuffer",
                "capacity": 50000,
                "alpha": 0.6,
                "beta": 0.4,
            },
            n_step=(2, 5),
            double_q=True,
            dueling=True,
            epsilon=[(0, 1.0), (10000, 0.02)],
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": [256],
                "fcnet_activation": "tanh",
                "head_fcnet_hiddens": [256],
                "head_fcnet_activation": "tanh",
            }
        )
        .debugging(seed=seed)
    )


def run(seed: int, max_steps: int, verbose: bool, framework: str) -> tuple[float, int, bool]:
    start = time.perf_counter()
    algo = config(seed, framework).build()
    try:
        while True:
            result = algo.train()
            ret = result["env_runners"]["episode_return_mean"]
            steps = result["num_env_steps_sampled_lifetime"]
            if verbose:
                print(
                    f"  iter {result['training_iteration']:3d}  steps {steps:6d}  "
                    f"return {ret:6.1f}  epsilon {result['env_runners'].get('cur_epsilon', 0):.3f}"
                    f"  {time.perf_counter() - start:5.1f} s",
                    flush=True,
                )
            if ret >= 450 or steps >= max_steps:
                return time.perf_counter() - start, steps, ret >= 450
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--max-steps", type=int, default=150_000)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--framework", choices=["numpy", "torch"], default="numpy")
    args = parser.parse_args()
    times, steps_list = [], []
    for seed in args.seeds:
        seconds, steps, solved = run(seed, args.max_steps, args.verbose, args.framework)
        status = "solved" if solved else "NOT solved"
        print(f"seed {seed}: {status} in {seconds:6.1f} s, {steps} env steps", flush=True)
        times.append(seconds)
        steps_list.append(steps)
    print(
        f"{args.framework}: median {statistics.median(times):.1f} s, {int(statistics.median(steps_list))} env "
        "steps  (target: < 90 s and < 100k env steps)"
    )


if __name__ == "__main__":
    main()
