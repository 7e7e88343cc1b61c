"""This project against RLlib 2.60 on RLlib's own tuned examples, side by side in one sitting:
the wall time of `python -m trainer run SCRIPT ARGS` (here, the RLlib launcher) against that of
`python SCRIPT ARGS` (RLlib 2.60, the same virtualenv) until the example's stop reward is reached.

What is timed: the whole process, from its start (Python, imports, Ray's start under RLlib, the
algorithm's build) to its exit, each run in its own process group in a fresh folder (`HOME`
pointed into it, so Tune's `~/ray_results` stays there), killed whole at the time limit along
with the processes Ray starts outside the group. Every run gets `--as-test`: the script stops
at its stop reward and exits non-zero when its budget (env steps, iterations) ran out first. A
run *reaches* when it exits 0 within the limit; one that does not counts as the time limit
(a lower bound on its time to the reward). An example that neither side reaches in any run has
no ratio, not even a bound: it is named on a line of its own and left out of the targets. The two sides alternate (seed 0: here, then RLlib;
seed 1: RLlib, then here; ...), so the machine's drift hits both alike. One run at a time.

Seeds: RLlib 2.60's `add_rllib_example_script_args` defines no `--seed` (a script's
`parse_args()` refuses one, exit status 2, on both sides) and the tuned examples set none:
each "seed" is an unseeded repeat, labelled by its number; both sides draw their own seeds.

The examples: the CPU learning tests of RLlib 2.60's `rllib/BUILD.bazel` (`py_test` entries
tagged `learning_tests`, not `manual`, no GPUs; their scripts are under
`rllib/examples/algorithms/`, which the wheel does not ship), plus `tqc/pendulum_tqc.py`
(BUILD.bazel has no TQC entry; `bench/rllib_example_args.py` runs it with `--as-test` as its
SAC siblings). `EXAMPLES` below names each with its stop as the script sets it.

Arguments (the same on both sides): the CI entry's (`NOT_IN_WHEEL` in
`bench/rllib_example_args.py` where it has the script, else `Example.ci_args`, from the same
BUILD.bazel), less its resource ones, which are fitted to this machine: `--num-cpus=N`
(`os.cpu_count()`; more where RLlib's trial and Ray Data's workers need more logical CPUs to
start at all: the offline examples, which CI runs on 8 to 32 CPUs), `--num-learners=0` (the
learner in the main process, as CI's "local" learning tests), `--num-env-runners=` the CI
entry's or the script's count, cut to what fits beside the main process and the example's
evaluation runners in N CPUs (RLlib leaves a trial that asks for more CPUs than Ray has pending
forever), and `--num-aggregator-actors-per-learner=0` where the script or CI entry asks for
aggregator actors (each holds a CPU). `python bench/vs_rllib.py --list` prints them.

Offline examples (BC, MARWIL, CQL, IQL) read a dataset of RLlib's repository, which the wheel
does not ship: they run from a copy laid out as RLlib's checkout beside a dataset this project
records (`RECORDED_DATA`, `checkout_copy` and `recorded_dataset` of `bench/rllib_examples.py`,
cached under `bench/.cache/recorded_data`; recorded once, before any timed run): CartPole's is
`train_w_bc_finetune_w_ppo.py`'s (a PPO policy, sampled), Pendulum's (CQL, IQL; RLlib's is
`pendulum-v1_enormous`) a SAC policy trained here and recorded the same way.

RLlib's texts: `bench/vs_rllib_manifest.json` names each file (its path in ray-project/ray, the
commit and session-store id it was read from, its sha256 and why that version). The texts stay
out of the repository, in the git-ignored cache `bench/.cache/vs_rllib/<path>`; an example
whose file is missing there or differs from the manifest's sha256 is reported and not run.
The bench reaches no network: `--fill-from DIR` fills the cache from a checkout of
ray-project/ray (`DIR/rllib/...`), a folder laid out as `rllib/examples` (what
`bench/rllib_examples.py --extra-root` takes) or a bare git mirror (`git show COMMIT:PATH`),
checking each file's sha256; else read each file at the manifest's commit (or store id) and
write it there by hand. `--fetch-check` says what is missing.

Left out (they cannot run to their stop on 2 CPU cores without GPUs):
- Atari: `ppo/atari_ppo`, `dqn/atari_dqn`, `dqn/atari_rainbow`, `dqn/benchmark_dqn_atari`,
  `appo/atari_appo`, `appo/pong_appo`, `appo/multi_agent_pong_appo` (CI: multi-GPU only),
  `impala/pong_impala`, `impala/pong_impala_pb2_hyperopt`, `sac/atari_sac`: ale-py is
  installed, but they learn over tens of millions of env steps (days here);
  `bc/benchmark_rlunplugged_atari_pong_bc` also reads RL Unplugged's dataset from the cloud.
- MuJoCo: `ppo/mujoco_ppo`, `ppo/benchmark_ppo_mujoco`, `appo/mujoco_appo`,
  `appo/halfcheetah_appo`, `sac/mujoco_sac`, `sac/halfcheetah_sac`, `sac/humanoid_sac`,
  `sac/benchmark_sac_mujoco`, `tqc/mujoco_tqc`, `tqc/humanoid_tqc`: mujoco is installed, but
  millions of env steps each (RLlib's estimate for `mujoco_tqc`: 10 h on a GPU); no CI entry.
- Footsies: `ppo/multi_agent_footsies_ppo`, `appo/multi_agent_footsies_appo`: they play
  against the Footsies game server (a binary they download) on 6 to 20 EnvRunners plus
  evaluation runners; APPO's CI entries are GPU only.
- GPU only: `impala/tictactoe_impala` (its only CI entry: 2 GPU learners, 16 CPUs).
- Budgets far above 2M env steps: `ppo/multi_agent_stateless_cartpole_ppo` (4M, 2 LSTM
  policies), `appo/pendulum_appo` (100M; CI gives it 6 CPUs).
- DreamerV3 (`dreamerv3/*`): no learning test in BUILD.bazel; its world model trains for hours
  on CPU even on CartPole.
- Not a learning test of RLlib 2.60's BUILD.bazel (no tested stop; several are later additions):
  `ppo/cartpole_heavy_ppo`, `ppo/stateless_cartpole_ppo_with_lstm`,
  `ppo/cartpole_ppo_with_inference_component`, `ppo/cartpole_ppo_lightning_*` (PyTorch
  Lightning), `ppo/memory_leak_test_ppo_new_stack`, `appo/stateless_cartpole_appo_with_lstm`,
  `appo/multi_agent_stateless_cartpole_appo`, `appo/tictactoe_appo`,
  `appo/multi_agent_connect4_appo`, `impala/heavy_cartpole_impala`,
  `impala/multi_agent_cartpole_impala`, `impala/multi_agent_stateless_cartpole_impala`,
  `impala/stateless_cartpole_impala`, `impala/pendulum_impala`,
  `impala/cartpole-impala-separate-losses`, `dqn/stateless_cartpole_dqn_with_lstm`,
  `dqn/tictactoe_dqn`, `sac/stateless_cartpole_sac_with_lstm`, `sac/tictactoe_sac`,
  `bc/pendulum_bc`, `mappo/*` and the custom-algorithm scripts.

Targets: RLlib's median over this project's (the ratio) >= 3 for every example, their geometric
mean >= 5, and none below 1 (none slower here). A ratio is a bound where a side did not reach
in every run (`>=`: RLlib did not; `<=`: this project did not; `?`: both).

The whole table (21 examples, 3 seeds, both sides) takes hours on 2 cores: it may be taken in
parts (`--only`, `--seeds`), each part's output saved, and `--from-logs` prints the table of
the saved parts (each example's sides still ran in one sitting).

Run: python bench/vs_rllib.py [--only NAME ...] [--seeds 0 1 2] [--timeout 1200] [--here-only]
     python bench/vs_rllib.py --list | --fetch-check | --fill-from DIR
     python bench/vs_rllib.py --from-logs LOG [LOG ...]
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.compare import ratio_cell  # noqa: E402
from bench.report import machine  # noqa: E402
from bench.rllib_example_args import NOT_IN_WHEEL, RECORDED_DATA  # noqa: E402
from bench.rllib_examples import (  # noqa: E402
    _last_error_line,
    checkout_copy,
    git_commit,
    ray_version,
    run_in_group,
)
from bench.user_scripts import RUN_MARKER_VAR, _kill_marked  # noqa: E402

MANIFEST = REPO / "bench" / "vs_rllib_manifest.json"
CACHE = REPO / "bench" / ".cache" / "vs_rllib"
#: Where RLlib's example scripts are in its repository (`RECORDED_DATA`'s and `NOT_IN_WHEEL`'s
#: keys are relative to it).
EXAMPLES_ROOT = "rllib/examples/"
HERE, RLLIB = "here", "RLlib"
#: CI arguments this bench sets itself (fitted to the machine; `--as-test` always).
RESOURCE_ARGS = (
    "--as-test",
    "--num-cpus",
    "--num-learners",
    "--num-env-runners",
    "--num-gpus-per-learner",
    "--num-aggregator-actors-per-learner",
)
TARGET_EACH, TARGET_GEOMEAN, TARGET_NONE_SLOWER = 3.0, 5.0, 1.0

#: The Pendulum dataset of the CQL and IQL examples (RLlib's `pendulum-v1_enormous`, recorded
#: from an expert policy), in `RECORDED_DATA`'s form: this project's SAC trained to a return of
#: -200 (its fast preset gets there in well under 60k steps), then its policy recorded.
PENDULUM_DATA = (
    "offline/tests/data/pendulum/pendulum-v1_enormous",
    [
        "--algo",
        "SAC",
        "--env",
        "Pendulum-v1",
        "--stop-reward",
        "-200",
        "--stop-timesteps",
        "60000",
    ],
    ["--env-steps", "100000"],
)
#: RLlib's CartPole dataset (`cartpole-v1_large`), as `train_w_bc_finetune_w_ppo.py` has it.
CARTPOLE_DATA = RECORDED_DATA["offline_rl/train_w_bc_finetune_w_ppo.py"]


@dataclass(frozen=True)
class Example:
    """One tuned example, as its script and CI entry set it up."""

    #: Its path in ray-project/ray.
    path: str
    #: The stop, as the script sets it (with the CI entry's arguments).
    stop: str
    #: The EnvRunners the script asks for when its CI entry gives no `--num-env-runners` (its
    #: `set_defaults`, its config, else the algorithm's default).
    env_runners: int = 0
    #: The CI entry's arguments, for a script `NOT_IN_WHEEL` has no entry for (BUILD.bazel's).
    ci_args: tuple[str, ...] = ("--as-test",)
    #: The CPUs RLlib's trial holds besides the main process and the EnvRunners: evaluation
    #: and offline-evaluation runners, one each.
    other_cpus: int = 0
    #: The CPUs Ray Data's `map_batches` asks for (offline examples): concurrency x num_cpus.
    data_cpus: int = 0
    #: The script asks for aggregator actors.
    aggregators: bool = False
    #: The dataset it reads (`RECORDED_DATA`'s form), None for an online example.
    data: tuple[str, list[str], list[str]] | None = None

    @property
    def name(self) -> str:
        """`ALGO/SCRIPT` (the path below `rllib/examples/algorithms/`, no `.py`)."""
        return self.path.removeprefix(EXAMPLES_ROOT + "algorithms/").removesuffix(".py")

    @property
    def key(self) -> str:
        """The path below `rllib/examples/` (`NOT_IN_WHEEL`'s and `RECORDED_DATA`'s keys)."""
        return self.path.removeprefix(EXAMPLES_ROOT)


def _algorithms(script: str) -> str:
    return f"{EXAMPLES_ROOT}algorithms/{script}.py"


EXAMPLES: list[Example] = [
    Example(_algorithms("ppo/cartpole_ppo"), "return 450 within 300k env steps", env_runners=2),
    Example(
        _algorithms("ppo/multi_agent_cartpole_ppo"),
        "return 900 summed over 2 agents within 400k env steps",
        env_runners=2,
        ci_args=("--as-test", "--num-agents=2"),
    ),
    Example(
        _algorithms("ppo/cartpole_truncated_ppo"),
        "greedy evaluation return 80 on CartPole-v1 (training on 50-step episodes) within "
        "500k env steps",
        env_runners=2,
        other_cpus=1,
    ),
    Example(
        _algorithms("ppo/stateless_cartpole_ppo"),
        "return 350 within 2M env steps (LSTM, no velocities)",
        env_runners=3,
    ),
    Example(_algorithms("ppo/pendulum_ppo"), "return -300 within 400k env steps", env_runners=2),
    Example(
        _algorithms("ppo/multi_agent_pendulum_ppo"),
        "return -600 summed over 2 agents within 500k env steps",
        env_runners=2,
        ci_args=("--as-test", "--num-agents=2"),
    ),
    Example(_algorithms("appo/cartpole_appo"), "return 450 within 2M env steps"),
    Example(
        _algorithms("appo/multi_agent_cartpole_appo"),
        "return 700 summed over 2 agents within 2M env steps",
    ),
    Example(
        _algorithms("appo/stateless_cartpole_appo"),
        "return 300 within 2M env steps (LSTM, no velocities)",
    ),
    Example(
        _algorithms("impala/cartpole_impala"),
        "return 200 (CI's --stop-reward) within 2M env steps",
    ),
    Example(_algorithms("dqn/cartpole_dqn"), "return 450 within 200k env steps"),
    Example(
        _algorithms("dqn/multi_agent_cartpole_dqn"),
        "return 300 summed over 2 agents within 500k env steps",
        ci_args=("--as-test", "--num-agents=2", "--num-cpus=4"),
    ),
    Example(_algorithms("sac/pendulum_sac"), "return -250 within 20k env steps"),
    Example(
        _algorithms("sac/mountaincar_sac"),
        "return -250 within 20k env steps (MountainCar-v0: every episode returns at least "
        "-200, so the first one reaches it)",
    ),
    Example(
        _algorithms("sac/multi_agent_pendulum_sac"),
        "return -900 summed over 2 agents within 500k env steps",
    ),
    Example(
        _algorithms("tqc/pendulum_tqc"),
        "return -250 within 20k env steps",
        env_runners=4,
        aggregators=True,
    ),
    Example(
        _algorithms("bc/cartpole_bc"),
        "evaluation return 350 within 350 iterations",
        other_cpus=1,
        data_cpus=2,
        data=CARTPOLE_DATA,
    ),
    Example(
        _algorithms("bc/cartpole_bc_with_offline_evaluation"),
        "evaluation return 350 within 350 iterations (offline evaluation every iteration)",
        ci_args=("--as-test", "--offline-evaluation-interval=1", "--num-offline-eval-runners=2"),
        other_cpus=2,
        data_cpus=2,
        data=CARTPOLE_DATA,
    ),
    Example(
        _algorithms("marwil/cartpole_marwil"),
        "evaluation return 250 within 500k env steps",
        other_cpus=1,
        data_cpus=2,
        data=CARTPOLE_DATA,
    ),
    Example(
        _algorithms("cql/pendulum_cql"),
        "greedy evaluation return -700 within 800k env steps",
        other_cpus=1,
        data_cpus=2,
        data=PENDULUM_DATA,
    ),
    Example(
        _algorithms("iql/pendulum_iql"),
        "evaluation return -200 within 1250 iterations",
        ci_args=("--as-test", "--num-cpus=32"),
        other_cpus=1,
        data_cpus=4,
        data=PENDULUM_DATA,
    ),
]


def ci_args(example: Example) -> list[str]:
    """The CI entry's arguments: `NOT_IN_WHEEL`'s first (CPU) entry for the script where it
    has one, else `example.ci_args`."""
    entries = NOT_IN_WHEEL.get(example.key)
    return list(entries[0][1]) if entries else list(example.ci_args)


def _value(args: list[str], option: str) -> str | None:
    for arg in args:
        if arg.startswith(option + "="):
            return arg.split("=", 1)[1]
    return None


def planned_args(example: Example, cpus: int) -> list[str]:
    """The arguments both sides get (see the module docstring)."""
    ci = ci_args(example)
    ci_runners = _value(ci, "--num-env-runners")
    asked = int(ci_runners) if ci_runners is not None else example.env_runners
    runners = min(asked, max(0, cpus - 1 - example.other_cpus))
    num_cpus = max(cpus, 1 + runners + example.other_cpus + example.data_cpus)
    aggregators = example.aggregators or int(_value(ci, "--num-aggregator-actors-per-learner") or 0)
    return [
        "--as-test",
        *(arg for arg in ci if arg.split("=", 1)[0] not in RESOURCE_ARGS),
        f"--num-cpus={num_cpus}",
        "--num-learners=0",
        f"--num-env-runners={runners}",
        *(["--num-aggregator-actors-per-learner=0"] if aggregators else []),
    ]


# -- the cache of RLlib's texts ---------------------------------------------------------------


def load_manifest() -> dict:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def manifest_entry(manifest: dict, path: str) -> dict | None:
    return next((entry for entry in manifest["files"] if entry["path"] == path), None)


def cache_problem(entry: dict | None) -> str | None:
    """Why the file cannot run from the cache (None: it can)."""
    if entry is None:
        return "not in bench/vs_rllib_manifest.json"
    path = CACHE / entry["path"]
    if not path.is_file():
        return f"not in {CACHE.relative_to(REPO)} (--fill-from DIR, see the docstring)"
    if hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
        return f"{CACHE.relative_to(REPO)}/{entry['path']}: sha256 differs from the manifest"
    return None


def fill_from(manifest: dict, source: Path) -> int:
    """Copies the manifest's files from `source` (a checkout of ray-project/ray, a folder laid
    out as `rllib/examples`, or a bare git mirror) into the cache, each only when its sha256 is
    the manifest's. Returns the number written."""
    written = 0
    for entry in manifest["files"]:
        if cache_problem(entry) is None:
            continue
        candidates = [source / entry["path"], source / entry["path"].removeprefix(EXAMPLES_ROOT)]
        data = next((c.read_bytes() for c in candidates if c.is_file()), None)
        if data is None:
            done = subprocess.run(
                ["git", "--git-dir", str(source), "show", f"{entry['commit']}:{entry['path']}"],
                capture_output=True,
                timeout=60,
            )
            data = done.stdout if done.returncode == 0 else None
        if data is None:
            print(f"  {entry['path']}: not found in {source}")
        elif hashlib.sha256(data).hexdigest() != entry["sha256"]:
            print(f"  {entry['path']}: the copy in {source} differs from the manifest's sha256")
        else:
            target = CACHE / entry["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
    return written


def fetch_check(manifest: dict) -> int:
    """Prints the manifest's files missing from the cache (or differing); 0 when complete."""
    problems = [(e["path"], cache_problem(e)) for e in manifest["files"]]
    for path, problem in problems:
        if problem:
            print(f"{path}: {problem}")
    missing = sum(problem is not None for _, problem in problems)
    print(
        f"{len(problems) - missing} of {len(problems)} files complete in "
        f"{CACHE.relative_to(REPO)}" + (f"; {missing} missing or differing" if missing else "")
    )
    return 1 if missing else 0


# -- running ------------------------------------------------------------------------------------


@dataclass
class Run:
    side: str
    seed: int
    #: Seconds from the process's start to its exit (or to the time limit).
    wall: float
    reached: bool
    detail: str = ""
    #: The seconds the medians count: `wall` when reached, else the time limit.
    seconds: float = 0.0


def run_env(work: Path, side: str, marker: str) -> dict[str, str]:
    env = dict(
        os.environ,
        HOME=str(work),
        PYTHONUNBUFFERED="1",
        RAY_USAGE_STATS_ENABLED="0",
        MPLBACKEND="Agg",
        **{RUN_MARKER_VAR: marker},
    )
    env.pop("LOCALRL_RLLIB_LAUNCHER", None)
    if side == HERE:
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), *paths])
    return env


