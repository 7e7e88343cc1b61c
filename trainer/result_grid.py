"""What RLlib's example driver returns where RLlib returns Tune's `ResultGrid`: one `Result` per
trial, with Tune's attributes scripts read (`metrics`, `metrics_dataframe`, `config`,
`checkpoint`, `best_checkpoints`, `path`, `error`) and the grid's (`get_best_result`,
`get_dataframe`, `errors`, `num_errors`, `num_terminated`, `experiment_path`, indexing and
`len`). `metrics_dataframe` and `get_dataframe()` need pandas, as in Tune.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainer.checkpoints.manager import result_value


def flatten_result(result: dict, prefix: str = "") -> dict[str, Any]:
    """Tune's flattened result: nested keys joined with "/" (dict leaves become columns)."""
    flat: dict[str, Any] = {}
    for key, value in result.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten_result(value, f"{name}/"))
        else:
            flat[name] = value
    return flat


def metric_value(result: Mapping[str, Any], metric: str) -> Any:
    """A result's value of a Tune metric name (nested keys joined with "/"), or None."""
    if metric in result:
        return result[metric]
    return result_value(result, metric)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def _require_pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError(
            "a results DataFrame needs pandas, as Tune's does: pip install pandas"
        ) from None
    return pandas


@dataclass
class Result:
    """One trial's outcome, as Tune's `ray.train.Result`."""

    #: The last result dict the trial reported.
    metrics: dict | None
    #: The trial's settings (`AlgorithmConfig.to_dict()`).
    config: dict
    #: The trial's folder (its checkpoints are there), or None when nothing was written.
    path: str | None
    #: The latest checkpoint (`.path`), or None.
    checkpoint: Any = None
    #: The exception that ended the trial, or None.
    error: BaseException | None = None
    #: (checkpoint, the result it was saved after) for every checkpoint kept.
    best_checkpoints: list = field(default_factory=list)
    #: Every result the trial reported, in order.
    all_metrics: list[dict] = field(default_factory=list)

    @property
    def metrics_dataframe(self) -> Any:
        """The trial's results as a pandas DataFrame, one row per iteration, flattened
        columns (Tune's)."""
        return _require_pandas().DataFrame([flatten_result(r) for r in self.all_metrics])

    @property
    def filesystem(self) -> None:
        """Trials write to the local filesystem here."""
        return None

    def __repr__(self) -> str:
        shown = {
            key: metric_value(self.metrics or {}, key)
            for key in ("training_iteration", "env_runners/episode_return_mean")
        }
        return (
            f"Result(metrics={shown}, path={self.path!r}, "
            f"error={type(self.error).__name__ if self.error else None})"
        )


class ResultGrid:
    """Tune's `ResultGrid` over the trials of one run (see the module docstring)."""

    def __init__(
        self,
        results: list[Result],
        *,
        experiment_path: str | None = None,
        metric: str | None = None,
        mode: str | None = None,
    ):
        self._results = list(results)
        self._experiment_path = experiment_path
        self._metric = metric
        self._mode = mode

    @property
    def experiment_path(self) -> str | None:
        return self._experiment_path

    @property
    def filesystem(self) -> None:
        return None

    def __len__(self) -> int:
        return len(self._results)

    def __getitem__(self, index: int) -> Result:
        return self._results[index]

    def __iter__(self) -> Iterator[Result]:
        return iter(self._results)

    @property
    def errors(self) -> list[BaseException]:
        """The exceptions that ended trials."""
        return [result.error for result in self._results if result.error is not None]

    @property
    def num_errors(self) -> int:
        return len(self.errors)

    @property
    def num_terminated(self) -> int:
        """Trials that ended without an error."""
        return sum(1 for result in self._results if result.error is None)

    def get_best_result(
        self,
        metric: str | None = None,
        mode: str | None = None,
        scope: str = "last",
        filter_nan_and_inf: bool = True,
    ) -> Result:
        """The trial with the best `metric` ("a/b" for nested keys) by `mode` ("max" or "min")
        over `scope`: "last" (the last result), "avg" (all results' mean), "last-5-avg",
        "last-10-avg", or "all" (the best of all results), as Tune's. With one trial, that
        trial, whatever its results (as Tune's: no metric needed)."""
        if len(self._results) == 1:
            return self._results[0]
        metric = metric or self._metric
        mode = mode or self._mode
        if not metric or not mode:
            raise ValueError(
                "get_best_result() needs a metric and a mode (the run was "
                "started without them): get_best_result(metric=..., mode=...)"
            )
        if mode not in ("max", "min"):
            raise ValueError(f"get_best_result(mode={mode!r}): mode must be 'max' or 'min'")
        scopes = ("last", "avg", "last-5-avg", "last-10-avg", "all")
        if scope not in scopes:
            raise ValueError(
                f"get_best_result(scope={scope!r}): scope must be one of {list(scopes)}"
            )
        best, best_score = None, None
        for result in self._results:
            reported = [_number(metric_value(r, metric)) for r in result.all_metrics]
            values = [
                v
                for v in reported
                if v is not None and (not filter_nan_and_inf or math.isfinite(v))
            ]
            if not values:
                continue
            if scope == "last":
                score = values[-1]
            elif scope == "all":
                score = max(values) if mode == "max" else min(values)
            else:
                window = {"avg": len(values), "last-5-avg": 5, "last-10-avg": 10}[scope]
                tail = values[-window:]
                score = sum(tail) / len(tail)
            if best_score is None or (score > best_score if mode == "max" else score < best_score):
                best, best_score = result, score
        if best is None:
            raise RuntimeError(f"no trial reported a finite {metric!r}: there is no best result")
        return best

    def get_dataframe(
        self, filter_metric: str | None = None, filter_mode: str | None = None
    ) -> Any:
        """One row per trial (its last result, or with `filter_metric` and `filter_mode` its
        best), flattened columns, as Tune's (pandas needed)."""
        pandas = _require_pandas()
        rows = []
        for result in self._results:
            chosen = result.metrics or {}
            if filter_metric and filter_mode:
                reported = [
                    (r, _number(metric_value(r, filter_metric))) for r in result.all_metrics
                ]
                scored = [(r, v) for r, v in reported if v is not None and not math.isnan(v)]
                if scored:
                    pick = max if filter_mode == "max" else min
                    chosen = pick(scored, key=lambda item: item[1])[0]
            rows.append(flatten_result(chosen))
        return pandas.DataFrame(rows)

    def __repr__(self) -> str:
        return f"ResultGrid<[{', '.join(repr(r) for r in self._results)}]>"
