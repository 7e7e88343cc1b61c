"""`evaluate CHECKPOINT`: runs the checkpoint's policy for some episodes and prints each return.

CHECKPOINT is a checkpoint directory, or a run folder (its best checkpoint is used). The env
is the checkpoint's (its config's env and env_config; `--env-config` changes keys). Actions come
from `Algorithm.compute_single_action`: greedy by default, sampled through the configured
exploration with `--explore`. `--video out.gif|out.mp4` records the first `--video-episodes`
episodes from the env's rgb frames (`render_mode="rgb_array"`, which gymnasium ids take directly
and env creators get in their env_config).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import error as gymnasium_error

from trainer.algorithms.algorithm import Algorithm
from trainer.algorithms.algorithm_config import AlgorithmConfig
from trainer.algorithms.checkpointing import load_class_and_config
from trainer.checkpoints import METADATA_FILE, CheckpointError, CheckpointManager, open_checkpoint
from trainer.cli.extras import VIDEO, MissingExtra, available, require_for_config
from trainer.cli.multi_agent import register_checkpoint_env
from trainer.cli.options import json_object, non_negative_int, positive_float, positive_int
from trainer.cli.video import VideoError, VideoWriter, check_video_encoder, check_video_path
from trainer.compat.rllib_checkpoint import is_rllib_checkpoint, load_rllib_algorithm
from trainer.env.envs import EnvContext, make_env_creator

#: The renderer of gymnasium's classic-control and toy-text envs (in the video extra).
PYGAME = "pygame"


def _video_path(text: str) -> str:
    try:
        return check_video_path(text)
    except VideoError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "evaluate",
        help="run a checkpoint's policy and report episode returns",
        description="Run a checkpoint's policy in its env and print each episode's return.",
    )
    parser.add_argument(
        "checkpoint", help="a checkpoint directory, or a run folder (its best checkpoint)"
    )
    parser.add_argument("--episodes", type=positive_int, default=10, help="default 10")
    parser.add_argument(
        "--explore",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="sample actions through the exploration (default: greedy)",
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=None,
        help="reset episode i with seed+i (default: unseeded)",
    )
    parser.add_argument(
        "--env-config",
        type=json_object,
        default=None,
        help="JSON object of env_config keys to change",
    )
    parser.add_argument(
        "--video",
        type=_video_path,
        default=None,
        metavar="PATH",
        help="record frames into PATH (.gif or .mp4)",
    )
    parser.add_argument(
        "--video-episodes",
        type=positive_int,
        default=1,
        help="how many episodes the video shows (default 1)",
    )
    parser.add_argument(
        "--fps",
        type=positive_float,
        default=None,
        help="video frames per second (default: the env's render_fps)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help="build the algorithm from the checkpoint's pickle file (for configs "
        "with lambdas or code defined in a script) even when it is not signed with "
        "your key (your own are read without this flag); unpickling runs the "
        "file's code: only for checkpoints you trust",
    )
    parser.set_defaults(run=run_evaluate)
    return parser


def resolve_checkpoint(path: str) -> str:
    """A checkpoint directory as is; a run folder's best checkpoint."""
    if os.path.isfile(os.path.join(path, METADATA_FILE)):
        return path
    best = CheckpointManager(path).best() if os.path.isdir(path) else None
    return best if best is not None else path


def load_for_evaluation(path: str, *, allow_pickle: bool = False) -> Any:
    """The algorithm of the checkpoint at `path`, built to act in this process only (no
    EnvRunner processes, no evaluation runners). Its config comes from the checkpoint's
    pickle file when signed with the user's key or with `allow_pickle`, else from its
    plain-data `config.json` (`load_class_and_config`). A checkpoint RLlib 2.60 wrote is read
    as `Algorithm.from_checkpoint` reads it (`trainer.compat.rllib_checkpoint`)."""
    if is_rllib_checkpoint(path):
        return load_rllib_algorithm(path, adjust=_for_evaluation)
    checkpoint = open_checkpoint(path)
    register_checkpoint_env(checkpoint)
    algorithm_class, config = load_class_and_config(
        checkpoint, algorithm_base=Algorithm, config_base=AlgorithmConfig, allow_pickle=allow_pickle
    )
    require_for_config(config, f"checkpoint {path}")
    config = config.copy()
    _for_evaluation(config)
    return algorithm_class.from_checkpoint(path, config=config)


def _for_evaluation(config: Any) -> None:
    """The config acting in this process only: no EnvRunner processes, no evaluation runners."""
    config.env_runners(num_env_runners=0)
    config.evaluation(
        evaluation_interval=None,
        evaluation_num_env_runners=0,
        evaluation_parallel_to_training=False,
    )


def make_env(config: Any, env_config_changes: dict | None, render: bool) -> Any:
    env_config = {**config.env_config, **(env_config_changes or {})}
    if render:
        env_config["render_mode"] = "rgb_array"
        # pygame (gymnasium's classic-control renderer) on a machine without a screen.
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        # SDL takes SIGINT and SIGTERM for itself when their handlers are the defaults.
        os.environ.setdefault("SDL_NO_SIGNAL_HANDLERS", "1")
    env = make_env_creator(config.env)(EnvContext(env_config))
    if render and getattr(env, "render_mode", None) != "rgb_array":
        env.close()
        raise VideoError(
            f"env {config.env!r} was made with render_mode="
            f"{getattr(env, 'render_mode', None)!r}; --video needs an env that "
            "takes render_mode='rgb_array' (gymnasium ids do; a creator gets it "
            "in env_config)"
        )
    return env


