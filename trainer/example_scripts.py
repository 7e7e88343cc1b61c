"""RLlib 2.60's example-script helpers (`ray.rllib.examples.utils`, re-exported by
`ray.rllib.utils.test_utils`): `add_rllib_example_script_args` (every argument RLlib defines, with
its defaults) and `run_rllib_example_script_experiment` (RLlib's driver, with its stop and
success rules and its return values).

`run_rllib_example_script_experiment(config, args, stop=..., success_metric=...)`:

- `--no-tune`: RLlib's plain loop, `algo.train()` until a `stop` criterion is reached (at most
  `stop["training_iteration"]` iterations); returns the last result dict.
- otherwise, where Ray Tune is installed (the `tune` extra) and real Ray is in use (outside the
  RLlib launcher, or under it with real Ray: `python -m trainer run --ray`), RLlib's own code
  path: `tune.Tuner(trainable or config.algo_class, param_space=config, ...)` with RLlib's
  RunConfig (stop, checkpoints, verbosity, Tune callbacks, a CLIReporter or the given
  progress reporter) and TuneConfig (`--num-samples`, `--max-concurrent-trials`, the
  scheduler), returning Tune's own `ResultGrid`;
- otherwise (Ray's stand-in under the launcher, no Ray Tune, or `LOCALRL_EXAMPLE_TRIALS=in-process`
  in the environment): `--num-samples` trials in this process, one after the
  other, each trained until Tune's stop rule holds (any `stop` metric, "a/b" for nested keys,
  `>=` its value; a metric the results never have is warned about once and ignored, as in
  Tune), with checkpoints every `--checkpoint-freq` iterations and/or at the end; returns a
  `ResultGrid` (`trainer.result_grid`); Tune's schedulers are refused there.

With `--as-test`, the success metric's best value over every reported result of every trial
must reach its target, else ValueError.
  The success metric defaults to the `stop` dict's evaluation or training
  `episode_return_mean` entry, else `env_runners/episode_return_mean` >= `--stop-reward`.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import logging
import math
import os
import re
import time
from typing import Any

from trainer.algorithms.algorithm import SavedCheckpoint
from trainer.capabilities import OFFLINE
from trainer.errors import UnsupportedValue
from trainer.launcher import ray_api
from trainer.launcher.finder import installed_finder, real_tune_available
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TRAINING_ITERATION,
)
from trainer.result_grid import Result, ResultGrid, metric_value

logger = logging.getLogger("trainer")

#: Where Tune keeps experiments (trial folders with their checkpoints).
DEFAULT_STORAGE = os.path.join("~", "ray_results")
#: How `run_rllib_example_script_experiment` runs its trials: "tune" (Ray Tune, an error
#: where it cannot), "in-process" (one after the other in this process, no Ray), or unset:
#: Tune where Ray Tune is installed and real Ray is in use, else in-process.
TRIALS_ENV_VAR = "LOCALRL_EXAMPLE_TRIALS"
TRIAL_RUNNERS = ("tune", "in-process")


def add_rllib_example_script_args(
    parser: argparse.ArgumentParser | None = None,
    default_reward: float = 100.0,
    default_iters: int = 200,
    default_timesteps: int = 100000,
) -> argparse.ArgumentParser:
    """RLlib's command line for its example scripts, added to `parser` (a new one when None):
    the same arguments with the same defaults. Those about Ray's cluster, GPUs, several
    learners or WandB mean nothing on one machine: they reach the config (whose `build()`
    warns about them) or are refused where RLlib's driver would need them."""
    parser = parser or argparse.ArgumentParser()
    add = parser.add_argument
    # Algo and Algo config options.
    add("--algo", type=str, default="PPO", help="The RLlib-registered algorithm to use.")
    add(
        "--framework",
        choices=["tf", "tf2", "torch"],
        default="torch",
        help="The DL framework specifier (the networks are numpy here whatever is named).",
    )
    add("--env", type=str, default=None, help="The gym.Env identifier to run the experiment with.")
    add(
        "--num-env-runners",
        type=int,
        default=None,
        help="The number of (remote) EnvRunners to use for the experiment.",
    )
    add(
        "--num-envs-per-env-runner",
        type=int,
        default=None,
        help="The number of (vectorized) environments per EnvRunner.",
    )
    add(
        "--num-agents",
        type=int,
        default=0,
        help="If 0 (default), runs single-agent; > 0: the number of agents (multi-agent).",
    )
    # Evaluation options.
    add(
        "--evaluation-num-env-runners",
        type=int,
        default=0,
        help="The number of evaluation (remote) EnvRunners to use for the experiment.",
    )
    add(
        "--evaluation-interval",
        type=int,
        default=0,
        help="Every how many iterations to run one round of evaluation (0: never).",
    )
    add(
        "--evaluation-duration",
        type=lambda v: v if v == "auto" else int(v),
        default=10,
        help="The number of evaluation units (see --evaluation-duration-unit) per round, or "
        "'auto' (with --evaluation-parallel-to-training).",
    )
    add(
        "--evaluation-duration-unit",
        type=str,
        default="episodes",
        choices=["episodes", "timesteps"],
        help="The evaluation duration unit to count by.",
    )
    add(
        "--evaluation-parallel-to-training",
        action="store_true",
        help="Whether to run evaluation parallel to training.",
    )
    # RLlib logging options.
    add(
        "--output",
        type=str,
        default=None,
        help="The output directory to write trajectories to (offline data).",
    )
    add(
        "--log-level",
        type=str,
        default=None,
        choices=["INFO", "DEBUG", "WARN", "ERROR"],
        help="The log-level to be used by the RLlib logger.",
    )
    # tune.Tuner options.
    add(
        "--no-tune",
        action="store_true",
        help="Whether to NOT use tune.Tuner(), but a simple loop calling algo.train() "
        "until one of the stop criteria is met.",
    )
    add(
        "--num-samples",
        type=int,
        default=1,
        help="How many trials to run (one after the other here).",
    )
    add(
        "--max-concurrent-trials",
        type=int,
        default=None,
        help="How many trials to run concurrently (here: one at a time).",
    )
    add("--verbose", type=int, default=2, help="The verbosity level (0: no progress lines).")
    add(
        "--checkpoint-freq",
        type=int,
        default=0,
        help="The frequency (in training iterations) with which to create checkpoints.",
    )
    add(
        "--checkpoint-at-end",
        action="store_true",
        help="Whether to create a checkpoint at the very end of the experiment.",
    )
    add(
        "--tune-max-report-freq",
        type=int,
        default=5,
        help="The frequency (in seconds) at which to log the training performance.",
    )
    # WandB logging options.
    add(
        "--wandb-key",
        type=str,
        default=None,
        help="The WandB API key to use for uploading results.",
    )
    add("--wandb-project", type=str, default=None, help="The WandB project name to use.")
    add("--wandb-run-name", type=str, default=None, help="The WandB run name to use.")
    # Experiment stopping and testing criteria.
    add(
        "--stop-reward",
        type=float,
        default=default_reward,
        help="Reward at which the script should stop training.",
    )
    add("--stop-iters", type=int, default=default_iters, help="The number of iterations to train.")
    add(
        "--stop-timesteps",
        type=int,
        default=default_timesteps,
        help="The number of (environment sampling) timesteps to train.",
    )
    add(
        "--as-test",
        action="store_true",
        help="Run as a test: the success metric must be reached within the stop criteria, "
        "else the script raises at the end.",
    )
    add(
        "--as-release-test",
        action="store_true",
        help="--as-test, plus a JSON summary written to $TEST_OUTPUT_JSON.",
    )
    # Learner scaling options.
    add(
        "--num-learners",
        type=int,
        default=None,
        help="The number of Learners to use (one learner runs here).",
    )
    add(
        "--num-cpus-per-learner",
        type=float,
        default=None,
        help="The number of CPUs per Learner to use.",
    )
    add(
        "--num-gpus-per-learner",
        type=float,
        default=None,
        help="The number of GPUs per Learner to use (there are none here).",
    )
    add(
        "--num-aggregator-actors-per-learner",
        type=int,
        default=None,
        help="The number of Aggregator actors to use per Learner.",
    )
    # Ray init options.
    add("--num-cpus", type=int, default=0)
    # Old API stack: config.num_gpus.
    add(
        "--num-gpus",
        type=int,
        default=None,
        help="The number of GPUs to use (only on the old API stack).",
    )
    add(
        "--old-api-stack",
        action="store_true",
        help="Run this script on the old API stack of RLlib (here: the new stack runs, with "
        "one warning).",
    )
    # Deprecated options that are kept to raise an error when still used.
    add("--enable-new-api-stack", action="store_true", help=argparse.SUPPRESS)
    add("--local-mode", action="store_true", help=argparse.SUPPRESS)
    return parser


