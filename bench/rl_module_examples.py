"""RLlib 2.60's custom-RLModule example scripts (`rllib/examples/rl_modules/`), unmodified,
through the launcher: time to their targets, start included (processes, module build).

`--example cnn`: `custom_cnn_rl_module.py` builds PPO (RLlib's defaults: 4000-step train
batches, 30 epochs of 128-row minibatches, lr 5e-5, 2 EnvRunners) with its custom `TinyAtariCNN`
module on `gym.make(--env, frameskip=1, full_action_space=False, repeat_action_probability=0.0)`
wrapped by `wrap_atari_for_new_api_stack(dim=42, framestack=4)`: 42x42 grayscale frames, 4
frames skipped and 4 stacked, one episode per life. Here `--env=localrl/TinyCatch-v0` (ALE is not
shipped): catch falling balls, +1 a catch, -1 a miss (and a life). Random play returns about
-0.7 per episode (life); following the ball catches nearly every one (about +9.8). Target:
`episode_return_mean` >= 1.0 (two catches for each miss) within 20 iterations (80k env steps)
and 20 minutes on 2 cores; RLlib's lr of 5e-5 makes it a slow climb.

`--example lstm`: `custom_lstm_rl_module.py --as-test`, its `LSTMContainingRLModule` on
StatelessCartPole (no velocities in the observations), to the script's own stop: a mean return
of 300 within its 2M env steps (RLlib's CI runs it so).

Run: python bench/rl_module_examples.py --example cnn|lstm [--runs N]
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
#: custom_lstm_rl_module.py's own stop (`add_rllib_example_script_args(default_reward=300)`).
LSTM_TARGET_RETURN = 300.0
#: One progress line of `run_rllib_example_script_experiment`.
PROGRESS = re.compile(
    r"^iter +(?P<iter>\d+) \| total time \(s\) +(?P<time>[\d.]+) \| ts (?P<ts>\d+) \| "
    r"(?:episode return mean|combined return) (?P<ret>\S+)",
    re.MULTILINE,
)


def example_script(name: str, folder: str = "rl_modules") -> Path:
    """RLlib's script `name` of `rllib/examples/<folder>` in the installed Ray 2.60 wheel
    (found on sys.path, not imported)."""
    spec = importlib.machinery.PathFinder.find_spec("ray")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("needs the Ray 2.60 wheel (the test extra) for RLlib's example scripts")
    path = Path(next(iter(spec.submodule_search_locations)))
    return path / "rllib" / "examples" / folder / name


def run_once(script_args: list[str], timeout_s: float) -> dict:
    """One launcher run of `script_args` (the script, then its flags): wall seconds,
    iterations, env steps, the last return, the exit code."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("LOCALRL_RLLIB_LAUNCHER", None)
    command = [sys.executable, "-m", "trainer", "run", *script_args]
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
        #: Per iteration: (total time in s, env steps, return; NaN before any episode ended).
        "progress": [
            (
                float(line["time"]),
                int(line["ts"]),
                float(line["ret"]) if line["ret"] != "None" else float("nan"),
            )
            for line in lines
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--example", choices=["cnn", "lstm"], default="cnn")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--stop-reward", type=float, default=None)
    parser.add_argument("--stop-iters", type=int, default=TARGET_ITERS)
    parser.add_argument("--timeout", type=float, default=2 * TARGET_S)
    args = parser.parse_args()
    if args.example == "cnn":
        stop_reward = TARGET_RETURN if args.stop_reward is None else args.stop_reward
        script_args = [
            str(example_script("custom_cnn_rl_module.py")),
            f"--env={ENV_ID}",
            f"--stop-reward={stop_reward}",
            f"--stop-iters={args.stop_iters}",
        ]
        label = f"custom_cnn_rl_module.py --env={ENV_ID}"
        target = (
            f"within {TARGET_ITERS} iterations and {TARGET_S // 60} min on 2 cores; random "
            "play about -0.7"
        )
    else:
        stop_reward = LSTM_TARGET_RETURN if args.stop_reward is None else args.stop_reward
        script_args = [
            str(example_script("custom_lstm_rl_module.py")),
            "--as-test",
            f"--stop-reward={stop_reward}",
        ]
        label = "custom_lstm_rl_module.py --as-test"
        target = "the script's own stop, within its 2M env steps; StatelessCartPole"
    runs = []
    for index in range(args.runs):
        run = run_once(script_args, args.timeout)
        runs.append(run)
        reached = run["return"] >= stop_reward
        print(
            f"run {index}: return {run['return']:.2f} after {run['env_steps']} env steps "
            f"({run['iterations']} iterations) in {run['seconds']:.0f} s, "
            f"{'reached' if reached else 'NOT reached'}, exit {run['returncode']}",
            flush=True,
        )
    median_s = statistics.median(run["seconds"] for run in runs)
    reached_runs = sum(run["return"] >= stop_reward for run in runs)
    print(
        f"{label}: {reached_runs}/{len(runs)} runs reached return {stop_reward:.1f}, "
        f"median {median_s:.0f} s (target: {target})"
    )


if __name__ == "__main__":
    main()
