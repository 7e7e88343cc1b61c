"""The learner's update against the machine's limit, measured in the same run.

Measured: `learner.update(...)` through the public objects, with the algorithm's default
settings on CartPole-v1. PPO: one update on a 4000-step train batch (30 epochs of 128-row
minibatches of the 256x256 tanh networks: 930 Adam steps). DQN: `--dqn-steps` updates on
32-row replay batches (the dueling 256x256 Q-network, double Q). SAC: `--sac-steps` updates on
256-row replay batches with Pendulum-v1's spaces and RLlib's default model config
(`fcnet_hiddens` and `fusionnet_hiddens` [256, 256], tanh: the policy, and twin critics whose
action and observation encoders feed fusion layers), twin Q.
Baseline: the same matrix products alone (forward and backward of every layer, float32 numpy
on arrays of the same shapes), the floor no numpy learner gets under, on as many BLAS threads
as the update ran on most (a seeded update takes two only where its steps give the same bits
on one, `AdaptiveBlasThreads`; DQN's and SAC's updates run
on one, as the algorithm runs them, `BlasThreads`): products on numpy's default pool, two
threads here, are no floor for an update on one. SAC's floor is exactly the products its
update makes (`sac_products`): the policy forward over s and s' (2B rows) and backward over s,
each critic forward and backward over (s, a), each critic forward over (s, a~) and backward to
a~ only (no parameter gradients, nothing into the observation encoder), the target critics
forward over (s', a').

Prints each update's time, the floor and "ratio" = floor / update: the fraction of the time
spent in the unavoidable products, 1.0 being the limit. To compare trees run
`python bench/against_commit.py COMMIT bench/learner.py --same-script` (the change in ratio is
the update's speed-up, each measured against its own floor in the same run).

With `--framework torch`: the default PPO update timed with the numpy and the torch learner on
the same episodes, for 64x64, 256x256 and 1024x1024 tanh networks, side by side, each with its
ratio to the floor on one thread (both run on one), and the torch learner's update computed by
torch (as for a subclass or a user's optimizer; the default learner computes it in numpy,
`trainer.torch_rl.numpy_twin`); with `--algo DQN` too, the DQN updates.

`--quick`: 5 epochs instead of 30, 500 DQN updates, 50 SAC updates, two repeats, and the torch comparison at
64x64 and 256x256 only: a look in a sixth of the time, noisier than the full runs (which the
benchmarks page records).

Run: python bench/learner.py [--algo PPO|DQN|SAC] [--repeats 3] [--framework torch] [--quick]
     [--epochs N] [--dqn-steps N] [--sac-steps N] [--sizes 64,256,1024]
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from trainer import DQNConfig, PPOConfig, SACConfig
from trainer.core.blas import user_sized_pools


@contextlib.contextmanager
def blas_threads(threads: int) -> Iterator[None]:
    """numpy's BLAS pools at `threads` for the block (left alone where the user sized them,
    as the learners leave them)."""
    if user_sized_pools():
        yield
        return
    with threadpool_limits(limits=threads, user_api="blas"):
        yield


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


def ppo_case(repeats: int, epochs: int | None) -> tuple[float, float, int]:
    """The best of `repeats` updates, the best of as many floors, and the BLAS threads the
    update's steps ran on (the most of them; the floor's)."""
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    if epochs is not None:
        config.training(num_epochs=epochs)
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
        steps_at = learner.update_threads.steps_at
        threads = max(steps_at, key=steps_at.get) if steps_at else 1
        with blas_threads(threads):
            floors.append(matmul_floor(layer_shapes(learner.module), config.minibatch_size, steps))
    algo.stop()
    return min(times), min(floors), threads


def framework_case(
    framework: str,
    hiddens: list[int],
    repeats: int,
    episodes: list,
    epochs: int | None,
    in_torch: bool = False,
) -> float:
    """Seconds of one default PPO update (the algorithm's defaults: 30 epochs of 128-row
    minibatches) on `episodes`, with the `framework` learner and `hiddens` tanh layers (the
    best of `repeats`, each from the same learner state). `in_torch`: the torch learner's
    update computed by torch (what a subclass or a user's optimizer runs) instead of the
    default learner's numpy update."""
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .framework(framework)
        .rl_module(model_config={"fcnet_hiddens": hiddens, "fcnet_activation": "tanh"})
        .debugging(seed=0)
    )
    if epochs is not None:
        config.training(num_epochs=epochs)
    algo = config.build()
    learner = algo.learner
    if in_torch:
        learner.numpy_update = None
    state = learner.get_state()
    times = []
    for _ in range(repeats):
        learner.set_state(state)
        start = time.perf_counter()
        learner.update(episodes)
        times.append(time.perf_counter() - start)
    algo.stop()
    return min(times)


