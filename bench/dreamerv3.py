"""DreamerV3 here against RLlib 2.60's own DreamerV3: the same config on the same machine, the
two sides alternating.

Time per training iteration (the default): RLlib's example settings (`cartpole_dreamerv3.py`
and `frozenlake_2x2_dreamerv3.py`: model size XS, `training_ratio=1024`, every other setting
RLlib's default: B=16, T=64, H=15, the EnvRunner in the main process) on CartPole-v1 and
FrozenLake 2x2 (not slippery). Each run is a fresh process (RLlib's with `ray.init`): build,
`--warmup` iterations (the first samples the buffer's first B x T steps with random actions),
then `--iterations` timed ones, each one env step and one update (unseeded, as RLlib's
examples run: a seeded run here keeps its updates on one thread). Rounds alternate the sides
(localrl, RLlib, localrl, ...), so the machine's drift hits both alike. Prints each run's
median seconds per iteration, then per env the median over rounds and the ratio localrl /
RLlib (the target: at most 0.5).

`--to-target`: each side trains from a fresh build until its `episode_return_mean` reaches the
env's target (CartPole 450: RLlib's `default_reward` of `cartpole_dreamerv3.py`, the stop its
Tune run uses; DreamerV3's default window is the last episode,
`metrics_num_episodes_for_smoothing=1`, on both sides) or `--max-seconds` pass; prints the
wall time from before the build, the env steps and the best return (a capped run counts as not
reached, and the ratio is then a bound). RLlib 2.60's DreamerV3 does not build on FrozenLake
(its catalog has no encoder for a Discrete observation space; here they are fed one-hot): the
FrozenLake rows time this project alone.

Needs the test extra's Ray 2.60 wheel and torch. The machine (CPU model, load) heads the output.

Run: python bench/dreamerv3.py [--envs cartpole frozenlake] [--rounds 3] [--warmup 12]
     [--iterations 10] [--to-target --seeds 0 1 2 --max-seconds 1800]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.report import machine  # noqa: E402

SIDES = ("localrl", "rllib")
#: (gymnasium id, env_config, target of episode_return_mean) per env, as RLlib's examples.
ENVS: dict[str, tuple[str, dict[str, Any], float]] = {
    "cartpole": ("CartPole-v1", {}, 450.0),
    "frozenlake": ("FrozenLake-v1", {"desc": ["SF", "HG"], "is_slippery": False}, 0.9),
}


def build(side: str, env: str, seed: int | None) -> Any:
    """The algorithm of RLlib's example settings for `env`, on `side` (seeded when `seed` is
    given: RLlib's examples are not, and a seeded run here keeps its updates on one thread)."""
    env_id, env_config, _ = ENVS[env]
    if side == "rllib":
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        from ray.rllib.algorithms.dreamerv3.dreamerv3 import DreamerV3Config
    else:
        from trainer.algorithms.dreamerv3 import DreamerV3Config  # type: ignore[no-redef]
    config = (
        DreamerV3Config()
        .environment(env_id, env_config=env_config)
        .training(model_size="XS", training_ratio=1024)
    )
    if seed is not None:
        config.debugging(seed=seed)
    return config.build()


def child(
    side: str,
    env: str,
    seed: int,
    warmup: int,
    iterations: int,
    to_target: bool,
    max_seconds: float,
) -> dict[str, Any]:
    """One run in this process (see the module docstring); its measurements."""
    start = time.perf_counter()
    algo = build(side, env, seed if to_target else None)
    try:
        if to_target:
            target = ENVS[env][2]
            steps, best, reached = 0, float("-inf"), False
            while not reached and time.perf_counter() - start < max_seconds:
                result = algo.train()
                runners = result["env_runners"]
                steps = int(runners.get("num_env_steps_sampled_lifetime", steps))
                mean = runners.get("episode_return_mean", float("nan"))
                if mean == mean:  # (NaN where no episode ended)
                    best = max(best, mean)
                    reached = mean >= target
            seconds = time.perf_counter() - start
            return {"seconds": seconds, "steps": steps, "reached": reached, "best": best}
        for _ in range(warmup):
            algo.train()
        times = []
        for _ in range(iterations):
            began = time.perf_counter()
            algo.train()
            times.append(time.perf_counter() - began)
        return {"times": times}
    finally:
        algo.stop()


