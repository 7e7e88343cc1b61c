"""The learning runs to their targets that the suite checks only briefly: each was a long test
the suite skipped; the suite keeps a short seeded check of its learning signal (named under
each entry) and this script runs it to its full target.

Prints one line per run: PASS/FAIL/SKIP, the name, the seconds (the build included), the env
steps sampled, and what was reached. Exits 1 when a run failed.

Run: python bench/learning_targets.py [--only NAME ...] [--list]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from helpers import train_until  # noqa: E402


@dataclass
class Outcome:
    passed: bool
    env_steps: int
    detail: str


@dataclass
class Target:
    name: str
    #: What it runs.
    runs: str
    #: Its target, in words.
    target: str
    #: The suite's short check of the same run (a node id).
    short_check: str
    run: Callable[[], Outcome]
    #: Why it cannot run here (a missing optional package), or None.
    skip: Callable[[], str | None] = lambda: None


def _trained_to(
    config: Any,
    target: float,
    *,
    seconds: float = math.inf,
    iterations: int | None = None,
    digits: int = 1,
    label: str | None = None,
) -> Outcome:
    """Builds `config` and trains it until its mean return reaches `target` (within `seconds`
    and `iterations`: `train_until`); passes when it did. `label`: the target as shown."""
    algo = config.build()
    try:
        returns, result = train_until(algo, target, seconds, iterations=iterations)
    finally:
        algo.stop()
    best = _best(returns)
    shown = label or f"{target:g}"
    return Outcome(
        best >= target, _steps(result), f"best mean return {best:.{digits}f} (target {shown})"
    )


def _best(returns: list[float]) -> float:
    """The best of `train_until`'s returns (NaN: an iteration in which no episode ended)."""
    return max((value for value in returns if not math.isnan(value)), default=-math.inf)


def _steps(result: dict) -> int:
    return int(result.get("num_env_steps_sampled_lifetime", 0))


# -- the continuous-action PPO presets through the main job --------------------------------------
#: env -> the env steps the main job may take to the preset's stop reward (seed 0).
CONTINUOUS_PPO_BUDGETS = {
    "Pendulum-v1": 200_000,
    "MountainCarContinuous-v0": 200_000,
    "LunarLanderContinuous-v3": 2_000_000,
}


def _preset_run(env: str) -> Callable[[], Outcome]:
    def run() -> Outcome:
        from trainer.cli.presets import find_preset

        stop = find_preset("PPO", env).stop_reward
        with tempfile.TemporaryDirectory() as folder:
            done = subprocess.run(
                [sys.executable, "-m", "trainer", "--algo", "PPO", "--env", env, "--seed", "0"]
                + ["--stop-reward", str(stop)]
                + ["--stop-timesteps", str(CONTINUOUS_PPO_BUDGETS[env])]
                + ["--output-dir", str(Path(folder) / "run")],
                capture_output=True,
                text=True,
                timeout=1200,
                cwd=REPO,
            )
        found = re.search(
            r"^stopped \((.*)\) after \d+ iterations, (\d+) env steps", done.stdout, re.M
        )
        steps = int(found.group(2)) if found else 0
        reached = (
            done.returncode == 0
            and found is not None
            and found.group(1).startswith("reached mean return")
            and f">= {stop:.0f}" in found.group(1)
        )
        detail = found.group(1) if found else f"exit {done.returncode}: {done.stderr[-300:]}"
        return Outcome(reached, steps, detail)

    return run


def _needs_box2d() -> str | None:
    if importlib.util.find_spec("Box2D") is None:
        return "LunarLander needs Box2D (pip install 'gymnasium[box2d]')"
    return None