def should_stop(stop: dict[str, Any], results: dict, keep_ray_up: bool = False) -> bool:
    """RLlib's check of the stop criteria against one result dict ("a/b" keys are nested;
    missing or non-numeric values are skipped). Without `keep_ray_up`, a met criterion also
    ends the named-object server (RLlib's `ray.shutdown()`)."""
    for key, threshold in stop.items():
        value = metric_value(results, key)
        if _reached(value, threshold):
            print(f"Stop criterion ({key}={threshold}) fulfilled!")
            if not keep_ray_up:
                _shutdown()
            return True
    return False


def _reached(value: Any, threshold: Any) -> bool:
    try:
        return value is not None and not math.isnan(value) and value >= threshold
    except TypeError:  # a non-numeric value meets no criterion
        return False


def _shutdown() -> None:
    # Ray's ray.shutdown(): the named objects end, and the launcher's ray.init() may run again.
    ray_api.shutdown()


def run_rllib_example_script_experiment(
    base_config: Any,
    args: argparse.Namespace | None = None,
    *,
    stop: dict | None = None,
    success_metric: dict | None = None,
    trainable: type | None = None,
    tune_callbacks: list | None = None,
    keep_config: bool = False,
    keep_ray_up: bool = False,
    scheduler: Any = None,
    progress_reporter: Any = None,
) -> dict | ResultGrid:
    """RLlib's driver of its example scripts (see the module docstring): applies the command
    line to `base_config` (unless `keep_config`), runs the experiment until `stop`, and with
    `--as-test` checks `success_metric`. Returns the last result dict with `--no-tune`, else a
    `ResultGrid`."""
    if args is None:
        args = add_rllib_example_script_args().parse_args()
    if args.enable_new_api_stack:
        raise ValueError(
            "`--enable-new-api-stack` flag no longer supported (it's the default "
            "behavior now)! To switch back to the old API stack on your scripts, "
            "use the `--old-api-stack` flag."
        )
    if args.local_mode:
        raise ValueError("`--local-mode` is no longer supported.")
    if args.as_release_test:
        args.as_test = True
    if args.as_test:
        args.verbose = 1
        args.tune_max_report_freq = 30
    through_tune = not args.no_tune and trials_run_through_tune()
    if not through_tune:
        _refuse_tune_only(args, trainable, tune_callbacks, scheduler, progress_reporter)
    if stop is None:
        stop = {
            f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": args.stop_reward,
            f"{ENV_RUNNER_RESULTS}/{NUM_ENV_STEPS_SAMPLED_LIFETIME}": args.stop_timesteps,
            TRAINING_ITERATION: args.stop_iters,
        }
    config = base_config
    if not keep_config:
        _apply_args(config, args)
    if args.no_tune:
        assert not args.as_test and not args.as_release_test, (
            "--no-tune cannot be combined with --as-test (as in RLlib)"
        )
        return _run_without_tune(config, args, stop, keep_ray_up)
    started = time.time()
    if through_tune:
        grid = _run_through_tune(
            config, args, stop, trainable, tune_callbacks, scheduler, progress_reporter
        )
        if not keep_ray_up:
            import ray  # the installed Ray (Tune needs it)

            ray.shutdown()
    else:
        grid = _run_trials(config, args, stop, trainable)
        if not keep_ray_up:
            _shutdown()
    if args.as_test:
        _check_success(grid, args, stop, success_metric, time.time() - started)
    return grid


