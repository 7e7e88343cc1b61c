"""The command line: `python -m trainer` or `localrl`, with the commands `train` (the default:
`python -m trainer --stop-iters 5` is `python -m trainer train --stop-iters 5`), `evaluate`,
`inspect`, `export` (a checkpoint's policy as ONNX or numpy weights), `record` (a
checkpoint's policy as offline data), `serve` (a checkpoint's policy over HTTP), `settings`, `run` (an unmodified
RLlib script), `tune` (a Ray Tune search from a
file) and `trust` (a checkpoint from another user or machine). One module per command; the run
folder, progress display, stop criteria, Ctrl-C handling, config files, plots and videos each
have their own.

Bad flags exit with status 2 and a message naming the flag (argparse's convention), as does a
command that needs an optional extra which is not installed (one line naming the extra,
`trainer.cli.extras`); a finished run exits 0, one stopped by Ctrl-C (after saving) 130, one that
failed 1.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys

from trainer.cli import (
    evaluate,
    export,
    inspect,
    record,
    run,
    serve,
    settings,
    train,
    trust,
    tune,
)
from trainer.cli.extras import MISSING_EXTRA_EXIT_STATUS, MissingExtra

COMMANDS = {
    "train": train,
    "evaluate": evaluate,
    "inspect": inspect,
    "export": export,
    "record": record,
    "serve": serve,
    "settings": settings,
    "run": run,
    "tune": tune,
    "trust": trust,
}


def program_name() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m trainer" if name in ("", "__main__.py", "-c") else name


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and each command's own (for errors in that command's usage)."""
    parser = argparse.ArgumentParser(
        prog=program_name(),
        description="Train, evaluate and inspect RLlib-style algorithms on one machine. "
        "With no command: train (PPO on CartPole-v1 until solved).",
        epilog="Run a command with --help for its flags.",
    )
    commands = parser.add_subparsers(
        dest="command",
        metavar="{train,evaluate,inspect,export,record,serve,settings,run,tune,trust}",
    )
    return parser, {name: module.add_parser(commands) for name, module in COMMANDS.items()}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, command_parsers = build_parser()
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv.insert(0, "train")
    elif argv[0] not in COMMANDS and argv[0] not in ("-h", "--help"):
        close = difflib.get_close_matches(argv[0], COMMANDS, n=1)
        parser.error(
            f"unknown command {argv[0]!r}"
            + (f"; did you mean {close[0]!r}?" if close else "")
            + f" (commands: {', '.join(COMMANDS)})"
        )
    args = parser.parse_args(argv)
    try:
        return int(args.run(args, command_parsers[args.command]))
    except MissingExtra as error:
        print(f"error: {error}", file=sys.stderr)
        return MISSING_EXTRA_EXIT_STATUS
