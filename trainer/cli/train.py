"""`train`: the main job. With no flags, PPO on CartPole-v1 with RLlib's tuned-example settings
(`trainer.cli.presets`) until the env's reward threshold (475), printing the preset and the
settings first.

Settings come from the algorithm's defaults, then the preset of (algorithm, env) if RLlib has a
tuned example for it (`--preset none`: RLlib's plain defaults), then `--config FILE` (JSON or
TOML, see `trainer.cli.config_file`), then the flags. The run folder (`--output-dir`, default
`localrl_results/<ALGO>_<env>_<time>`) gets params.json, run.json (algorithm and stop
criteria), result.json, progress.csv, checkpoints and learning_curve.png (see
`trainer.cli.run_folder`). Ctrl-C finishes the iteration, saves a checkpoint and stops;
`--resume` continues the run from its latest checkpoint with its own settings and stop criteria.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import glob
import logging
import math
import os
import shlex
import time
import traceback
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from trainer.algorithms import registry
from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig, ConfigError
from trainer.algorithms.checkpointing import load_class_and_config
from trainer.algorithms.registry import ALGORITHM_NAMES, DEFAULT_ALGORITHM
from trainer.checkpoints import CheckpointError, CheckpointManager, open_checkpoint
from trainer.cli import learning_curve
from trainer.cli.config_file import ConfigFileError, apply_config_file, read_config_file
from trainer.cli.extras import (
    PLOT,
    RAY,
    TENSORBOARD,
    TORCH,
    VIDEO,
    install_command,
    installed,
    missing_note,
    require,
    require_for_config,
    require_installed,
)
from trainer.cli.interrupt import StopRequest
from trainer.cli.learning_curve import PLOT_FILE, write_learning_curve
from trainer.cli.multi_agent import (
    add_default_policies,
    register_checkpoint_env,
    register_named_env,
)
from trainer.cli.options import (
    NO_LIMIT,
    float_or_none,
    json_object,
    layer_sizes,
    non_negative_int,
    positive_float,
    positive_int,
)
from trainer.cli.presets import (
    PRESET_FAST,
    PRESET_NONE,
    PRESET_RLLIB,
    Preset,
    find_preset,
    no_preset_line,
    other_choices,
)
from trainer.cli.progress import ProgressDisplay
from trainer.cli.run_folder import RESULT_FILE, RunFolder, plain
from trainer.cli.stop import Progress, StopCriteria
from trainer.cli.tensorboard import create_writer, import_in_background
from trainer.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME, TRAINING_ITERATION
from trainer.runners.env_runner_group import prestart_workers
from trainer.util.log import log_formatter, set_library_log_level

if TYPE_CHECKING:
    from trainer.algorithms.algorithm import Algorithm

#: `--algo`'s choices: the registered algorithms (`trainer.algorithms.registry`).
ALGORITHMS = ALGORITHM_NAMES
RESULTS_ROOT = "localrl_results"
DEFAULT_ENV = "CartPole-v1"
#: Without any stop criterion: the env's reward threshold, with this many iterations at most.
DEFAULT_MAX_ITERATIONS = 200
#: The main job's checkpoint schedule (a --config file or the flags change it).
DEFAULT_CHECKPOINTING = {
    "checkpoint_frequency": 10,
    "num_to_keep": 3,
    "checkpoint_score_attribute": "env_runners/episode_return_mean",
    "checkpoint_at_end": True,
}

#: Flags that set an AlgorithmConfig setting: flag -> (builder method, setting).
SETTING_FLAGS = {
    "--num-env-runners": ("env_runners", "num_env_runners"),
    "--num-envs-per-env-runner": ("env_runners", "num_envs_per_env_runner"),
    "--backend": ("env_runners", "backend"),
    "--ray-address": ("env_runners", "ray_address"),
    "--framework": ("framework", "framework"),
    "--seed": ("debugging", "seed"),
    "--lr": ("training", "lr"),
    "--train-batch-size": ("training", "train_batch_size"),
    "--minibatch-size": ("training", "minibatch_size"),
    "--num-epochs": ("training", "num_epochs"),
    "--hiddens": ("rl_module", "fcnet_hiddens"),
    "--activation": ("rl_module", "fcnet_activation"),
}
STOP_FLAGS = {
    "--stop-iters": "iterations",
    "--stop-timesteps": "env_steps",
    "--stop-reward": "mean_return",
    "--stop-seconds": "seconds",
}
#: Settings the header leaves out of its list of changed settings: shown on lines of their own
#: (the env, the framework, the checkpoint schedule).
NOT_LISTED = frozenset({"env", "framework_str", *DEFAULT_CHECKPOINTING})
#: The longest value the header shows of one setting (a policies dict can be long).
LISTED_VALUE_CHARS = 80
#: Where the main job's last lines suggest recording a video, in the run folder.
VIDEO_FILE = "episode.gif"
#: What a GIF of a classic-control env needs (the video extra).
VIDEO_MODULES = ("PIL", "pygame")
#: The frameworks the networks and learners run on.
FRAMEWORKS = ("numpy", "torch")


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "train",
        help="train an algorithm (the default command)",
        description="Train an algorithm on a gymnasium env. With no flags: PPO on CartPole-v1 "
        "with RLlib's tuned-example settings until solved. Settings come from the "
        "algorithm's defaults, then the preset (--preset), then --config, then the "
        "flags.",
    )
    parser.add_argument(
        "--algo",
        type=str.upper,
        choices=sorted(ALGORITHMS),
        default=None,
        help="algorithm (default PPO)",
    )
    parser.add_argument(
        "--env", default=None, help=f"gymnasium id or registered name (default {DEFAULT_ENV})"
    )
    parser.add_argument(
        "--env-config",
        type=json_object,
        default=None,
        help="JSON object passed to the env as env_config",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help="JSON or TOML file of AlgorithmConfig settings (and a [stop] table); the flags win",
    )
    parser.add_argument(
        "--preset",
        choices=[PRESET_FAST, PRESET_RLLIB, PRESET_NONE],
        default=PRESET_FAST,
        help="fast (default): the preset that solves the task soonest that this project "
        "knows (settings tuned here where they beat RLlib's tuned example, e.g. SAC on "
        "Pendulum-v1; else as rllib); rllib: RLlib's tuned-example settings for the "
        "algorithm and env when RLlib has one, else the settings tuned here; none: "
        "RLlib's plain defaults",
    )
    stop = parser.add_argument_group(
        "stop criteria (the first one reached stops; default: the env's reward threshold or "
        f"{DEFAULT_MAX_ITERATIONS} iterations)"
    )
    stop.add_argument("--stop-iters", type=positive_int, default=None, help="iterations")
    stop.add_argument("--stop-timesteps", type=positive_int, default=None, help="env steps sampled")
    stop.add_argument(
        "--stop-reward",
        type=float_or_none,
        default=None,
        help="mean episode return (of the evaluation when the run stops on the evaluation's; "
        f"{NO_LIMIT}: no return criterion)",
    )
    stop.add_argument(
        "--stop-seconds",
        type=positive_float,
        default=None,
        help="seconds of training (counted across resumes)",
    )
    run = parser.add_argument_group("run folder and checkpoints")
    run.add_argument(
        "--output-dir",
        default=None,
        help=f"the run folder (default {RESULTS_ROOT}/<ALGO>_<env>_<time>)",
    )
    run.add_argument(
        "--checkpoint-frequency",
        type=non_negative_int,
        default=None,
        help="save every N iterations (0: only at the end; default 10)",
    )
    run.add_argument(
        "--num-to-keep",
        type=positive_int,
        default=None,
        help="keep the N checkpoints with the best mean return, plus the latest (default 3)",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --output-dir (default: the newest run of "
        "--algo on --env) from its latest checkpoint",
    )
    run.add_argument(
        "--trust-pickle",
        action="store_true",
        help="with --resume: take the run's config from its checkpoint's pickle "
        "file (for configs with lambdas or code defined in a script) even when it is "
        "not signed with your key (your own are read without this flag); "
        "unpickling runs the file's code: only for runs you trust",
    )
    settings = parser.add_argument_group("settings (default: the algorithm's defaults)")
    settings.add_argument(
        "--num-env-runners",
        type=non_negative_int,
        default=None,
        help="EnvRunner processes (0: sample in this process)",
    )
    settings.add_argument("--num-envs-per-env-runner", type=positive_int, default=None)
    settings.add_argument(
        "--backend",
        choices=["processes", "ray"],
        default=None,
        help="EnvRunners as worker processes of this machine (default) or as "
        "Ray actors on a cluster",
    )
    settings.add_argument(
        "--ray-address",
        default=None,
        help="with --backend ray: the cluster to join (default: RAY_ADDRESS, "
        "else a local Ray instance)",
    )
    settings.add_argument(
        "--framework",
        type=str.lower,
        choices=FRAMEWORKS,
        default=None,
        help="the networks' and learners' framework (default numpy; torch needs the torch extra)",
    )
    settings.add_argument("--seed", type=non_negative_int, default=None)
    settings.add_argument("--lr", type=float, default=None)
    settings.add_argument("--train-batch-size", type=positive_int, default=None)
    settings.add_argument("--minibatch-size", type=positive_int, default=None)
    settings.add_argument("--num-epochs", type=positive_int, default=None)
    settings.add_argument(
        "--hiddens", type=layer_sizes, default=None, help="hidden layer sizes, e.g. 64,64"
    )
    settings.add_argument("--activation", default=None, help="tanh, relu or linear")
    settings.add_argument(
        "--log-level",
        type=str.upper,
        default=None,
        choices=["DEBUG", "INFO", "WARN", "WARNING", "ERROR"],
        help="level of the standard logging module (default WARN)",
    )
    parser.set_defaults(run=run_train)
    return parser


# -- the config ------------------------------------------------------------------------------
def config_class(algo: str) -> type:
    """The registered algorithm `algo`'s config class."""
    return registry.entry(algo).config_cls


