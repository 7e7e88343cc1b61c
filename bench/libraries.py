"""Running one benchmark against other libraries, each in a process of its own: the script
runs itself with `--only LIB` (which prints one JSON line), and the parent prints a line per
library, the ratios of this project's rate to each other's, and the CPU model."""

from __future__ import annotations

import json
import os
import statistics
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


def ratios(rates: dict[str, float]) -> dict[str, float]:
    """This project's env steps per second over each other library's, by library."""
    if "localrl" not in rates:
        return {}
    return {lib: rates["localrl"] / rate for lib, rate in rates.items() if lib != "localrl"}


def print_ratios(rates: dict[str, float], labels: dict[str, str]) -> None:
    """This project's env steps per second over each other library's, then the CPU model."""
    for lib, ratio in ratios(rates).items():
        print(f"ratio localrl / {labels[lib]}: {ratio:.2f}x env steps per second")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores")


def run_rounds(
    rounds: int,
    script: str,
    libs: list[str],
    args: list[str],
    labels: dict[str, str],
    describe: Callable[[dict], str],
) -> None:
    """`run_each` and `print_ratios` `rounds` times, the libraries taking turns in each round
    (a slow spell of the machine then falls on all of them); with more than one round, each
    ratio's median over the rounds and its range."""
    per_round = []
    for number in range(1, rounds + 1):
        if rounds > 1:
            print(f"round {number} of {rounds}:", flush=True)
        rates = run_each(script, libs, args, labels, describe)
        print_ratios(rates, labels)
        per_round.append(ratios(rates))
    if rounds > 1:
        for lib in dict.fromkeys(lib for found in per_round for lib in found):
            values = sorted(found[lib] for found in per_round if lib in found)
            print(
                f"median ratio localrl / {labels[lib]} over {len(values)} rounds: "
                f"{statistics.median(values):.2f}x (from {values[0]:.2f}x to {values[-1]:.2f}x)"
            )


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