def run_episodes(
    algorithm: Any,
    env: Any,
    episodes: int,
    explore: bool,
    seed: int | None,
    video: VideoWriter | None,
    video_episodes: int,
    on_episode: Callable[[int, float, int], Any] | None = None,
) -> list[tuple[float, int]]:
    """(return, length) of each episode."""
    outcomes = []
    for episode in range(episodes):
        recording = video if video is not None and episode < video_episodes else None
        observation, _ = env.reset(seed=None if seed is None else seed + episode)
        if recording is not None:
            recording.add(_render(env))
        episode_return, length, done = 0.0, 0, False
        multi_agent = algorithm.config.is_multi_agent
        modules: dict = {}  # a multi-agent episode's agents' modules (mapped once)
        while not done:
            if multi_agent:
                # Each agent with an observation acts with its module; the return sums all.
                for agent_id in observation:
                    if agent_id not in modules:
                        modules[agent_id] = algorithm.config.policy_mapping_fn(agent_id, None)
                action = {
                    agent_id: algorithm.compute_single_action(
                        agent_obs, explore=explore, policy_id=modules[agent_id]
                    )
                    for agent_id, agent_obs in observation.items()
                }
                observation, rewards, terminateds, truncateds, _ = env.step(action)
                episode_return += float(sum(rewards.values()))
                done = bool(terminateds.get("__all__") or truncateds.get("__all__"))
                # Agents that ended do not act again.
                observation = {
                    agent_id: agent_obs
                    for agent_id, agent_obs in observation.items()
                    if not (terminateds.get(agent_id) or truncateds.get(agent_id))
                }
            else:
                action = algorithm.compute_single_action(observation, explore=explore)
                observation, reward, terminated, truncated, _ = env.step(action)
                episode_return += float(reward)
                done = terminated or truncated
            length += 1
            if recording is not None:
                recording.add(_render(env))
        outcomes.append((episode_return, length))
        if on_episode is not None:
            on_episode(episode, episode_return, length)
    return outcomes


def _render(env: Any) -> np.ndarray:
    try:
        return env.render()
    except (ImportError, gymnasium_error.DependencyNotInstalled) as error:
        # gymnasium's classic-control envs render with pygame, which the video extra installs.
        if PYGAME in str(error) and not available(PYGAME):
            name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
            raise MissingExtra(f"--video (rendering {name})", PYGAME, VIDEO) from None
        raise VideoError(f"the env cannot render: {error}") from None


def run_evaluate(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # SIGTERM ends the command like Ctrl-C: the partial video is removed, ffmpeg is stopped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.video is not None:
        check_video_encoder(args.video)  # before the checkpoint is loaded
    path = resolve_checkpoint(args.checkpoint)
    try:
        algorithm = load_for_evaluation(path, allow_pickle=args.trust_pickle)
    except CheckpointError as error:
        parser.error(f"argument checkpoint: {error}")
    video = None
    try:
        env = make_env(algorithm.config, args.env_config, render=args.video is not None)
        if args.video is not None:
            fps = args.fps or env.metadata.get("render_fps") or 30
            video = VideoWriter(args.video, fps)

        def show(index: int, episode_return: float, length: int) -> None:
            if not args.json:
                print(
                    f"episode {index + 1:3d}: return {episode_return:10.2f}, length {length}",
                    flush=True,
                )

        if not args.json:
            print(
                f"evaluating {path} (iteration {algorithm.iteration}) on "
                f"{algorithm.config.env!r}: {args.episodes} episodes, "
                f"{'exploring' if args.explore else 'greedy'} actions",
                flush=True,
            )
        outcomes = run_episodes(
            algorithm,
            env,
            args.episodes,
            args.explore,
            args.seed,
            video,
            args.video_episodes,
            on_episode=show,
        )
        env.close()
        if video is not None:
            video.close()
    except VideoError as error:
        if video is not None:
            video.abort()
        print(f"error: argument --video: {error}", file=sys.stderr)
        return 2
    except MissingExtra:
        if video is not None:
            video.abort()
        raise  # one line, from trainer.cli.main
    except KeyboardInterrupt:
        if video is not None:
            video.abort()
        print("interrupted: no summary, no video written", file=sys.stderr)
        return 130
    except BaseException:
        if video is not None:
            video.abort()
        raise
    finally:
        algorithm.stop()
    returns = [r for r, _ in outcomes]
    lengths = [n for _, n in outcomes]
    summary = {
        "checkpoint": path,
        "training_iteration": algorithm.iteration,
        "env": algorithm.config.env
        if isinstance(algorithm.config.env, str)
        else repr(algorithm.config.env),
        "explore": args.explore,
        "num_episodes": len(returns),
        "episode_return_mean": statistics.fmean(returns),
        "episode_return_std": statistics.pstdev(returns),
        "episode_return_min": min(returns),
        "episode_return_max": max(returns),
        "episode_len_mean": statistics.fmean(lengths),
        "episode_returns": returns,
        "episode_lengths": lengths,
    }
    if video is not None:
        summary["video"] = os.path.abspath(args.video)
        summary["video_frames"] = video.num_frames
    if args.json:
        print(json.dumps(summary))
        return 0
    print(
        f"mean return {summary['episode_return_mean']:.2f} "
        f"± {summary['episode_return_std']:.2f} (min {summary['episode_return_min']:.2f}, "
        f"max {summary['episode_return_max']:.2f}) over {len(returns)} episodes; "
        f"mean length {summary['episode_len_mean']:.1f}"
    )
    if video is not None:
        print(f"video: {summary['video']} ({video.num_frames} frames at {video.fps:g} fps)")
    return 0