@dataclasses.dataclass
class PresetChoice:
    """The preset a new run starts from (None: the defaults) and the line that says so."""

    preset: Preset | None
    line: str


def choose_preset(args: argparse.Namespace, algo: str, env: Any) -> PresetChoice:
    if args.preset == PRESET_NONE:
        return PresetChoice(None, "preset: none (--preset none): RLlib's default settings")
    preset = find_preset(algo, env, args.preset)
    if preset is None:
        return PresetChoice(None, no_preset_line(algo, env))
    return PresetChoice(
        preset, f"preset: {preset.describe()} ({other_choices(algo, env, args.preset)})"
    )


def _set_model_key(config: Any, key: str, value: Any) -> None:
    """`--model.KEY`: into the model config so far (the preset's, the file's, the other
    flags'); rl_module(model_config=...) replaces the whole dict, as RLlib's does."""
    config.rl_module(model_config={**config.model_config, key: value})


def _call_builder(config: Any, method: str, setting: str, value: Any) -> None:
    """A setting flag: `config.<method>(<setting>=value)`."""
    getattr(config, method)(**{setting: value})


def make_config(args: argparse.Namespace) -> tuple[Any, dict, PresetChoice]:
    """The config from defaults, the preset, `--config` and the flags; the file's stop criteria;
    the preset chosen. Raises `argparse.ArgumentError`-style `ValueError`s naming the flag or the
    file's key."""
    if args.framework == "torch":
        require_installed("torch", TORCH, "--framework torch")
    if args.backend == "ray":
        require("ray", RAY, "--backend ray")
    content = read_config_file(args.config) if args.config else {}
    algo = args.algo or str(content.get("algo", DEFAULT_ALGORITHM)).upper()
    if algo not in ALGORITHMS:
        raise ConfigFileError(
            f"argument --config: {args.config}: algo={content['algo']!r}; "
            f"allowed: {', '.join(sorted(ALGORITHMS))}"
        )
    config = config_class(algo)()
    config.checkpointing(**DEFAULT_CHECKPOINTING)
    # The env decides the preset, which goes under the file's and the flags' settings.
    env = args.env
    register_named_env(env)  # RLlib's multi-agent example envs, PettingZoo env modules
    if env is None and args.config:
        probe = config_class(algo)()
        apply_config_file(probe, content, args.config)
        env = probe.env
    choice = choose_preset(args, algo, env if env is not None else DEFAULT_ENV)
    if choice.preset is not None:
        choice.preset.apply(config)
    file_stop = apply_config_file(config, content, args.config) if args.config else {}

    def apply(flag: str, change: Callable[[], Any]) -> None:
        try:
            change()
        except ConfigError as error:
            raise ConfigError(f"argument {flag}: {error}") from None

    if args.env is not None:
        apply("--env", lambda: config.environment(args.env))
    elif config.env is None:
        config.environment(DEFAULT_ENV)
    if args.env_config is not None:
        apply(
            "--env-config",
            lambda: config.environment(env_config={**config.env_config, **args.env_config}),
        )
    for flag, (method, setting) in SETTING_FLAGS.items():
        value = getattr(args, _dest(flag))
        if value is None:
            continue
        if method == "rl_module":
            # Into the model config so far (the preset's, the file's, the other flag's):
            # rl_module(model_config=...) replaces the whole dict, as RLlib's does.
            apply(flag, partial(_set_model_key, config, setting, value))
        else:
            apply(flag, partial(_call_builder, config, method, setting, value))
    if args.log_level is not None:
        config.debugging(log_level=args.log_level)
    # A multi-agent env without multi_agent() settings: one policy per agent.
    apply("--env", partial(add_default_policies, config))
    checkpointing = {
        k: v
        for k, v in (
            ("checkpoint_frequency", args.checkpoint_frequency),
            ("num_to_keep", args.num_to_keep),
        )
        if v is not None
    }
    config.checkpointing(**checkpointing)
    # A torch config's worker template imports torch while validate() imports it here.
    prestart_workers(config)
    try:
        config.validate()
    except ConfigError as error:
        # A clash between settings: say which of them came from flags.
        given = [
            flag
            for flag, (_, setting) in SETTING_FLAGS.items()
            if getattr(args, _dest(flag)) is not None and setting in str(error)
        ]
        raise ConfigError(f"{error}" + (f" (set by {', '.join(given)})" if given else "")) from None
    return config, file_stop, choice