# -- IMPALA and APPO on CartPole -------------------------------------------------------------------
def _impala_run(config_name: str, framework: str) -> Callable[[], Outcome]:
    """tests/test_impala.py's settings: CartPole to a mean return of 150 within 60 s, the
    learner thread learning while 2 EnvRunner processes sample."""

    def run() -> Outcome:
        from test_impala import _APPO_TRAINING, _cartpole

        from trainer.algorithms.appo import APPOConfig
        from trainer.algorithms.impala import IMPALAConfig

        if config_name == "IMPALA":
            config = _cartpole(IMPALAConfig)
        else:
            config = _cartpole(APPOConfig, **_APPO_TRAINING)
        return _trained_to(config.framework(framework), 150, seconds=60)

    return run


def _two_agent_run(config_name: str) -> Callable[[], Outcome]:
    """tests/test_impala.py's `two_agent_cartpole`, seed 0: a module per agent on 2-agent
    CartPole to a summed mean return of 200 within 90 s."""

    def run() -> Outcome:
        from test_impala import two_agent_cartpole

        from trainer.algorithms.appo import APPOConfig
        from trainer.algorithms.impala import IMPALAConfig

        config_class = IMPALAConfig if config_name == "IMPALA" else APPOConfig
        return _trained_to(two_agent_cartpole(config_class), 200, seconds=90)

    return run


def _recurrent_appo() -> Outcome:
    """APPO with an LSTM (torch) on CartPole to a mean return of 60 (about 22 at random)
    within 90 s."""
    from test_impala import recurrent_appo_cartpole

    return _trained_to(recurrent_appo_cartpole(seed=0), 60, seconds=90)


def _dict_action_run(config_name: str, framework: str) -> Callable[[], Outcome]:
    """tests/test_action_spaces.py's TargetEnv (a Dict action: Discrete, MultiDiscrete and Box
    leaves), seed 0, lr 0.002, iterations of 0.5 s: a mean return of 22 (about 10 at random)
    within 120 s."""

    def run() -> Outcome:
        from test_action_spaces import asynchronous_dict_action_config

        config = asynchronous_dict_action_config(config_name, framework, lr=0.002)
        return _trained_to(config.reporting(min_time_s_per_iteration=0.5), 22, seconds=120)

    return run


# -- torch: LSTM, CNN, multi-agent LSTM --------------------------------------------------------
def _lstm_stateless_cartpole() -> Outcome:
    """tests/test_torch_lstm.py's settings: StatelessCartPole from a random policy's ~22 to a
    mean return of 100 within 30 iterations (about 20 on seed 0)."""
    from test_torch_lstm import stateless_cartpole_lstm_ppo

    return _trained_to(stateless_cartpole_lstm_ppo(seed=0), 100, iterations=30)


def _cnn_dot_to_target() -> Outcome:
    """tests/test_torch_cnn.py's settings: RLlib's default CNN on DotToTarget in an EnvRunner
    process, from random play's ~0.15 to a mean return of 1.0 within 30 iterations."""
    from test_torch_cnn import learning_config

    return _trained_to(learning_config(seed=0), 1.0, iterations=30, digits=2, label="1.0")


def _multi_agent_lstm() -> Outcome:
    """Two LSTM policies (torch) on 2-agent CartPole with an EnvRunner process: a summed mean
    return above 200 (random play: about 45) within 6 iterations of 2000 steps."""
    from test_multi_agent_recurrent import recurrent_multi_agent_cartpole

    return _trained_to(
        recurrent_multi_agent_cartpole(seed=0, train_batch_size=2000),
        math.nextafter(200.0, math.inf),
        iterations=6,
        label="> 200",
    )


# -- learner pieces, fault tolerance, multi-agent DQN ------------------------------------------
def _negated_rewards() -> Outcome:
    """APPO with a learner piece that negates CartPole's rewards learns to fall: the last two
    mean returns of 4 one-second iterations below 15 (random: ~22); the same run without the
    piece above 40."""
    from test_learner_pieces import NegateRewardsByBatchItems, asynchronous

    from trainer.algorithms.appo import APPOConfig

    runs = {}
    steps = 0
    for name, training in (
        ("negated", {"learner_connector": lambda *spaces: NegateRewardsByBatchItems()}),
        ("plain", {}),
    ):
        algo = asynchronous(APPOConfig, **training).build()
        try:
            results = [algo.train() for _ in range(4)]
        finally:
            algo.stop()
        runs[name] = [r["env_runners"]["episode_return_mean"] for r in results]
        steps += _steps(results[-1])
    passed = min(runs["negated"][-2:]) < 15 and max(runs["plain"][-2:]) > 40
    shown = {k: [round(v, 1) for v in values] for k, values in runs.items()}
    return Outcome(passed, steps, f"returns {shown} (negated < 15, plain > 40 at the end)")


