"""The numpy path against the torch path on the same jobs, measured in the same run.

RLlib's default framework is torch and its example scripts pass `--framework=torch`, so an
unmodified RLlib script trains on this project's torch path (RLlib's default torch RLModules and
torch learners); `framework("numpy")` (and "tf2", which runs on numpy here) takes the numpy
modules and learners. Both run the same algorithm, settings and EnvRunner processes.

1. Time to solve, build included: the main job's presets (`trainer/cli/presets.py`; RLlib's
   tuned examples for PPO on CartPole-v1 and Pendulum-v1 and DQN on CartPole-v1) with their
   default models, to `bench/compare.py`'s targets (training return 450, -300, 450), each seed
   on numpy then on torch, back to back, each run in a fresh interpreter timed from its first
   statement (so torch's import counts, as a user's script waits for it; a seeded run starts
   from the same weights on both and the default torch learners update in numpy, so both take
   the same env steps: the ratio is the frameworks' speed, start-up included). Median seconds
   per framework and torch / numpy.
2. Build: a fresh interpreter importing this project, building the PPO CartPole preset (2
   EnvRunner processes) and training one iteration; seconds to the built Algorithm (torch's
   import included, as a user's script waits for it) and of the first `train()`: medians of
   `--repeats`, torch / numpy.
3. Sampling: env steps per second of one EnvRunner process (8 sub-envs, RLlib's default
   256x256 PPO module) through `env_runner_group.sample`, numpy against torch, interleaved.
4. RLlib's `multi_agent/multi_agent_cartpole.py --num-agents=2 --as-test` (its stop: a summed
   return of 600 within 100k env steps, which RLlib's own defaults reach in some runs only)
   through the launcher, `--framework=torch` (RLlib's default) against `--framework=tf2`
   (numpy here): seconds per iteration, and when the stop was first reached.

Targets: torch / numpy time to solve <= 1.1 on PPO CartPole (build included), <= 1.3 on each
other task; torch build <= 1.5x numpy's.

Run: python bench/frameworks.py [--seeds 0 1 2] [--tasks ppo_cartpole ppo_pendulum
     dqn_cartpole] [--repeats 3] [--skip-solve] [--skip-examples]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.compare import TASKS, Run  # noqa: E402
from bench.rl_module_examples import run_once  # noqa: E402
from bench.sampling import env_runner_steps_per_s  # noqa: E402

FRAMEWORKS = ("numpy", "torch")
SOLVE_TASKS = ("ppo_cartpole", "ppo_pendulum", "dqn_cartpole")
#: Where RLlib's example scripts are in the installed Ray 2.60 wheel.
MULTI_AGENT_CARTPOLE = ("multi_agent", "multi_agent_cartpole.py")
#: The script's stop: `add_rllib_example_script_args(default_reward=600.0)`, the two agents'
#: returns summed, within its 100k env steps.
MULTI_AGENT_STOP_REWARD = 600.0


def ratio(torch_value: float, numpy_value: float) -> str:
    return f"{torch_value / numpy_value:.2f}" if numpy_value > 0 else "n/a"


#: Run in a fresh interpreter: a task's preset on a framework until solved (argv: task, seed,
#: max seconds, framework), timed from the process's first statement, imports included.
SOLVE_SCRIPT = """
import time
start = time.perf_counter()
import json
import sys
from bench.compare import TASKS, run_localrl
task, seed, max_seconds, framework = sys.argv[1:]
run = run_localrl(TASKS[task], int(seed), float(max_seconds), framework=framework, start=start)
print(json.dumps([run.seconds, run.env_steps, run.reached]))
"""


def solve_in_fresh_process(task: str, seed: int, max_seconds: float, framework: str) -> Run:
    """`run_localrl` in a fresh interpreter, from its first statement (torch's import
    included, as a user's script waits for it)."""
    output = subprocess.run(
        [sys.executable, "-c", SOLVE_SCRIPT, task, str(seed), str(max_seconds), framework],
        capture_output=True,
        text=True,
        check=True,
        timeout=max_seconds + 120,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    ).stdout.splitlines()
    seconds, env_steps, reached = json.loads(output[-1])
    return Run(seconds, env_steps, reached)


def time_to_solve(tasks: list[str], seeds: list[int], max_seconds: float) -> None:
    """Per task: each seed on numpy then torch, each in a fresh process; one line per task
    with the medians."""
    for name in tasks:
        task = TASKS[name]
        target = 1.1 if name == "ppo_cartpole" else 1.3
        runs: dict[str, list] = {framework: [] for framework in FRAMEWORKS}
        for seed in seeds:
            for framework in FRAMEWORKS:
                run = solve_in_fresh_process(name, seed, max_seconds, framework)
                runs[framework].append(run)
                print(
                    f"  {name} seed {seed} {framework}: "
                    f"{'reached' if run.reached else 'NOT reached'} {task.target:g} in "
                    f"{run.seconds:.1f} s, {run.env_steps} env steps",
                    flush=True,
                )
        medians = {
            framework: statistics.median(run.seconds for run in framework_runs)
            for framework, framework_runs in runs.items()
        }
        reached = {
            framework: sum(run.reached for run in framework_runs)
            for framework, framework_runs in runs.items()
        }
        line = (
            f"{name}: numpy median {medians['numpy']:.1f} s ({reached['numpy']}/{len(seeds)} "
            f"reached), torch median {medians['torch']:.1f} s ({reached['torch']}/"
            f"{len(seeds)} reached): torch / numpy {ratio(medians['torch'], medians['numpy'])}"
            f" (target <= {target}; fresh processes, imports included)"
        )
        print(line, flush=True)


#: Run in a fresh interpreter: imports, build and the first train() of the PPO CartPole preset
#: on the framework given as argv[1], each timed from the process's first statement.
BUILD_SCRIPT = """
import time
start = time.perf_counter()
import sys
from trainer import PPOConfig
from trainer.cli.presets import find_preset
config = PPOConfig().environment("CartPole-v1")
find_preset("PPO", "CartPole-v1").apply(config)
config.evaluation(evaluation_interval=None).framework(sys.argv[1]).debugging(seed=0)
algo = config.build()
built = time.perf_counter()
algo.train()
trained = time.perf_counter()
algo.stop()
print(f"{built - start} {trained - built}")
"""


def build_in_fresh_process(framework: str) -> tuple[float, float]:
    """(seconds from a fresh interpreter's first statement to a built Algorithm, imports
    included; seconds of its first train())."""
    output = subprocess.run(
        [sys.executable, "-c", BUILD_SCRIPT, framework],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    ).stdout.split()
    return float(output[-2]), float(output[-1])


def build_and_first_iteration(repeats: int) -> None:
    """Median seconds to a built Algorithm in a fresh process (what a user's script waits
    for, torch's import included) and of the first `train()`, numpy and torch alternated."""
    builds: dict[str, list[float]] = {framework: [] for framework in FRAMEWORKS}
    firsts: dict[str, list[float]] = {framework: [] for framework in FRAMEWORKS}
    for _ in range(repeats):
        for framework in FRAMEWORKS:
            built, first = build_in_fresh_process(framework)
            builds[framework].append(built)
            firsts[framework].append(first)
    build = {framework: statistics.median(times) for framework, times in builds.items()}
    first = {framework: statistics.median(times) for framework, times in firsts.items()}
    line = (
        f"build in a fresh process, imports included (PPO CartPole preset, 2 EnvRunners): "
        f"numpy {build['numpy']:.2f} s, torch {build['torch']:.2f} s: torch / numpy "
        f"{ratio(build['torch'], build['numpy'])} (target <= 1.5); first train(): numpy "
        f"{first['numpy']:.2f} s, torch {first['torch']:.2f} s: "
        f"{ratio(first['torch'], first['numpy'])}"
    )
    print(line, flush=True)


def sampling(repeats: int, steps: int = 20_000, num_envs: int = 8) -> None:
    """Env steps per second of one EnvRunner process with each framework's default module."""
    from trainer import PPOConfig

    algos = {}
    for framework in FRAMEWORKS:
        algos[framework] = (
            PPOConfig()
            .environment("CartPole-v1")
            .framework(framework)
            .env_runners(
                num_env_runners=1,
                num_envs_per_env_runner=num_envs,
                rollout_fragment_length=steps // 4 // num_envs,
            )
            .training(train_batch_size=steps // 4 // num_envs * num_envs)
            .debugging(seed=0)
            .build()
        )
        algos[framework].env_runner_group.sample(min_env_steps=num_envs)  # warm up
    rates: dict[str, list[float]] = {framework: [] for framework in FRAMEWORKS}
    try:
        for _ in range(repeats):
            for framework, algo in algos.items():
                rates[framework].append(env_runner_steps_per_s(algo, steps))
    finally:
        for algo in algos.values():
            algo.stop()
    best = {framework: max(values) for framework, values in rates.items()}
    line = (
        f"sampling (1 EnvRunner, {num_envs} sub-envs, default 256x256 PPO module): numpy "
        f"{best['numpy']:.0f} env steps/s, torch {best['torch']:.0f}: torch / numpy "
        f"{ratio(best['torch'], best['numpy'])}"
    )
    print(line, flush=True)


def rllib_example(timeout_s: float) -> None:
    """multi_agent_cartpole.py --as-test through the launcher, numpy against torch: wall
    seconds to the script's exit, the iterations' seconds and the first time its stop reward
    was reached (the script's own clock)."""
    from bench.rl_module_examples import example_script

    script = example_script(MULTI_AGENT_CARTPOLE[1], folder=MULTI_AGENT_CARTPOLE[0])
    summaries = {}
    for framework, flag in (("numpy", "tf2"), ("torch", "torch")):
        run = run_once(
            [str(script), "--num-agents=2", "--as-test", f"--framework={flag}"], timeout_s
        )
        progress = run["progress"]
        per_iteration = progress[-1][0] / len(progress) if progress else float("nan")
        reached = [seconds for seconds, _, ret in progress if ret >= MULTI_AGENT_STOP_REWARD]
        summaries[framework] = per_iteration
        print(
            f"  multi_agent_cartpole.py --framework={flag} ({framework} here): exit "
            f"{run['returncode']} after {run['seconds']:.1f} s, {len(progress)} iterations of "
            f"{per_iteration:.2f} s, return {MULTI_AGENT_STOP_REWARD:g} "
            + (f"first reached at {reached[0]:.1f} s" if reached else "not reached"),
            flush=True,
        )
    line = (
        "multi_agent_cartpole.py --as-test through the launcher, seconds per iteration: "
        f"numpy (--framework=tf2) {summaries['numpy']:.2f}, torch {summaries['torch']:.2f}: "
        f"torch / numpy {ratio(summaries['torch'], summaries['numpy'])}"
    )
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tasks", nargs="+", choices=SOLVE_TASKS, default=list(SOLVE_TASKS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument("--skip-solve", action="store_true")
    parser.add_argument("--skip-examples", action="store_true")
    args = parser.parse_args()
    # Each result line is printed as it is measured (the indented lines are the single runs).
    build_and_first_iteration(args.repeats)
    sampling(args.repeats)
    if not args.skip_solve:
        time_to_solve(args.tasks, args.seeds, args.max_seconds)
    if not args.skip_examples:
        rllib_example(args.max_seconds)


if __name__ == "__main__":
    main()