def run_once(example: Example, side: str, seed: int, args: list[str], timeout: float) -> Run:
    """One run of the example on one side, in a fresh folder (see the module docstring)."""
    marker = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="vs-rllib-") as folder:
        work = Path(folder)
        env = run_env(work, side, marker)
        script = CACHE / example.path
        if example.data is not None:  # the dataset is recorded (once) before the clock starts
            script = checkout_copy(
                example.key, script, work, run_env(work, HERE, marker), example.data
            )
        if side == HERE:
            command = [sys.executable, "-m", "trainer", "run", str(script), *args]
        else:
            command = [sys.executable, str(script), *args]
        start = time.monotonic()
        try:
            returncode, timed_out, text = run_in_group(command, work, env, timeout)
        finally:
            wall = time.monotonic() - start
            _kill_marked(marker)  # Ray's raylet and workers leave the process group
    reached = returncode == 0 and not timed_out
    if timed_out:
        detail = f"timeout after {timeout:.0f} s"
    elif returncode != 0:
        detail = f"exit status {returncode}: {_last_error_line(text)[:200]}"
    else:
        detail = ""
    return Run(side, seed, wall, reached, detail, wall if reached else max(wall, timeout))


# -- the summary ----------------------------------------------------------------------------------


def median_cell(runs: list[Run]) -> str:
    if not runs:
        return "-"
    value = statistics.median(run.seconds for run in runs)
    return ("" if all(run.reached for run in runs) else ">=") + f"{value:.1f} s"


