"""`MetricsLogger`: named statistics with RLlib's reduce / window / EMA semantics.

- `reduce="mean"` with neither `window` nor `ema_coeff` is an exponential moving average with
  coefficient 0.01; with `window=n` it is the mean of the last n values; `window=float("inf")` keeps
  every value.
- `"min"`, `"max"`, `"sum"` reduce over the window, or over everything logged when no window is set.
- `reduce=None` keeps the list of logged values.
- `clear_on_reduce=True` forgets the values once `reduce()` has reported them (per-iteration
  counters); otherwise values live on across `reduce()` calls (smoothed returns, lifetime counts).

EnvRunners log into their own logger; after every `sample()` the runner hands over what was logged
since the last hand-over (`export_delta`), and the Algorithm merges the deltas of all runners into
its logger under `env_runners` (`merge_delta`), so windows span runners and iterations.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

REDUCE_METHODS = ("mean", "min", "max", "sum", None)
DEFAULT_EMA_COEFF = 0.01
_MISSING = object()

Key = str | tuple[str, ...]

# Result keys under RLlib's names (`ray.rllib.utils.metrics`), for code that indexes results.
TRAINING_ITERATION = "training_iteration"
ENV_RUNNER_RESULTS = "env_runners"
EVALUATION_RESULTS = "evaluation"
LEARNER_RESULTS = "learners"
FAULT_TOLERANCE_STATS = "fault_tolerance"
TIMERS = "timers"
ALL_MODULES = "__all_modules__"
EPISODE_RETURN_MEAN = "episode_return_mean"
EPISODE_RETURN_MIN = "episode_return_min"
EPISODE_RETURN_MAX = "episode_return_max"
EPISODE_LEN_MEAN = "episode_len_mean"
EPISODE_LEN_MIN = "episode_len_min"
EPISODE_LEN_MAX = "episode_len_max"
EPISODE_DURATION_SEC_MEAN = "episode_duration_sec_mean"
NUM_EPISODES = "num_episodes"
NUM_EPISODES_LIFETIME = "num_episodes_lifetime"
NUM_ENV_STEPS_SAMPLED = "num_env_steps_sampled"
NUM_ENV_STEPS_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"


def _as_key(key: Key) -> tuple[str, ...]:
    if isinstance(key, tuple):
        return key
    if isinstance(key, str):
        return (key,)
    raise TypeError(f"metrics key must be a str or a tuple of str, got {key!r}")


def _scalar(value: Any) -> Any:
    """numpy scalars and 0-d arrays become Python numbers, so results are plain data."""
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "ndim", 1) == 0:
        return item()
    return value


class Stats:
    """One named statistic: its settings and the values that define its current reduction."""

    __slots__ = ("reduce_method", "window", "ema_coeff", "clear_on_reduce", "_values", "_ema",
                 "_total", "_pending")

    def __init__(self, reduce: str | None = "mean", window: float | None = None,
                 ema_coeff: float | None = None, clear_on_reduce: bool = False):
        if reduce not in REDUCE_METHODS:
            raise ValueError(
                f"log_value(reduce={reduce!r}): reduce must be one of {list(REDUCE_METHODS)}"
            )
        if window is not None and ema_coeff is not None:
            raise ValueError(
                f"log_value(window={window!r}, ema_coeff={ema_coeff!r}): give a window or an "
                "ema_coeff, not both"
            )
        if window is not None and not (
            (isinstance(window, int) and window >= 1) or window == float("inf")
        ):
            raise ValueError(
                f"log_value(window={window!r}): window must be an int >= 1 or float('inf')"
            )
        if ema_coeff is not None:
            if reduce != "mean":
                raise ValueError(
                    f"log_value(ema_coeff={ema_coeff!r}, reduce={reduce!r}): ema_coeff only "
                    "applies to reduce='mean'"
                )
            if not (0.0 < ema_coeff <= 1.0):
                raise ValueError(f"log_value(ema_coeff={ema_coeff!r}): must be in (0, 1]")
        if reduce == "mean" and window is None and ema_coeff is None:
            ema_coeff = DEFAULT_EMA_COEFF
        self.reduce_method = reduce
        self.window = window
        self.ema_coeff = ema_coeff
        self.clear_on_reduce = clear_on_reduce
        self._pending: list = []  # values logged since the last export_delta()
        self._reset()

    def _reset(self) -> None:
        bounded = self.window is not None and self.window != float("inf")
        self._values = deque(maxlen=int(self.window)) if bounded else []
        self._ema = None
        self._total = None

    @property
    def settings(self) -> dict:
        return {"reduce": self.reduce_method, "window": self.window, "ema_coeff": self.ema_coeff,
                "clear_on_reduce": self.clear_on_reduce}

    def _uses_value_list(self) -> bool:
        return self.window is not None or self.reduce_method is None

    def push(self, value: Any, *, track: bool = True) -> None:
        value = _scalar(value)
        if track:
            self._pending.append(value)
        if self._uses_value_list():
            self._values.append(value)
        elif self.ema_coeff is not None:
            self._ema = value if self._ema is None else (
                (1.0 - self.ema_coeff) * self._ema + self.ema_coeff * value
            )
        elif self.reduce_method == "sum":
            self._total = value if self._total is None else self._total + value
        elif self.reduce_method == "min":
            self._total = value if self._total is None else min(self._total, value)
        elif self.reduce_method == "max":
            self._total = value if self._total is None else max(self._total, value)

    def peek(self) -> Any:
        if self.reduce_method is None:
            return list(self._values)
        if self._uses_value_list():
            if not self._values:
                return 0 if self.reduce_method == "sum" else float("nan")
            if self.reduce_method == "mean":
                return sum(self._values) / len(self._values)
            if self.reduce_method == "sum":
                return sum(self._values)
            return min(self._values) if self.reduce_method == "min" else max(self._values)
        if self.ema_coeff is not None:
            return float("nan") if self._ema is None else self._ema
        if self._total is None:
            return 0 if self.reduce_method == "sum" else float("nan")
        return self._total

    def reduce(self) -> Any:
        value = self.peek()
        if self.clear_on_reduce:
            self._reset()
        return value

    def export_delta(self) -> list:
        """What was logged since the last export, compressed where the reduction allows."""
        values, self._pending = self._pending, []
        if not values:
            return values
        if self.window is None and self.reduce_method == "sum":
            return [sum(values)]
        if self.window is None and self.reduce_method in ("min", "max"):
            return [min(values) if self.reduce_method == "min" else max(values)]
        if self.window is not None and self.window != float("inf"):
            return values[-int(self.window):]
        return values

    def get_state(self) -> dict:
        return {**self.settings, "values": list(self._values), "ema": self._ema,
                "total": self._total}

    @classmethod
    def from_state(cls, state: dict) -> Stats:
        stats = cls(reduce=state["reduce"], window=state["window"], ema_coeff=state["ema_coeff"],
                    clear_on_reduce=state["clear_on_reduce"])
        for value in state["values"]:
            stats._values.append(value)
        stats._ema = state["ema"]
        stats._total = state["total"]
        return stats


class MetricsLogger:
    """A store of named `Stats`. Keys are strings, or tuples of strings for nesting:
    `log_value(("timers", "sample"), 0.1)` shows up as `result["timers"]["sample"]`."""

    def __init__(self):
        self._stats: dict[tuple[str, ...], Stats] = {}

    # -- logging -----------------------------------------------------------------------------
    def log_value(self, key: Key, value: Any, *, reduce: str | None = "mean",
                  window: float | None = None, ema_coeff: float | None = None,
                  clear_on_reduce: bool = False) -> None:
        """Logs one value under `key`. The first call for a key fixes its settings; later calls
        only add values."""
        path = _as_key(key)
        stats = self._stats.get(path)
        if stats is None:
            stats = self._stats[path] = Stats(reduce, window, ema_coeff, clear_on_reduce)
        stats.push(value)

    def log_dict(self, stats_dict: dict, *, key: Key | None = None, reduce: str | None = "mean",
                 window: float | None = None, ema_coeff: float | None = None,
                 clear_on_reduce: bool = False) -> None:
        """Logs every leaf of a (nested) dict, under `key` if given."""
        prefix = () if key is None else _as_key(key)
        for name, value in stats_dict.items():
            if isinstance(value, dict):
                self.log_dict(value, key=prefix + (name,), reduce=reduce, window=window,
                              ema_coeff=ema_coeff, clear_on_reduce=clear_on_reduce)
            else:
                self.log_value(prefix + (name,), value, reduce=reduce, window=window,
                               ema_coeff=ema_coeff, clear_on_reduce=clear_on_reduce)

    @contextlib.contextmanager
    def log_time(self, key: Key, *, reduce: str = "mean", window: float | None = None,
                 ema_coeff: float | None = None, clear_on_reduce: bool = False) -> Iterator[None]:
        """Context manager: logs the seconds its block took."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.log_value(key, time.perf_counter() - start, reduce=reduce, window=window,
                           ema_coeff=ema_coeff, clear_on_reduce=clear_on_reduce)

    # -- reading -----------------------------------------------------------------------------
    def _subtree(self, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Stats]]:
        n = len(prefix)
        return [(path, stats) for path, stats in self._stats.items() if path[:n] == prefix]

    def peek(self, key: Key, default: Any = _MISSING) -> Any:
        """The current reduced value of `key` (a nested dict for a key prefix), without
        clearing anything."""
        path = _as_key(key)
        if path in self._stats:
            return self._stats[path].peek()
        subtree = self._subtree(path)
        if subtree:
            return _nest((p[len(path):], s.peek()) for p, s in subtree)
        if default is _MISSING:
            raise KeyError(f"no metric logged under {key!r}")
        return default

    def reduce(self, key: Key | None = None) -> dict:
        """Reduces every stat (or those under `key`) into a nested dict of values, clearing the
        `clear_on_reduce` ones."""
        prefix = () if key is None else _as_key(key)
        return _nest((path[len(prefix):], stats.reduce()) for path, stats in self._subtree(prefix))

    def __contains__(self, key: Key) -> bool:
        path = _as_key(key)
        return path in self._stats or bool(self._subtree(path))

    # -- moving values between processes -----------------------------------------------------
    def export_delta(self, *, clear: bool = False) -> list[tuple[tuple[str, ...], dict, list]]:
        """(key, settings, values) for every stat with values logged since the last export.
        With `clear`, the `clear_on_reduce` stats here are reduced (emptied) as well."""
        delta = []
        for path, stats in self._stats.items():
            values = stats.export_delta()
            if values:
                delta.append((path, stats.settings, values))
            if clear and stats.clear_on_reduce:
                stats.reduce()
        return delta

    def merge_delta(self, delta: list, *, key: Key | None = None) -> None:
        """Adds another logger's `export_delta()` under `key`, creating stats as needed."""
        prefix = () if key is None else _as_key(key)
        for path, settings, values in delta:
            full = prefix + tuple(path)
            stats = self._stats.get(full)
            if stats is None:
                stats = self._stats[full] = Stats(**settings)
            for value in values:
                stats.push(value, track=False)

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict:
        return {"stats": [[list(path), stats.get_state()] for path, stats in self._stats.items()]}

    def set_state(self, state: dict) -> None:
        self._stats = {tuple(path): Stats.from_state(s) for path, s in state["stats"]}


def _nest(items) -> dict:
    result: dict = {}
    for path, value in items:
        if not path:
            continue
        node = result
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = value
    return result


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


#: Keys under result["env_runners"] that are always present (NaN until the first episode ends).
EPISODE_RESULT_KEYS = (
    EPISODE_RETURN_MEAN, EPISODE_RETURN_MIN, EPISODE_RETURN_MAX,
    EPISODE_LEN_MEAN, EPISODE_LEN_MIN, EPISODE_LEN_MAX, EPISODE_DURATION_SEC_MEAN,
)


def add_episode_defaults(env_runners: dict) -> dict:
    """Fills in the episode keys and counters RLlib's results always have."""
    for key in EPISODE_RESULT_KEYS:
        env_runners.setdefault(key, float("nan"))
    for key in (NUM_EPISODES, NUM_ENV_STEPS_SAMPLED, NUM_ENV_STEPS_SAMPLED_LIFETIME,
                NUM_EPISODES_LIFETIME):
        env_runners.setdefault(key, 0)
    return env_runners