def env_reward_threshold(env: Any) -> float | None:
    """The env's `reward_threshold` from its gymnasium registration, if any."""
    import gymnasium as gym

    if isinstance(env, str) and env in gym.registry:
        return gym.spec(env).reward_threshold
    return None


def stop_criteria(
    args: argparse.Namespace, saved: dict, saved_from: str, env: Any, preset: Preset | None = None
) -> tuple[StopCriteria, str]:
    """`saved` (a --config [stop] table, or the resumed run's run.json) with the flags' criteria
    over it; without either, the default: the env's reward threshold (else the preset's reward)
    and the preset's env-step budget, within DEFAULT_MAX_ITERATIONS. Returns where they came
    from too."""
    flags = {
        name: getattr(args, _dest(flag))
        for flag, name in STOP_FLAGS.items()
        if getattr(args, _dest(flag)) is not None
    }
    if flags or saved:
        source = " and ".join(s for s, given in (("flags", flags), (saved_from, saved)) if given)
        if "mean_return" in flags and "evaluation_return" in saved and "mean_return" not in saved:
            # --stop-reward changes the run's return criterion: here the evaluation's.
            flags["evaluation_return"] = flags.pop("mean_return")
        merged = {**saved, **flags}
        return StopCriteria(**{k: None if v == NO_LIMIT else v for k, v in merged.items()}), source
    threshold = env_reward_threshold(env)
    if preset is not None:
        # As RLlib's tuned example: on the evaluation's return when the preset evaluates.
        reward = threshold if threshold is not None else preset.stop_reward
        on = "evaluation_return" if preset.evaluates else "mean_return"
        source = (
            f"default: the env's reward_threshold{' (evaluation)' * preset.evaluates}"
            if threshold is not None
            else "default: the preset's reward"
        )
        return (
            StopCriteria(
                **{on: reward}, env_steps=preset.stop_timesteps, iterations=DEFAULT_MAX_ITERATIONS
            ),
            source + f" and the preset's {preset.stop_timesteps} env steps",
        )
    if threshold is None:
        return StopCriteria(iterations=DEFAULT_MAX_ITERATIONS), "default"
    return (
        StopCriteria(mean_return=threshold, iterations=DEFAULT_MAX_ITERATIONS),
        "default: the env's reward_threshold",
    )