def reached_cell(runs: list[Run]) -> str:
    return f"{sum(run.reached for run in runs)}/{len(runs)}" if runs else "-"


def ratio(here: list[Run], rllib: list[Run]) -> float:
    return statistics.median(r.seconds for r in rllib) / statistics.median(r.seconds for r in here)


def select(only: list[str] | None) -> list[Example]:
    """The examples `--only` names: an exact name, else a glob or text the name contains."""
    if not only:
        return list(EXAMPLES)
    names = {example.name for example in EXAMPLES}
    return [
        example
        for example in EXAMPLES
        if any(
            pattern == example.name
            or (
                pattern not in names
                and (fnmatch.fnmatch(example.name, pattern) or pattern in example.name)
            )
            for pattern in only
        )
    ]


def targets(ratios: dict[str, float], bounds: int = 0) -> list[str]:
    """The lines saying whether the targets are met (`bounds`: how many ratios are bounds)."""
    geomean = math.exp(statistics.fmean(math.log(value) for value in ratios.values()))
    lowest = min(ratios, key=ratios.__getitem__)
    below_each = [f"{name} {value:.2f}" for name, value in ratios.items() if value < TARGET_EACH]
    slower = [f"{name} {value:.2f}" for name, value in ratios.items() if value < 1.0]

    def verdict(met: bool, failing: list[str]) -> str:
        return "met" if met else "NOT met" + (f" ({', '.join(failing)})" if failing else "")

    return [
        f"geometric mean of RLlib/here over {len(ratios)} examples: {geomean:.2f}; "
        f"lowest: {ratios[lowest]:.2f} ({lowest})"
        + (f"; {bounds} of the ratios are bounds (a side did not reach)" if bounds else ""),
        f"targets: each >= {TARGET_EACH:g}x: {verdict(not below_each, below_each)}; "
        f"geomean >= {TARGET_GEOMEAN:g}x: {verdict(geomean >= TARGET_GEOMEAN, [])}; "
        f"none slower (>= {TARGET_NONE_SLOWER:g}x): {verdict(not slower, slower)}",
    ]


