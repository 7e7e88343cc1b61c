"""`record CHECKPOINT --output FOLDER`: plays the checkpoint's policy in its env and records the
steps as RLlib 2.60's offline data (`trainer.offline.recording`), for BC, MARWIL or RLlib's own
offline algorithms: one row per env step (`--format columns`, RLlib's column table) or one row
per episode (`--format episodes`, msgpack'd episodes). Actions are sampled as the EnvRunners
sample them (`--no-explore`: greedy). Only whole episodes are recorded.
"""

from __future__ import annotations

import argparse
import signal
from types import SimpleNamespace
from typing import Any

from trainer.checkpoints import CheckpointError
from trainer.cli.evaluate import load_for_evaluation, resolve_checkpoint
from trainer.cli.options import positive_int
from trainer.offline.recording import OfflineRecorder

#: The `--format` choices.
COLUMNS, EPISODES = "columns", "episodes"


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "record",
        help="record a checkpoint's policy as offline data (parquet)",
        description="Play a checkpoint's policy in its env and record the steps as RLlib's "
        "offline data, for offline_data(input_=...).",
    )
    parser.add_argument(
        "checkpoint", help="a checkpoint directory, or a run folder (its best checkpoint)"
    )
    parser.add_argument("--output", required=True, help="the folder to record into")
    parser.add_argument(
        "--env-steps",
        type=positive_int,
        default=10_000,
        help="record whole episodes until at least this many env steps (default 10000)",
    )
    parser.add_argument(
        "--format",
        choices=[COLUMNS, EPISODES],
        default=COLUMNS,
        help="columns (default): one row per env step; episodes: one row per episode",
    )
    parser.add_argument(
        "--rows-per-file", type=positive_int, default=None, help="default: one file per episode"
    )
    parser.add_argument(
        "--explore",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="sample actions as the EnvRunners do (default), or greedy ones",
    )
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help="build the algorithm from the checkpoint's pickle file even when it is not "
        "signed with your key (unpickling runs the file's code: only for checkpoints you "
        "trust)",
    )
    parser.set_defaults(run=run_record)
    return parser


def run_record(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    path = resolve_checkpoint(args.checkpoint)
    try:
        algorithm = load_for_evaluation(path, allow_pickle=args.trust_pickle)
    except CheckpointError as error:
        parser.error(f"argument checkpoint: {error}")
    if algorithm.config.is_multi_agent:
        algorithm.stop()
        parser.error(
            "argument checkpoint: a multi-agent checkpoint (RLlib records single-agent runs)"
        )
    settings = SimpleNamespace(
        output=args.output,
        env=algorithm.config.env,
        output_write_episodes=args.format == EPISODES,
        output_max_rows_per_file=args.rows_per_file,
        output_write_remaining_data=True,
    )
    recorder = OfflineRecorder(settings)
    steps = episodes = 0
    try:
        runner = algorithm.env_runner
        while steps < args.env_steps:
            done = runner.sample(num_episodes=1, explore=args.explore)
            recorder.record(0, done)
            steps += sum(len(episode) for episode in done)
            episodes += len(done)
        recorder.stop()
    except KeyboardInterrupt:
        print(f"interrupted: the files written so far are whole ({len(recorder.files)})")
        return 130
    finally:
        algorithm.stop()
    print(
        f"recorded {episodes} episodes, {steps} env steps of {path} into "
        f"{recorder.folder} ({len(recorder.files)} files, {args.format})"
    )
    return 0