# -- the run folder --------------------------------------------------------------------------
def _run_prefix(algo: str, env: Any) -> str:
    name = env if isinstance(env, str) else getattr(env, "__name__", "env")
    return f"{algo}_{name.replace('/', '_').replace(':', '_')}"


def run_directory(args: argparse.Namespace, algo: str, env: Any) -> str:
    """--output-dir, else a new folder (with --resume: the newest) under localrl_results/."""
    if args.output_dir is not None:
        return os.path.abspath(args.output_dir)
    if args.resume:
        # The newest run; of --algo on --env when they are given.
        prefix = "" if args.algo is None and args.env is None else _run_prefix(algo, env) + "_"
        runs = sorted(
            (
                path
                for path in glob.glob(os.path.join(RESULTS_ROOT, prefix + "*"))
                if os.path.isdir(path)
            ),
            key=os.path.getmtime,
        )
        if not runs:
            raise ValueError(
                f"argument --resume: no run{'' if not prefix else f' of {algo} on {env}'}"
                f" under {RESULTS_ROOT}/; give --output-dir"
            )
        return os.path.abspath(runs[-1])
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return os.path.abspath(os.path.join(RESULTS_ROOT, f"{_run_prefix(algo, env)}_{stamp}"))


# -- logging ---------------------------------------------------------------------------------
class _DisplayLogHandler(logging.StreamHandler):
    """Log records to stderr, with the terminal's status line taken down and put back."""

    def __init__(self, display: ProgressDisplay):
        super().__init__()
        self.display = display
        self.setFormatter(log_formatter())

    def emit(self, record: logging.LogRecord) -> None:
        with self.display.paused():
            super().emit(record)