def trials_run_through_tune() -> bool:
    """Whether `run_rllib_example_script_experiment` runs its trials with Ray Tune (see
    `TRIALS_ENV_VAR`): Ray Tune installed and real Ray in use (not the launcher's stand-in)."""
    choice = os.environ.get(TRIALS_ENV_VAR, "").strip().lower()
    if choice and choice not in TRIAL_RUNNERS:
        raise ValueError(
            f"{TRIALS_ENV_VAR}={choice!r}: must be one of {list(TRIAL_RUNNERS)} (or unset: "
            "Ray Tune where it is installed and real Ray is in use)"
        )
    if choice == "in-process":
        return False
    finder = installed_finder()
    stand_in = finder is not None and not finder.real_ray
    if choice == "tune":
        if stand_in:
            raise ValueError(
                f"{TRIALS_ENV_VAR}=tune: Ray Tune needs real Ray, and the RLlib launcher "
                "serves Ray's stand-in: run the script with `python -m trainer run --ray`"
            )
        if not real_tune_available():
            raise ImportError(
                f"{TRIALS_ENV_VAR}=tune: Ray Tune is not installed: pip install 'localrl[tune]'"
            )
        return True
    return not stand_in and real_tune_available()


def _run_through_tune(
    config: Any,
    args: Any,
    stop: dict,
    trainable: Any,
    tune_callbacks: list | None,
    scheduler: Any,
    progress_reporter: Any,
) -> Any:
    """RLlib's Tune run: `tune.Tuner(...).fit()` with RLlib's run and tune configs; returns
    Tune's `ResultGrid`."""
    from trainer import tune  # Ray Tune's front: imports ray

    tune_callbacks = list(tune_callbacks or [])
    if getattr(args, "wandb_key", None) is not None or "WANDB_API_KEY" in os.environ:
        from ray.air.integrations.wandb import WandbLoggerCallback

        project = args.wandb_project or (
            args.algo.lower() + "-" + re.sub("\\W+", "-", str(config.env).lower())
        )
        tune_callbacks.append(
            WandbLoggerCallback(
                api_key=args.wandb_key or os.environ["WANDB_API_KEY"],
                project=project,
                upload_checkpoints=True,
                **({"name": args.wandb_run_name} if args.wandb_run_name else {}),
            )
        )
    if progress_reporter is None:
        columns = {
            TRAINING_ITERATION: "iter",
            "time_total_s": "total time (s)",
            NUM_ENV_STEPS_SAMPLED_LIFETIME: "ts",
            f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": (
                "combined return" if args.num_agents > 0 else "episode return mean"
            ),
        }
        if args.num_agents > 0:
            columns.update(
                {
                    f"{ENV_RUNNER_RESULTS}/{EPISODE_MODULE_RETURN_MEAN}/{pid}": f"return {pid}"
                    for pid in config.policies
                }
            )
        progress_reporter = tune.CLIReporter(
            metric_columns=columns, max_report_frequency=args.tune_max_report_freq
        )
    # As RLlib: Tune's new progress output ignores a custom CLIReporter.
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    return tune.Tuner(
        trainable or config.algo_class,
        param_space=config,
        run_config=tune.RunConfig(
            failure_config=tune.FailureConfig(max_failures=0, fail_fast="raise"),
            stop=stop,
            verbose=args.verbose,
            callbacks=tune_callbacks,
            checkpoint_config=tune.CheckpointConfig(
                checkpoint_frequency=args.checkpoint_freq,
                checkpoint_at_end=args.checkpoint_at_end,
            ),
            progress_reporter=progress_reporter,
        ),
        tune_config=tune.TuneConfig(
            num_samples=args.num_samples,
            max_concurrent_trials=args.max_concurrent_trials,
            scheduler=scheduler,
        ),
    ).fit()


