"""A Ray Tune grid search against the same configs run back to back by hand, in the same run.

8 PPO configs on CartPole-v1 (lr x num_epochs, each `--iterations` iterations of
`--batch` env steps, a checkpoint at the end, EnvRunner in the trial's process):
- by hand: one process builds, trains, saves and stops each config in turn;
- Tune: `trainer.tune.Tuner` with `max_concurrent_trials=2` on a local Ray of 2 CPUs, each
  trial an actor (Ray's start included in its time).
Prints both wall times and their ratio (Tune / by hand). Target: <= 1.3 on 2 cores. With
`--repeats`, the two runs alternate and the median ratio is printed too.

Run: python bench/tune_grid.py [--iterations 10] [--batch 4000] [--repeats 1]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time

import ray

from trainer import PPO, PPOConfig, tune

LRS = (1e-3, 5e-4, 3e-4, 1e-4)
EPOCHS = (4, 8)


def base_config(batch: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=0)
        .training(train_batch_size=batch, minibatch_size=128)
        .debugging(seed=0)
    )


def by_hand(iterations: int, batch: int, folder: str) -> float:
    """Each config built, trained, saved and stopped in turn, in this process."""
    started = time.perf_counter()
    for index, (lr, epochs) in enumerate(itertools.product(LRS, EPOCHS)):
        algo = base_config(batch).training(lr=lr, num_epochs=epochs).build()
        for _ in range(iterations):
            algo.train()
        algo.save_to_path(f"{folder}/hand_{index}")
        algo.stop()
    return time.perf_counter() - started


def with_tune(iterations: int, batch: int, folder: str) -> float:
    """The same 8 configs as a grid search, 2 trials at a time; Ray's start included."""
    started = time.perf_counter()
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        configure_logging=False,
        log_to_driver=False,
    )
    try:
        config = base_config(batch).training(
            lr=tune.grid_search(list(LRS)), num_epochs=tune.grid_search(list(EPOCHS))
        )
        results = tune.Tuner(
            PPO,
            param_space=config,
            tune_config=tune.TuneConfig(max_concurrent_trials=2),
            run_config=tune.RunConfig(
                storage_path=folder,
                name="grid",
                verbose=0,
                stop={"training_iteration": iterations},
                checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=True),
            ),
        ).fit()
        assert results.num_errors == 0 and len(results) == 8, results.errors
        assert all(r.metrics["training_iteration"] == iterations for r in results)
        return time.perf_counter() - started
    finally:
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--batch", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    ratios = []
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="tune_grid_") as folder:
            hand = by_hand(args.iterations, args.batch, folder)
            tuned = with_tune(args.iterations, args.batch, folder)
        ratios.append(tuned / hand)
        print(
            f"repeat {repeat}: 8 configs x {args.iterations} iterations of {args.batch} steps: "
            f"by hand {hand:.1f} s, Tune (2 at a time, Ray start included) {tuned:.1f} s, "
            f"ratio {tuned / hand:.2f}",
            flush=True,
        )
    print(f"ratio Tune / by hand: median {statistics.median(ratios):.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