def configure_logging(level: str, display: ProgressDisplay) -> logging.Handler:
    """The library's loggers at `level`, other libraries' at WARNING, all through one
    handler on the root logger."""
    handler = _DisplayLogHandler(display)
    logging.getLogger().addHandler(handler)
    set_library_log_level(level)
    return handler


# -- the command -----------------------------------------------------------------------------
def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= LISTED_VALUE_CHARS else text[: LISTED_VALUE_CHARS - 3] + "..."


def changed_settings(config: Any, base: Any) -> list[str]:
    """`name=value` of each setting of `config` other than `base`'s (code by its import path;
    of a dict setting such as the model config, only the keys that differ), in the order of
    `to_dict()`; NOT_LISTED left out."""
    ours, theirs = plain(config.to_dict()), plain(base.to_dict())
    changed = []
    for name, value in ours.items():
        other = theirs.get(name)
        if name in NOT_LISTED or value == other:
            continue
        if isinstance(value, dict) and isinstance(other, dict):
            value = {k: v for k, v in value.items() if other.get(k, object()) != v}
        changed.append(f"{name}={_shown(value)}")
    return changed


def framework_of(config: Any) -> str:
    """What the networks and learners run on: torch or numpy."""
    return "torch" if config.uses_torch else "numpy"


def settings_line(config: Any, algo: str, preset: Preset | None) -> str:
    """`PPO (numpy) on 'CartPole-v1': ...`: the settings other than the preset's (else RLlib's
    defaults); params.json holds every one."""
    base = type(config)()
    base.checkpointing(**DEFAULT_CHECKPOINTING)
    if preset is not None:
        preset.apply(base)
    origin = "the preset's settings" if preset is not None else "RLlib's default settings"
    changed = changed_settings(config, base)
    return f"{algo} ({framework_of(config)}) on {config.env!r}: {origin}" + (
        f", with {', '.join(changed)}" if changed else ""
    )


