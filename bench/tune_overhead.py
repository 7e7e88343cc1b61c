"""Per-iteration time of an Algorithm in a Ray Tune trial against the same config in this
process, same run.

Configs on CartPole-v1, each run `--iterations` iterations in this process (`build_algo()`,
`train()`) and then as one `trainer.tune.Tuner` trial on a local Ray of 2 CPUs (Tune's
`time_this_iter_s`), alternating; the first iteration of each is left out (a build's warm-up,
and DQN's before its replay buffer starts learning):
- PPO, default settings (2 EnvRunner processes: the trial reserves one bundle of 2 CPUs);
- PPO, RLlib's tuned example (`rllib/tuned_examples/ppo/cartpole_ppo.py`: its preset in
  `trainer/cli/presets.py`, with an evaluation EnvRunner in parallel to training);
- DQN, default settings (no EnvRunner process: 1 CPU a trial);
- DQN, RLlib's tuned example (`rllib/tuned_examples/dqn/cartpole_dqn.py`);
- DQN with 2 EnvRunner processes (2 CPUs a trial, as PPO's default).

Prints each config's mean seconds per iteration both ways and their ratio (Tune / in
process), then the largest ratio. Target: <= 1.2. With `--repeats`, the medians of the
repeats' ratios.

Run: python bench/tune_overhead.py [--iterations 4] [--repeats 1] [--only ppo_default ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import ray

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trainer import DQNConfig, PPOConfig, tune  # noqa: E402
from trainer.algorithms.algorithm_config import AlgorithmConfig  # noqa: E402
from trainer.cli.presets import PRESETS  # noqa: E402

ENV = "CartPole-v1"
TARGET = 1.2


def _tuned(algorithm: str) -> AlgorithmConfig:
    config = (PPOConfig() if algorithm == "PPO" else DQNConfig()).environment(ENV)
    PRESETS[(algorithm, ENV)].apply(config)
    return config


CONFIGS: dict[str, Callable[[], AlgorithmConfig]] = {
    "ppo_default": lambda: PPOConfig().environment(ENV),
    "ppo_tuned": lambda: _tuned("PPO"),
    "dqn_default": lambda: DQNConfig().environment(ENV),
    "dqn_tuned": lambda: _tuned("DQN"),
    "dqn_2_runners": lambda: DQNConfig().environment(ENV).env_runners(num_env_runners=2),
}


def in_process(config: AlgorithmConfig, iterations: int) -> list[float]:
    """Seconds of each iteration after the first, the algorithm built in this process."""
    algorithm = config.build_algo()
    try:
        seconds = []
        for _ in range(iterations):
            started = time.perf_counter()
            algorithm.train()
            seconds.append(time.perf_counter() - started)
    finally:
        algorithm.stop()
    return seconds[1:]


def in_tune_trial(config: AlgorithmConfig, iterations: int, folder: str) -> list[float]:
    """Seconds of each iteration after the first, as Tune timed them in the trial's actor."""
    results = tune.Tuner(
        config.algo_class,
        param_space=config,
        run_config=tune.RunConfig(
            storage_path=folder, stop={"training_iteration": iterations}, verbose=0
        ),
    ).fit()
    if results.num_errors:
        raise RuntimeError(f"the Tune trial failed: {results.errors}")
    frame = results[0].metrics_dataframe
    return [float(s) for s in frame["time_this_iter_s"]][1:]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS))
    args = parser.parse_args()
    if args.iterations < 2:
        parser.error(f"--iterations {args.iterations}: give 2 or more (the first is left out)")
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        configure_logging=False,
        log_to_driver=False,
    )
    ratios: dict[str, list[float]] = {name: [] for name in args.only}
    try:
        with tempfile.TemporaryDirectory(prefix="tune_overhead_") as folder:
            for repeat in range(args.repeats):
                for name in args.only:
                    local = statistics.mean(in_process(CONFIGS[name](), args.iterations))
                    trial = statistics.mean(in_tune_trial(CONFIGS[name](), args.iterations, folder))
                    ratios[name].append(trial / local)
                    print(
                        f"repeat {repeat} {name}: s/iteration in process {local:.2f}, "
                        f"Tune trial {trial:.2f}, ratio {trial / local:.2f}",
                        flush=True,
                    )
    finally:
        ray.shutdown()
    medians = {name: statistics.median(values) for name, values in ratios.items()}
    print(
        "ratio Tune trial / in process: "
        + ", ".join(f"{name} {ratio:.2f}" for name, ratio in medians.items())
        + f"; largest {max(medians.values()):.2f} (target <= {TARGET})"
    )


if __name__ == "__main__":
    main()
