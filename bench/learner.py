"""The learner's update against the machine's limit, measured in the same run.

Measured: `learner.update(...)` through the public objects, with the algorithm's default
settings on CartPole-v1. PPO: one update on a 4000-step train batch (30 epochs of 128-row
minibatches of the 256x256 tanh networks: 930 Adam steps). DQN: `--dqn-steps` updates on
32-row replay batches (the dueling 256x256 Q-network, double Q).
Baseline: the same matrix products alone (forward and backward of every layer, float32 numpy
on arrays of the same shapes), the floor no numpy learner gets under.

Prints each update's time, the floor and "ratio" = floor / update: the fraction of the time
spent in the unavoidable products, 1.0 being the limit. To compare trees run
`python bench/against_commit.py COMMIT bench/learner.py --same-script` (the change in ratio is
the update's speed-up, each measured against its own floor in the same run).

With `--framework torch`: the default PPO update timed with the numpy and the torch learner on
the same episodes, for 64x64, 256x256 and 1024x1024 tanh networks, side by side.

Run: python bench/learner.py [--algo PPO|DQN] [--repeats 3] [--framework torch]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from trainer import DQNConfig, PPOConfig


def matmul_floor(shapes: list[tuple[int, int]], rows: int, steps: int) -> float:
    """Seconds for `steps` training steps' matrix products: per layer (n_in, n_out), the
    forward x @ W, and the backward x.T @ d and d @ W.T."""
    rng = np.random.default_rng(0)
    layers = [
        (
            rng.standard_normal((rows, n_in), dtype=np.float32),
            rng.standard_normal((n_in, n_out), dtype=np.float32),
            rng.standard_normal((rows, n_out), dtype=np.float32),
        )
        for n_in, n_out in shapes
    ]
    start = time.perf_counter()
    for _ in range(steps):
        for x, w, d in layers:
            x @ w
            x.T @ d
            d @ w.T
    return time.perf_counter() - start


def layer_shapes(module) -> list[tuple[int, int]]:
    return [p.shape for p in module.parameters() if p.ndim == 2]


def ppo_case(repeats: int) -> tuple[float, float]:
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    algo = config.debugging(seed=0).build()
    episodes, _ = algo.env_runner_group.sample(min_env_steps=config.train_batch_size)
    learner = algo.learner
    state = learner.get_state()
    size = sum(len(ep) for ep in episodes)
    steps = config.num_epochs * (size // config.minibatch_size)
    times, floors = [], []
    for _ in range(repeats):
        learner.set_state(state)
        start = time.perf_counter()
        learner.update(episodes)
        times.append(time.perf_counter() - start)
        floors.append(matmul_floor(layer_shapes(learner.module), config.minibatch_size, steps))
    algo.stop()
    return min(times), min(floors)


def framework_case(framework: str, hiddens: list[int], repeats: int, episodes: list) -> float:
    """Seconds of one default PPO update (the algorithm's defaults: 30 epochs of 128-row
    minibatches) on `episodes`, with the `framework` learner and `hiddens` tanh layers (the
    best of `repeats`, each from the same learner state)."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .framework(framework)
        .rl_module(model_config={"fcnet_hiddens": hiddens, "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )
    algo = config.build()
    learner = algo.learner
    state = learner.get_state()
    times = []
    for _ in range(repeats):
        learner.set_state(state)
        start = time.perf_counter()
        learner.update(episodes)
        times.append(time.perf_counter() - start)
    algo.stop()
    return min(times)


def frameworks_side_by_side(repeats: int) -> None:
    """The default PPO update with the numpy and the torch learner on the same episodes, for
    three network sizes (the default 256x256 among them), in one run."""
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    sampler = config.debugging(seed=0).build()
    episodes, _ = sampler.env_runner_group.sample(min_env_steps=config.train_batch_size)
    sampler.stop()
    for hiddens in ([64, 64], [256, 256], [1024, 1024]):
        numpy_s = framework_case("numpy", hiddens, repeats, episodes)
        torch_s = framework_case("torch", hiddens, repeats, episodes)
        faster = "numpy" if numpy_s < torch_s else "torch"
        ratio = max(numpy_s, torch_s) / min(numpy_s, torch_s)
        size = "x".join(map(str, hiddens))
        print(
            f"PPO update, {size} tanh: numpy {numpy_s * 1000:8.1f} ms, torch "
            f"{torch_s * 1000:8.1f} ms: {faster} {ratio:.2f}x faster"
        )


def dqn_case(repeats: int, num_updates: int) -> tuple[float, float]:
    config = DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    algo = config.debugging(seed=0).build()
    learner = algo.learner
    rng = np.random.default_rng(0)
    n = config.train_batch_size
    batch = {
        "obs": rng.standard_normal((n, 4), dtype=np.float32),
        "next_obs": rng.standard_normal((n, 4), dtype=np.float32),
        "actions": rng.integers(0, 2, n),
        "rewards": np.ones(n, dtype=np.float32),
        "terminateds": rng.random(n) < 0.05,
        "discounts": np.full(n, config.gamma, dtype=np.float32),
        "weights": np.ones(n, dtype=np.float32),
    }
    state = learner.get_state()
    shapes = layer_shapes(learner.module)
    times, floors = [], []
    for _ in range(repeats):
        learner.set_state(state)
        start = time.perf_counter()
        for step in range(num_updates):
            learner.update(batch, num_env_steps_sampled_lifetime=step)
        times.append(time.perf_counter() - start)
        # Training products of the online network, plus the forward passes of the target and
        # (double Q) the online network on the next observations.
        floors.append(matmul_floor(shapes, n, num_updates) * 5 / 3)
    algo.stop()
    return min(times), min(floors)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--algo", choices=["PPO", "DQN"], default="PPO")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dqn-steps", type=int, default=2000)
    parser.add_argument(
        "--framework",
        choices=["numpy", "torch"],
        default="numpy",
        help="torch: the PPO update with the numpy and the torch learner side by side",
    )
    args = parser.parse_args()
    if args.framework == "torch":
        frameworks_side_by_side(args.repeats)
        return
    if args.algo == "PPO":
        update, floor = ppo_case(args.repeats)
        what = "PPO update (4000 steps, 30 epochs of 128)"
    else:
        update, floor = dqn_case(args.repeats, args.dqn_steps)
        what = f"DQN {args.dqn_steps} updates (32 rows)"
    print(f"{what}: {update * 1000:8.1f} ms; matrix products alone: {floor * 1000:8.1f} ms")
    print(f"ratio {floor / update:.3f}  (floor / update; 1.0 is the limit)")


if __name__ == "__main__":
    main()
