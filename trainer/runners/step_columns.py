"""`StepColumns`: one `sample()` call's steps of a vector env, stored by column.

The EnvRunner's columnar sampling loop (`EnvRunner._sample_columnar`) writes each vector step
into preallocated arrays, one per field, indexed `[row, sub_env]`:

    row 0          the observations the call starts from (the vector env's last ones)
    row k >= 1     the k-th vector step: the observation it returned, and the action, reward,
                   model outputs (`action_logp`, `action_dist_inputs`, and any other a user's
                   module returns, `extras`) that led to it, plus that step's infos (the
                   terminated / truncated flags are read as they come: an episode keeps only
                   its last ones)

A sub-env's episode (or the chunk of it sampled in this call) is a run of rows `first..last` of
its column: observations `first..last`, steps `first + 1..last`. `episode_columns` hands them
out as views, so recording a step costs a handful of array writes whatever the number of
sub-envs, and an episode costs a few slices when it ends (`SingleAgentEpisode.fill_columns`);
the `EpisodeList` of a call pickles as these columns (`EpisodeList.of_columns`).

Each call gets fresh arrays (a column that fills up is doubled into a new one), so the views
handed to episodes stay valid after the call returns: nothing is overwritten later.

Infos are kept per row as the vector env gave them: the sub-envs' own dicts where the vector
env keeps them (`RawInfosMixin.sub_env_infos`), else gymnasium's batched dict, unbatched only
for the rows of an episode that is built (most envs return empty infos: no work at all).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.compat.rllib_utils import Columns
from trainer.env.episode import EpisodeView, SingleAgentEpisode, chunk_infos
from trainer.env.episode_list import ColumnRows, EpisodeList, NamedColumns
from trainer.runners.vector_rows import unbatch_infos


def python_scalar_dtype(values: np.ndarray) -> np.dtype:
    """The dtype the per-step recording gives a 1-D batch: its items become Python scalars
    (`tolist()`), which numpy stacks as int64, float64 or bool."""
    return np.asarray(values[:1].tolist()).dtype if values.size else values.dtype


class StepColumns(NamedColumns):
    """The columns of one `sample()` call (see the module docstring)."""

    def __init__(self, num_envs: int, rows: int, first_observations: np.ndarray):
        self.num_envs = num_envs
        #: Rows allocated (grows by doubling).
        self._capacity = max(2, rows)
        #: The last row written (0: only the starting observations).
        self.row = 0
        #: Whether a column filled up and was doubled into a new array.
        self.grown = False
        self.observations = np.empty(
            (self._capacity, num_envs, *first_observations.shape[1:]), first_observations.dtype
        )
        self.observations[0] = first_observations
        # The step columns are allocated at the first step, with the dtypes it brings.
        self.actions: np.ndarray | None = None
        self.rewards: np.ndarray | None = None
        self.action_logp: np.ndarray | None = None
        self.action_dist_inputs: np.ndarray | None = None
        #: The module's other outputs by key (`trainer.core.extra_outputs`; none for the
        #: default modules), a column each.
        self.extras: dict[str, np.ndarray] = {}
        #: Per row, the step's infos: a list of per-sub-env dicts, or a batched dict.
        self.infos: list[Any] = [None]
        #: Whether any step so far had a non-empty info (else no episode's infos are read).
        self.infos_seen = False

    def _allocate(
        self,
        actions: np.ndarray,
        rewards: np.ndarray,
        logp: np.ndarray,
        dist_inputs: np.ndarray | None,
        extras: dict[str, np.ndarray] | None,
    ) -> None:
        shape = (self._capacity, self.num_envs)
        # Discrete actions are recorded as Python ints per step (int64 once numpy'ized); rows
        # of Box actions keep their dtype.
        action_dtype = python_scalar_dtype(actions) if actions.ndim == 1 else actions.dtype
        self.actions = np.empty((*shape, *actions.shape[1:]), action_dtype)
        self.rewards = np.empty(shape, python_scalar_dtype(rewards))
        self.action_logp = np.empty(shape, python_scalar_dtype(logp))
        if dist_inputs is not None:
            self.action_dist_inputs = np.empty((*shape, *dist_inputs.shape[1:]), dist_inputs.dtype)
        if extras:  # (their rows numpy'ized keep the module's dtype, as RLlib's)
            self.extras = {
                key: np.empty((*shape, *values.shape[1:]), values.dtype)
                for key, values in extras.items()
            }

    def _grow(self) -> None:
        """Doubles every column into new arrays (views given out keep the old ones)."""
        self._capacity *= 2
        self.grown = True

        def doubled(column: np.ndarray) -> np.ndarray:
            new = np.empty((self._capacity, *column.shape[1:]), column.dtype)
            new[: self.row + 1] = column[: self.row + 1]
            return new

        self.observations = doubled(self.observations)
        if self.actions is not None:
            assert self.rewards is not None and self.action_logp is not None
            self.actions = doubled(self.actions)
            self.rewards = doubled(self.rewards)
            self.action_logp = doubled(self.action_logp)
            if self.action_dist_inputs is not None:
                self.action_dist_inputs = doubled(self.action_dist_inputs)
            for key, column in self.extras.items():
                self.extras[key] = doubled(column)

    def record(
        self,
        observations: np.ndarray | None,
        actions: np.ndarray,
        rewards: np.ndarray,
        logp: np.ndarray,
        dist_inputs: np.ndarray | None,
        infos: Any,
        extras: dict[str, np.ndarray] | None = None,
    ) -> int:
        """Writes one vector step as the next row and returns its index (its observations
        left to the caller when None: the env-to-module pipeline writes them). `extras`: the
        module's other outputs, the same keys at every step."""
        if self.actions is None:
            self._allocate(actions, rewards, logp, dist_inputs, extras)
        row = self.row + 1
        if row == self._capacity:
            self._grow()
        self.row = row
        if observations is not None:
            self.observations[row] = observations
        self.actions[row] = actions  # type: ignore[index]
        self.rewards[row] = rewards  # type: ignore[index]
        self.action_logp[row] = logp  # type: ignore[index]
        if dist_inputs is not None:
            self.action_dist_inputs[row] = dist_inputs  # type: ignore[index]
        if extras is not None or self.extras:
            self._record_extras(row, extras)
        self.infos.append(infos)
        if not self.infos_seen and infos and (type(infos) is not list or any(infos)):
            self.infos_seen = True
        return row

    def _record_extras(self, row: int, extras: dict[str, np.ndarray] | None) -> None:
        """Writes the module's other outputs of step `row`; a ValueError when their keys are
        not those of the call's first step (the episodes need each at every step)."""
        columns = self.extras
        if extras is None or extras.keys() != columns.keys():
            raise ValueError(
                f"the module's forward pass returned the extra outputs {sorted(extras or ())} "
                f"at one step and {sorted(columns)} at an earlier one of the same sample() "
                "call: the episodes record each extra model output at every step, so the "
                "module must return the same keys at every step"
            )
        for key, values in extras.items():
            columns[key][row] = values

    def restart(self, observations: np.ndarray) -> int:
        """A new row of starting observations only (after the vector env was re-created);
        its step columns hold nothing any episode reads."""
        row = self.row + 1
        if row == self._capacity:
            self._grow()
        self.row = row
        self.observations[row] = observations
        self.infos.append(None)
        return row

    def sub_env_infos(self, row: int, index: int) -> dict:
        """Sub-env `index`'s infos of step `row`."""
        infos = self.infos[row]
        if isinstance(infos, list):
            return infos[index]
        if not infos:
            return {}
        return unbatch_infos(infos, self.num_envs)[index]

    def step_infos(self, index: int, first: int, last: int) -> list[dict] | None:
        """Sub-env `index`'s infos of steps `first..last`, one dict per step; None when all
        are empty (the common case, which then costs no dicts)."""
        if not self.infos_seen:
            return None
        rows = self.infos[first : last + 1]
        if rows and isinstance(rows[0], list):
            infos = [row[index] for row in rows]
            return infos if any(infos) else None
        if not any(rows):  # batched dicts, all empty
            return None
        return [self.sub_env_infos(row, index) for row in range(first, last + 1)]

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns by name ("observations", "actions", "rewards", "extra:<key>")."""
        assert self.actions is not None and self.rewards is not None
        assert self.action_logp is not None
        columns = {
            "observations": self.observations,
            "actions": self.actions,
            "rewards": self.rewards,
            "extra:" + Columns.ACTION_LOGP: self.action_logp,
        }
        if self.action_dist_inputs is not None:
            columns["extra:" + Columns.ACTION_DIST_INPUTS] = self.action_dist_inputs
        for key, column in self.extras.items():
            columns["extra:" + key] = column
        return columns

    def fill(
        self,
        episode: SingleAgentEpisode,
        index: int,
        first: int,
        last: int,
        terminated: bool,
        truncated: bool,
    ) -> ColumnRows:
        """Gives `episode` (a chunk with its first observation and no steps) the rows
        `first..last` of sub-env `index`; returns where they are."""
        rows = self.episode_rows(index, first, last)
        episode.fill_columns(
            rows.observations,
            self.step_infos(index, first + 1, last),
            rows.actions,
            rows.rewards,
            rows.extra_model_outputs,
            terminated=terminated,
            truncated=truncated,
        )
        return rows

    def view(
        self,
        id_: str,
        index: int,
        first: int,
        last: int,
        *,
        first_info: dict,
        t_started: int = 0,
        start_time: float,
        end_time: float,
        terminated: bool,
        truncated: bool,
    ) -> EpisodeView:
        """An episode (chunk) of sub-env `index`'s rows `first..last`, starting at `t_started`
        with `first_info` (at its reset when 0): made when it ends or the call does (no episode
        object exists while it runs when no callback needs one), its buffers when first read."""
        step_infos = self.step_infos(index, first + 1, last)
        return EpisodeView.of_rows(
            self,
            id_,
            index,
            first,
            last,
            infos=chunk_infos(first_info, step_infos, last - first + 1),
            t_started=t_started,
            env_index=index,
            terminated=terminated,
            truncated=truncated,
            custom_data={},
            temporary_timestep_data={},
            start_time=start_time,
            last_step_time=end_time,
        )

    def episode_list(
        self, episodes: list[SingleAgentEpisode], rows: list[ColumnRows | None]
    ) -> EpisodeList:
        """`episodes` (views of these columns, or filled from them at `rows`) as the list
        `sample()` returns: pickled as the columns themselves while every view a filled
        episode was given was made after the last growth (a grown column's earlier views are
        of the old arrays)."""
        if self.grown and any(where is not None for where in rows):
            return EpisodeList(episodes)
        return EpisodeList.of_columns(episodes, self, rows)
