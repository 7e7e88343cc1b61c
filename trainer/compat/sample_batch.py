"""RLlib's `ray.rllib.policy.sample_batch` as the new API stack uses it: `SampleBatch`'s column
names (`SampleBatch.OBS`, `SampleBatch.ACTIONS`, ... the same strings as `Columns`), which
new-stack code uses as batch keys, and `DEFAULT_POLICY_ID`; and the two batch classes as
RLlib's new-stack learner code and tests use them, as containers of columns:

- `SampleBatch(columns)`: a dict of columns (arrays, tensors, nested dicts of them) that counts
  its rows (`count`, `len()`, `env_steps()`, `agent_steps()`), copies itself, slices rows
  (`batch[a:b]`) and becomes a `MultiAgentBatch` of one module (`as_multi_agent()`);
- `MultiAgentBatch({module_id: batch}, env_steps)`: the batches of several modules and the env
  steps they cover, which `Learner.update(batch=...)` and `LearnerGroup.update(batch=...)`
  take.

The old API stack's operations on them (sequence padding and time slicing, shuffling, episode
splitting, compression, concatenation, devices) are served by no part of this project: each is
a method that raises `RLlibNotAvailable` naming the old API stack when called, and so do the
module's functions (`concat_samples`, ...: the launcher's table refuses them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Number
from typing import Any, NoReturn

import numpy as np

from trainer.capabilities import OLD_API_STACK
from trainer.compat.rllib_utils import Columns
from trainer.core.models import DEFAULT_MODULE_ID
from trainer.errors import RLlibNotAvailable

__all__ = ["DEFAULT_POLICY_ID", "MultiAgentBatch", "SampleBatch"]

#: RLlib's old name of the default module's id ("default_policy").
DEFAULT_POLICY_ID = DEFAULT_MODULE_ID

#: Where an old-stack operation on a batch would be used: what the new stack has instead.
_INSTEAD = "a dict keyed by these column names (Columns), or the episodes (SingleAgentEpisode)"
_MODULE = "ray.rllib.policy.sample_batch"


class _OldStackOnly:
    """A method of RLlib's batch classes that belongs to the old API stack: it is there (as
    RLlib has it), and calling it, on the class or an instance, raises `RLlibNotAvailable`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.rllib_name = f"{_MODULE}.{owner.__name__}.{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Callable[..., NoReturn]:
        rllib_name = self.rllib_name

        def refuse(*args: Any, **kwargs: Any) -> NoReturn:
            raise RLlibNotAvailable(
                rllib_name,
                OLD_API_STACK,
                _INSTEAD,
                detail="batches here are containers of columns (count, copy, row slices, "
                "as_multi_agent); the old stack's batch operations are not served",
            )

        refuse.__name__ = rllib_name.rpartition(".")[2]
        return refuse


def _as_array(value: Any) -> Any:
    """RLlib's reading of a list or a number given as a column: a numpy array."""
    return np.array(value) if isinstance(value, (Number, list)) else value


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def count_rows(columns: Mapping[str, Any]) -> int:
    """The rows (timesteps) of a batch of columns, as RLlib counts them: the sum of `seq_lens`
    when there is one, else the length of the first column (of its first leaf, when nested)
    that has one, skipping `infos` and recurrent states; 0 where none has."""
    seq_lens = columns.get(Columns.SEQ_LENS)
    if seq_lens is not None and len(seq_lens) > 0:
        return int(sum(int(n) for n in seq_lens))
    for key, value in columns.items():
        if key in (Columns.SEQ_LENS, Columns.INFOS):
            continue
        if isinstance(key, str) and key.startswith(("state_in", "state_out")):
            continue
        leaves = _leaves(value)
        try:
            rows = len(_as_array(leaves[0])) if leaves else 0
        except TypeError:  # a scalar (a 0-d array or tensor): no rows to count
            continue
        if rows:
            return rows
    return 0


def _slice_rows(value: Any, rows: slice) -> Any:
    if isinstance(value, Mapping):
        return {key: _slice_rows(item, rows) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_slice_rows(item, rows) for item in value)
    return value[rows]


