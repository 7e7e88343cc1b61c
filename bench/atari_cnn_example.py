"""RLlib 2.60's `rllib/examples/rl_modules/custom_cnn_rl_module.py`, unmodified, through the
launcher on the project's Atari-like game: time to a return.

The script builds PPO (RLlib's defaults: 4000-step train batches, 30 epochs of 128-row
minibatches, lr 5e-5, 2 EnvRunners) with its custom `TinyAtariCNN` module on
`gym.make(--env, frameskip=1, full_action_space=False, repeat_action_probability=0.0)` wrapped by
`wrap_atari_for_new_api_stack(dim=42, framestack=4)`: 42x42 grayscale frames, 4 frames skipped
and 4 stacked, one episode per life. Here `--env=localrl/TinyCatch-v0` (ALE is not shipped):
catch falling balls, +1 a catch, -1 a miss (and a life). Random play returns about -0.7 per
episode (life); following the ball catches nearly every one (about +9.8: most games are one
life).

Runs: `python -m trainer run SCRIPT --env=localrl/TinyCatch-v0 --stop-reward=R
--stop-iters=N` (the script's own flags) in a fresh process per seed-less run, reading the
script's progress lines. Wall time includes the start (processes, module build).
Target: `episode_return_mean` >= 1.0 (two catches for each miss) within 20 iterations (80k env
steps) and 20 minutes on 2 cores. RLlib's lr of 5e-5 makes it a slow climb: one run went from
-0.65 to 0.47 in 10 iterations.

Run: python bench/atari_cnn_example.py [--runs 1] [--stop-reward 1.0] [--stop-iters 20]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV_ID = "localrl/TinyCatch-v0"
TARGET_RETURN = 1.0
TARGET_ITERS = 20
TARGET_S = 20 * 60
#: One progress line of `run_rllib_example_script_experiment`.
PROGRESS = re.compile(
    r"^iter +(?P<iter>\d+) \| total time \(s\) +(?P<time>[\d.]+) \| ts (?P<ts>\d+) \| "
    r"episode return mean (?P<ret>\S+)",
    re.MULTILINE,
)


def example_script() -> Path:
    """RLlib's script in the installed Ray 2.60 wheel (found on sys.path, not imported)."""
    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("needs the Ray 2.60 wheel (the test extra) for RLlib's example scripts")
    path = Path(next(iter(spec.submodule_search_locations)))
    return path / "rllib" / "examples" / "rl_modules" / "custom_cnn_rl_module.py"


def run_once(stop_reward: float, stop_iters: int, timeout_s: float) -> dict:
    """One launcher run: wall seconds, iterations, env steps, the last return, the exit code."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("LOCALRL_RLLIB_LAUNCHER", None)
    command = [
        sys.executable,
        "-m",
        "trainer",
        "run",
        str(example_script()),
        f"--env={ENV_ID}",
        f"--stop-reward={stop_reward}",
        f"--stop-iters={stop_iters}",
    ]
    start = time.perf_counter()
    # Streamed: each progress line is printed as the script prints it.
    process = subprocess.Popen(
        command,
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    watchdog = threading.Timer(timeout_s, process.kill)
    watchdog.start()
    output = []
    lines = []
    try:
        for text in process.stdout:
            output.append(text)
            line = PROGRESS.match(text)
            if line:
                lines.append(line)
                print(f"  {line.group(0)}", flush=True)
        returncode = process.wait()
    finally:
        watchdog.cancel()
    seconds = time.perf_counter() - start
    if returncode != 0:
        print("".join(output)[-3000:], file=sys.stderr)
    last = lines[-1] if lines else None
    return {
        "seconds": seconds,
        "iterations": int(last["iter"]) if last else 0,
        "env_steps": int(last["ts"]) if last else 0,
        "return": float(last["ret"]) if last and last["ret"] != "None" else float("nan"),
        "returncode": returncode,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--stop-reward", type=float, default=TARGET_RETURN)
    parser.add_argument("--stop-iters", type=int, default=TARGET_ITERS)
    parser.add_argument("--timeout", type=float, default=2 * TARGET_S)
    args = parser.parse_args()
    runs = []
    for index in range(args.runs):
        run = run_once(args.stop_reward, args.stop_iters, args.timeout)
        runs.append(run)
        reached = run["return"] >= args.stop_reward
        print(
            f"run {index}: return {run['return']:.2f} after {run['env_steps']} env steps "
            f"({run['iterations']} iterations) in {run['seconds']:.0f} s, "
            f"{'reached' if reached else 'NOT reached'}, exit {run['returncode']}",
            flush=True,
        )
    median_s = statistics.median(run["seconds"] for run in runs)
    reached = sum(run["return"] >= args.stop_reward for run in runs)
    print(
        f"custom_cnn_rl_module.py --env={ENV_ID}: {reached}/{len(runs)} runs reached return "
        f"{args.stop_reward:.1f}, median {median_s:.0f} s (target: within {TARGET_ITERS} "
        f"iterations and {TARGET_S // 60} min on 2 cores; random play about -0.7)"
    )


if __name__ == "__main__":
    main()
