"""Running one benchmark against other libraries, each in a process of its own: the script
runs itself with `--only LIB` (which prints one JSON line), and the parent prints a line per
library, the ratios of this project's rate to each other's, and the CPU model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

from report import cpu_model


def run_each(
    script: str,
    libs: list[str],
    args: list[str],
    labels: dict[str, str],
    describe: Callable[[dict], str],
) -> dict[str, float]:
    """Runs `script --only LIB *args` for each library; prints `describe(its JSON)` after its
    label (or its failure); returns env steps per second by library."""
    rates = {}
    for lib in libs:
        done = subprocess.run(
            [sys.executable, script, "--only", lib, *args], capture_output=True, text=True
        )
        if done.returncode != 0:
            print(f"{labels[lib]}: failed\n{done.stderr[-3000:]}", flush=True)
            continue
        out = json.loads(done.stdout.strip().splitlines()[-1])
        rates[lib] = out["env_steps"] / out["seconds"]
        print(f"{labels[lib]}: {describe(out)}", flush=True)
    return rates


def print_ratios(rates: dict[str, float], labels: dict[str, str]) -> None:
    """This project's env steps per second over each other library's, then the CPU model."""
    for lib, rate in rates.items():
        if lib != "localrl" and "localrl" in rates:
            print(
                f"ratio localrl / {labels[lib]}: {rates['localrl'] / rate:.2f}x env steps per second"
            )
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores")


def timed_calls(owner: object, name: str, seconds: list[float]) -> None:
    """Wraps `owner.name` so that each call's wall time is added to `seconds[0]` (the
    learner update's share of the run)."""
    method = getattr(owner, name)

    def timed(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            seconds[0] += time.perf_counter() - start

    setattr(owner, name, timed)
