"""`python -m trainer tune --config search.toml`: a Ray Tune search from a file
(`trainer.cli.search_file` describes it): `Tuner.fit()` on real Ray, then the best trial and
where the run folder is. Tune writes the run folder (one folder per trial with its results,
checkpoints and TensorBoard logs) and prints its progress as it always does.

Exit status: 0 when every trial finished, 1 when one failed (its error is printed) or Ray Tune
is not installed, 2 for a bad file (the message names the key, the value and what is allowed).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from trainer.cli.config_file import ConfigFileError
from trainer.cli.extras import TUNE, require
from trainer.cli.search_file import read_search_file
from trainer.result_grid import metric_value


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "tune",
        help="run a Ray Tune hyperparameter search described in a TOML file",
        description="Run a hyperparameter search with Ray Tune (pip install 'localrl[tune]'): "
        "the file names the algorithm, the env, the settings with search spaces "
        "(lr = {grid_search = [1e-3, 1e-4]}, {uniform = [low, high]}, {choice = [...]}, "
        "...), the stop criteria, the number of samples and concurrent trials, the metric "
        "and mode, a scheduler (asha or pbt), checkpoints and the run folder. Prints the "
        "best trial and where the run folder is.",
    )
    parser.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="the search file (.toml, or .json with the same layout)",
    )
    parser.set_defaults(run=run_tune)
    return parser


def run_tune(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        search = read_search_file(args.config)
    except ConfigFileError as error:
        parser.error(str(error))  # exits 2
    tune = require("trainer.tune", TUNE, "python -m trainer tune", library="Ray Tune")
    import ray

    started_ray = False
    if search.num_cpus is not None and not ray.is_initialized():
        ray.init(num_cpus=search.num_cpus)
        started_ray = True
    try:
        grid = search.tuner(tune).fit()
        return _report(grid, search)
    finally:
        if started_ray:
            ray.shutdown()


def _searched_values(config: dict, search: Any) -> dict[str, Any]:
    """The trial's values of the searched settings ("a.b" for nested ones)."""
    values = {}
    for path in search.spaces:
        value: Any = config
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        values[".".join(path)] = value
    return values


def _report(grid: Any, search: Any) -> int:
    """Prints the best trial and the run folder; 1 if a trial failed."""
    print(f"{len(grid)} trials, {grid.num_errors} failed")
    for error in grid.errors:
        print(f"trial error: {type(error).__name__}: {error}", file=sys.stderr)
    if search.metric and grid.num_terminated:
        best = grid.get_best_result(metric=search.metric, mode=search.mode)
        value = metric_value(best.metrics or {}, search.metric)  # a flat or "a/b" key
        print(
            f"best trial: {search.metric}={value} ({search.mode}) with "
            f"{_searched_values(best.config or {}, search)}"
        )
        print(f"best trial folder: {best.path}")
        if best.checkpoint is not None:
            print(f"best trial checkpoint: {best.checkpoint.path}")
    print(f"run folder: {grid.experiment_path}")
    return 1 if grid.num_errors else 0
