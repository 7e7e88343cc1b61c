"""The run folder `train` writes, in Tune's layout:

    params.json         the config (`AlgorithmConfig.to_dict()`, code named as "module:name")
    run.json            the algorithm, the env and the stop criteria, for --resume and inspect
    result.json         one JSON object per iteration, the whole result dict
    progress.csv        the same, flattened to "a/b" columns, one row per iteration
    checkpoint_<i>/     checkpoints (`checkpoints.CheckpointManager`), checkpoints.json
    learning_curve.png  return over env steps, with matplotlib installed

NaN and infinities are written as null (result.json) and empty cells (progress.csv), so any JSON
or CSV reader takes the files. When a run resumes from a checkpoint, the rows of the iterations
after it (trained, then lost) are dropped first, so each iteration appears once.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from typing import Any

import numpy as np

from trainer.metrics import (
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    TRAINING_ITERATION,
)
from trainer.util.files import replace_file

PARAMS_FILE = "params.json"
RUN_FILE = "run.json"
RESULT_FILE = "result.json"
PROGRESS_FILE = "progress.csv"
#: progress.csv's first columns; the others follow in the order they first appear.
FIRST_COLUMNS = (
    TRAINING_ITERATION,
    "time_total_s",
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    "env_runners/episode_return_mean",
    "env_runners/episode_return_min",
    "env_runners/episode_return_max",
    "env_runners/episode_len_mean",
    "evaluation/env_runners/episode_return_mean",
)


def plain(value: Any) -> Any:
    """`value` as JSON data: numpy values as numbers and lists, NaN as None, code by name."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, type) or callable(value):
        return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', value)}"
    return repr(value)


def flatten(result: dict, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a/b": 1}, as Tune names progress.csv's columns."""
    row = {}
    for key, value in result.items():
        if isinstance(value, dict):
            row.update(flatten(value, f"{prefix}{key}/"))
        else:
            row[f"{prefix}{key}"] = (
                "" if value is None else (json.dumps(value) if isinstance(value, list) else value)
            )
    return row


class RunFolder:
    def __init__(self, directory: str):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.result_path = os.path.join(directory, RESULT_FILE)
        self.progress_path = os.path.join(directory, PROGRESS_FILE)
        self._columns: list[str] = self._read_columns()

    def write_params(self, config: Any) -> None:
        params = json.dumps(plain(config.to_dict()), indent=2, sort_keys=True) + "\n"
        replace_file(os.path.join(self.directory, PARAMS_FILE), params.encode())

    def write_run_info(self, algo: str, env: Any, stop: dict) -> None:
        info = {
            "algo": algo,
            "env": plain(env),
            "stop": {k: v for k, v in stop.items() if v is not None},
        }
        replace_file(os.path.join(self.directory, RUN_FILE), json.dumps(info, indent=2).encode())

    def read_run_info(self) -> dict:
        """run.json's contents; {} when it is missing or damaged."""
        try:
            with open(os.path.join(self.directory, RUN_FILE)) as handle:
                info = json.load(handle)
        except (OSError, ValueError):
            return {}
        return info if isinstance(info, dict) else {}

    def add_result(self, result: dict) -> None:
        """Appends one iteration to result.json and progress.csv."""
        data = plain(dict(result))
        with open(self.result_path, "a") as handle:
            handle.write(json.dumps(data) + "\n")
        row = flatten(data)
        new_columns = [c for c in FIRST_COLUMNS if c in row and c not in self._columns]
        new_columns += [c for c in row if c not in self._columns and c not in new_columns]
        if new_columns:
            # A key seen for the first time (evaluation results, a custom metric): rewrite the
            # file with the wider header rather than drop the column.
            rows = self._read_rows()
            self._columns += new_columns
            self._rewrite_progress(rows + [row])
            return
        with open(self.progress_path, "a", newline="") as handle:
            csv.DictWriter(handle, self._columns).writerow(row)

    def results(self) -> list[dict]:
        """Every result in result.json, oldest first."""
        if not os.path.exists(self.result_path):
            return []
        with open(self.result_path) as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def drop_after(self, iteration: int) -> int:
        """Removes the rows of iterations after `iteration`; returns how many went."""
        results = self.results()
        kept = [r for r in results if r.get(TRAINING_ITERATION, 0) <= iteration]
        if len(kept) == len(results):
            return 0
        replace_file(self.result_path, "".join(json.dumps(r) + "\n" for r in kept).encode())
        rows = [
            row
            for row in self._read_rows()
            if int(float(row.get(TRAINING_ITERATION) or 0)) <= iteration
        ]
        self._rewrite_progress(rows)
        return len(results) - len(kept)

    def _read_columns(self) -> list[str]:
        if not os.path.exists(self.progress_path):
            return []
        with open(self.progress_path, newline="") as handle:
            return next(csv.reader(handle), [])

    def _read_rows(self) -> list[dict]:
        if not os.path.exists(self.progress_path):
            return []
        with open(self.progress_path, newline="") as handle:
            return list(csv.DictReader(handle))

    def _rewrite_progress(self, rows: list[dict]) -> None:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, self._columns)
        writer.writeheader()
        writer.writerows(rows)
        replace_file(self.progress_path, buffer.getvalue().encode())
