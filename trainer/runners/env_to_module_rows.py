"""The env-to-module connector pipeline run over one vector step of the EnvRunner's columnar
sampling loop (`EnvRunner._sample_columnar`, `trainer.runners.step_columns`).

The loop records each vector step as a row of `StepColumns`; with a pipeline, that row's
observations are what the module sees (as an episode's observations are, once the pipeline has
rewritten them). `module_observations` writes them from the vector env's raw ones:

- a pipeline whose pieces all read nothing but the latest observation (`transforms_rows`, as
  `MeanStdFilter` does) filters the whole step in one call;
- any other pipeline gets one `LatestStepView` per sub-env: an episode-like view of the sub-env's
  rows in the columns so far, whose latest observation is the raw one until a piece rewrites it.

Either way the pieces see the sub-envs in the order the per-episode call gives them: those whose
episode starts with this step (their reset) first, then those that stepped, each group by index.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trainer.connectors import ConnectorPipelineV2
from trainer.env.lookback_buffer import InfiniteLookbackBuffer
from trainer.runners.step_columns import StepColumns


class LatestStepView:
    """Sub-env `index`'s episode (chunk) as an env-to-module piece reads it in the columnar
    loop: rows `first..row` of the columns, the observation of row `row` being `latest` (the
    raw one until a piece sets it). A piece rewrites the latest observation only, as the
    pieces of an env-to-module pipeline do."""

    __slots__ = (
        "_columns",
        "env_index",
        "_first",
        "_row",
        "latest",
        "id_",
        "t_started",
        "connector_data",
        "custom_data",
        "is_terminated",
        "is_truncated",
    )

    def __init__(
        self,
        columns: StepColumns,
        index: int,
        first: int,
        row: int,
        latest: Any,
        *,
        id_: str,
        t_started: int,
        connector_data: dict,
        custom_data: dict,
        terminated: bool,
        truncated: bool,
    ):
        self._columns = columns
        self.env_index = index
        self._first, self._row = first, row
        self.latest = latest
        self.id_ = id_
        self.t_started = t_started
        #: The episode's per-episode connector data and custom data (kept across its chunks).
        self.connector_data = connector_data
        self.custom_data = custom_data
        self.is_terminated = terminated
        self.is_truncated = truncated

    def __len__(self) -> int:
        return self._row - self._first

    @property
    def t(self) -> int:
        return self.t_started + self._row - self._first

    @property
    def is_done(self) -> bool:
        return self.is_terminated or self.is_truncated

    @property
    def is_reset(self) -> bool:
        return True

    def get_observations(self, indices: Any = None, **kwargs: Any) -> Any:
        if isinstance(indices, int) and indices == -1 and not kwargs:
            return self.latest
        earlier = list(self._columns.observations[self._first : self._row, self.env_index])
        return InfiniteLookbackBuffer.of_list(earlier + [self.latest]).get(indices, **kwargs)

    def set_observations(self, *, new_data: Any, at_indices: Any = None, **kwargs: Any) -> None:
        if not (isinstance(at_indices, int) and at_indices in (-1, len(self)) and not kwargs):
            raise ValueError(
                "an env-to-module piece rewrites an episode's latest observation only "
                f"(set_observations(at_indices=-1)); got at_indices={at_indices!r}"
            )
        self.latest = new_data

    def _steps(self, column: np.ndarray | None) -> InfiniteLookbackBuffer:
        if column is None:  # no step recorded yet in this call
            return InfiniteLookbackBuffer.of_array(np.zeros(0))
        return InfiniteLookbackBuffer.of_array(
            column[self._first + 1 : self._row + 1, self.env_index]
        )

    def get_actions(self, indices: Any = None, **kwargs: Any) -> Any:
        return self._steps(self._columns.actions).get(indices, **kwargs)

    def get_rewards(self, indices: Any = None, **kwargs: Any) -> Any:
        return self._steps(self._columns.rewards).get(indices, **kwargs)

    def get_infos(self, indices: Any = None, **kwargs: Any) -> Any:
        columns, index = self._columns, self.env_index
        infos = [columns.sub_env_infos(row, index) for row in range(self._first, self._row + 1)]
        return InfiniteLookbackBuffer.of_list(infos).get(indices, **kwargs)

    def get_return(self) -> float:
        return float(sum(self.get_rewards()))


def module_observations(
    pipeline: ConnectorPipelineV2,
    columns: StepColumns,
    raw: Any,
    order: list[int] | None,
    views: list[LatestStepView] | None,
    call_kwargs: dict[str, Any],
) -> None:
    """Writes row `columns.row`'s observations: the raw observations `raw` (the vector env's
    batch) of the sub-envs in `order` (None: all, by index) through `pipeline`, by rows or,
    when `views` are given (one per sub-env, in that order), through `LatestStepView`s."""
    row = columns.row
    if views is None:
        columns.observations[row] = pipeline.transform_rows(raw, order=order)
        return
    pipeline(episodes=views, batch={}, **call_kwargs)
    for view in views:
        columns.observations[row, view.env_index] = view.latest