def _describe(plan: RunPlan) -> list[str]:
    config, stop, directory = plan.config, plan.stop, plan.directory
    frequency = config.checkpoint_frequency
    keep = config.num_to_keep
    return [
        settings_line(config, plan.algo, plan.preset),
        f"stop at: {stop.describe()} ({plan.stop_source})",
        f"run folder: {directory}",
        "  params.json (every setting), result.json, progress.csv, TensorBoard event files, "
        + (
            f"a checkpoint every {frequency} iterations and at the end"
            if frequency
            else "a checkpoint at the end"
        )
        + (f", the {keep} best kept plus the latest" if keep else ""),
    ]


def _setting_flags_given(args: argparse.Namespace) -> list[str]:
    """Flags that would change a resumed run's settings (--algo and --env only pick the run)."""
    flags = ["--env-config", "--config", *SETTING_FLAGS]
    return [flag for flag in flags if getattr(args, _dest(flag)) is not None]


@dataclasses.dataclass
class RunPlan:
    """What `train` is about to do: a new run, or the resumption of one."""

    config: Any
    algo: str
    directory: str
    stop: StopCriteria
    stop_source: str
    resume_from: str | None = None
    algorithm_class: type[Algorithm] | None = None
    preset_line: str | None = None
    preset: Preset | None = None
    #: A resumed run's result at its checkpoint, when it met a stop criterion already.
    reached_at: dict | None = None


def plan_new_run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> RunPlan:
    try:
        config, file_stop, preset = make_config(args)
    except (ConfigError, ConfigFileError, ValueError) as error:  # each names the flag
        parser.error(str(error))
    algo = type(config).__name__.removesuffix("Config")
    directory = run_directory(args, algo, config.env)
    if CheckpointManager(directory).latest() is not None or os.path.exists(
        os.path.join(directory, RESULT_FILE)
    ):
        parser.error(
            f"argument --output-dir: {directory} holds a run already; continue it "
            "with --resume, or give another folder"
        )
    stop, stop_source = stop_criteria(args, file_stop, "--config", config.env, preset.preset)
    return RunPlan(
        config, algo, directory, stop, stop_source, preset_line=preset.line, preset=preset.preset
    )


def plan_resume(args: argparse.Namespace, parser: argparse.ArgumentParser) -> RunPlan:
    """The run's latest checkpoint, its config (from the checkpoint) and its stop criteria
    (run.json, changed by stop flags)."""
    given = _setting_flags_given(args)
    if args.preset != PRESET_FAST:
        given.insert(0, "--preset")
    if given:
        parser.error(
            f"argument {given[0]}: a resumed run keeps its own settings (its "
            "params.json); start a new run to change them"
        )
    try:
        directory = run_directory(args, args.algo or DEFAULT_ALGORITHM, args.env or DEFAULT_ENV)
    except ValueError as error:
        parser.error(str(error))
    latest = CheckpointManager(directory).latest()
    if latest is None:
        parser.error(f"argument --resume: {directory} has no checkpoint to resume from")
    try:
        checkpoint = open_checkpoint(latest)
        register_checkpoint_env(checkpoint)
        algorithm_class, config = load_class_and_config(
            checkpoint,
            algorithm_base=Algorithm,
            config_base=AlgorithmConfig,
            allow_pickle=args.trust_pickle,
        )
    except CheckpointError as error:
        parser.error(f"argument --resume: {error}")
    require_for_config(config, f"--resume of {display_path(directory)}")
    config = config.copy()
    if args.log_level is not None:
        config.debugging(log_level=args.log_level)
    folder = RunFolder(directory)
    run_info = folder.read_run_info()
    stop, stop_source = stop_criteria(args, run_info.get("stop", {}), "run.json", config.env)
    # The checkpoint's own result: a run that met its criterion there has nothing to train.
    iteration = checkpoint.metadata.get(TRAINING_ITERATION)
    at_checkpoint = [r for r in folder.results() if r.get(TRAINING_ITERATION) == iteration]
    return RunPlan(
        config,
        run_info.get("algo") or algorithm_class.__name__,
        directory,
        stop,
        stop_source,
        resume_from=latest,
        algorithm_class=algorithm_class,
        reached_at=at_checkpoint[-1] if at_checkpoint and stop.reached(at_checkpoint[-1]) else None,
    )


