"""What the command line costs on top of the training it runs.

The same PPO run (RLlib's tuned CartPole settings, 2 EnvRunners, a fixed number of iterations, a
checkpoint every 10 iterations and at the end) three ways, each a fresh process, timed from
start to exit:

- baseline: a script that builds, calls train() and save_to_path() and prints one line per
  iteration;
- `python -m trainer` without matplotlib (run folder, result.json, progress.csv, display);
- `python -m trainer` with matplotlib (plus learning_curve.png at every checkpoint).

Prints the median wall time of each and its ratio to the baseline.
Run: python bench/main_job.py [--iterations 30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

FLAGS = [
    "--preset",
    "none",
    "--lr",
    "0.0003",
    "--num-epochs",
    "6",
    "--hiddens",
    "32",
    "--activation",
    "linear",
    "--seed",
    "0",
    "--checkpoint-frequency",
    "10",
]

BASELINE = """
import os, sys
from trainer import PPOConfig
iterations, directory = int(sys.argv[1]), sys.argv[2]
config = (PPOConfig().environment("CartPole-v1").debugging(seed=0)
          .training(lr=0.0003, num_epochs=6)
          .rl_module(model_config={"fcnet_hiddens": [32], "fcnet_activation": "linear"}))
algo = config.build()
for _ in range(iterations):
    result = algo.train()
    print(result["training_iteration"], result["env_runners"]["episode_return_mean"], flush=True)
    if result["training_iteration"] % 10 == 0 or result["training_iteration"] == iterations:
        algo.save_to_path(os.path.join(directory, f"checkpoint_{algo.iteration:06d}"))
algo.stop()
"""

WITHOUT_MATPLOTLIB = (
    "import sys; sys.modules['matplotlib'] = None; from trainer.cli import main;"
    " sys.exit(main(sys.argv[1:]))"
)


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"baseline": [], "cli": [], "cli+plot": []}
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as root:
            stop = ["--stop-iters", str(args.iterations)]
            times["baseline"].append(
                timed([sys.executable, "-c", BASELINE, str(args.iterations), root])
            )
            times["cli"].append(
                timed(
                    [
                        sys.executable,
                        "-c",
                        WITHOUT_MATPLOTLIB,
                        *FLAGS,
                        *stop,
                        "--output-dir",
                        os.path.join(root, "cli"),
                    ]
                )
            )
            times["cli+plot"].append(
                timed(
                    [
                        sys.executable,
                        "-m",
                        "trainer",
                        *FLAGS,
                        *stop,
                        "--output-dir",
                        os.path.join(root, "cli_plot"),
                    ]
                )
            )
        print(
            f"repeat {repeat + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
            flush=True,
        )
    baseline = statistics.median(times["baseline"])
    print(f"{args.iterations} PPO iterations, median of {args.repeats}:")
    print(f"  baseline script (train + save_to_path)       {baseline:6.2f} s")
    for name, label in (
        ("cli", "python -m trainer, no matplotlib"),
        ("cli+plot", "python -m trainer, learning_curve.png"),
    ):
        median = statistics.median(times[name])
        print(f"  {label:<45}{median:6.2f} s = {median / baseline:.2f}x the baseline")


if __name__ == "__main__":
    main()