class SampleBatch(dict):
    """RLlib's batch of one module's columns (see the module docstring): a dict of columns that
    knows its row `count`. Lists and numbers given as columns become numpy arrays (not
    `infos`), as RLlib's do; an empty `seq_lens` is dropped."""

    OBS = Columns.OBS
    ACTIONS = Columns.ACTIONS
    REWARDS = Columns.REWARDS
    TERMINATEDS = Columns.TERMINATEDS
    TRUNCATEDS = Columns.TRUNCATEDS
    INFOS = Columns.INFOS
    SEQ_LENS = Columns.SEQ_LENS
    T = Columns.T
    ACTION_DIST_INPUTS = Columns.ACTION_DIST_INPUTS
    ACTION_PROB = Columns.ACTION_PROB
    ACTION_LOGP = Columns.ACTION_LOGP
    VF_PREDS = Columns.VF_PREDS
    VALUES_BOOTSTRAPPED = Columns.VALUES_BOOTSTRAPPED
    EPS_ID = Columns.EPS_ID
    NEXT_OBS = Columns.NEXT_OBS

    ACTION_DIST = "action_dist"
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"
    ENV_ID = "env_id"
    AGENT_INDEX = "agent_index"
    UNROLL_ID = "unroll_id"
    OBS_EMBEDS = "obs_embeds"
    RETURNS_TO_GO = "returns_to_go"
    ATTENTION_MASKS = "attention_masks"
    DONES = "dones"
    CUR_OBS = "obs"

    count: int

    def __init__(
        self,
        *args: Any,
        _time_major: bool | None = None,
        _max_seq_len: int | None = None,
        _zero_padded: bool = False,
        _is_training: bool | None = None,
        _num_grad_updates: float | None = None,
        **kwargs: Any,
    ):
        if self.DONES in kwargs:
            raise KeyError(
                "SampleBatch(dones=...): RLlib 2.60 takes no DONES column any more; give "
                f"{self.TERMINATEDS!r} and {self.TRUNCATEDS!r}"
            )
        super().__init__(*args, **kwargs)
        self.time_major = _time_major
        self.max_seq_len = _max_seq_len
        self.zero_padded = _zero_padded
        self.num_grad_updates = _num_grad_updates
        seq_lens = dict.get(self, self.SEQ_LENS)
        if seq_lens is None or (isinstance(seq_lens, list) and not seq_lens):
            self.pop(self.SEQ_LENS, None)
        elif self.max_seq_len is None and len(seq_lens) > 0:
            self.max_seq_len = int(max(int(n) for n in seq_lens))
        if _is_training is None:
            _is_training = bool(self.pop("is_training", False))
        self._is_training = _is_training
        for key, value in list(self.items()):
            if key != self.INFOS:
                dict.__setitem__(self, key, _as_array(value))
        self.count = count_rows(self)

    def __len__(self) -> int:
        """The rows (RLlib's: `count`, not the number of columns)."""
        return self.count

    def __getitem__(self, key: Any) -> Any:
        """A column; a slice gives a batch of those rows (of every column); `DONES` is the
        `TERMINATEDS` column, as RLlib reads it."""
        if isinstance(key, slice):
            return self._rows(key)
        if key == self.DONES:
            key = self.TERMINATEDS
        return dict.__getitem__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if key == self.DONES:
            raise KeyError(
                f"SampleBatch[{self.DONES!r}] = ...: RLlib 2.60 takes no DONES column any more; "
                f"set {self.TERMINATEDS!r} and {self.TRUNCATEDS!r}"
            )
        dict.__setitem__(self, key, value)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def _rows(self, rows: slice) -> SampleBatch:
        if self.SEQ_LENS in self:
            raise RLlibNotAvailable(
                f"{_MODULE}.SampleBatch[{rows.start}:{rows.stop}]",
                OLD_API_STACK,
                _INSTEAD,
                detail="slicing a batch of sequences (seq_lens) is the old stack's",
            )
        return SampleBatch(
            {key: _slice_rows(value, rows) for key, value in self.items()},
            _is_training=self._is_training,
        )

    @property
    def is_training(self) -> bool:
        """Whether the batch is for training (RLlib's flag, given as `_is_training`)."""
        return bool(self._is_training)

    def set_training(self, training: bool = True) -> None:
        self._is_training = training

    def agent_steps(self) -> int:
        """The rows (RLlib's: as `MultiAgentBatch.agent_steps()`)."""
        return self.count

    def env_steps(self) -> int:
        """The rows (RLlib's: as `MultiAgentBatch.env_steps()`)."""
        return self.count

    def as_multi_agent(self, module_id: str | None = None) -> MultiAgentBatch:
        """This batch as the one batch of module `module_id` (default: `DEFAULT_POLICY_ID`)
        in a `MultiAgentBatch` covering `count` env steps."""
        return MultiAgentBatch({module_id or DEFAULT_POLICY_ID: self}, self.count)

    def copy(self, shallow: bool = False) -> SampleBatch:
        """A copy: numpy columns copied too unless `shallow` (others, such as tensors, are
        shared, as RLlib's copy shares them)."""

        def copied(value: Any) -> Any:
            if isinstance(value, Mapping):
                return {key: copied(item) for key, item in value.items()}
            if isinstance(value, np.ndarray):
                return np.array(value, copy=not shallow)
            return value

        return SampleBatch(
            {key: copied(value) for key, value in self.items()},
            _time_major=self.time_major,
            _zero_padded=self.zero_padded,
            _max_seq_len=self.max_seq_len,
            _is_training=self._is_training,
            _num_grad_updates=self.num_grad_updates,
        )

    def __repr__(self) -> str:
        return f"SampleBatch({self.count}: {list(self.keys())})"

    # The old API stack's operations (see the module docstring).
    columns = _OldStackOnly()
    compress = _OldStackOnly()
    concat = _OldStackOnly()
    concat_samples = _OldStackOnly()
    decompress_if_needed = _OldStackOnly()
    disable_slicing_by_batch_id = _OldStackOnly()
    enable_slicing_by_batch_id = _OldStackOnly()
    get_single_step_input_dict = _OldStackOnly()
    is_single_trajectory = _OldStackOnly()
    is_terminated_or_truncated = _OldStackOnly()
    right_zero_pad = _OldStackOnly()
    rows = _OldStackOnly()
    set_get_interceptor = _OldStackOnly()
    shuffle = _OldStackOnly()
    size_bytes = _OldStackOnly()
    slice = _OldStackOnly()
    split_by_episode = _OldStackOnly()
    timeslices = _OldStackOnly()
    to_device = _OldStackOnly()
    zero_pad = _OldStackOnly()


