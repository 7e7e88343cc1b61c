"""`python -m trainer run SCRIPT [ARGS...]`: runs an unmodified RLlib 2.60 script on this
project (`trainer.launcher`): `sys.argv` is `[SCRIPT, ARGS...]` and the script runs as
`__main__`, as with `python SCRIPT ARGS`; its exit status is the command's. A script that uses
Tune's experiment runner (`Tuner`, `tune.run`, ...) runs on real Ray by itself where Ray Tune is
installed (`trainer.launcher.script.wants_real_ray`)."""

from __future__ import annotations

import argparse
from typing import Any

from trainer.launcher import run_script


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "run",
        help="run an unmodified RLlib script (ray.rllib imports served by localrl)",
        description="Run an RLlib 2.60 script with no edit: `import ray`, `ray.rllib.*` and "
        "the parts of `ray.tune` RLlib scripts use are served by localrl. A name "
        "with no counterpart fails at its import, or for RLlib's other algorithms "
        "and Tune's experiment runner at its first use, with a message saying what "
        "it needs and what to use instead. Everything after SCRIPT goes to the "
        "script.",
    )
    parser.add_argument(
        "--ray",
        action="store_true",
        help="keep the installed Ray for `import ray` (for "
        'env_runners(backend="ray")); only ray.rllib (and, without Ray Tune, '
        "ray.tune and ray.air) are mapped. Chosen by itself for a script that "
        "uses Tune's experiment runner (Tuner, tune.run, ...) where Ray Tune is "
        "installed",
    )
    parser.add_argument("script", help="the Python file to run")
    parser.add_argument(
        "script_args",
        nargs=argparse.REMAINDER,
        metavar="ARGS",
        help="arguments for the script (its sys.argv[1:])",
    )
    parser.set_defaults(run=run_command)
    return parser


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # Without --ray, the launcher decides (real Ray for Tune's experiment runner).
    return run_script(args.script, list(args.script_args), real_ray=True if args.ray else None)
