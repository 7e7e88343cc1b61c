"""`CheckpointManager`: the checkpoints of one training run, saved on a schedule, pruned to the
best and latest few.

Checkpoints go into the run directory as `checkpoint_<iteration>` (six digits). The index file
`checkpoints.json` lists each with its iteration and score; it is replaced atomically after every
change, and rebuilt from the directories when it is missing or damaged.

Retention (`num_to_keep=N`): the N best by `checkpoint_score_attribute` (a result key such as
"env_runners/episode_return_mean"; NaN or missing scores rank last, newer wins ties), or the N
latest without one, and always the latest of all, so a run can be resumed where it stopped.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Mapping
from typing import Any

from trainer.checkpoints.format import METADATA_FILE
from trainer.util.files import replace_file

INDEX_FILE = "checkpoints.json"
_NAME = re.compile(r"^checkpoint_(\d+)$")


def _iteration_of(name: str) -> int:
    """The iteration in a checkpoint directory's name (`checkpoint_000012` -> 12)."""
    match = _NAME.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a checkpoint directory name")
    return int(match[1])


def result_value(result: Mapping[str, Any], key: str) -> Any:
    """`result["a"]["b"]` for the key "a/b"; None when absent."""
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


class CheckpointManager:
    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        checkpoint_frequency: int = 0,
        num_to_keep: int | None = None,
        checkpoint_score_attribute: str | None = None,
        checkpoint_score_order: str = "max",
        checkpoint_at_end: bool = False,
    ):
        self.directory = os.path.abspath(os.fspath(directory))
        self.checkpoint_frequency = checkpoint_frequency
        self.num_to_keep = num_to_keep
        self.checkpoint_score_attribute = checkpoint_score_attribute
        self.checkpoint_score_order = checkpoint_score_order
        self.checkpoint_at_end = checkpoint_at_end
        self.entries: list[dict] = self._read_index()

    @classmethod
    def from_config(cls, directory: str | os.PathLike, config: Any) -> CheckpointManager:
        """A manager with the config's `checkpointing()` settings."""
        return cls(
            directory,
            checkpoint_frequency=config.checkpoint_frequency,
            num_to_keep=config.num_to_keep,
            checkpoint_score_attribute=config.checkpoint_score_attribute,
            checkpoint_score_order=config.checkpoint_score_order,
            checkpoint_at_end=config.checkpoint_at_end,
        )

    # -- when to save ------------------------------------------------------------------------
    def on_train_result(self, algorithm: Any, result: dict) -> str | None:
        """Call after every `train()`: saves every `checkpoint_frequency` iterations."""
        iteration = result["training_iteration"]
        if self.checkpoint_frequency and iteration % self.checkpoint_frequency == 0:
            return self.save(algorithm, result)
        return None

    def on_end(self, algorithm: Any, result: dict | None = None) -> str | None:
        """Call when training ends: saves with `checkpoint_at_end` unless this iteration was
        saved already; returns the new checkpoint's path or None."""
        if not self.checkpoint_at_end:
            return None
        return self.save_if_new(algorithm, result)

    def save_if_new(self, algorithm: Any, result: dict | None = None) -> str | None:
        """Saves unless this iteration is saved already (or nothing was trained); returns the
        new checkpoint's path or None. The main job calls it when Ctrl-C stops a run."""
        if algorithm.iteration == 0:
            return None
        latest = self.latest_entry()
        if latest is not None and latest["iteration"] == algorithm.iteration:
            return None
        return self.save(algorithm, result)

    def save(self, algorithm: Any, result: dict | None = None) -> str:
        name = f"checkpoint_{algorithm.iteration:06d}"
        path = algorithm.save_to_path(os.path.join(self.directory, name))
        score = None
        if self.checkpoint_score_attribute and result is not None:
            value = result_value(result, self.checkpoint_score_attribute)
            if isinstance(value, (int, float)) and not math.isnan(value):
                score = float(value)
        self.entries = [e for e in self.entries if e["name"] != name]
        self.entries.append({"name": name, "iteration": algorithm.iteration, "score": score})
        self._prune()
        self._write_index()
        return path

    # -- what is there -----------------------------------------------------------------------
    def latest_entry(self) -> dict | None:
        return max(self.entries, key=lambda e: e["iteration"], default=None)

    def latest(self) -> str | None:
        """Path of the newest checkpoint, or None."""
        entry = self.latest_entry()
        return None if entry is None else os.path.join(self.directory, entry["name"])

    def best(self) -> str | None:
        """Path of the best-scoring checkpoint (the latest without a score attribute)."""
        if not self.entries:
            return None
        return os.path.join(self.directory, self._ranked()[0]["name"])

    def _ranked(self) -> list[dict]:
        """Best first: by score (NaN / missing last), newer first among equals."""
        sign = 1.0 if self.checkpoint_score_order == "max" else -1.0

        def rank(entry: dict) -> tuple[bool, float, int]:
            score = entry["score"] if self.checkpoint_score_attribute else None
            return (score is not None, 0.0 if score is None else sign * score, entry["iteration"])

        return sorted(self.entries, key=rank, reverse=True)

    def _prune(self) -> None:
        if self.num_to_keep is None:
            return
        keep = {e["name"] for e in self._ranked()[: self.num_to_keep]}
        latest = self.latest_entry()
        if latest is not None:
            keep.add(latest["name"])
        for entry in [e for e in self.entries if e["name"] not in keep]:
            shutil.rmtree(os.path.join(self.directory, entry["name"]), ignore_errors=True)
        self.entries = [e for e in self.entries if e["name"] in keep]

    # -- the index file ----------------------------------------------------------------------
    def _read_index(self) -> list[dict]:
        if not os.path.isdir(self.directory):
            return []
        present = {
            name
            for name in os.listdir(self.directory)
            if _NAME.match(name)
            and os.path.isfile(os.path.join(self.directory, name, METADATA_FILE))
        }
        try:
            with open(os.path.join(self.directory, INDEX_FILE)) as handle:
                index = json.load(handle)
            indexed = {e["name"]: e for e in index["checkpoints"]}
        except (OSError, ValueError, KeyError, TypeError):
            index, indexed = {}, {}
        if self.checkpoint_score_attribute is None and index.get("score_attribute"):
            # A manager opened on an existing run without settings ranks as the run did.
            self.checkpoint_score_attribute = index["score_attribute"]
            self.checkpoint_score_order = index.get("score_order", "max")
        # Directories are the truth; the index adds the scores it knows.
        return [
            indexed.get(name) or {"name": name, "iteration": _iteration_of(name), "score": None}
            for name in sorted(present)
        ]

    def _write_index(self) -> None:
        index = {
            "score_attribute": self.checkpoint_score_attribute,
            "score_order": self.checkpoint_score_order,
            "checkpoints": sorted(self.entries, key=lambda e: e["iteration"]),
        }
        replace_file(os.path.join(self.directory, INDEX_FILE), json.dumps(index, indent=2).encode())