def ppo_shapes(width: int) -> list[tuple[int, int]]:
    """The (n_in, n_out) of each layer of CartPole's default PPO module with two tanh layers
    of `width`: the encoder both heads share (RLlib's `vf_share_layers`), the policy head and
    the value head."""
    return [(4, width), (width, width), (width, 2), (width, 1)]


def frameworks_side_by_side(repeats: int, epochs: int | None, sizes: list[int]) -> None:
    """The default PPO update with the numpy and the torch learner on the same episodes, for
    networks of two tanh layers of each of `sizes` (the default 256 among them), in one run,
    each against the floor of its products on one BLAS thread (both learners' updates run on
    one thread)."""
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=0)
    if epochs is not None:
        config.training(num_epochs=epochs)
    sampler = config.debugging(seed=0).build()
    episodes, _ = sampler.env_runner_group.sample(min_env_steps=config.train_batch_size)
    sampler.stop()
    size = sum(len(ep) for ep in episodes)
    steps = config.num_epochs * (size // config.minibatch_size)
    for width in sizes:
        hiddens = [width, width]
        numpy_s = framework_case("numpy", hiddens, repeats, episodes, epochs)
        torch_s = framework_case("torch", hiddens, repeats, episodes, epochs)
        in_torch_s = framework_case("torch", hiddens, repeats, episodes, epochs, in_torch=True)
        with blas_threads(1):
            floor = min(
                matmul_floor(ppo_shapes(width), config.minibatch_size, steps)
                for _ in range(repeats)
            )
        print(
            side_by_side(f"PPO update, {width}x{width} tanh", numpy_s, torch_s, floor)
            + f"; computed by torch {in_torch_s * 1000:.1f} ms (ratio {floor / in_torch_s:.3f})"
        )


def side_by_side(what: str, numpy_s: float, torch_s: float, floor: float) -> str:
    """One line: both times, each one's ratio to the floor, and which is faster by how much."""
    faster = "numpy" if numpy_s < torch_s else "torch"
    ratio = max(numpy_s, torch_s) / min(numpy_s, torch_s)
    return (
        f"{what}: numpy {numpy_s * 1000:8.1f} ms (ratio {floor / numpy_s:.3f}), torch "
        f"{torch_s * 1000:8.1f} ms (ratio {floor / torch_s:.3f}): {faster} {ratio:.2f}x faster"
    )


def time_updates(
    learner: Any, batch: dict, num_updates: int, repeats: int, floor: Callable[[], float]
) -> tuple[float, float]:
    """The fastest of `repeats` runs of `num_updates` updates on `batch`, each from the
    learner's state at the call and within the learner's thread setting (as the algorithm
    runs a round of updates), and the fastest of as many `floor()`s on as many BLAS threads."""
    state = learner.get_state()
    times, floors = [], []
    for _ in range(repeats):
        learner.set_state(state)
        with learner.update_threads():
            start = time.perf_counter()
            for step in range(num_updates):
                learner.update(batch, num_env_steps_sampled_lifetime=step)
            times.append(time.perf_counter() - start)
        with blas_threads(learner.update_threads.num_threads):
            floors.append(floor())
    return min(times), min(floors)


def dqn_case(repeats: int, num_updates: int, framework: str = "numpy") -> tuple[float, float]:
    config = (
        DQNConfig().environment("CartPole-v1").env_runners(num_env_runners=0).framework(framework)
    )
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
    # The dueling Q-network: encoder 4 -> 256 -> 256, advantage and value heads. Training
    # products of the online network, plus the forward passes of the target and (double Q) the
    # online network on the next observations.
    shapes = [(4, 256), (256, 256), (256, 2), (256, 1)]
    timed = time_updates(
        learner, batch, num_updates, repeats, lambda: matmul_floor(shapes, n, num_updates) * 5 / 3
    )
    algo.stop()
    return timed


#: One matrix product of an update: (kind, rows, n_in, n_out) for a layer of weights
#: (n_in, n_out): "forward" x @ W, "weights" x.T @ d (the weight gradient), "input" d @ W.T.
Product = tuple[str, int, int, int]


def products_floor(products: list[Product], steps: int) -> float:
    """Seconds for `steps` rounds of `products` alone, on arrays of their shapes (float32)."""
    rng = np.random.default_rng(0)
    arrays = []
    for kind, rows, n_in, n_out in products:
        x = rng.standard_normal((rows, n_in), dtype=np.float32)
        w = rng.standard_normal((n_in, n_out), dtype=np.float32)
        d = rng.standard_normal((rows, n_out), dtype=np.float32)
        if kind == "forward":
            arrays.append((x, w))
        elif kind == "weights":
            arrays.append((x.T, d))
        else:
            arrays.append((d, w.T))
    start = time.perf_counter()
    for _ in range(steps):
        for a, b in arrays:
            a @ b
    return time.perf_counter() - start


def sac_products(module, rows: int) -> list[Product]:
    """The matrix products of one SAC update (`loss.continuous_loss` of `SACLearner`) on `rows`
    replayed transitions, layer by layer: the policy forward over s and s' together, its
    backward over s (no input gradient at its first layer); per critic, forward and backward
    over (s, a) (no input gradient at the encoders' first layers), forward over (s, a~) and
    backward to a~ only (the head, the fusion layers, the action encoder; no weight gradients),
    and the target critic forward over (s', a')."""

    def shapes(*nets) -> list[tuple[int, int]]:
        return [w.shape for net in nets for w in net.params[::2]]

    policy = shapes(module.pi_encoder, module.pi)
    products: list[Product] = [("forward", 2 * rows, *shape) for shape in policy]
    products += [("weights", rows, *shape) for shape in policy]
    products += [("input", rows, *shape) for shape in policy[1:]]
    for critic in module.critics:
        nets = critic.nets
        actions, obs = shapes(nets["actions"]), shapes(nets["obs"])
        upper = shapes(nets["fusion"], nets["head"])
        every = actions + obs + upper
        # Q(s, a): forward, weight gradients, input gradients above the encoders' inputs.
        products += [("forward", rows, *shape) for shape in every]
        products += [("weights", rows, *shape) for shape in every]
        products += [("input", rows, *shape) for shape in actions[1:] + obs[1:] + upper]
        # Q(s, a~): forward, then d/da~ down the head, fusion and action encoder.
        products += [("forward", rows, *shape) for shape in every]
        products += [("input", rows, *shape) for shape in upper + actions]
        # The target critic's Q(s', a').
        products += [("forward", rows, *shape) for shape in every]
    return products


def sac_case(repeats: int, num_updates: int) -> tuple[float, float, int]:
    """The best of `repeats` rounds of `num_updates` SAC updates on a 256-row batch, the best
    of as many floors, and the batch's rows."""
    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .env_runners(num_env_runners=0)
        .rl_module(model_config={"fcnet_hiddens": [256, 256], "fusionnet_hiddens": [256, 256]})
    )
    algo = config.debugging(seed=0).build()
    learner = algo.learner
    rng = np.random.default_rng(0)
    n = config.train_batch_size
    batch = {
        "obs": rng.standard_normal((n, 3), dtype=np.float32),
        "next_obs": rng.standard_normal((n, 3), dtype=np.float32),
        "actions": rng.uniform(-1.0, 1.0, (n, 1)).astype(np.float32),
        "rewards": -rng.random(n, dtype=np.float32),
        "terminateds": np.zeros(n, dtype=bool),
        "discounts": np.full(n, config.gamma, dtype=np.float32),
        "weights": np.ones(n, dtype=np.float32),
    }
    products = sac_products(learner.module, n)
    update_s, floor_s = time_updates(
        learner, batch, num_updates, repeats, lambda: products_floor(products, num_updates)
    )
    algo.stop()
    return update_s, floor_s, n