def summarize(results: dict[str, dict[str, list[Run]]]) -> int:
    """Prints the table of `results` (example: side: runs) and the targets' lines."""
    if not results:
        return 1
    print(
        f"\n{'example':<42} {'here (median)':>14} {'RLlib (median)':>15} {'RLlib/here':>11}"
        f" {'reached here':>13} {'RLlib':>6}"
    )
    ratios: dict[str, float] = {}
    bounds = 0
    #: Examples neither side reached in any run: both times are limits, so there is no ratio
    #: (not even a bound) to hold against the targets.
    neither: list[str] = []
    for name, runs in results.items():
        here, rllib = runs[HERE], runs.get(RLLIB, [])
        if rllib and not any(run.reached for run in here + rllib):
            neither.append(name)
        elif rllib:
            ratios[name] = ratio(here, rllib)
            bounds += not all(run.reached for run in here + rllib)
        print(
            f"{name:<42} {median_cell(here):>14} {median_cell(rllib):>15} "
            f"{ratio_cell(here, rllib) if rllib else '-':>11} "
            f"{reached_cell(here):>13} {reached_cell(rllib):>6}"
        )
    if ratios:
        for line in targets(ratios, bounds):
            print(line)
        if neither:
            print(f"no ratio (neither side reached its stop in any run): {', '.join(neither)}")
    else:
        print(
            f"(--here-only: no ratios; targets: each >= {TARGET_EACH:g}x, geomean >= "
            f"{TARGET_GEOMEAN:g}x, none slower)"
        )
    return 0


