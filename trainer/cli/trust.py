"""`trust PATH`: re-signs a checkpoint's pickled config with this user's key (see
`trainer.checkpoints.trust`), so that `Algorithm.from_checkpoint(PATH)` loads a checkpoint that
another user or machine saved. It prints what the checkpoint holds and what it did; it asks
nothing."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trainer.checkpoints import CheckpointError
from trainer.checkpoints.trust import trust_checkpoint


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "trust",
        help="trust a checkpoint from another user or machine (re-sign its pickled config)",
        description="Verify a checkpoint, print its algorithm class and the pickled config's "
        "file and SHA-256, then re-sign that pickle with your key so that "
        "Algorithm.from_checkpoint(PATH) unpickles it. Unpickling runs whatever code the "
        "pickle holds: trust only checkpoints whose origin you know.",
    )
    parser.add_argument("path", help="a checkpoint directory")
    parser.set_defaults(run=run_trust)
    return parser


def run_trust(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        report = trust_checkpoint(args.path)
    except CheckpointError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0
