"""The main job: `python -m trainer` (or `localrl`) trains PPO on CartPole-v1 with RLlib's default
PPO settings, printing one line per iteration, until the mean return reaches 450.

Flags pick the algorithm, the env and the stop criteria, and change the common settings. The run
writes its checkpoints into `--output-dir` (default `localrl_results/<ALGO>_<env>_<time>`): every
`--checkpoint-frequency` iterations and at the end, keeping the `--num-to-keep` best by mean
return plus the latest. `--resume` continues a run from its latest checkpoint.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import sys
import time

ALGORITHMS = {"PPO": "trainer.algorithms.ppo:PPOConfig", "DQN": "trainer.algorithms.dqn:DQNConfig"}


def _config_class(name: str):
    module_name, class_name = ALGORITHMS[name].split(":")
    module = __import__(module_name, fromlist=[class_name])
    return getattr(module, class_name)


def _hiddens(text: str) -> list[int]:
    try:
        hiddens = [int(h) for h in text.split(",") if h.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--hiddens {text!r}: give layer sizes separated by commas, e.g. 64,64") from None
    if any(h <= 0 for h in hiddens):
        raise argparse.ArgumentTypeError(f"--hiddens {text!r}: sizes must be positive")
    return hiddens


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be >= 0")
    return value


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def _env_config(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"--env-config is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("--env-config must be a JSON object")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trainer",
        description="Train an RLlib-style algorithm on a gymnasium env, one line per iteration.")
    parser.add_argument("--algo", default="PPO", type=str.upper, choices=sorted(ALGORITHMS))
    parser.add_argument("--env", default="CartPole-v1", help="gymnasium id (default CartPole-v1)")
    parser.add_argument("--env-config", type=_env_config, default=None,
                        help="JSON object passed to the env as env_config")
    stop = parser.add_argument_group("stop criteria (the first one reached stops training)")
    stop.add_argument("--stop-reward", type=float, default=450.0,
                      help="mean episode return to reach (default 450)")
    stop.add_argument("--stop-iters", type=int, default=200)
    stop.add_argument("--stop-timesteps", type=int, default=None, help="env steps sampled")
    stop.add_argument("--stop-seconds", type=float, default=None, help="wall-clock seconds")
    run = parser.add_argument_group("run folder and checkpoints")
    run.add_argument("--output-dir", default=None,
                     help="where checkpoints go (default localrl_results/<ALGO>_<env>_<time>)")
    run.add_argument("--checkpoint-frequency", type=_non_negative_int, default=10,
                     help="save every N iterations (0: only at the end; default 10)")
    run.add_argument("--num-to-keep", type=_positive_int, default=3,
                     help="keep the N checkpoints with the best mean return, plus the latest "
                          "(default 3)")
    run.add_argument("--resume", action="store_true",
                     help="continue the run in --output-dir (default: the newest run of this "
                          "algorithm and env) from its latest checkpoint")
    settings = parser.add_argument_group("settings (default: the algorithm's defaults)")
    settings.add_argument("--num-env-runners", type=int, default=None)
    settings.add_argument("--num-envs-per-env-runner", type=int, default=None)
    settings.add_argument("--seed", type=int, default=None)
    settings.add_argument("--lr", type=float, default=None)
    settings.add_argument("--train-batch-size", type=int, default=None)
    settings.add_argument("--minibatch-size", type=int, default=None)
    settings.add_argument("--num-epochs", type=int, default=None)
    settings.add_argument("--hiddens", type=_hiddens, default=None,
                          help="hidden layer sizes, e.g. 64,64")
    settings.add_argument("--activation", default=None)
    return parser


def make_config(args: argparse.Namespace):
    config = _config_class(args.algo)()
    config.environment(args.env, **({"env_config": args.env_config} if args.env_config else {}))
    runners = {k: v for k, v in (("num_env_runners", args.num_env_runners),
                                 ("num_envs_per_env_runner", args.num_envs_per_env_runner))
               if v is not None}
    config.env_runners(**runners)
    training = {k: v for k, v in (("lr", args.lr), ("train_batch_size", args.train_batch_size),
                                  ("minibatch_size", args.minibatch_size),
                                  ("num_epochs", args.num_epochs)) if v is not None}
    config.training(**training)
    model = {k: v for k, v in (("fcnet_hiddens", args.hiddens),
                               ("fcnet_activation", args.activation)) if v is not None}
    if model:
        config.rl_module(model_config=model)
    if args.seed is not None:
        config.debugging(seed=args.seed)
    config.checkpointing(checkpoint_frequency=args.checkpoint_frequency,
                         num_to_keep=args.num_to_keep,
                         checkpoint_score_attribute="env_runners/episode_return_mean",
                         checkpoint_at_end=True)
    return config


RESULTS_ROOT = "localrl_results"


def _run_prefix(args: argparse.Namespace) -> str:
    return f"{args.algo}_{args.env.replace('/', '_')}"


def run_directory(args: argparse.Namespace) -> str:
    """The run folder: --output-dir, else a new one (or, with --resume, the newest) under
    localrl_results/ named after the algorithm and env."""
    if args.output_dir is not None:
        return os.path.abspath(args.output_dir)
    if args.resume:
        runs = sorted(glob.glob(os.path.join(RESULTS_ROOT, _run_prefix(args) + "_*")),
                      key=os.path.getmtime)
        if not runs:
            raise SystemExit(f"--resume: no run of {args.algo} on {args.env} under "
                             f"{RESULTS_ROOT}/; give --output-dir")
        return os.path.abspath(runs[-1])
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return os.path.abspath(os.path.join(RESULTS_ROOT, f"{_run_prefix(args)}_{stamp}"))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from trainer.config import ConfigError

    try:
        config = make_config(args)
        config.validate()
    except ConfigError as error:
        parser.error(str(error))
    from checkpoints import CheckpointError, CheckpointManager

    directory = run_directory(args)
    start = time.perf_counter()
    if args.resume:
        latest = CheckpointManager(directory).latest()
        if latest is None:
            parser.error(f"--resume: {directory} has no checkpoint to resume from")
        from trainer.algorithm import Algorithm

        try:
            algo = Algorithm.from_checkpoint(latest)
        except CheckpointError as error:
            parser.error(f"--resume: {error}")
        # The run goes on with its own settings; only the stop criteria come from the flags.
        config = algo.config
        print(f"resumed from {latest} at iteration {algo.training_iteration}", flush=True)
    else:
        algo = None
    shown = ("env", "num_env_runners", "num_envs_per_env_runner", "lr", "train_batch_size",
             "minibatch_size", "num_epochs", "gamma", "model", "seed")
    print(f"{type(config).__name__.removesuffix('Config')} on {config.env}: "
          + ", ".join(f"{k}={config[k]!r}" for k in shown), flush=True)
    manager = CheckpointManager.from_config(directory, config)
    if algo is None:
        algo = config.build()
    print(f"built in {time.perf_counter() - start:.2f} s; checkpoints go to {directory}",
          flush=True)
    reason = f"reached --stop-iters {args.stop_iters}"
    result = None
    try:
        while algo.training_iteration < args.stop_iters:
            result = algo.train()
            env_runners = result["env_runners"]
            steps = result["num_env_steps_sampled_lifetime"]
            mean_return = env_runners["episode_return_mean"]
            elapsed = time.perf_counter() - start
            print(f"iter {result['training_iteration']:4d} | env steps {steps:8d} | "
                  f"return mean {mean_return:8.2f} max {env_runners['episode_return_max']:8.2f} | "
                  f"{env_runners['num_env_steps_sampled'] / result['time_this_iter_s']:7.0f} "
                  f"steps/s | {elapsed:6.1f} s", flush=True)
            saved = manager.on_train_result(algo, result)
            if saved is not None:
                print(f"checkpoint {saved}", flush=True)
            if not math.isnan(mean_return) and mean_return >= args.stop_reward:
                reason = f"mean return {mean_return:.2f} >= --stop-reward {args.stop_reward:g}"
                break
            if args.stop_timesteps is not None and steps >= args.stop_timesteps:
                reason = f"{steps} env steps >= --stop-timesteps {args.stop_timesteps}"
                break
            if args.stop_seconds is not None and elapsed >= args.stop_seconds:
                reason = f"{elapsed:.1f} s >= --stop-seconds {args.stop_seconds:g}"
                break
        saved = manager.on_end(algo, result)
        if saved is not None:
            print(f"checkpoint {saved}", flush=True)
    except KeyboardInterrupt:
        reason = "interrupted"
    finally:
        algo.stop()
    print(f"stopped: {reason} after {algo.training_iteration} iterations, "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
