"""`inspect PATH`: what a checkpoint holds (verified, see `python -m checkpoints inspect`), or,
for a run folder, the run (algorithm, env, stop criteria, the last result, every checkpoint with
its score) followed by its latest checkpoint."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from trainer.checkpoints import METADATA_FILE, CheckpointError, CheckpointManager
from trainer.checkpoints.__main__ import inspect
from trainer.cli.run_folder import PARAMS_FILE, RunFolder
from trainer.compat.rllib_checkpoint import describe as describe_rllib
from trainer.compat.rllib_checkpoint import describe_lines, is_rllib_checkpoint
from trainer.metrics import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TRAINING_ITERATION,
)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "inspect",
        help="verify a checkpoint (or a run folder) and print what it holds",
        description="Verify a checkpoint and print its metadata, files and contents; for a "
        "run folder, the run and its checkpoints first.",
    )
    parser.add_argument("path", help="a checkpoint directory or a run folder")
    parser.add_argument("--json", action="store_true", help="print JSON instead")
    parser.set_defaults(run=run_inspect)
    return parser


def describe_run(directory: str) -> dict:
    manager = CheckpointManager(directory)
    folder = RunFolder(directory)
    run = folder.read_run_info()
    results = folder.results()
    last = results[-1] if results else None
    best = manager.best()
    return {
        "run": directory,
        **run,
        "has_params": os.path.exists(os.path.join(directory, PARAMS_FILE)),
        "iterations_logged": len(results),
        "last_result": None
        if last is None
        else {
            TRAINING_ITERATION: last.get(TRAINING_ITERATION),
            NUM_ENV_STEPS_SAMPLED_LIFETIME: last.get(NUM_ENV_STEPS_SAMPLED_LIFETIME),
            EPISODE_RETURN_MEAN: (last.get(ENV_RUNNER_RESULTS) or {}).get(EPISODE_RETURN_MEAN),
            "time_total_s": last.get("time_total_s"),
        },
        "score_attribute": manager.checkpoint_score_attribute,
        "checkpoints": [
            {
                **entry,
                "latest": entry is manager.latest_entry(),
                "best": os.path.join(directory, entry["name"]) == best,
            }
            for entry in sorted(manager.entries, key=lambda e: e["iteration"])
        ],
    }


def _run_lines(run: dict) -> list[str]:
    lines = [f"run {run['run']}"]
    if "algo" in run:
        lines.append(f"  {run['algo']} on {run.get('env')}, stop at {run.get('stop')}")
    last = run["last_result"]
    if last is not None:
        mean = last[EPISODE_RETURN_MEAN]
        lines.append(
            f"  {run['iterations_logged']} iterations logged; the last: iteration "
            f"{last['training_iteration']}, {last['num_env_steps_sampled_lifetime']} "
            f"env steps, mean return {'-' if mean is None else f'{mean:.2f}'}, "
            f"{last['time_total_s']:.1f} s of training"
        )
    lines.append(f"  checkpoints (score: {run['score_attribute'] or 'none'})")
    for entry in run["checkpoints"]:
        marks = [m for m in ("latest", "best") if entry[m]]
        score = "-" if entry["score"] is None else f"{entry['score']:.2f}"
        lines.append(
            f"    {entry['name']}  score {score:>8}" + (f"  ({', '.join(marks)})" if marks else "")
        )
    return lines


def run_inspect(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    path = args.path
    if is_rllib_checkpoint(path):  # RLlib 2.60's layout (`trainer.compat.rllib_checkpoint`)
        try:
            info = describe_rllib(path)
        except CheckpointError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(json.dumps(info, indent=2) if args.json else "\n".join(describe_lines(info)))
        return 0
    run = None
    if os.path.isdir(path) and not os.path.isfile(os.path.join(path, METADATA_FILE)):
        latest = CheckpointManager(path).latest()
        if latest is None:
            print(
                f"error: {path} is neither a checkpoint nor a run folder with checkpoints",
                file=sys.stderr,
            )
            return 1
        run, path = describe_run(os.path.abspath(path)), latest
    try:
        checkpoint = inspect(path, as_json=args.json)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {**({"run": run} if run else {}), "checkpoint": json.loads(checkpoint)}, indent=2
            )
        )
    else:
        print("\n".join((_run_lines(run) if run else []) + [checkpoint]))
    return 0