class MultiAgentBatch:
    """RLlib's batches of several modules (see the module docstring): `policy_batches`
    (module id -> its columns) and `count`, the env steps they cover (fewer than their rows
    together when several agents act in one step)."""

    def __init__(self, policy_batches: Mapping[Any, Mapping[str, Any]], env_steps: int):
        if not isinstance(policy_batches, Mapping):
            raise TypeError(
                "MultiAgentBatch(policy_batches=...): give a dict of module id -> SampleBatch "
                f"(or dict of columns), got {type(policy_batches).__name__}"
            )
        for module_id, batch in policy_batches.items():
            if not isinstance(batch, Mapping):
                raise TypeError(
                    f"MultiAgentBatch(policy_batches={{{module_id!r}: ...}}): a module's batch "
                    f"is a SampleBatch (or dict of columns), got {type(batch).__name__}"
                )
        self.policy_batches: dict[Any, Any] = dict(policy_batches)
        self.count = int(env_steps)

    def env_steps(self) -> int:
        return self.count

    def __len__(self) -> int:
        return self.count

    def agent_steps(self) -> int:
        """The rows of all modules' batches together."""
        return sum(
            batch.count if isinstance(batch, SampleBatch) else count_rows(batch)
            for batch in self.policy_batches.values()
        )

    def as_multi_agent(self) -> MultiAgentBatch:
        return self

    def copy(self) -> MultiAgentBatch:
        return MultiAgentBatch(
            {
                module_id: batch.copy() if isinstance(batch, SampleBatch) else dict(batch)
                for module_id, batch in self.policy_batches.items()
            },
            self.count,
        )

    def __getitem__(self, module_id: Any) -> Any:
        return self.policy_batches[module_id]

    def __repr__(self) -> str:
        return f"MultiAgentBatch({self.policy_batches}, env_steps={self.count})"

    compress = _OldStackOnly()
    concat_samples = _OldStackOnly()
    decompress_if_needed = _OldStackOnly()
    size_bytes = _OldStackOnly()
    timeslices = _OldStackOnly()
    to_device = _OldStackOnly()
    wrap_as_needed = _OldStackOnly()
