"""`python -m trainer settings`: every setting of the configs with its default and what it does
(the tables of docs/settings.md, from the settings table: `trainer.algorithms.settings`)."""

from __future__ import annotations

import argparse
from typing import Any

from trainer.cli.settings_page import settings_tables


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "settings",
        help="print every setting with its default and what it does",
        description="Print the settings of AlgorithmConfig's builder methods, then each "
        "algorithm's own, as markdown tables.",
    )
    parser.set_defaults(run=run_settings)
    return parser


def run_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    print(settings_tables())
    return 0