#: A run's line as `main` prints it, and the header line (the limit of the runs after it).
_RUN_LINE = re.compile(
    r"^  (?P<name>\S+) seed (?P<seed>-?\d+): (?P<side>here|RLlib)\s+(?P<wall>[\d.]+) s  "
    r"(?P<outcome>reached|not reached \((?P<detail>.*)\))$"
)
_HEADER_LINE = re.compile(r"^vs_rllib: .* limit (?P<limit>[\d.]+) s per run$")


def runs_from_logs(
    paths: list[Path], headers: list[str] | None = None
) -> dict[str, dict[str, list[Run]]]:
    """The runs earlier invocations printed (their output saved to `paths`), by example and
    side: a long table taken in several sittings, each example's two sides in one. A run of the
    same example, seed and side in a later file replaces the earlier one. Each file's header
    lines (its commit, machine and limit) go into `headers`, tagged with the file's name."""
    found: dict[tuple[str, int, str], Run] = {}
    for path in paths:
        limit = None
        for line in path.read_text(encoding="utf-8").splitlines():
            header = _HEADER_LINE.match(line)
            if header:
                limit = float(header["limit"])
                if headers is not None:
                    headers.append(f"{line} [{path.name}]")
                continue
            run = _RUN_LINE.match(line)
            if run is None:
                continue
            if limit is None:
                raise ValueError(f"{path}: a run's line before the vs_rllib header: {line!r}")
            wall, reached = float(run["wall"]), run["outcome"] == "reached"
            found[run["name"], int(run["seed"]), run["side"]] = Run(
                run["side"],
                int(run["seed"]),
                wall,
                reached,
                run["detail"] or "",
                wall if reached else max(wall, limit),
            )
    order = {example.name: index for index, example in enumerate(EXAMPLES)}
    results: dict[str, dict[str, list[Run]]] = {}
    for (name, _, side), run in sorted(
        found.items(), key=lambda item: (order.get(item[0][0], len(order)), item[0])
    ):
        results.setdefault(name, {}).setdefault(side, []).append(run)
    for runs in results.values():
        runs.setdefault(HERE, [])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="an example's name (ALGO/SCRIPT, e.g. ppo/cartpole_ppo), else a glob or text of "
        "names (repeatable: any of them)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--timeout",
        type=float,
        default=1200.0,
        help="seconds each run may take (default 1200); a run past it counts as not reached",
    )
    parser.add_argument(
        "--list", action="store_true", help="print the examples and their arguments; no runs"
    )
    parser.add_argument(
        "--here-only", action="store_true", help="run this project's side only (no RLlib)"
    )
    parser.add_argument(
        "--fetch-check", action="store_true", help="check the cache of RLlib's texts; no runs"
    )
    parser.add_argument(
        "--from-logs",
        type=Path,
        nargs="+",
        metavar="LOG",
        help="no runs: the table and targets of the runs earlier invocations printed (their "
        "output saved to LOG files; a later file's run of the same example, seed and side "
        "replaces an earlier one)",
    )
    parser.add_argument(
        "--fill-from",
        type=Path,
        metavar="DIR",
        help="fill the cache from DIR (a checkout of ray-project/ray, a folder laid out as "
        "rllib/examples, or a bare git mirror), then check it",
    )
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout}: must be > 0 seconds")
    if args.from_logs:
        headers: list[str] = []
        results = runs_from_logs(args.from_logs, headers)
        if not results:
            parser.error(f"--from-logs: no runs in {', '.join(map(str, args.from_logs))}")
        print("\n".join(headers))
        return summarize(results)
    manifest = load_manifest()
    if args.fill_from:
        print(f"wrote {fill_from(manifest, args.fill_from.expanduser())} file(s)")
        return fetch_check(manifest)
    if args.fetch_check:
        return fetch_check(manifest)
    examples = select(args.only)
    if not examples:
        parser.error(f"--only {args.only!r} matches no example (--list names them)")
    cpus = os.cpu_count() or 1
    if args.list:
        for example in examples:
            problem = cache_problem(manifest_entry(manifest, example.path))
            print(
                f"{example.name}: {example.stop}\n    args: "
                + " ".join(planned_args(example, cpus))
                + (f"\n    not runnable: {problem}" if problem else "")
            )
        print(f"{len(examples)} examples (the module docstring lists those left out, and why)")
        return 0
    sides = [HERE] if args.here_only else [HERE, RLLIB]
    print(
        f"vs_rllib: this project (commit {git_commit()}) vs RLlib {ray_version()}; "
        f"{machine()}; seeds {' '.join(map(str, args.seeds))}, limit {args.timeout:.0f} s per run",
        flush=True,
    )
    results: dict[str, dict[str, list[Run]]] = {}
    for example in examples:
        problem = cache_problem(manifest_entry(manifest, example.path))
        if problem:
            print(f"{example.name}: not run: {problem}", flush=True)
            continue
        planned = planned_args(example, cpus)
        runs: dict[str, list[Run]] = {side: [] for side in sides}
        for index, seed in enumerate(args.seeds):
            for side in sides if index % 2 == 0 else sides[::-1]:
                run = run_once(example, side, seed, planned, args.timeout)
                runs[side].append(run)
                outcome = "reached" if run.reached else f"not reached ({run.detail})"
                print(
                    f"  {example.name} seed {seed}: {side:<5} {run.wall:7.1f} s  {outcome}",
                    flush=True,
                )
        results[example.name] = runs
    return summarize(results)


if __name__ == "__main__":
    sys.exit(main())