def run_train(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    start = time.perf_counter()
    if args.trust_pickle and not args.resume:
        parser.error(
            "argument --trust-pickle: only with --resume (a new run has no checkpoint to read)"
        )
    plan = plan_resume(args, parser) if args.resume else plan_new_run(args, parser)
    import_in_background()
    learning_curve.import_in_background()
    config, directory, stop = plan.config, plan.directory, plan.stop
    display = ProgressDisplay(Progress(stop))
    log_handler = configure_logging(config.log_level, display)
    folder = RunFolder(directory)
    manager = CheckpointManager.from_config(directory, config)
    if args.checkpoint_frequency is not None:
        manager.checkpoint_frequency = args.checkpoint_frequency
    if args.num_to_keep is not None:
        manager.num_to_keep = args.num_to_keep
    lines = _describe(plan)
    for line in ([plan.preset_line] if plan.preset_line else []) + lines:
        display.line(line)
    if plan.reached_at is not None:
        logging.getLogger().removeHandler(log_handler)
        display.close()
        _already_reached(display, plan.reached_at, stop, directory)
        return 0
    plot_path = os.path.join(directory, PLOT_FILE)
    title = f"{plan.algo} on {config.env}"
    plotted_rows = -1  # result.json's rows in learning_curve.png

    def plot() -> None:
        """learning_curve.png from result.json, unless it shows every row already (a
        checkpoint at the last iteration drew it)."""
        nonlocal plotted_rows
        results = folder.results()
        if len(results) != plotted_rows:
            write_learning_curve(results, plot_path, title, stop.target_return)
            plotted_rows = len(results)

    def on_request(signal_name: str) -> None:
        display.note(
            f"{signal_name}: finishing this iteration, then saving a checkpoint "
            "(again: stop at once, without saving)"
        )

    algorithm = None
    events = None
    result = None
    status = 0
    try:
        with StopRequest(on_request) as request:
            if plan.resume_from is not None and plan.algorithm_class is not None:  # both or none
                algorithm = plan.algorithm_class.from_checkpoint(plan.resume_from, config=config)
                dropped = folder.drop_after(algorithm.iteration)
                display.line(
                    f"resumed from {plan.resume_from} at iteration "
                    f"{algorithm.iteration}"
                    + (
                        f" ({dropped} later rows dropped from result.json and progress.csv)"
                        if dropped
                        else ""
                    )
                )
            else:
                algorithm = config.build()
                folder.write_params(config)
            folder.write_run_info(plan.algo, config.env, vars(stop))
            events = create_writer(directory, display.line)
            display.line(f"ready in {time.perf_counter() - start:.2f} s")
            reason = None
            # At least one iteration: a Ctrl-C that comes before the first has started still
            # means "finish this iteration, then save", as the note says.
            while result is None or (reason is None and not request.requested):
                result = algorithm.train()
                folder.add_result(result)
                if events is not None:
                    events.write(result)
                display.iteration(result, time.perf_counter() - start)
                if manager.on_train_result(algorithm, result) is not None:
                    display.line(f"checkpoint {manager.latest()}")
                    plot()
                reason = stop.reason(result)
            if request.requested:
                reason, status = f"{request.requested} received", request.exit_status
                saved = manager.save_if_new(algorithm, result)
            else:
                saved = manager.on_end(algorithm, result)
            if saved is not None:
                display.line(f"checkpoint {saved}")
    except KeyboardInterrupt:
        reason, status = "interrupted twice: stopped at once, without saving", 130
    except Exception:
        display.close()
        traceback.print_exc()
        reason, status = "failed", 1
    finally:
        if events is not None:
            events.close()
        if algorithm is not None:
            algorithm.stop()
        plot()
        display.close()
        logging.getLogger().removeHandler(log_handler)
    _summary(
        display,
        reason,
        algorithm,
        manager,
        plan,
        result,
        events is not None,
        time.perf_counter() - start,
    )
    return status


def _already_reached(
    display: ProgressDisplay, result: dict, stop: StopCriteria, directory: str
) -> None:
    """What `--resume` says of a run that met a stop criterion at its checkpoint."""
    display.line(
        f"the run already reached its stop criterion at iteration "
        f"{result[TRAINING_ITERATION]} ({stop.reason(result)}): nothing to train. To train "
        "further, raise the criterion (--stop-iters, --stop-timesteps, --stop-seconds, "
        f"--stop-reward R or {NO_LIMIT}), e.g.:"
    )
    display.line(f"continue:     {continue_command(directory, stop, result)}")


def display_path(path: str) -> str:
    """`path` as the user can paste it here: relative to the current folder when inside it."""
    relative = os.path.relpath(path)
    return shlex.quote(path if relative.startswith("..") else relative)


def continue_command(directory: str, stop: StopCriteria, result: dict | None) -> str:
    """The command that trains the run further: as it is when no criterion was met (after
    Ctrl-C); else with the criteria met raised, for as many iterations again."""
    command = f"python -m trainer --resume --output-dir {display_path(directory)}"
    if result is None:
        return command
    reached = {field for field, _ in stop.reached(result)}
    if not reached:
        return command
    flags = []
    if reached & {"mean_return", "evaluation_return"}:
        flags.append(f"--stop-reward {NO_LIMIT}")
    if "env_steps" in reached:
        flags.append(f"--stop-timesteps {2 * result[NUM_ENV_STEPS_SAMPLED_LIFETIME]}")
    if "seconds" in reached:
        flags.append(f"--stop-seconds {math.ceil(2 * result['time_total_s'])}")
    flags.append(f"--stop-iters {2 * result[TRAINING_ITERATION]}")
    return " ".join([command, *flags])


def _with_extra(command: str, extra: str, modules: tuple[str, ...]) -> str:
    """`command`, after the pip command of `extra` when one of `modules` is not installed."""
    return command if all(map(installed, modules)) else f"{install_command(extra)} && {command}"


def next_commands(
    directory: str, stop: StopCriteria, result: dict | None, wrote_events: bool
) -> list[str]:
    """The lines that end the main job: what to do with the run next."""
    run = display_path(directory)
    video = display_path(os.path.join(directory, VIDEO_FILE))
    lines = [
        f"evaluate:     python -m trainer evaluate {run}",
        "video:        "
        + _with_extra(
            f"python -m trainer evaluate {run} --episodes 1 --video {video}",
            VIDEO,
            VIDEO_MODULES,
        ),
        f"inspect:      python -m trainer inspect {run}",
    ]
    if wrote_events:
        lines.append(
            "tensorboard:  "
            + _with_extra(f"tensorboard --logdir {run}", TENSORBOARD, ("tensorboard",))
        )
    lines.append(f"continue:     {continue_command(directory, stop, result)}")
    return lines


def _summary(
    display: ProgressDisplay,
    reason: str | None,
    algorithm: Any,
    manager: Any,
    plan: RunPlan,
    result: dict | None,
    wrote_events: bool,
    seconds: float,
) -> None:
    iterations = algorithm.iteration if algorithm is not None else 0
    steps = algorithm.num_env_steps_sampled_lifetime if algorithm is not None else 0
    display.line(
        f"stopped ({reason}) after {iterations} iterations, {steps} env steps, {seconds:.1f} s"
    )
    if not learning_curve.matplotlib_available():
        display.line(missing_note(f"{PLOT_FILE}: not drawn", "matplotlib", PLOT))
    latest, best = manager.latest(), manager.best()
    if latest is not None:
        display.line(f"latest checkpoint: {latest}" + (f"; best: {best}" if best != latest else ""))
        for line in next_commands(plan.directory, plan.stop, result, wrote_events):
            display.line(line)
