"""How long `config.build()` takes with 2 EnvRunner processes, against a baseline measured in the
same run: starting one bare `python -c "import numpy, gymnasium"` process (the least any worker
process needs). Also times `import trainer`.

Target (issue 2): build with 2 EnvRunners under 2 s (RLlib 2.60: about 20 s).
Run: python bench/startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def bare_interpreter_s() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy, gymnasium"], check=True)
    return time.perf_counter() - start


def import_s() -> float:
    code = ("import time; t = time.perf_counter(); import trainer; "
            "print(time.perf_counter() - t)")
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare = statistics.median(bare_interpreter_s() for _ in range(args.repeats))
    imports = statistics.median(import_s() for _ in range(args.repeats))
    build2 = statistics.median(build_s(2) for _ in range(args.repeats))
    build0 = statistics.median(build_s(0) for _ in range(args.repeats))
    print(f"baseline: bare python + numpy + gymnasium process   {bare:6.3f} s")
    print(f"import trainer                                      {imports:6.3f} s")
    print(f"build(), 0 EnvRunners (samples in-process)          {build0:6.3f} s")
    print(f"build(), 2 EnvRunner processes                      {build2:6.3f} s  "
          f"= {build2 / bare:.1f}x the baseline  (target < 2 s; RLlib 2.60: ~20 s)")


if __name__ == "__main__":
    main()