#: The torch operators that are matrix products (with `addmm`'s bias, part of its kernel).
_TORCH_PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm")


def torch_products_of(call: Callable[[], Any]) -> list[tuple[str, list[list[int]]]]:
    """The matrix products (operator, input shapes) torch ran in `call()`, forward and
    backward, read from torch's profiler."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as profiler:
        call()
    return [
        (event.name, [list(shape) for shape in event.input_shapes])
        for event in profiler.events()
        if event.name in _TORCH_PRODUCTS
    ]


def torch_products_floor(products: list[tuple[str, list[list[int]]]]) -> float:
    """Seconds for `products` alone, on float32 tensors of their shapes, on torch's threads."""
    import torch

    generator = torch.Generator().manual_seed(0)

    def tensor(shape: list[int]) -> Any:
        return torch.randn(shape, generator=generator)

    calls = []
    for name, shapes in products:
        if name == "aten::addmm":
            calls.append((torch.addmm, tuple(tensor(shape) for shape in shapes[:3])))
        else:
            calls.append(
                (
                    torch.mm if name == "aten::mm" else torch.bmm,
                    (tensor(shapes[0]), tensor(shapes[1])),
                )
            )
    start = time.perf_counter()
    for function, arguments in calls:
        function(*arguments)
    return time.perf_counter() - start