def _flaky_env() -> Outcome:
    """PPO through FaultInjectionEnv (a crash with p=0.003 per step, 400-step samples, most of
    them cut) to a mean return of 60 within 60 iterations, with at least 0.7 restarts per
    iteration."""
    from test_fault_tolerance_misfires import flaky_env_ppo

    with flaky_env_ppo(seed=2).build() as algo:
        returns, result = train_until(algo, 60, math.inf, iterations=60)
        best = _best(returns)
        restarts = algo.env_runner_group.num_remote_worker_restarts()
        iterations = algo.iteration
    passed = best >= 60 and restarts >= 0.7 * iterations
    return Outcome(
        passed,
        _steps(result),
        f"best mean return {best:.1f} (target 60), {restarts} restarts in {iterations} iterations",
    )


def _multi_agent_dqn() -> Outcome:
    """Two DQN policies on 2-agent CartPole with 2 EnvRunner processes: within 12 iterations of
    1000 steps the summed mean return reaches 150 and 3 times the first iteration's."""
    from test_multi_agent_dqn import two_policies_with_env_runner_processes

    algo = two_policies_with_env_runner_processes(seed=3).build()
    try:
        first = algo.train()
        first_return = first["env_runners"]["episode_return_mean"]
        best, result = first_return, first
        for _ in range(11):
            result = algo.train()
            best = max(best, result["env_runners"]["episode_return_mean"])
            if best >= 3 * first_return and best >= 150:
                break
    finally:
        algo.stop()
    passed = best >= 3 * first_return and best >= 150
    return Outcome(
        passed, _steps(result), f"first {first_return:.1f}, best {best:.1f} (target 150, 3x)"
    )


def _distributional_dqn() -> Outcome:
    """tests/test_dqn_distributional.py's `learning_config` (51 atoms, an EnvRunner process),
    seed 0: CartPole to a mean return of 150 within 40 iterations of 1000 env steps."""
    from test_dqn_distributional import learning_config

    return _trained_to(learning_config(), 150, iterations=40)


# -- offline: IQL and CQL on the recorded continuous bandit ---------------------------------------
#: algorithm -> (the iterations, the learning rate the suite's short check raised to 1e-2).
OFFLINE_BANDIT_RUNS = {"IQL": (60, 3e-3), "CQL": (40, 3e-3)}


def _offline_bandit(algorithm: str) -> Callable[[], Outcome]:
    """tests/test_iql.py's and tests/test_cql.py's bandit with their former rates of 3e-3
    (IQL's three, CQL's critic's): from uniformly random recorded actions (cloning them scores
    about -0.25), a greedy evaluation return above -0.1 after the iterations."""

    def run() -> Outcome:
        iterations, lr = OFFLINE_BANDIT_RUNS[algorithm]
        with tempfile.TemporaryDirectory() as folder:
            if algorithm == "IQL":
                from test_iql import _bandit_config

                config = _bandit_config(Path(folder), "torch", lr=lr, iterations=iterations)
            else:
                from test_cql import bandit_learning_config

                config = bandit_learning_config(
                    Path(folder), "torch", critic_lr=lr, iterations=iterations
                )
            algo = config.build()
            try:
                for _ in range(iterations):
                    result = algo.train()
            finally:
                algo.stop()
        reached = result["evaluation"]["env_runners"]["episode_return_mean"]
        return Outcome(
            reached > -0.1, _steps(result), f"evaluation return {reached:.3f} (target > -0.1)"
        )

    return run