def _refuse_tune_only(
    args: Any, trainable: Any, tune_callbacks: Any, scheduler: Any, progress_reporter: Any
) -> None:
    """Without Tune (the in-process trials): Tune features that would change what runs are
    refused; reporting ones are noted."""
    if scheduler is not None:
        raise ValueError(
            f"run_rllib_example_script_experiment(scheduler={scheduler!r}): Tune "
            "schedulers (trials stopped or mutated early) need Ray Tune on real Ray "
            "(pip install 'localrl[tune]'; under the launcher: python -m trainer run --ray); "
            "the trials here run in this process until the stop criteria"
        )
    if trainable is not None and not isinstance(trainable, type):
        raise ValueError(
            f"run_rllib_example_script_experiment(trainable={trainable!r}): only "
            "an Algorithm subclass can be a trainable here, not a function"
        )
    if tune_callbacks:
        logger.warning(
            "run_rllib_example_script_experiment(tune_callbacks=...): Tune "
            "callbacks are not called here (use RLlib callbacks on the config)"
        )
    if progress_reporter is not None:
        logger.warning(
            "run_rllib_example_script_experiment(progress_reporter=...): progress "
            "is printed as one line per iteration here"
        )
    if getattr(args, "wandb_key", None) is not None or "WANDB_API_KEY" in os.environ:
        logger.warning("--wandb-key: results are not uploaded to WandB here")


