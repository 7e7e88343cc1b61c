"""`export CHECKPOINT --format onnx|numpy`: the checkpoint's policy for deployment, without
this package (`trainer.export`): an ONNX graph (`model.onnx`) or numpy weights with a
standalone reader (`policy.json`, `weights.npz`, `policy_reader.py`).

CHECKPOINT is a checkpoint directory, or a run folder (its best checkpoint), opened as
`evaluate` opens it. A bad format, module id or a module the export cannot express exits with
status 2 and a message naming the setting, the value and what is allowed."""

from __future__ import annotations

import argparse
import os
from typing import Any

from trainer.checkpoints import CheckpointError
from trainer.cli.evaluate import load_for_evaluation, resolve_checkpoint
from trainer.cli.extras import EXPORT, require
from trainer.export import DEFAULT_OPSET, FORMATS, ONNX, ExportError, export_policy


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "export",
        help="export a checkpoint's policy as ONNX or as numpy weights with a reader",
        description="Export a checkpoint's policy (observations in; the action "
        "distribution's inputs and the greedy action out) for deployment.",
    )
    parser.add_argument(
        "checkpoint", help="a checkpoint directory, or a run folder (its best checkpoint)"
    )
    # Checked by the export (one message for the CLI and the Python API), not by choices=.
    parser.add_argument(
        "--format", default=ONNX, help=f"one of {', '.join(FORMATS)} (default onnx)"
    )
    parser.add_argument("--module", default=None, help="the module id (default: default_policy)")
    parser.add_argument(
        "--output", default=None, metavar="DIR", help="the folder to write (default export_FORMAT)"
    )
    parser.add_argument(
        "--opset", type=int, default=DEFAULT_OPSET, help=f"ONNX opset (default {DEFAULT_OPSET})"
    )
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help="build the algorithm from the checkpoint's pickle file even when it is not "
        "signed with your key (only for checkpoints you trust; see evaluate --help)",
    )
    parser.set_defaults(run=run_export)
    return parser


def run_export(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.format not in FORMATS:
        parser.error(
            f"argument --format: {args.format!r}: allowed formats are {', '.join(FORMATS)}"
        )
    if args.format == ONNX:
        require("onnx", EXPORT, "export --format onnx")
    path = resolve_checkpoint(args.checkpoint)
    try:
        algorithm = load_for_evaluation(path, allow_pickle=args.trust_pickle)
    except CheckpointError as error:
        parser.error(f"argument checkpoint: {error}")
    output = args.output or f"export_{args.format}"
    try:
        kwargs = {} if args.module is None else {"module_id": args.module}
        written = export_policy(algorithm, output, format=args.format, opset=args.opset, **kwargs)
    except ExportError as error:
        flag = (
            "--module"
            if str(error).startswith("module_id=")
            else ("--opset" if str(error).startswith("onnx=") else "checkpoint")
        )
        parser.error(f"argument {flag}: {error}")
    finally:
        algorithm.stop()
    print(f"exported {path} ({args.format}) to {os.path.abspath(written)}")
    return 0
