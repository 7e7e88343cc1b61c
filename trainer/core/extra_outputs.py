"""A module's extra outputs: what its acting forward pass returns besides the action draw.

RLlib's EnvRunners store every column a module's `forward_exploration` / `forward_inference`
returns (after the module-to-env pieces) in the episodes' `extra_model_outputs`, one item per
step, except the actions (`Columns.ACTIONS`, `Columns.ACTIONS_FOR_ENV`); its learner pipeline
(`AddColumnsFromEpisodesToTrainBatch`) then copies every extra model output but the recurrent
states into the train batch, so that a user's loss reads, say, `batch["my_value"]`.

The EnvRunners here record the action draw's two outputs (`Columns.ACTION_LOGP`,
`Columns.ACTION_DIST_INPUTS`) and a recurrent module's `Columns.STATE_OUT` on paths of their
own; `extra_outputs` picks the rest out of a forward pass's outputs (None for the default
modules, which return nothing else: their recording costs nothing more), and
`extra_output_columns` gives the learners the episodes' extra columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.metrics import WEIGHTS_SEQ_NO

#: The outputs the EnvRunners record on their own paths (the action draw's, a recurrent
#: module's state) or, as RLlib, not as model outputs at all (the actions).
RECORDED_APART = frozenset(
    {
        Columns.ACTIONS,
        Columns.ACTIONS_FOR_ENV,
        Columns.ACTION_LOGP,
        Columns.ACTION_DIST_INPUTS,
        Columns.STATE_OUT,
    }
)

#: The extra model outputs a train batch does not take: the recurrent states (RLlib's learner
#: pipeline leaves them out too; the sequences' states in come from `Columns.STATE_OUT`), and
#: the weights' sequence number, which only the finished chunks carry here.
NOT_IN_TRAIN_BATCH = frozenset({Columns.STATE_IN, Columns.STATE_OUT, WEIGHTS_SEQ_NO})


def extra_outputs(
    out: Mapping[str, Any], rows: int, whose: str, *, time_axis: bool = False
) -> dict[str, np.ndarray] | None:
    """The outputs in `out` (a forward pass's, numpy) besides `RECORDED_APART`, each an array
    of `rows` rows (one per observation of the batch); None when there are none. With
    `time_axis` (a recurrent module's forward over `(B, 1, ...)`) each output's time axis of
    one is dropped, as RLlib's `RemoveSingleTsTimeRankFromBatch` drops it. `whose` names the
    forward pass in the error for an output that is not a batch of `rows` rows."""
    extras: dict[str, np.ndarray] | None = None
    for key, value in out.items():
        if key in RECORDED_APART:
            continue
        array = _as_array(value)
        shape = None if array is None else array.shape
        if time_axis and array is not None:
            array = array[:, 0] if array.ndim >= 2 and array.shape[1] == 1 else None
        if array is None or array.ndim == 0 or len(array) != rows:
            got = f"shape {shape}" if shape is not None else f"a {type(value).__name__}"
            expected = f"({rows}, 1, ...)" if time_axis else f"({rows}, ...)"
            raise ValueError(
                f"{whose} returned {key!r} as {got}: the EnvRunners record each output of "
                f"a module's acting forward pass per step (RLlib's extra model outputs), so "
                f"each must be an array (or tensor) of shape {expected}, one row per "
                "observation of the batch"
            )
        if extras is None:
            extras = {}
        extras[key] = array
    return extras


def _as_array(value: Any) -> np.ndarray | None:
    """`value` as a numeric (or bool / string) array; None for what is not one (a dict of
    arrays, an object array)."""
    if isinstance(value, Mapping):
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    return None if array.dtype == object else array


def extra_output_columns(
    episodes: Iterable[Any], skip: Iterable[str] = ()
) -> dict[str, np.ndarray]:
    """The episodes' extra model outputs as train-batch columns (each episode's steps in
    order, the episodes concatenated), as RLlib's `AddColumnsFromEpisodesToTrainBatch` adds
    them: every key but `NOT_IN_TRAIN_BATCH` and the columns `skip` names (the batch has them
    already). Every episode (with steps) must hold the same keys: a ValueError otherwise."""
    stepped = [ep for ep in episodes if len(ep) > 0]
    if not stepped:
        return {}
    skipped = NOT_IN_TRAIN_BATCH.union(skip)
    keys = [key for key in stepped[0].extra_model_outputs if key not in skipped]
    wanted = set(keys)
    for ep in stepped:
        have = {key for key in ep.extra_model_outputs if key not in skipped}
        if have != wanted:
            raise ValueError(
                f"episode {ep.id_} has the extra model outputs {sorted(have)}, another of the "
                f"same train batch {sorted(wanted)}: the learner adds each one as a column of "
                "the batch, which needs it at every step of every episode (sample them with "
                "one module, whose forward pass returns the same keys at every step)"
            )
    return {
        key: np.concatenate([np.asarray(ep.get_extra_model_outputs(key)) for ep in stepped])
        for key in keys
    }