def dreamerv3_case(repeats: int) -> tuple[float, float, int, int]:
    """DreamerV3's update with RLlib's example settings (CartPole-v1, model XS, B=16, T=64,
    H=15): the best of `repeats` updates on one replayed batch (each from the same learner
    state), the best of as many floors (the matrix products the update ran, forward and
    backward, alone at their shapes: `torch_products_of`), the products' count and the
    threads both ran on (unseeded, the updates' thread count is the learner's timed choice,
    `AdaptiveTorchThreads`, after 12 updates; the floor runs on that count)."""
    import torch

    from trainer.algorithms.dreamerv3 import DreamerV3Config

    config = (
        DreamerV3Config().environment("CartPole-v1").training(model_size="XS", training_ratio=1024)
    )
    algo = config.build()
    algo.train()  # fills the buffer (one batch of random actions) and updates once
    learner = algo.learner
    batch = algo.replay_buffer.sample(
        batch_size_B=config.batch_size_B, batch_length_T=config.batch_length_T
    )
    state = learner.get_state()
    sampled = algo.num_env_steps_sampled_lifetime

    def update() -> None:
        with learner.update_threads():
            learner.update(batch, num_env_steps_sampled_lifetime=sampled)

    for _ in range(12):  # warm, and the thread count settles
        update()
    products = torch_products_of(update)
    times, floors = [], []
    threads = learner.update_threads.policy.threads
    for _ in range(repeats):
        learner.set_state(state)
        start = time.perf_counter()
        update()
        times.append(time.perf_counter() - start)
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            floors.append(torch_products_floor(products))
        finally:
            torch.set_num_threads(previous)
    algo.stop()
    return min(times), min(floors), len(products), threads


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--algo", choices=["PPO", "DQN", "SAC", "DreamerV3"], default="PPO")
    parser.add_argument("--repeats", type=int, default=None, help="default 3 (--quick: 2)")
    parser.add_argument("--dqn-steps", type=int, default=None, help="default 2000 (--quick: 500)")
    parser.add_argument("--sac-steps", type=int, default=None, help="default 200 (--quick: 50)")
    parser.add_argument("--epochs", type=int, default=None, help="PPO's (default 30; --quick: 5)")
    parser.add_argument(
        "--sizes",
        default=None,
        help="--framework torch: the layer widths, comma-separated (default 64,256,1024; "
        "--quick: 64,256)",
    )
    parser.add_argument("--quick", action="store_true", help="shorter runs (see the docstring)")
    parser.add_argument(
        "--framework",
        choices=["numpy", "torch"],
        default="numpy",
        help="torch: the update with the numpy and the torch learner side by side",
    )
    args = parser.parse_args()
    quick = args.quick
    repeats = args.repeats or (2 if quick else 3)
    epochs = args.epochs or (5 if quick else None)
    dqn_steps = args.dqn_steps or (500 if quick else 2000)
    sac_steps = args.sac_steps or (50 if quick else 200)
    sizes = [int(w) for w in (args.sizes or ("64,256" if quick else "64,256,1024")).split(",")]
    if args.framework == "torch" and args.algo == "DQN":
        numpy_s, floor = dqn_case(repeats, dqn_steps)
        torch_s, _ = dqn_case(repeats, dqn_steps, "torch")
        print(side_by_side(f"DQN {dqn_steps} updates (32 rows)", numpy_s, torch_s, floor))
        return
    if args.framework == "torch" and args.algo == "SAC":
        parser.error("--framework torch compares the PPO and DQN updates (not SAC's)")
    if args.framework == "torch":
        frameworks_side_by_side(repeats, epochs, sizes)
        return
    if args.algo == "DreamerV3":
        update, floor, count, threads = dreamerv3_case(repeats)
        print(
            f"DreamerV3 update (XS, 16 x 64 replayed, H=15): {update * 1000:8.1f} ms; its "
            f"{count} matrix products alone: {floor * 1000:8.1f} ms (both on {threads} torch "
            f"thread{'s' if threads > 1 else ''})"
        )
        print(f"ratio {floor / update:.3f}  (floor / update; 1.0 is the limit)")
        return
    if args.algo == "PPO":
        update, floor, threads = ppo_case(repeats, epochs)
        what = f"PPO update (4000 steps, {epochs or 30} epochs of 128)"
    elif args.algo == "DQN":
        update, floor = dqn_case(repeats, dqn_steps)
        threads = 1
        what = f"DQN {dqn_steps} updates (32 rows)"
    else:
        update, floor, rows = sac_case(repeats, sac_steps)
        threads = 1
        what = f"SAC {sac_steps} updates ({rows} rows)"
    pools = (
        "the user's BLAS pools"
        if user_sized_pools()
        else f"{threads} BLAS thread{'s' if threads > 1 else ''}"
    )
    print(
        f"{what}: {update * 1000:8.1f} ms; matrix products alone: {floor * 1000:8.1f} ms "
        f"(both on {pools})"
    )
    print(f"ratio {floor / update:.3f}  (floor / update; 1.0 is the limit)")


if __name__ == "__main__":
    main()