# -- RLlib's curriculum example ------------------------------------------------------------------
def _curriculum() -> Outcome:
    """RLlib's curriculum_learning.py (tests/test_curriculum.py's copy) through the launcher,
    seed 1, --as-test: solved (task 2's return 1.0) within twice the 164,000 env steps RLlib's
    docstring reports, passing tasks 1 and 2 on the way."""
    from test_curriculum import RLLIB_CURRICULUM

    twice_rllibs_steps = 2 * 164_000
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "curriculum_learning.py"
        script.write_text(RLLIB_CURRICULUM)
        done = subprocess.run(
            [sys.executable, "-m", "trainer", "run", str(script), "--seed=1", "--as-test"]
            + [f"--stop-timesteps={twice_rllibs_steps}"],
            capture_output=True,
            text=True,
            timeout=1200,
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    found = re.findall(r"^SOLVED (\S+) STEPS (\d+)$", done.stdout, re.M)
    if done.returncode != 0 or not found:
        return Outcome(False, 0, f"exit {done.returncode}: {(done.stdout + done.stderr)[-300:]}")
    solved, steps = float(found[0][0]), int(found[0][1])
    tasks = "TASK 1 at" in done.stdout and "TASK 2 at" in done.stdout
    passed = solved == 1.0 and steps <= twice_rllibs_steps and tasks
    return Outcome(passed, steps, f"task_solved {solved}, tasks 1 and 2 reached: {tasks}")


# -- RLlib's example scripts to their --as-test targets, through the launcher ----------------------
def _as_test_run(run_script: Callable[[Path], str], reached: str) -> Callable[[], Outcome]:
    """Runs an example script with `--as-test` (it exits non-zero unless its target is
    reached) through `python -m trainer run`; passes when its output says `reached`."""

    def run() -> Outcome:
        with tempfile.TemporaryDirectory() as folder:
            output = run_script(Path(folder))
        rows = re.findall(r"^iter +\d+ \| total time \(s\) +[\d.]+ \| ts (\d+)", output, re.M)
        steps = int(rows[-1]) if rows else 0
        found = reached in output
        return Outcome(found, steps, "reached" if found else output[-300:].replace("\n", " | "))

    return run


def _sac_pendulum_script(folder: Path) -> str:
    from test_sac_examples import PENDULUM, _script

    script = _script(folder, PENDULUM)
    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", str(script), "--as-test"],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=folder,
    )
    return done.stdout + done.stderr


