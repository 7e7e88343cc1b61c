"""How long `config.build()` takes, against baselines measured in the same run:

- 1 and 5 EnvRunner processes and their ratio (RLlib's `test_worker_validation_time` asks for
  at most 2x; the target here is 1.5x): the builds alternate, the ratio is of the medians. The
  workers are forked from the worker template (`trainer.runners.worker_forkserver`), which a
  first build starts; that first build is shown on its own line. With `--spawn` the same
  numbers for workers spawned as processes of their own (the fallback where fork is not
  available), for comparison.
- 0 and 2 EnvRunners, against starting one bare `python -c "import numpy, gymnasium"` process
  (the least a spawned worker process needs); `import trainer` on its own.

- with `--torch`: a fresh process's `import trainer` + `build()` (2 EnvRunners) with numpy and
  with torch (`framework("torch")`, which imports torch in the driver and in the worker
  template), interleaved, and their ratio.

Target: build with 2 EnvRunners under 2 s (RLlib 2.60: about 20 s); 5 EnvRunners within 1.5x
the time of 1.
Run: python bench/startup.py [--repeats 5] [--spawn] [--torch]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def bare_interpreter_s() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy, gymnasium"], check=True)
    return time.perf_counter() - start


def import_s() -> float:
    code = "import time; t = time.perf_counter(); import trainer; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout)


def build_s(num_env_runners: int) -> float:
    from trainer import PPOConfig

    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=num_env_runners)
    start = time.perf_counter()
    algo = config.build()
    elapsed = time.perf_counter() - start
    algo.stop()
    return elapsed


FRESH_BUILD = """
import sys, time
start = time.perf_counter()
from trainer import PPOConfig
config = PPOConfig().environment("CartPole-v1").framework(sys.argv[1])
algo = config.env_runners(num_env_runners=2).build()
print(time.perf_counter() - start)
algo.stop()
"""


def fresh_build_s(framework: str) -> float:
    """`import trainer` and `build()` with 2 EnvRunners in a fresh process (its own worker
    template, torch imported from scratch for a torch config)."""
    out = subprocess.run(
        [sys.executable, "-c", FRESH_BUILD, framework], check=True, capture_output=True, text=True
    )
    return float(out.stdout)


def one_and_five(repeats: int) -> tuple[float, float]:
    """Medians of `repeats` builds with 1 and with 5 EnvRunners, interleaved (the machine's
    load drifts alike for both)."""
    ones, fives = [], []
    for _ in range(repeats):
        ones.append(build_s(1))
        fives.append(build_s(5))
    return statistics.median(ones), statistics.median(fives)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--spawn",
        action="store_true",
        help="also measure 1 vs 5 EnvRunners spawned without the template",
    )
    parser.add_argument(
        "--torch",
        action="store_true",
        help="also measure a fresh process's import + build() for numpy and for torch "
        "(RLlib's default framework), interleaved",
    )
    args = parser.parse_args()
    from trainer.runners import worker_forkserver

    first = build_s(1)  # starts the worker template (where fork is available)
    forking = worker_forkserver.template_pid() is not None
    one, five = one_and_five(args.repeats)
    if args.spawn:
        available = worker_forkserver.forking_available
        worker_forkserver.forking_available = lambda: False
        spawned_one, spawned_five = one_and_five(args.repeats)
        worker_forkserver.forking_available = available
    bare = statistics.median(bare_interpreter_s() for _ in range(args.repeats))
    imports = statistics.median(import_s() for _ in range(args.repeats))
    build2 = statistics.median(build_s(2) for _ in range(args.repeats))
    build0 = statistics.median(build_s(0) for _ in range(args.repeats))
    how = "forked from the template" if forking else "spawned (no fork here)"
    # The machine's load: on few shared cores the 5 workers' start-up competes with it.
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"workers: {how}; load average {load}")
    print(f"first build(), 1 EnvRunner (starts the template)    {first:6.3f} s")
    print(f"build(), 1 EnvRunner                                {one:6.3f} s")
    print(
        f"build(), 5 EnvRunners                               {five:6.3f} s  "
        f"= {five / one:.2f}x 1 EnvRunner  (target <= 1.5x; RLlib's test: <= 2x)"
    )
    if args.spawn:
        print(
            f"spawned: build(), 1 / 5 EnvRunners                  {spawned_one:6.3f} / "
            f"{spawned_five:.3f} s = {spawned_five / spawned_one:.2f}x"
        )
    print(f"baseline: bare python + numpy + gymnasium process   {bare:6.3f} s")
    print(f"import trainer                                      {imports:6.3f} s")
    print(f"build(), 0 EnvRunners (samples in-process)          {build0:6.3f} s")
    print(
        f"build(), 2 EnvRunner processes                      {build2:6.3f} s  "
        f"= {build2 / bare:.1f}x the baseline  (target < 2 s)"
    )
    if args.torch:
        fresh: dict[str, list[float]] = {"numpy": [], "torch": []}
        for _ in range(args.repeats):
            for framework, times in fresh.items():
                times.append(fresh_build_s(framework))
        numpy_s, torch_s = (statistics.median(fresh[f]) for f in ("numpy", "torch"))
        print(
            f"fresh process, import + build(), 2 EnvRunners: numpy {numpy_s:.3f} s, torch "
            f"{torch_s:.3f} s = {torch_s / numpy_s:.2f}x"
        )


if __name__ == "__main__":
    main()
