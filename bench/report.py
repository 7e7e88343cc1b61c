"""Runs the benchmarks of bench/ and writes docs/BENCHMARKS.md: one current row per benchmark
(what, the command that ran, its result lines, the target, date, commit and machine), and the
README's summary of it (between its `benchmarks` markers).

A row is replaced when its benchmark runs again and kept as it stands otherwise, so the page
always holds each benchmark's latest run, never a history. `--quick` runs the short subset with
smaller arguments (the command column says which ran); `--only NAME ...` runs the named ones.

Run: python bench/report.py [--quick] [--only ppo_cartpole sampling ...] [--timeout S]
      python bench/report.py --only NAME --args 'ARGS'   (its script with other arguments)
      python bench/report.py --list        (the benchmarks and their commands)
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "BENCHMARKS.md"
README = REPO / "README.md"
README_BEGIN = "<!-- benchmarks: begin (python bench/report.py) -->\n"
README_END = "\n<!-- benchmarks: end -->"
COLUMNS = ("benchmark", "what", "command", "result", "target", "date", "commit", "machine")
NOT_RUN = "not run yet"
#: The commit a copy of the tree without its git history was taken from (see `commit`).
COMMIT_VARIABLE = "BENCH_COMMIT"
#: Between the result lines a script printed, in a table cell.
LINE_BREAK = "<br>"


@dataclass(frozen=True)
class Benchmark:
    """One row of the page: a script of bench/ (or the main job) and how to read its output."""

    name: str
    what: str
    #: The command after `python`; `{tmp}` is a fresh temporary folder.
    args: tuple[str, ...]
    #: Lines of the output that make the result (a regular expression, searched per line).
    keep: str
    target: str
    #: The arguments of the `--quick` run (None: not in the quick subset).
    quick: tuple[str, ...] | None = None
    #: Modules that must be importable for it to run (else it is skipped).
    requires: tuple[str, ...] = ()
    #: Its name in the README's summary ("": not in the summary).
    summary: str = ""
    #: The result lines the README's summary shows (a regular expression; None: the last).
    summary_keep: str | None = None
    #: Seconds it may need at most, where that is longer than `--timeout` (its worst case).
    worst_case_s: float = 0.0
    #: The fewest cores it is run on (else it is skipped and its row kept): a figure that only
    #: means something on a bigger machine than the one the other rows come from.
    min_cores: int = 0


BENCHMARKS = (
    Benchmark(
        "main_job",
        "`python -m trainer`, no flags: PPO on CartPole-v1 with RLlib's tuned "
        "settings until the evaluation's mean return reaches 475",
        ("-m", "trainer", "--output-dir", "{tmp}/run"),
        r"^stopped",
        "< 20 s",
        quick=("-m", "trainer", "--output-dir", "{tmp}/run"),
        summary="the main job, `python -m trainer`",
    ),
    Benchmark(
        "ppo_cartpole",
        "PPO solves CartPole-v1 (return 450; RLlib's tuned settings, "
        "2 EnvRunners), wall time including build",
        ("bench/cartpole_ppo.py",),
        r"^(seed|median)",
        "< 7 s (median of 3 seeds)",
        quick=("bench/cartpole_ppo.py", "--seeds", "0"),
        summary="PPO solves CartPole-v1",
    ),
    Benchmark(
        "dqn_cartpole",
        "DQN solves CartPole-v1 (RLlib's tuned settings: double dueling, "
        "prioritized replay, n-step 2-5), wall time including build",
        ("bench/cartpole_dqn.py",),
        r"^(seed|median)",
        "< 90 s and < 100k env steps",
        quick=("bench/cartpole_dqn.py", "--seeds", "0"),
        summary="DQN solves CartPole-v1",
    ),
    Benchmark(
        "sampling",
        "sampling: 1 EnvRunner process with 1, 8 and 64 envs, the default "
        "256x256 policy and an on_episode_end callback, against a plain SyncVectorEnv loop "
        "with the same forward pass; and with gymnasium's numpy-vectorized CartPole (64 and "
        "256 sub-envs) against gymnasium's own vector loop; with what users attach (8 "
        "sub-envs, a 64x64 policy): the runner bare, with an on_episode_step callback, with a "
        "MeanStdFilter, 8 agents of MultiAgentCartPole, each against the bare loop (the "
        "SyncVectorEnv stepped with the same forward pass and draws, nothing else) and the "
        "plain loop, and against the plain loop with the same thing attached (the calls, a "
        "numpy MeanStdFilter, the multi-agent env stepped plainly)",
        ("bench/sampling.py",),
        r"sub-env|ratio",
        "against the bare loop (8 sub-envs, 64x64): bare and on_episode_step >= 0.85, "
        "MeanStdFilter >= 0.8; ratio (1 and 8 sub-envs), vector_entry_point at 64 sub-envs, "
        "MeanStdFilter and the attached rows >= 0.9 of the plain loop; multi-agent >= 0.85 of "
        "the single-agent runner",
        quick=("bench/sampling.py", "--steps", "10000", "--repeats", "2"),
        summary="sampling against a plain gymnasium loop",
        summary_keep=r"ratio",
    ),
    Benchmark(
        "vs_rllib",
        "RLlib 2.60's tuned examples (the CPU learning tests of its BUILD.bazel, TQC's "
        "Pendulum) through the launcher against under RLlib 2.60 in the same sitting, the two "
        "alternating: wall time of the process to the example's stop reward (`--as-test`), "
        "build and Ray's start included, 3 unseeded runs each side",
        ("bench/vs_rllib.py",),
        r"^(vs_rllib|[a-z0-9_]+/[a-z0-9_]+ |geometric|targets|no ratio)",
        ">= 3x RLlib 2.60 on each example, geometric mean >= 5x, none slower",
        quick=("bench/vs_rllib.py", "--only", "ppo/cartpole_ppo", "--seeds", "0"),
        requires=("ray",),
        summary="RLlib's tuned examples against RLlib 2.60",
        summary_keep=r"^(geometric|targets)",
        worst_case_s=6 * 3600.0,
    ),
    Benchmark(
        "scaling",
        "sampling across cores: 1, 2, 4, ... EnvRunner processes (8 CartPole sub-envs "
        "each, the default policy), env steps/s and the ratio to N x one runner, beside N "
        "plain loops in N processes (free-running, and meeting after every round as the "
        "runners do)",
        ("bench/scaling.py",),
        r"cores;|^\d+ runner",
        "2 runners >= 1.8x one on 2 cores",
        quick=("bench/scaling.py", "--rounds", "4", "--repeats", "1"),
    ),
    Benchmark(
        "learner_scaling",
        "learners across cores: PPO's learner throughput (env steps of train batch per second "
        "of update, 16,000-step batches, 256x256 networks, numpy) with 1 and 2 data-parallel "
        "learners, against one learner in the same run",
        ("bench/scaling.py", "--learners", "1", "2"),
        r"cores;|^\d+ learner",
        "printed: N learners against one (the target, 4 learners >= 3x one, is for 16 cores)",
        quick=("bench/scaling.py", "--learners", "1", "2", "--repeats", "1", "--batch", "4000"),
    ),
    Benchmark(
        "learner_solve",
        "learners to a solve: the main job's fast preset (seed 0) for PPO and SAC on "
        "Pendulum-v1 and APPO on CartPole-v1, with 1 and 2 data-parallel learners (the train "
        "batch split over them, RLlib's per-learner minibatches), seconds against one learner "
        "in the same run",
        ("bench/scaling.py", "--learners", "1", "2", "--solve"),
        r"cores;|learners?:",
        "printed: N learners' time to solve against one learner's",
        worst_case_s=3600,
    ),
    Benchmark(
        "learner_scaling_many_cores",
        "`learner_scaling` on a machine of 8 cores or more: 1, 2, 4 and 8 data-parallel PPO "
        "learners against one",
        ("bench/scaling.py", "--learners", "1", "2", "4", "8"),
        r"cores;|^\d+ learner",
        "4 learners >= 3x one learner",
        min_cores=8,
    ),
    Benchmark(
        "scaling_many_cores",
        "`scaling` on a machine of 8 cores or more: 1, 2, 4, ... EnvRunner processes up to "
        "the machine's cores, env steps/s and the ratio to N x one runner, beside N plain "
        "loops in N processes",
        ("bench/scaling.py",),
        r"cores;|^\d+ runner",
        "printed: N runners against N x one runner and against the plain loops meeting every round",
        min_cores=8,
    ),
    Benchmark(
        "multi_agent",
        "multi-agent: RLlib's tuned multi_agent_cartpole_ppo.py (2 agents, 2 policies, 2 "
        "EnvRunners) to a summed return of 800, build included; a MultiAgentEnvRunner on "
        "MultiAgentCartPole with N agents against an EnvRunner with N CartPole sub-envs",
        ("bench/multi_agent.py",),
        r"^(seed|median|sampling)",
        "< 10 s (median of 3 seeds); sampling ratio >= 0.8",
        quick=("bench/multi_agent.py", "--seeds", "0", "--steps", "8000", "--repeats", "2"),
        summary="multi-agent CartPole to RLlib's stop",
        summary_keep=r"^median",
    ),
    Benchmark(
        "startup",
        "`build()` with 0, 2, and 1 against 5 EnvRunners (forked workers), "
        "against a bare Python process",
        ("bench/startup.py", "--spawn"),
        r"build\(\)|baseline|import trainer",
        "2 EnvRunners < 2 s; 5 within 1.5x of 1",
        quick=("bench/startup.py", "--repeats", "3"),
        summary="`build()` with EnvRunner processes",
        summary_keep=r"2 EnvRunner processes",
    ),
    Benchmark(
        "checkpoint",
        "`save_to_path` / `restore_from_path`, PPO 256x256 with 2 "
        "EnvRunners, against `numpy.save` of the raw arrays",
        ("bench/checkpoint.py",),
        r"^(save|restore|size)",
        "< 100 ms each; size <= 1.2x the raw arrays",
        quick=("bench/checkpoint.py",),
        summary="checkpoint save / restore",
        summary_keep=r"^(save|restore)",
    ),
    Benchmark(
        "learner_ppo",
        "one default PPO update (4000 steps, 30 epochs of 128, 256x256) "
        "against its matrix products alone",
        ("bench/learner.py",),
        r"ms; matrix|^ratio",
        "ratio >= 0.7 (1.0 is the limit)",
        quick=("bench/learner.py", "--repeats", "1"),
    ),
    Benchmark(
        "learner_frameworks",
        "the default PPO update (4000 steps, 30 epochs of 128) with the numpy and the torch "
        "learner on the same episodes, 64x64, 256x256 and 1024x1024 tanh, one thread; and the "
        "torch learner's update computed by torch (a subclass's or a user optimizer's)",
        ("bench/learner.py", "--framework", "torch", "--repeats", "2"),
        r"^PPO update, ",
        "the default torch learner's update at >= 0.7 of its floor at 256x256",
        requires=("torch",),
        summary="PPO update, numpy against torch learner",
        summary_keep=r"256x256",
    ),
    Benchmark(
        "frameworks",
        "the numpy path against the torch path (RLlib's default framework) on the same jobs: "
        "build in a fresh process, EnvRunner sampling, time to solve the main job's presets "
        "(PPO CartPole and Pendulum, DQN CartPole; each run a fresh process, imports "
        "included), RLlib's multi_agent_cartpole.py through the launcher",
        ("bench/frameworks.py",),
        r"^(build|sampling|ppo_|dqn_|multi_agent)",
        "torch / numpy time to solve <= 1.1 on PPO CartPole, <= 1.3 on the others (fresh "
        "processes, imports included); torch build <= 1.5x numpy's",
        quick=("bench/frameworks.py", "--seeds", "0", "--repeats", "1", "--skip-examples"),
        requires=("torch",),
        summary="numpy against torch",
        summary_keep=r"^(ppo_cartpole|build)",
        worst_case_s=3600.0,
    ),
    Benchmark(
        "cnn_ppo",
        "torch PPO with RLlib's default CNN on DotToTarget (10x10 RGB images): time to a "
        "return of 1.5, build included, median of 3 seeds; shared and separate critic CNN",
        ("bench/cnn_ppo.py",),
        r"median",
        "< 45 s on 2 cores",
        requires=("torch",),
    ),
    Benchmark(
        "atari_ppo",
        "PPO on Pong (ALE), rl-zoo's Atari settings (8 envs x 128 steps, 4 epochs of 256, the "
        "Nature CNN on 84x84x4 frames) for 200k frames, against Stable-Baselines3 and RLlib "
        "2.60 in the same run, 3 rounds with the libraries in turns: env steps per second, "
        "learning included, and each ratio's median over the rounds",
        ("bench/atari.py", "--rounds", "3"),
        r"^(localrl|Stable|RLlib|median)",
        "localrl >= 2x Stable-Baselines3 and >= RLlib 2.60 env steps/s (median of 3 rounds)",
        requires=("torch", "ale_py", "stable_baselines3", "ray", "cv2"),
        worst_case_s=3600,
    ),
    Benchmark(
        "mujoco_sac",
        "SAC on HalfCheetah-v5 (MuJoCo), rl-zoo's settings (10k random steps, then one "
        "gradient step of 256 per env step, 256x256 ReLU networks; RLlib's critic without "
        "fusion layers), 20k env steps (10k of them learning), against Stable-Baselines3 in "
        "the same run: env steps per second, learning included",
        ("bench/mujoco_sac.py", "--steps", "20000"),
        r"^(localrl|Stable|ratio|CPU)",
        "localrl's env steps/s above Stable-Baselines3's",
        requires=("torch", "mujoco", "stable_baselines3"),
        worst_case_s=3600,
    ),
    Benchmark(
        "atari_cnn_example",
        "RLlib's rl_modules/custom_cnn_rl_module.py unmodified through the launcher "
        "(TinyAtariCNN, RLlib's Atari wrappers, default PPO settings) on localrl/TinyCatch-v0: "
        "time to a return of 1.0, start included",
        ("bench/rl_module_examples.py", "--example", "cnn"),
        r"^custom_cnn_rl_module",
        "return 1.0 within 20 iterations and 20 min on 2 cores",
        requires=("torch",),
    ),
    Benchmark(
        "lstm_example",
        "RLlib's rl_modules/custom_lstm_rl_module.py --as-test unmodified through the "
        "launcher (LSTMContainingRLModule on StatelessCartPole): time to the script's stop "
        "(mean return 300), start included, 3 runs",
        ("bench/rl_module_examples.py", "--example", "lstm", "--runs", "3"),
        r"^custom_lstm_rl_module",
        "3/3 runs reach 300 within the script's 2M env steps",
        requires=("torch",),
    ),
    Benchmark(
        "lstm_ppo",
        "RLlib's tuned stateless_cartpole_ppo.py settings (default torch module, use_lstm, "
        "vf_share_layers, max_seq_len 20, MeanStdFilter, 3 EnvRunners) to its target, build "
        "included, median of 3 seeds",
        ("bench/lstm_ppo.py",),
        r"^(seed|median)",
        "return 350 within 2M env steps",
        requires=("torch",),
    ),
    Benchmark(
        "dqn_cartpole_torch",
        "DQN with the torch learner and RLlib's DefaultDQNTorchRLModule solves CartPole-v1 "
        "(the dqn_cartpole settings), wall time including build",
        ("bench/cartpole_dqn.py", "--framework", "torch"),
        r"^(seed|torch)",
        "< 100k env steps",
        requires=("torch",),
    ),
    Benchmark(
        "learner_dqn",
        "2000 DQN updates of 32 against their matrix products alone",
        ("bench/learner.py", "--algo", "DQN"),
        r"ms; matrix|^ratio",
        "ratio >= 0.5 (1.0 is the limit)",
    ),
    Benchmark(
        "learner_sac",
        "200 SAC updates of 256 (Pendulum's spaces, RLlib's default model: 256x256 policy, "
        "twin critics with 256x256 encoders and fusion layers) against their matrix products "
        "alone",
        ("bench/learner.py", "--algo", "SAC"),
        r"ms; matrix|^ratio",
        "ratio >= 0.5 (1.0 is the limit)",
    ),
    Benchmark(
        "learner_dreamerv3",
        "one DreamerV3 update with RLlib's example settings (CartPole-v1, model XS, 16 x 64 "
        "replayed steps, 15 dreamed from each) against the matrix products it ran, alone",
        ("bench/learner.py", "--algo", "DreamerV3"),
        r"ms; its|^ratio",
        "ratio >= 0.5 (1.0 is the limit)",
        requires=("torch",),
    ),
    Benchmark(
        "dreamerv3_rllib",
        "DreamerV3 against RLlib 2.60's own DreamerV3 with RLlib's example settings (model XS, "
        "training_ratio 1024) on CartPole-v1 and FrozenLake 2x2: seconds per training "
        "iteration (one env step, one update), fresh processes, the two in turns, 3 rounds",
        ("bench/dreamerv3.py",),
        r"ratio 1024:|failed",
        "localrl / RLlib <= 0.5",
        quick=("bench/dreamerv3.py", "--envs", "cartpole", "--rounds", "1", "--iterations", "3"),
        requires=("torch", "ray"),
        summary="DreamerV3 against RLlib's",
        summary_keep=r"^cartpole",
        worst_case_s=1800.0,
    ),
    Benchmark(
        "evaluation",
        'a PPO iteration with parallel `"auto"` evaluation on 2 runners against one without',
        ("bench/evaluation.py",),
        r"^iteration|^ratio",
        "<= 1.3x",
        quick=("bench/evaluation.py", "--iters", "2", "--repeats", "1"),
    ),
    Benchmark(
        "replay_buffer_state",
        "replay buffer `get_state()` + `ormsgpack.packb`, 50k CartPole transitions",
        ("bench/replay_buffer_state.py",),
        r"^buffer|^baseline|get_state",
        "< 50 ms",
        quick=("bench/replay_buffer_state.py",),
    ),
    Benchmark(
        "replay_buffer_sample",
        "DQN's replay path on a full 50k-step buffer: `add()`, "
        "`sample_transitions(32)` + `update_priorities`",
        ("bench/replay_buffer_sample.py",),
        r"Buffer:|add\(\)|n_step",
        "",
        quick=("bench/replay_buffer_sample.py",),
    ),
    Benchmark(
        "named_objects",
        "a shared counter incremented on every env step of 2 "
        "EnvRunners against the same sampling without it",
        ("bench/named_objects.py",),
        r"server start|no counter|of the baseline",
        "the count exact",
        quick=("bench/named_objects.py", "--steps", "5000", "--repeats", "1"),
    ),
    Benchmark(
        "main_job_overhead",
        "what the command line adds: 30 tuned PPO iterations and a "
        "checkpoint every 10, against a script calling `train()` and `save_to_path()`",
        ("bench/main_job.py",),
        r"^\s+(baseline script|python -m trainer)",
        "<= 1.1x without the plot",
        quick=("bench/main_job.py", "--iterations", "10", "--repeats", "1"),
    ),
    Benchmark(
        "chaos",
        "PPO CartPole (tuned, 2 EnvRunners) with a random runner SIGKILLed "
        "every iteration and envs crashing with p=0.001 per step",
        ("bench/chaos.py", "--seed", "0"),
        r"^without|^under chaos|^kills|^kill ->",
        "reaches 450; restarts == kills; median restart < 1 s",
        summary="training while runners are killed",
        summary_keep=r"^(under chaos|kills)",
    ),
    Benchmark(
        "soak",
        "1,000 PPO iterations (2 EnvRunners): a runner SIGKILLed every 10, a checkpoint "
        "every 10 restored into a second algorithm, a callback calling a named object",
        ("bench/soak.py",),
        r"^iteration \d+: main|^main RSS|^restarts|^checkpoints|^named object",
        "RSS growth < 5% from iteration 100; files and children flat; restarts == kills; "
        "every checkpoint exact",
        quick=("bench/soak.py", "--iterations", "200"),
    ),
    Benchmark(
        "hostile",
        "SIGKILLs during saves, crafted checkpoints, silent clients of the named-object server",
        ("bench/hostile.py", "--kills", "100"),
        r"^SIGKILL|^crafted|^silent|^ratio",
        "0 damaged; every crafted case refused in < 1 s",
        quick=("bench/hostile.py", "--kills", "25"),
    ),
    Benchmark(
        "threads",
        "BLAS threads of the learner and the EnvRunner workers",
        ("bench/threads.py",),
        r"^learner update|^PPO iteration",
        "decide by measurement",
    ),
    Benchmark(
        "ray_backend",
        "the Ray backend: `build()` with 2 actors, an actor killed until "
        "its replacement samples, sampling against worker processes",
        ("bench/ray_backend.py",),
        r"^build|^actor|^sampling|^ratio",
        "build < 2 s; restart median < 2 s; ratio >= 0.8",
        requires=("ray",),
    ),
    Benchmark(
        "tune_grid",
        "Ray Tune: an 8-config PPO grid on CartPole-v1 (10 iterations of 4000 steps each, "
        "a checkpoint at the end) through `trainer.tune.Tuner`, 2 trials at a time on a "
        "local Ray of 2 CPUs (its start included), against the same configs run back to "
        "back by hand in one process, same run",
        ("bench/tune_grid.py",),
        r"^repeat|^ratio",
        "ratio Tune / by hand <= 1.3 on 2 cores",
        quick=("bench/tune_grid.py", "--iterations", "4"),
        requires=("ray.tune",),
    ),
    Benchmark(
        "tune_overhead",
        "Ray Tune: seconds per iteration in a `trainer.tune.Tuner` trial on a local Ray of 2 "
        "CPUs against the same config in process (`build_algo()`), alternating, same run: "
        "PPO and DQN on CartPole-v1 with default settings and RLlib's tuned-example settings, "
        "and DQN with 2 EnvRunner processes; the first iteration of each left out",
        ("bench/tune_overhead.py", "--repeats", "2"),
        r"^repeat|^ratio",
        "ratio Tune trial / in process <= 1.2 for each",
        quick=("bench/tune_overhead.py", "--iterations", "3"),
        requires=("ray.tune",),
    ),
    Benchmark(
        "compare_sb3",
        "against Stable-Baselines3 (rl-zoo's settings): PPO on CartPole, Acrobot, "
        "MountainCar, Pendulum and LunarLander, DQN on CartPole, Acrobot, MountainCar and "
        "LunarLander, SAC on Pendulum, MountainCarContinuous and LunarLanderContinuous, "
        "seeds 0-2, wall time to the env's solved return, each run capped at 150 s (a capped "
        "run has not reached it: its ratio is a bound)",
        ("bench/compare.py", "--max-seconds", "150"),
        r"^(ppo_|dqn_|sac_)\w+ +[-\d]",
        "ratio SB3 / localrl > 1",
        requires=("stable_baselines3",),
        summary="against Stable-Baselines3",
        summary_keep=r".",
        # 12 tasks x 3 seeds x 2 libraries, each run capped at 150 s.
        worst_case_s=12 * 3 * 2 * 150 + 600,
    ),
    Benchmark(
        "compare_sac",
        "SAC against Stable-Baselines3's SAC (rl-zoo's settings) on Pendulum-v1 (-200) and "
        "MountainCarContinuous-v0 (90), seeds 0-2, wall time to the mean return of the last "
        "100 episodes, the main job's default presets, each run capped at 600 s",
        (
            "bench/compare.py",
            "--tasks",
            "sac_pendulum",
            "sac_mountaincar_continuous",
            "--max-seconds",
            "600",
        ),
        r"^sac_\w+ +[-\d]",
        "ratio SB3 / localrl >= 2",
        requires=("stable_baselines3",),
        # 2 tasks x 3 seeds x 2 libraries, each run capped at 600 s.
        worst_case_s=2 * 3 * 2 * 600 + 300,
    ),
    Benchmark(
        "compare_tqc",
        "TQC against Stable-Baselines3-contrib's TQC (rl-zoo's settings) on Pendulum-v1 (-200), "
        "seeds 0-2, wall time to the mean return of the last 100 episodes, the main job's "
        "default preset, each run capped at 600 s",
        ("bench/compare.py", "--tasks", "tqc_pendulum", "--max-seconds", "600"),
        r"^tqc_\w+ +[-\d]",
        "ratio SB3 / localrl >= 2",
        requires=("stable_baselines3", "sb3_contrib"),
        # 3 seeds x 2 libraries, each run capped at 600 s.
        worst_case_s=3 * 2 * 600 + 300,
    ),
    Benchmark(
        "compare_tqc_mountaincar",
        "TQC against Stable-Baselines3-contrib's TQC (rl-zoo's settings, with gSDE) on "
        "MountainCarContinuous-v0 (90), seeds 0-2, wall time to the mean return of the last "
        "100 episodes, the main job's preset, each run capped at 600 s",
        ("bench/compare.py", "--tasks", "tqc_mountaincar_continuous", "--max-seconds", "600"),
        r"^tqc_\w+ +[-\d]",
        "ratio SB3 / localrl >= 2",
        requires=("stable_baselines3", "sb3_contrib"),
        worst_case_s=3 * 2 * 600 + 300,
    ),
    Benchmark(
        "compare_ppo_continuous",
        "PPO against Stable-Baselines3's PPO (rl-zoo's settings) on Pendulum-v1 (-300), "
        "MountainCarContinuous-v0 (90) and LunarLanderContinuous-v3 (200), seeds 0-2, wall time "
        "to the mean return of the last 100 episodes, the main job's default presets, each run "
        "capped at 150 s",
        (
            "bench/compare.py",
            "--tasks",
            "ppo_pendulum",
            "ppo_mountaincar_continuous",
            "ppo_lunarlander_continuous",
            "--max-seconds",
            "150",
        ),
        r"^ppo_\w+ +[-\d]",
        "ratio SB3 / localrl >= 2",
        requires=("stable_baselines3",),
        summary="PPO on continuous control against Stable-Baselines3",
        summary_keep=r"^ppo_",
        # 3 tasks x 3 seeds x 2 libraries, each run capped at 150 s.
        worst_case_s=3 * 3 * 2 * 150 + 300,
    ),
    Benchmark(
        "compare_ppo_pendulum_rllib",
        "PPO with RLlib's tuned Pendulum-v1 settings (--preset rllib) against Stable-Baselines3's "
        "PPO (rl-zoo's settings), seeds 0-2, wall time to a mean return of -300 over the last "
        "100 episodes, each run capped at 300 s",
        (
            "bench/compare.py",
            "--tasks",
            "ppo_pendulum",
            "--preset",
            "rllib",
            "--max-seconds",
            "300",
        ),
        r"^ppo_\w+ +[-\d]",
        "ratio SB3 / localrl >= 1",
        requires=("stable_baselines3",),
        worst_case_s=3 * 2 * 300 + 300,
    ),
    Benchmark(
        "offline",
        "offline data: OfflineData's reading throughput against pyarrow reading the same "
        "parquet files; BC (numpy, torch) to a greedy CartPole return of 450 and CQL to a "
        "Pendulum return of -300 from recorded datasets against RLlib 2.60's with Ray Data, "
        "seeds 0-2 (medians compared), same run",
        ("bench/offline.py",),
        r"^dataset|^reading|^ratio|^BC|^CQL",
        "reading ratio >= 0.8; BC and CQL here at least as fast as RLlib's",
        quick=("bench/offline.py", "--env-steps", "20000", "--repeats", "1", "--skip-rllib"),
        # 2 tasks x 3 seeds x 3 runs, each capped at 600 s (RLlib's with 300 s more), and 2
        # recordings.
        worst_case_s=2 * 3 * 3 * 600 + 2 * 3 * 300 + 2 * 900,
    ),
    Benchmark(
        "appo",
        "APPO against PPO, each with the main job's preset (APPO's: one EnvRunner beside "
        "the learner thread on 2 cores), to a 100-episode training mean of 450 on "
        "CartPole-v1 and -300 on Pendulum-v1, seeds 0-2 (medians compared); env steps/s "
        "while APPO trains against the same EnvRunners sampling alone (APPO's preset and "
        "RLlib's tuned example); the learner thread's busy fraction",
        ("bench/appo.py",),
        r"^cartpole 450|^pendulum -300|^throughput",
        "APPO at or below PPO's time; sampling while training >= 0.8 of sampling alone",
        quick=("bench/appo.py", "--seeds", "0", "--tasks", "cartpole", "--seconds", "5"),
        # 2 tasks x 3 seeds x 2 runs, each capped at 300 s, and 2 x 2 x 20 s of throughput.
        worst_case_s=2 * 3 * 2 * 300 + 120,
    ),
)
BY_NAME = {benchmark.name: benchmark for benchmark in BENCHMARKS}


# -- the table ------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _uncell(text: str) -> str:
    return text.strip().replace("\\|", "|")


def parse_rows(page: str) -> dict[str, dict[str, str]]:
    """The rows of a page this script wrote: `{benchmark: {column: text}}`."""
    rows = {}
    for line in page.splitlines():
        if not line.startswith("| `") or line.startswith("| `benchmark"):
            continue
        cells = [_uncell(cell) for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) != len(COLUMNS):
            raise ValueError(f"{PAGE}: a row of {len(cells)} cells, not {len(COLUMNS)}: {line}")
        row = dict(zip(COLUMNS, cells, strict=True))
        rows[row["benchmark"].strip("`")] = row
    return rows


def render_page(rows: dict[str, dict[str, str]]) -> str:
    """The whole page: every benchmark in BENCHMARKS' order, its latest row or 'not run yet'."""
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by `python bench/report.py`; do not edit. -->",
        "",
        "One row per benchmark: its latest run, with the date, the commit and the machine it ran "
        "on. `python bench/report.py` runs them all and rewrites this page and the README's "
        "summary; `--quick` runs a short subset with smaller arguments (the command column "
        "shows which ran), `--only NAME ...` the named ones; the other rows stay as they are. "
        "Each script prints its result against a baseline measured in the same run where it "
        "has one, so a ratio means more than a time on a busy machine. A row that names the "
        "fewest cores it runs on (`scaling_many_cores`: 8) is skipped on a smaller machine; "
        "on a copy of the tree without its git history, `BENCH_COMMIT=HASH` names the commit "
        "the row was measured at.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for benchmark in BENCHMARKS:
        row = rows.get(benchmark.name) or _not_run_row(benchmark)
        lines.append("| " + " | ".join(_cell(row[column]) for column in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def _not_run_row(benchmark: Benchmark) -> dict[str, str]:
    return {
        "benchmark": f"`{benchmark.name}`",
        "what": benchmark.what,
        "command": _command(benchmark.args),
        "result": NOT_RUN,
        "target": benchmark.target,
        "date": "",
        "commit": "",
        "machine": "",
    }


def readme_summary(rows: dict[str, dict[str, str]]) -> str:
    """The README's summary: the chosen benchmarks' results, from the page's rows."""
    lines = ["| benchmark | result | target | date |", "|---|---|---|---|"]
    for benchmark in BENCHMARKS:
        row = rows.get(benchmark.name)
        if benchmark.summary and row is not None and row["result"] != NOT_RUN:
            lines.append(
                f"| {_cell(benchmark.summary)} | "
                f"{_cell(_short(benchmark, row['result']))} | {_cell(row['target'])} | "
                f"{row['date'].split(' ')[0]} |"
            )
    return "\n".join(lines)


def _short(benchmark: Benchmark, result: str) -> str:
    """The result lines the summary shows: those `summary_keep` matches, else the last (a
    median or a ratio), where the script prints several."""
    lines = result.split(LINE_BREAK)
    if benchmark.summary_keep is None or result.startswith("failed"):
        return lines[-1]
    return LINE_BREAK.join(line for line in lines if re.search(benchmark.summary_keep, line))


def write_readme_summary(rows: dict[str, dict[str, str]]) -> None:
    readme = README.read_text(encoding="utf-8")
    start, stop = readme.index(README_BEGIN) + len(README_BEGIN), readme.index(README_END)
    README.write_text(readme[:start] + readme_summary(rows) + readme[stop:], encoding="utf-8")


# -- running --------------------------------------------------------------------------------
def _command(args: tuple[str, ...]) -> str:
    shown = ["python", *("DIR" + a[len("{tmp}") :] if a.startswith("{tmp}") else a for a in args)]
    return "`" + " ".join(shown) + "`"


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what `platform` says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    cpu = cpu_model()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs ({cpu}), "
        f"Python {platform.python_version()}, load {load:.1f} at the start"
    )


def commit() -> str:
    """HEAD's short hash, "+changes" where tracked files differ from it. A copy of the tree
    without its git history (one sent to a bigger machine) names its commit in BENCH_COMMIT."""
    if os.environ.get(COMMIT_VARIABLE):
        return os.environ[COMMIT_VARIABLE]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=30
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + ("+changes" if dirty else "")


def _arguments(
    benchmark: Benchmark, quick: bool, script_args: tuple[str, ...] | None
) -> tuple[str, ...]:
    """What runs: the benchmark's script with its arguments (`--quick`'s where it has them,
    `script_args` instead where given)."""
    args = benchmark.quick if quick and benchmark.quick is not None else benchmark.args
    return args if script_args is None else (args[0], *script_args)


def run(
    benchmark: Benchmark, quick: bool, timeout: float, script_args: tuple[str, ...] | None = None
) -> dict[str, str]:
    """Runs one benchmark in a fresh process, for at most `timeout` seconds or its worst case,
    whichever is longer (with `script_args`: its script with those arguments); returns its
    row."""
    args = _arguments(benchmark, quick, script_args)
    timeout = max(timeout, benchmark.worst_case_s)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    row = {
        "benchmark": f"`{benchmark.name}`",
        "what": benchmark.what,
        "command": _command(args),
        "target": benchmark.target,
        "date": started,
        "commit": commit(),
        "machine": machine(),
    }
    with tempfile.TemporaryDirectory(prefix="bench_") as tmp:
        argv = [sys.executable, *(a.replace("{tmp}", tmp) for a in args)]
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        try:
            done = subprocess.run(
                argv,
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            row["result"] = f"failed: no result within the {timeout:.0f} s limit"
            return row
    kept = [
        " ".join(line.split())
        for line in done.stdout.splitlines()
        if re.search(benchmark.keep, line)
    ]
    if done.returncode != 0 or not kept:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        row["result"] = f"failed: exit status {done.returncode}: {last}"
    else:
        row["result"] = LINE_BREAK.join(kept)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="only the short subset, with smaller arguments"
    )
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", choices=sorted(BY_NAME), help="only these benchmarks"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds each benchmark may take (default 1800; longer for one whose worst case "
        "is longer)",
    )
    parser.add_argument(
        "--args",
        metavar="'ARGS'",
        help="with one --only benchmark: its script's arguments instead of the row's (one "
        "quoted string, e.g. --args '--from-logs LOG'); the command column shows them",
    )
    parser.add_argument("--list", action="store_true", help="print the benchmarks and exit")
    args = parser.parse_args(argv)
    script_args = None if args.args is None else tuple(shlex.split(args.args))
    if script_args is not None and (not args.only or len(args.only) != 1):
        parser.error(f"--args {args.args!r}: give exactly one benchmark with --only")
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout}: must be > 0 seconds")
    if args.list:
        for benchmark in BENCHMARKS:
            quick = _command(benchmark.quick) if benchmark.quick else "(not in --quick)"
            print(f"{benchmark.name:<22} {_command(benchmark.args)}   --quick: {quick}")
        return 0
    chosen = (
        [BY_NAME[name] for name in args.only]
        if args.only
        else [b for b in BENCHMARKS if not args.quick or b.quick is not None]
    )
    rows = parse_rows(PAGE.read_text(encoding="utf-8")) if PAGE.exists() else {}
    for benchmark in chosen:
        missing = [m for m in benchmark.requires if importlib.util.find_spec(m) is None]
        if missing:
            print(f"{benchmark.name}: skipped (needs {', '.join(missing)})", flush=True)
            continue
        cores = os.cpu_count() or 1
        if cores < benchmark.min_cores:
            print(
                f"{benchmark.name}: skipped (needs {benchmark.min_cores} cores; this machine "
                f"has {cores})",
                flush=True,
            )
            continue
        print(
            f"{benchmark.name}: {_command(_arguments(benchmark, args.quick, script_args))}",
            flush=True,
        )
        rows[benchmark.name] = run(benchmark, args.quick, args.timeout, script_args)
        print(f"  {rows[benchmark.name]['result']}", flush=True)
        # Written after each one, so an interrupted report keeps what finished.
        PAGE.write_text(render_page(rows), encoding="utf-8")
        write_readme_summary(rows)
    PAGE.write_text(render_page(rows), encoding="utf-8")
    write_readme_summary(rows)
    print(f"wrote {PAGE.relative_to(REPO)} and the README's summary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