def _vpg_example_script(folder: Path) -> str:
    from test_vpg import EXAMPLE

    done = subprocess.run(
        [sys.executable, "-m", "trainer", "run", str(EXAMPLE)]
        + ["--as-test", "--stop-reward", "50", "--stop-iters", "600"],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=folder,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    return done.stdout + done.stderr


def _shared_encoder_script(folder: Path) -> str:
    from test_multi_agent_examples import run_example

    output, _ = run_example(folder, "multi_agent/shared_encoder_cartpole.py", "--as-test")
    return output


TARGETS = [
    *(
        Target(
            f"ppo-preset-{env}",
            f"python -m trainer --algo PPO --env {env} --seed 0 (the preset tuned here)",
            f"the preset's stop reward within {budget:,} env steps",
            f"tests/test_presets.py::test_the_continuous_ppo_presets_start_learning[{env}]",
            _preset_run(env),
            _needs_box2d if env.startswith("LunarLander") else lambda: None,
        )
        for env, budget in CONTINUOUS_PPO_BUDGETS.items()
    ),
    *(
        Target(
            f"{name}-cartpole",
            f"{name.split('-')[0]} ({name.split('-')[-1] if '-' in name else 'numpy'}) on "
            "CartPole, 2 EnvRunner processes sampling while the learner thread learns",
            "a mean return of 150 within 60 s",
            f"tests/test_impala.py::test_starts_learning_cartpole_while_the_env_runners_sample[{name}]",
            _impala_run(name.split("-")[0], "torch" if name.endswith("torch") else "numpy"),
        )
        for name in ("IMPALA", "IMPALA-torch", "APPO-torch")
    ),
    Target(
        "APPO-cartpole",
        "APPO (numpy) on CartPole, 2 EnvRunner processes sampling while the learner thread learns",
        "a mean return of 150 within 60 s",
        "tests/test_impala.py::test_learns_cartpole_while_the_env_runners_sample[APPO]",
        _impala_run("APPO", "numpy"),
    ),
    *(
        Target(
            f"multi-agent-{name.lower()}-cartpole",
            f"{name} (numpy), a module per agent on 2-agent CartPole, 1 EnvRunner process",
            "a summed mean return of 200 within 90 s",
            "tests/test_impala.py::test_multi_agent_modules_learn_each_on_their_agents_steps"
            f"[{name}]",
            _two_agent_run(name),
        )
        for name in ("IMPALA", "APPO")
    ),
    Target(
        "recurrent-appo-cartpole",
        "APPO with an LSTM (torch) on CartPole, 1 EnvRunner process",
        "a mean return of 60 within 90 s",
        "tests/test_impala.py::test_a_recurrent_appo_starts_learning_a_task_only_memory_solves",
        _recurrent_appo,
    ),
    *(
        Target(
            f"{name.lower()}-dict-action",
            f"{name.split('-')[0]} ({'torch' if name.endswith('torch') else 'numpy'}) on a Dict "
            "action (Discrete, MultiDiscrete, Box leaves), 1 EnvRunner process",
            "a mean return of 22 within 120 s",
            f"tests/test_action_spaces.py::test_asynchronous_algorithms_learn_a_dict_action[{name}]",
            _dict_action_run(name.split("-")[0], "torch" if name.endswith("torch") else "numpy"),
        )
        for name in ("APPO", "IMPALA-torch")
    ),
    Target(
        "lstm-ppo-stateless-cartpole",
        "PPO with an LSTM (torch) on StatelessCartPole, the local EnvRunner",
        "a mean return of 100 within 30 iterations of 1000 steps",
        "tests/test_torch_lstm.py::test_lstm_ppo_starts_learning_a_task_only_memory_solves",
        _lstm_stateless_cartpole,
    ),
    Target(
        "cnn-ppo-dot-to-target",
        "PPO with RLlib's default CNN (torch) on DotToTarget, 1 EnvRunner process",
        "a mean return of 1.0 within 30 iterations of 1000 steps",
        "tests/test_torch_cnn.py::test_ppo_with_the_default_cnn_starts_learning_dot_to_target_in_an_env_runner_process",
        _cnn_dot_to_target,
    ),
    Target(
        "multi-agent-lstm-ppo-cartpole",
        "PPO, two LSTM policies (torch) on 2-agent CartPole, 1 EnvRunner process",
        "a summed mean return above 200 within 6 iterations of 2000 steps",
        "tests/test_multi_agent_recurrent.py::test_a_recurrent_multi_agent_ppo_starts_learning_cartpole",
        _multi_agent_lstm,
    ),
    Target(
        "appo-learner-piece-negates-rewards",
        "APPO on CartPole with a learner connector piece negating the rewards, and without it",
        "negated: the last two returns below 15; plain: above 40",
        "tests/test_learner_pieces.py::test_the_learner_thread_trains_on_the_rewards_its_pieces_wrote",
        _negated_rewards,
    ),
    Target(
        "ppo-flaky-env",
        "PPO, 2 EnvRunner processes on FaultInjectionEnv(p_crash=0.003), restarted for ever",
        "a mean return of 60 within 60 iterations, >= 0.7 restarts per iteration",
        "tests/test_fault_tolerance_misfires.py::test_a_flaky_env_with_an_explicit_budget_keeps_training_and_learning",
        _flaky_env,
    ),
    Target(
        "multi-agent-dqn-cartpole",
        "DQN, two policies on 2-agent CartPole, 2 EnvRunner processes",
        "a summed mean return of 150 and 3x the first iteration's within 12 iterations",
        "tests/test_multi_agent_dqn.py::test_two_policies_learn_with_env_runner_processes",
        _multi_agent_dqn,
    ),
    Target(
        "distributional-dqn-cartpole",
        "DQN with num_atoms=51 (numpy) on CartPole, 1 EnvRunner process",
        "a mean return of 150 within 40 iterations of 1000 env steps",
        "tests/test_dqn_distributional.py::test_distributional_dqn_starts_learning_cartpole",
        _distributional_dqn,
    ),
    *(
        Target(
            f"{algorithm.lower()}-bandit-torch",
            f"{algorithm} (torch) on 3000 recorded steps of a continuous bandit, rates of "
            f"{OFFLINE_BANDIT_RUNS[algorithm][1]:g}",
            f"a greedy evaluation return above -0.1 after {OFFLINE_BANDIT_RUNS[algorithm][0]} "
            "iterations of 5 updates",
            f"tests/test_{algorithm.lower()}.py::test_{algorithm.lower()}_learns_better_actions_"
            "than_the_recorded_ones[torch]",
            _offline_bandit(algorithm),
        )
        for algorithm in OFFLINE_BANDIT_RUNS
    ),
    Target(
        "rllib-curriculum-example",
        "RLlib's curriculum_learning.py through `python -m trainer run`, seed 1, --as-test",
        "solved within 328,000 env steps (twice RLlib's reported 164,000), tasks 1 and 2 reached",
        "tests/test_curriculum.py::test_rllibs_curriculum_example_runs_and_learns_task_0",
        _curriculum,
    ),
    Target(
        "rllib-sac-pendulum-example",
        "RLlib's tuned Pendulum SAC script (learning_tests_pendulum_sac) through the launcher",
        "--as-test: a mean return of -250 within 20,000 env steps",
        "tests/test_sac_examples.py::test_tuned_pendulum_sac_script_trains_two_iterations_through_the_launcher",
        _as_test_run(
            _sac_pendulum_script, "`env_runners/episode_return_mean` of -250.0 reached! ok"
        ),
    ),
    Target(
        "rllib-vpg-example",
        "RLlib's vpg_custom_algorithm.py, unmodified, through the launcher",
        "--as-test: a mean return of 50 within 600 iterations",
        "tests/test_vpg.py::test_rllibs_vpg_example_runs_unmodified_through_the_launcher",
        _as_test_run(_vpg_example_script, "`env_runners/episode_return_mean` of 50.0 reached! ok"),
    ),
    Target(
        "rllib-shared-encoder-example",
        "RLlib's multi_agent/shared_encoder_cartpole.py through the launcher",
        "--as-test: a combined mean return of 600 within 100,000 env steps",
        "tests/test_multi_agent_examples.py::test_shared_encoder_cartpole_runs_rllibs_ci_iterations",
        _as_test_run(
            _shared_encoder_script, "`env_runners/episode_return_mean` of 600.0 reached! ok"
        ),
    ),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these entries only")
    parser.add_argument("--list", action="store_true", help="list the entries and exit")
    args = parser.parse_args(argv)
    names = [t.name for t in TARGETS]
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        parser.error(f"unknown --only {unknown}; the entries: {', '.join(names)}")
    chosen = [t for t in TARGETS if not args.only or t.name in args.only]
    if args.list:
        for t in chosen:
            print(f"{t.name}: {t.runs}; target: {t.target}; in the suite: {t.short_check}")
        return 0
    failed = 0
    for t in chosen:
        reason = t.skip()
        if reason is not None:
            print(f"SKIP {t.name}: {reason}", flush=True)
            continue
        start = time.perf_counter()
        try:
            outcome = t.run()
        except Exception as error:  # one run's crash is its failure, the others still run
            outcome = Outcome(False, 0, f"raised {type(error).__name__}: {error}")
        seconds = time.perf_counter() - start
        failed += not outcome.passed
        print(
            f"{'PASS' if outcome.passed else 'FAIL'} {t.name}: {seconds:.1f} s, "
            f"{outcome.env_steps} env steps; {outcome.detail} [target: {t.target}]",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