def run_child(args: argparse.Namespace, side: str, env: str, seed: int) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--child",
        side,
        "--envs",
        env,
        "--seeds",
        str(seed),
        "--warmup",
        str(args.warmup),
        "--iterations",
        str(args.iterations),
        "--max-seconds",
        str(args.max_seconds),
    ] + (["--to-target"] if args.to_target else [])
    limit = args.max_seconds + 300 if args.to_target else 1800
    done = subprocess.run(command, capture_output=True, text=True, timeout=limit, cwd=REPO)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    lines = done.stderr.strip().splitlines() or ["(no output)"]
    raise RuntimeError(f"{side} on {env} failed: {lines[-1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", choices=list(ENVS), default=list(ENVS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=12)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--to-target", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--max-seconds", type=float, default=1800.0)
    parser.add_argument("--child", choices=SIDES)
    args = parser.parse_args()
    if args.child:
        print(
            json.dumps(
                child(
                    args.child,
                    args.envs[0],
                    args.seeds[0],
                    args.warmup,
                    args.iterations,
                    args.to_target,
                    args.max_seconds,
                )
            )
        )
        return
    print(f"machine: {machine()}")
    for env in args.envs:
        if args.to_target:
            runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
            for seed in args.seeds:
                for side in SIDES:
                    run = run_child(args, side, env, seed)
                    runs[side].append(run)
                    state = "reached" if run["reached"] else "capped"
                    print(
                        f"{env} seed {seed} {side}: {run['seconds']:.1f} s "
                        f"{run['steps']} env steps ({state}, best return {run['best']:g})",
                        flush=True,
                    )
            medians = {side: statistics.median(r["seconds"] for r in runs[side]) for side in SIDES}
            capped = {side: not all(r["reached"] for r in runs[side]) for side in SIDES}
            bound = {(False, False): "", (True, False): "<= ", (False, True): ">= "}.get(
                (capped["rllib"], capped["localrl"]), "? "
            )
            print(
                f"{env} to {ENVS[env][2]:g}: localrl {medians['localrl']:.1f} s, RLlib "
                f"{medians['rllib']:.1f} s (medians of {len(args.seeds)} seeds): "
                f"ratio RLlib / localrl {bound}{medians['rllib'] / medians['localrl']:.2f}"
            )
            continue
        per_side: dict[str, list[float]] = {side: [] for side in SIDES}
        failed: set[str] = set()
        for round_index in range(args.rounds):
            for side in SIDES:
                if side in failed:
                    continue
                try:
                    times = run_child(args, side, env, args.seeds[0])["times"]
                except RuntimeError as error:
                    failed.add(side)
                    print(error, flush=True)
                    continue
                per_side[side].append(statistics.median(times))
                print(
                    f"{env} round {round_index} {side}: {statistics.median(times):.3f} s per "
                    f"iteration (median of {len(times)})",
                    flush=True,
                )
        medians = {side: statistics.median(times) for side, times in per_side.items() if times}
        cells = ", ".join(
            f"{side} {medians[side]:.3f} s" if side in medians else f"{side} failed"
            for side in SIDES
        )
        ratio = (
            f"ratio localrl / RLlib {medians['localrl'] / medians['rllib']:.2f}"
            if len(medians) == 2
            else "no ratio"
        )
        print(
            f"{env} XS ratio 1024: {cells} per iteration (medians of {args.rounds} rounds): {ratio}"
        )


if __name__ == "__main__":
    main()
