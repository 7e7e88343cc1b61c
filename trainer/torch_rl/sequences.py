"""Episode chunks as the zero-padded sequences a recurrent module trains on (RLlib's learner
connector `AddStatesFromEpisodesToBatch` and `utils/postprocessing/zero_padding.py`).

Each episode chunk of `n` steps is split into `ceil(n / max_seq_len)` sequences of at most
`max_seq_len` steps, each zero-padded at its end to `max_seq_len` rows: a column `(n, ...)`
becomes `(S, max_seq_len, ...)`. `Columns.SEQ_LENS` holds each sequence's true length and
`Columns.LOSS_MASK` is True on its real rows, False on the padding. A sequence's
`Columns.STATE_IN` is the state its first step started from: the module's initial state at the
episode's start, else the `Columns.STATE_OUT` the EnvRunner recorded at the step before (in the
chunk, or in its one-step lookback for a chunk's first sequence).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.core.obs_tree import tree_rows
from trainer.core.recurrent import chunk_state_in, tree_stack
from trainer.env.episode import SingleAgentEpisode


def num_sequences(length: int, max_seq_len: int) -> int:
    """How many sequences a chunk of `length` steps is split into."""
    return -(-length // max_seq_len)


def sequence_lengths(length: int, max_seq_len: int) -> np.ndarray:
    """The true length of each of a chunk's sequences (all `max_seq_len` but the last)."""
    lens = np.full(num_sequences(length, max_seq_len), max_seq_len, dtype=np.int32)
    if length % max_seq_len:
        lens[-1] = length % max_seq_len
    return lens


def split_and_zero_pad(column: np.ndarray, max_seq_len: int) -> np.ndarray:
    """`column` `(n, ...)` as `(ceil(n / max_seq_len), max_seq_len, ...)`, its rows in order,
    zeros after the last one (RLlib's `split_and_zero_pad`)."""
    column = np.asarray(column)
    count = num_sequences(len(column), max_seq_len)
    padded = np.zeros((count * max_seq_len,) + column.shape[1:], dtype=column.dtype)
    padded[: len(column)] = column
    return padded.reshape((count, max_seq_len) + column.shape[1:])


def loss_mask(lengths: np.ndarray, max_seq_len: int) -> np.ndarray:
    """`(S, max_seq_len)` booleans: True on each sequence's first `lengths[s]` rows."""
    return np.arange(max_seq_len)[None, :] < np.asarray(lengths)[:, None]


def sequence_states_in(
    episode: SingleAgentEpisode, length: int, max_seq_len: int, initial_state: Any
) -> Any:
    """The state in of each sequence of the episode chunk's first `length` steps (`length` may
    exceed the chunk's by one: the step after its last, for its bootstrap value), stacked:
    each leaf `(S, ...)`."""
    first = chunk_state_in(episode, initial_state)
    starts = range(0, length, max_seq_len)
    if len(starts) == 1:
        return tree_stack([first])
    states_out = episode.get_extra_model_outputs(Columns.STATE_OUT)
    return tree_stack([first] + [tree_rows(states_out, start - 1) for start in starts[1:]])