def _apply_args(config: Any, args: Any) -> None:
    """RLlib's changes of the config from the command line."""
    if args.framework != "torch":
        # "torch" is the parser's default, which RLlib sets on every run: warning about it
        # (the networks are numpy here) would only be noise; another name is the user's.
        config.framework(args.framework)
    if args.env is not None and config.env is None:
        config.environment(args.env)
    if args.old_api_stack:
        config.api_stack(
            enable_rl_module_and_learner=False, enable_env_runner_and_connector_v2=False
        )
    if args.num_env_runners is not None:
        config.env_runners(num_env_runners=args.num_env_runners)
    if args.num_envs_per_env_runner is not None:
        config.env_runners(num_envs_per_env_runner=args.num_envs_per_env_runner)
    if args.num_gpus is not None and args.num_gpus > 0:
        raise ValueError(
            "--num-gpus is not supported on the new API stack! To train on GPUs, "
            "use the command line options `--num-gpus-per-learner=1` and "
            "`--num-learners=[your number of available GPUs]`, instead."
        )
    # There are no GPUs here: RLlib's automatic choice is 0 GPUs per learner, and a hard
    # request of one or more cannot be met.
    num_learners = (
        args.num_learners if args.num_learners is not None else getattr(config, "num_learners", 0)
    ) or 1
    if (args.num_gpus_per_learner or 0) * num_learners > 0:
        raise ValueError(
            f"You are running your script with --num-learners={args.num_learners} "
            f"and --num-gpus-per-learner={args.num_gpus_per_learner}, but your "
            "cluster only has 0 GPUs!"
        )
    config.resources(num_gpus=0)
    if args.num_learners is not None:
        config.learners(num_learners=args.num_learners)
    if args.num_aggregator_actors_per_learner is not None:
        config.learners(num_aggregator_actors_per_learner=args.num_aggregator_actors_per_learner)
    config.learners(num_gpus_per_learner=0)
    if args.num_cpus_per_learner is not None:
        config.learners(num_cpus_per_learner=args.num_cpus_per_learner)
    if args.evaluation_interval > 0:
        config.evaluation(
            evaluation_num_env_runners=args.evaluation_num_env_runners,
            evaluation_interval=args.evaluation_interval,
            evaluation_duration=args.evaluation_duration,
            evaluation_duration_unit=args.evaluation_duration_unit,
            evaluation_parallel_to_training=args.evaluation_parallel_to_training,
        )
    if args.log_level is not None:
        config.debugging(log_level=args.log_level)
    if args.output is not None:
        offline_data = getattr(config, "offline_data", None)
        if offline_data is None:
            raise UnsupportedValue(
                f"--output={args.output!r}: writing offline data is not supported here", OFFLINE
            )
        offline_data(output=args.output)


