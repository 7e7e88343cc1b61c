"""The minibatches of RLlib's generic `Learner.update(batch=...)` (`TorchLearner.update`): a
batch of columns per module, cut the way RLlib's `MiniBatchCyclicIterator` cuts it.

    {module_id: {column: (N_i, ...) tensors}}
      -> minibatch_size None, num_epochs 1: the batch itself, once (RLlib's
         `MiniBatchDummyIterator`)
      -> else each minibatch holds minibatch_size rows of every module (None: the batch's env
         steps), taken in order and wrapping around to a module's first row (a module whose
         rows ran out starts its next epoch, reshuffled with `shuffle_batch_per_epoch`), until
         every module was covered num_epochs times (or `num_total_minibatches` were made)

Columns may be nested (a Dict or Tuple observation: dicts and tuples of tensors).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch


class TensorBatches(dict):
    """RLlib's `MultiAgentBatch` of tensors here: `{module_id: {column: tensor}}`, and
    `env_steps` (the env steps the batch covers: its `count`)."""

    def __init__(self, batches: dict[Any, dict[str, Any]], env_steps: int) -> None:
        super().__init__(batches)
        self.env_steps = int(env_steps)

    @property
    def policy_batches(self) -> dict[Any, dict[str, Any]]:
        """RLlib's name of the per-module batches."""
        return dict(self)

    @property
    def count(self) -> int:
        return self.env_steps


def _map(function: Any, column: Any) -> Any:
    if isinstance(column, dict):
        return {key: _map(function, value) for key, value in column.items()}
    if isinstance(column, tuple):
        return tuple(_map(function, value) for value in column)
    return function(column)


def _first_leaf(column: Any) -> Any:
    if isinstance(column, dict):
        return _first_leaf(next(iter(column.values())))
    if isinstance(column, tuple):
        return _first_leaf(column[0])
    return column


def num_rows(columns: dict[str, Any]) -> int:
    """The rows of a module's batch (of its first column's first leaf)."""
    if not columns:
        return 0
    return len(_first_leaf(next(iter(columns.values()))))


def _take(columns: dict[str, Any], index: np.ndarray) -> dict[str, Any]:
    rows = torch.as_tensor(index, dtype=torch.long)
    return {
        key: _map(
            lambda leaf: leaf[rows.to(leaf.device)] if torch.is_tensor(leaf) else leaf[index], value
        )
        for key, value in columns.items()
    }


def cyclic_minibatches(
    batch: TensorBatches,
    *,
    num_epochs: int = 1,
    minibatch_size: int | None = None,
    shuffle_batch_per_epoch: bool = False,
    num_total_minibatches: int = 0,
    rng: np.random.Generator | None = None,
) -> Iterator[TensorBatches]:
    """The minibatches of `batch` (see the module docstring), each a `TensorBatches` with the
    whole batch's `env_steps` (RLlib's). Raises ValueError for a module without rows (no
    minibatch could cover it)."""
    if not minibatch_size and num_epochs <= 1 and not num_total_minibatches:
        yield batch
        return
    size = int(minibatch_size or batch.env_steps)
    shuffle = shuffle_batch_per_epoch and num_epochs > 1 and bool(minibatch_size)
    orders: dict[Any, np.ndarray] = {}
    for module_id, columns in batch.items():
        rows = num_rows(columns)
        if rows == 0:
            raise ValueError(
                f"update(): the batch of module {module_id!r} is empty; every module's "
                "minibatches cover the same number of rows, so each needs at least one"
            )
        orders[module_id] = np.arange(rows)
    start = dict.fromkeys(batch, 0)
    covered = dict.fromkeys(batch, 0)
    made = 0
    while (num_total_minibatches == 0 and min(covered.values()) < num_epochs) or (
        num_total_minibatches > 0 and made < num_total_minibatches
    ):
        minibatch = {}
        for module_id, columns in batch.items():
            order, begin, wanted = orders[module_id], start[module_id], size
            pieces = []
            # RLlib's loop: a module's rows run out when the minibatch reaches their end.
            while begin + wanted >= len(order):
                pieces.append(order[begin:])
                wanted -= len(order) - begin
                begin = 0
                covered[module_id] += 1
                if shuffle:
                    assert rng is not None, "shuffling needs a generator"
                    order = orders[module_id] = rng.permutation(len(order))
            if wanted > 0:
                pieces.append(order[begin : begin + wanted])
            start[module_id] = begin + max(wanted, 0)
            minibatch[module_id] = _take(columns, np.concatenate(pieces))
        yield TensorBatches(minibatch, batch.env_steps)
        made += 1


__all__ = ["TensorBatches", "cyclic_minibatches", "num_rows"]