def _progress_line(iteration: int, result: dict, module_ids: list | None = None) -> str:
    """One iteration's line: RLlib's progress columns (with `--num-agents` > 0, as there, the
    combined return and each module's return)."""
    episode_return = metric_value(result, f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}")
    line = (
        f"iter {iteration:4d} | total time (s) {result.get('time_total_s', 0.0):7.1f} | "
        f"ts {metric_value(result, NUM_ENV_STEPS_SAMPLED_LIFETIME)} | "
        + (
            f"combined return {episode_return}"
            if module_ids
            else f"episode return mean {episode_return}"
        )
    )
    for module_id in module_ids or ():
        module_return = metric_value(
            result, f"{ENV_RUNNER_RESULTS}/{EPISODE_MODULE_RETURN_MEAN}/{module_id}"
        )
        line += f" | return {module_id} {module_return}"
    evaluation = metric_value(
        result, f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}"
    )
    return line if evaluation is None else f"{line} | eval return mean {evaluation}"


def _run_without_tune(config: Any, args: Any, stop: dict, keep_ray_up: bool) -> dict:
    """RLlib's --no-tune loop: at most stop[training_iteration] iterations; returns the last
    result dict."""
    algo = config.build()
    results: dict = {}
    try:
        for i in range(stop.get(TRAINING_ITERATION, args.stop_iters)):
            results = algo.train()
            mean_return = (results.get(ENV_RUNNER_RESULTS) or {}).get(EPISODE_RETURN_MEAN, math.nan)
            line = f"iter={i} R={mean_return}"
            evaluation = metric_value(
                results, f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}"
            )
            print(line if evaluation is None else f"{line} R(eval)={evaluation}")
            if should_stop(stop, results, keep_ray_up=keep_ray_up):
                return results
    finally:
        algo.stop()
    if not keep_ray_up:
        _shutdown()
    return results


class _TrialRunner:
    """One trial: train until Tune's stop rule holds, checkpointing as asked."""

    def __init__(self, algo_class: type, config: Any, args: Any, stop: dict, trial_path: str):
        self.algo_class, self.config, self.args, self.stop = algo_class, config, args, stop
        self.path = trial_path
        self.results: list[dict] = []
        self.checkpoints: list[tuple[Any, dict]] = []
        self._missing_warned: set[str] = set()

    def should_stop(self, result: dict) -> bool:
        """Tune's rule: `done`, or any stop metric >= its value; a metric the result lacks is
        warned about once and skipped."""
        if result.get("done"):
            return True
        for key, threshold in self.stop.items():
            value = metric_value(result, key)
            if value is None:
                if key not in self._missing_warned:
                    self._missing_warned.add(key)
                    logger.warning(
                        "Stopping criterion %r not found in result dict! If it is "
                        "never reported, the run continues until another criterion "
                        "is met.",
                        key,
                    )
                continue
            if _reached(value, threshold):
                return True
        return False

    def run(self) -> Result:
        args = self.args
        algo = self.algo_class(config=self.config)
        # RLlib's multi-agent progress columns: with --num-agents > 0, a return per policy.
        module_ids = sorted(map(str, self.config.policies)) if args.num_agents > 0 else None
        settings = self.config.to_dict()
        try:
            while True:
                result = algo.train()
                result["config"] = settings  # as Tune adds the trial's config to each result
                self.results.append(result)
                if args.verbose:
                    print(_progress_line(len(self.results), result, module_ids), flush=True)
                done = self.should_stop(result)
                due = args.checkpoint_freq and len(self.results) % args.checkpoint_freq == 0
                if due or (done and args.checkpoint_at_end):
                    name = f"checkpoint_{len(self.checkpoints):06d}"
                    saved = SavedCheckpoint(algo.save_to_path(os.path.join(self.path, name)))
                    self.checkpoints.append((saved, result))
                if done:
                    break
        finally:
            algo.stop()
        return Result(
            metrics=self.results[-1] if self.results else None,
            config=settings,
            path=self.path if self.checkpoints else None,
            checkpoint=self.checkpoints[-1][0] if self.checkpoints else None,
            best_checkpoints=list(self.checkpoints),
            all_metrics=list(self.results),
        )


def _run_trials(config: Any, args: Any, stop: dict, trainable: type | None) -> ResultGrid:
    algo_class = trainable or config.algo_class
    name = getattr(algo_class, "__name__", "Trainable")
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    experiment_path = os.path.join(os.path.expanduser(DEFAULT_STORAGE), f"{name}_{stamp}")
    env_name = config.env if isinstance(config.env, str) else getattr(config.env, "__name__", "env")
    # Tune's trials: the grid of every grid_search setting (the first setting's values vary
    # slowest), repeated num_samples times; one after another here.
    grid = config.grid_settings()
    variants = [
        dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())
    ]
    results = []
    for index in range(max(args.num_samples, 1) * len(variants)):
        trial_config = config.copy()
        for setting, value in variants[index % len(variants)].items():
            setattr(trial_config, setting, value)
        trial_path = os.path.join(experiment_path, f"{name}_{env_name}_{index:05d}")
        runner = _TrialRunner(algo_class, trial_config, args, stop, trial_path)
        results.append(runner.run())
    return ResultGrid(results, experiment_path=experiment_path)


def _check_success(
    grid: ResultGrid, args: Any, stop: dict, success_metric: dict | None, time_taken: float
) -> None:
    """RLlib's --as-test rule: the success metric's best value over every reported result of
    every trial reaches its target."""
    if success_metric is None:
        for candidate in (
            f"{EVALUATION_RESULTS}/{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}",
            f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}",
        ):
            if candidate in stop:
                success_metric = {candidate: stop[candidate]}
                break
        if success_metric is None:
            success_metric = {f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": args.stop_reward}
    key, target = next(iter(success_metric.items()))
    values = _reported_values(grid, key)
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    best = max(numbers) if numbers else math.nan
    passed = bool(numbers) and best >= target
    if passed:
        print(f"`{key}` of {target} reached! ok")
    if args.as_release_test:
        _write_release_summary(grid, key, target, best, passed, time_taken)
    if not passed:
        message = f"`{key}` of {target} not reached! Best value reached is {best}"
        if all(value is None for value in values):
            message += " (no result reported it)"
        if args.as_release_test:
            print(message)
        else:
            raise ValueError(message)


def _reported_values(grid: Any, key: str) -> list[Any]:
    """Every value of `key` any trial reported: from our `ResultGrid`'s results, or from each
    Tune `Result`'s `metrics_dataframe` (its progress, one row per iteration; the last result
    where it has none)."""
    if isinstance(grid, ResultGrid):
        return [metric_value(result, key) for trial in grid for result in trial.all_metrics]
    values: list[Any] = []
    for trial in grid:
        frame = getattr(trial, "metrics_dataframe", None)
        if frame is not None and key in frame:
            values.extend(frame[key].tolist())
        else:
            values.append(metric_value(trial.metrics or {}, key))
    return values


def _write_release_summary(
    grid: ResultGrid, key: str, target: float, best: float, passed: bool, time_taken: float
) -> None:
    """RLlib's --as-release-test JSON summary, at $TEST_OUTPUT_JSON (Ray's default path
    otherwise)."""
    last = dict(grid[0].metrics or {}) if len(grid) else {}
    last.pop("config", None)
    summary = {
        "time_taken": float(time_taken),
        "trial_states": ["TERMINATED"],
        "last_update": float(time.time()),
        "stats": last,
        "passed": [passed],
        "not_passed": [not passed],
        "failures": {} if passed else {"trial_0": 1},
        "success_metric": key,
        "best_value": float(best),
        "target_value": float(target),
    }
    path = os.environ.get("TEST_OUTPUT_JSON", "/tmp/release_test_out.json")
    temporary = f"{path}.tmp"
    with open(temporary, "w") as handle:
        json.dump(summary, handle, default=_json_value)
    os.replace(temporary, path)  # whole or not at all, as Ray writes it


def _json_value(value: Any) -> Any:
    """numpy scalars and arrays as JSON numbers and lists; anything else as its repr."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return repr(value)
