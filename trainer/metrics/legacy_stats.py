"""`Stats`: the earlier single statistic class (RLlib 2.60's
`ray.rllib.utils.metrics.legacy_stats`, which it keeps for older code and checkpoints; the
`MetricsLogger` uses the classes of `trainer.metrics.stats` instead). A logger state written
with these stats is converted on `MetricsLogger.set_state()`.

- `reduce="mean"` with neither `window` nor `ema_coeff` is an exponential moving average with
  coefficient 0.01 (`new = c * value + (1 - c) * old`); with `window=n` the mean of the last n
  values.
- `"min"`, `"max"`, `"sum"` reduce over the window, or over everything pushed (kept as one
  running value) without one. NaNs are ignored, as numpy's `nan*` reductions do.
- `reduce=None` keeps the values (the last `window` of them); `percentiles=` then reports
  percentiles of the window.
- `clear_on_reduce=True` empties the values once `reduce()` has reported them.
- `throughput=True` also tracks value per second (an EMA over the pushes, or over merges).

Merging (how parallel components' stats become one; `merge_stats`): the incoming stats of one
round are merged *in parallel* (equal weight: walking back from their newest values, each index
contributes the reduction of all inputs' values at that index, once per input, until the window
is full), then merged *on the time axis* into the receiver's stats. Windowed and EMA means are
replaced by the newest parallel merge instead (their inputs resend their whole window), and
lifetime sums (`reduce="sum"`, no window, not cleared) subtract what each input reported last
time, so counts are never added twice (RLlib's first merge adds an input that reports twice in
one call twice; here its newer total counts once).
"""

from __future__ import annotations

import heapq
import math
import os
import threading
import time
from collections import deque
from types import TracebackType
from typing import Any

import numpy as np

REDUCE_METHODS = ("mean", "min", "max", "sum", None)
DEFAULT_EMA_COEFF = 0.01
DEFAULT_THROUGHPUT_EMA_COEFF = 0.05
DEFAULT_PERCENTILES = [0, 50, 75, 90, 95, 99, 100]
INFINITY = float("inf")


class Stats:
    __slots__ = (
        "reduce_method",
        "window",
        "ema_coeff",
        "clear_on_reduce",
        "percentiles",
        "reduce_per_index_on_aggregate",
        "values",
        "id_",
        "_inf_window",
        "_last_reduced",
        "_has_new_values",
        "_prev_merge_values",
        "_throughput_stats",
        "_throughput_ema_coeff",
        "_last_throughput_time",
        "_start_times",
    )

    def __init__(
        self,
        init_values: Any = None,
        reduce: str | None = "mean",
        percentiles: list | bool = False,
        reduce_per_index_on_aggregate: bool = False,
        window: float | None = None,
        ema_coeff: float | None = None,
        clear_on_reduce: bool = False,
        throughput: bool | float = False,
        throughput_ema_coeff: float | None = None,
    ):
        _check_settings(
            reduce, window, ema_coeff, percentiles, reduce_per_index_on_aggregate, clear_on_reduce
        )
        if percentiles is True:
            percentiles = list(DEFAULT_PERCENTILES)
        self._inf_window = window is None or window == INFINITY
        if reduce == "mean" and self._inf_window and ema_coeff is None:
            ema_coeff = DEFAULT_EMA_COEFF  # an unbounded mean is an EMA (no endless lists)
        self.reduce_method = reduce
        self.window = window
        self.ema_coeff = ema_coeff
        self.clear_on_reduce = clear_on_reduce
        self.percentiles = percentiles
        self.reduce_per_index_on_aggregate = reduce_per_index_on_aggregate
        #: Identifies this statistic across copies (a receiver remembers each input's lifetime
        #: sum by it). 128 random bits, as `uuid4().hex` at a third of the cost.
        self.id_ = new_id()
        self._last_reduced: list = [math.nan]
        self._prev_merge_values: dict[str, Any] = {}
        self._start_times: dict[int, float] = {}
        self._throughput_ema_coeff = throughput_ema_coeff
        self._throughput_stats: Stats | None = None
        self._last_throughput_time = -1.0
        if throughput is not False:
            initial = (
                None
                if isinstance(throughput, bool) or not isinstance(throughput, (int, float))
                else [throughput]
            )
            self._throughput_stats = Stats(initial, reduce="mean", ema_coeff=throughput_ema_coeff)
            if init_values is not None:
                self._last_throughput_time = time.perf_counter()
        self._set_values(_as_list(init_values))
        self._has_new_values = init_values is not None

    # -- adding values -----------------------------------------------------------------------
    def check_value(self, value: Any) -> None:
        """Raises ValueError where `value` cannot be logged: with a reduce method, only a
        number (a scalar array or tensor too) can; with `reduce=None`, anything."""
        if self.reduce_method is not None and isinstance(value, (list, tuple, deque, dict)):
            raise ValueError(
                f"Stats(reduce={self.reduce_method!r}): logged value {value!r} is "
                "not a number; only reduce=None keeps structured values"
            )
        shape = getattr(value, "shape", ())
        if self.reduce_method is not None and tuple(shape) != ():
            raise ValueError(
                f"Value ({value}) is required to be a scalar when using a reduce method!"
            )

    def push(self, value: Any) -> None:
        """Adds one value (a number; any object with `reduce=None`)."""
        value = _plain(value)
        if self.reduce_method is not None and isinstance(value, (list, tuple, deque, dict)):
            raise ValueError(
                f"Stats(reduce={self.reduce_method!r}): logged value {value!r} is "
                "not a number; only reduce=None keeps structured values"
            )
        if self._throughput_stats is not None:
            self._recompute_throughput(value)
        if not self._inf_window:
            self.values.append(value)  # a deque(maxlen=window) drops the oldest
        elif not self.values:
            self._set_values([value])
        elif self.reduce_method is None:
            self.values.append(value)
        else:
            # Unbounded EMA, sum, min, max: fold the new value into the running one.
            self.values.append(value)
            self._set_values(self._reduced_values()[1])
        self._has_new_values = True

    def push_many(self, values: list) -> None:
        """`push` of each of `values` in order; plain numbers into a window at once."""
        if (
            not self._inf_window
            and self._throughput_stats is None
            and all(type(value) in (int, float) for value in values)
        ):
            self.values.extend(values)  # a deque(maxlen=window) drops the oldest
            self._has_new_values = True
            return
        for value in values:
            self.push(value)

    def __enter__(self) -> Stats:
        """`with stats:` pushes the seconds the block took (one measurement per thread)."""
        self._start_times[threading.get_ident()] = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        start = self._start_times.pop(threading.get_ident())
        self.push(time.perf_counter() - start)

    # -- reading -----------------------------------------------------------------------------
    def peek(self, compile: bool = True) -> Any:
        """The current reduction, leaving the values as they are. `compile=False` gives the
        values a merge would use (a list)."""
        if self._has_new_values or (not compile and not self._inf_window):
            reduced, values = self._reduced_values()
            if not compile and not self._inf_window:
                return list(values)
            if self.reduce_method is not None:
                return reduced[0] if compile else list(reduced)
            if compile and self.percentiles is not False:
                return compute_percentiles(values, self.percentiles)
            return list(reduced)
        return self._last_reduced[0] if compile else list(self._last_reduced)

    def reduce(self, compile: bool = True) -> Any:
        """Reduces the values (the window is kept; `clear_on_reduce` empties them) and returns
        the result: a value with `compile=True`, else a new `Stats` like this one holding what
        a receiver merges."""
        len_before = len(self.values)
        window_values = None
        if self._has_new_values:
            reduced, window_values = self._reduced_values()
            self._set_values([] if self.clear_on_reduce else window_values)
        else:
            reduced = self._last_reduced
        if self.reduce_method is not None:
            self._last_reduced = list(reduced)
        else:
            self._has_new_values = True
        result: Any
        if not compile and not self._inf_window:
            result = list(window_values if window_values is not None else self._reduced_values()[1])
        elif compile and self.percentiles is not False:
            result = compute_percentiles(
                window_values if window_values is not None else self._reduced_values()[1],
                self.percentiles,
            )
        elif compile and self.reduce_method is not None:
            result = reduced[0]
        else:
            result = list(reduced)
        if compile:
            return result
        return Stats.similar_to(self, init_values=result if len_before else None)

    @property
    def throughput(self) -> float:
        """Value per second (an EMA), NaN before two measurements."""
        if self._throughput_stats is None:
            raise ValueError(
                "this Stats does not track throughput (log it with with_throughput=True)"
            )
        return self._throughput_stats.peek()

    @property
    def has_throughput(self) -> bool:
        return self._throughput_stats is not None

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        smoothing = (
            f"; win={self.window}"
            if self.window
            else f"; ema={self.ema_coeff}"
            if self.ema_coeff
            else ""
        )
        return f"Stats({self.peek()}; len={len(self)}; reduce={self.reduce_method}{smoothing})"

    def __float__(self) -> float:
        return float(self._scalar("float()"))

    def __int__(self) -> int:
        return int(self._scalar("int()"))

    def __format__(self, spec: str) -> str:
        return format(float(self._scalar("format()")), spec)

    def _scalar(self, what: str) -> Any:
        if self.reduce_method is None:
            raise ValueError(
                f"{what} of a Stats with reduce=None: it holds a list of values, not one number"
            )
        return self.peek()

    # -- merging -----------------------------------------------------------------------------
    def merge_on_time_axis(self, other: Stats) -> None:
        """Appends `other`'s values after this one's (a window keeps the newest)."""
        self.values.extend(other.values)
        self._has_new_values = True

    def merge_in_parallel(self, *others: Stats) -> None:
        """Merges the values of `others`, from components that ran in parallel, into this
        one's with equal weight (see the module docstring)."""
        inputs = [s for s in (self, *others) if len(s) and not _only_nan(s.values)]
        if not inputs or inputs == [self]:
            return
        if len(inputs) == 1:
            self._set_values(list(inputs[0].values))
            return
        if self.percentiles is not False:
            self._set_values(list(heapq.merge(*(sorted(s.values) for s in inputs))))
            return
        window = self.window or INFINITY
        merged: list = []
        for back in range(1, max(len(s) for s in inputs) + 1):
            at_index = [s.values[-back] for s in inputs if len(s) >= back]
            copies = 1 if self.reduce_per_index_on_aggregate else len(at_index)
            if self.ema_coeff is not None:
                merged.extend([_nan_reduce("mean", at_index)] * copies)
            elif self.reduce_method is None:
                merged.extend(at_index)
            elif self.reduce_method == "sum":
                total = _nan_reduce("sum", at_index)
                # Each input weighs the same: its share of the sum, once per input. An
                # unbounded sum only reports the total, so ints stay ints there.
                if self._inf_window and isinstance(total, int):
                    merged.extend([0] * (copies - 1) + [total])
                else:
                    merged.extend([total / copies] * copies)
                if self._throughput_stats is not None:
                    self._recompute_throughput(total)
            else:
                merged.extend([_nan_reduce(self.reduce_method, at_index)] * copies)
            if len(merged) >= window:
                merged = merged[: int(window)]
                break
        merged.reverse()
        self._set_values(merged)
        self._has_new_values = True

    def clear_throughput(self) -> None:
        """Forgets the throughput estimate and the time of the last measurement."""
        if self._throughput_stats is not None:
            self._throughput_stats._set_values([])
            self._last_throughput_time = -1.0

    def _recompute_throughput(self, value: Any) -> None:
        now = time.perf_counter()
        if self._last_throughput_time >= 0:
            elapsed = now - self._last_throughput_time
            if elapsed > 0 and self._throughput_stats is not None:
                self._throughput_stats.push(value / elapsed)
        self._last_throughput_time = now

    # -- copies and state --------------------------------------------------------------------
    @staticmethod
    def similar_to(other: Stats, init_values: Any = None) -> Stats:
        """A new Stats with `other`'s settings, id and last reduction, holding `init_values`
        (values as a Stats holds them: no checks, no conversion)."""
        stats = Stats.__new__(Stats)
        for name in _SETTING_SLOTS:
            setattr(stats, name, getattr(other, name))
        stats._last_reduced = list(other._last_reduced)
        stats._prev_merge_values = {}
        stats._start_times = {}
        stats._throughput_stats = None
        stats._last_throughput_time = -1.0
        if other._throughput_stats is not None:
            stats._throughput_stats = Stats(
                [other.throughput], reduce="mean", ema_coeff=other._throughput_ema_coeff
            )
            if init_values is not None:
                stats._last_throughput_time = time.perf_counter()
        stats._set_values(
            init_values
            if isinstance(init_values, list)
            else []
            if init_values is None
            else [init_values]
        )
        stats._has_new_values = init_values is not None
        return stats

    def copy(self) -> Stats:
        """An independent copy (values, throughput and merge bookkeeping included)."""
        clone = Stats.__new__(Stats)
        clone.__setstate__(self.__getstate__())
        clone._set_values(self.values)
        clone._has_new_values = self._has_new_values
        clone._last_reduced = list(self._last_reduced)
        clone._prev_merge_values = dict(self._prev_merge_values)
        if self._throughput_stats is not None:
            clone._throughput_stats = self._throughput_stats.copy()
        return clone

    def __getstate__(self) -> tuple:
        # Pickled slot by slot (the per-thread timers stay behind): what a runner's reduce()
        # sends in every sample reply, so no dict of settings and no re-validation.
        return tuple(getattr(self, name) for name in _PICKLED_SLOTS)

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(_PICKLED_SLOTS, state, strict=True):
            setattr(self, name, value)
        self._start_times = {}

    def get_state(self) -> dict:
        """Settings and values as plain data (beyond RLlib's: the id and what each input
        reported last, so that lifetime sums stay exact across a checkpoint)."""
        state = {
            "values": list(self.values),
            "reduce": self.reduce_method,
            "percentiles": self.percentiles,
            "reduce_per_index_on_aggregate": self.reduce_per_index_on_aggregate,
            "window": self.window,
            "ema_coeff": self.ema_coeff,
            "clear_on_reduce": self.clear_on_reduce,
            "_last_reduced": list(self._last_reduced),
            "id_": self.id_,
            "prev_merge_values": dict(self._prev_merge_values),
        }
        if self._throughput_stats is not None:
            state["throughput_stats"] = self._throughput_stats.get_state()
        return state

    @staticmethod
    def from_state(state: dict) -> Stats:
        if "ema" in state and "total" in state:  # this project's format before RLlib 2.60's
            state = _from_earlier_format(state)
        throughput_state = state.get("throughput_stats")
        throughput = False
        throughput_coeff = None
        if throughput_state is not None:
            throughput_values = throughput_state["values"]
            throughput = throughput_values[-1] if throughput_values else True
            throughput_coeff = throughput_state["ema_coeff"]
        stats = Stats(
            list(state["values"]),
            reduce=state["reduce"],
            percentiles=state.get("percentiles", False),
            reduce_per_index_on_aggregate=state.get("reduce_per_index_on_aggregate", False),
            window=state["window"],
            ema_coeff=state["ema_coeff"],
            clear_on_reduce=state["clear_on_reduce"],
            throughput=throughput,
            throughput_ema_coeff=throughput_coeff,
        )
        stats._last_reduced = list(state.get("_last_reduced", [math.nan]))
        stats.id_ = state.get("id_", stats.id_)
        stats._prev_merge_values = dict(state.get("prev_merge_values", {}))
        return stats

    # -- internals ---------------------------------------------------------------------------
    def _set_values(self, values: Any) -> None:
        window = self.window
        self.values = (
            list(values)
            if self._inf_window or window is None
            else deque(values, maxlen=int(window))
        )
        self._has_new_values = True

    def _reduced_values(self) -> tuple[list | deque, Any]:
        """(The reduction as a one-item list, the values to keep), without changing anything.
        For `reduce=None`: (the values, the values; sorted for percentiles)."""
        values = self.values
        if self.reduce_method is None:
            kept = sorted(values) if self.percentiles is not False else values
            return kept, kept
        if not values:
            return ([math.nan] if self.reduce_method != "sum" else [0]), []
        if self.ema_coeff is not None:
            coeff = self.ema_coeff
            mean = values[0]
            for value in list(values)[1:]:
                mean = coeff * value + (1.0 - coeff) * mean
            return [mean], ([mean] if self._inf_window else values)
        reduced = _nan_reduce(self.reduce_method, values)
        # Unbounded sums, mins and maxes need only their running value.
        if self._inf_window and self.reduce_method != "mean":
            return [reduced], [reduced]
        return [reduced], values


#: What `similar_to` copies: the settings and the identity.
_SETTING_SLOTS = (
    "reduce_method",
    "window",
    "ema_coeff",
    "clear_on_reduce",
    "percentiles",
    "reduce_per_index_on_aggregate",
    "id_",
    "_inf_window",
    "_throughput_ema_coeff",
)
_PICKLED_SLOTS = tuple(name for name in Stats.__slots__ if name != "_start_times")


def merge_stats(base: Stats | None, incoming: list[Stats]) -> Stats:
    """`incoming` (from parallel components) merged into `base`, the receiver's stats under the
    same key (None: the first incoming one, copied, becomes it). See the module docstring."""
    if base is None and _is_lifetime_sum(incoming[0]):
        # Start from zero and count every input's total as growth (below); an input that
        # reports twice in one call then counts once, with its newer total.
        base = Stats.similar_to(incoming[0], init_values=[0])
        base.clear_throughput()
    elif base is None:
        base = incoming[0].copy()
        base.clear_throughput()
        if len(incoming) > 1:
            base.merge_in_parallel(*incoming[1:])
        return base
    if not incoming:
        return base
    added = 0
    if _is_lifetime_sum(base):
        if not base.values:
            base._set_values([0])
        for stats in incoming:
            before = base._prev_merge_values.get(stats.id_, 0)
            now = stats.peek()
            # Each input reports its own lifetime total: only the growth since last time counts.
            base.values[-1] -= before
            added += now - before
            base._prev_merge_values[stats.id_] = now
    merged = incoming[0].copy()
    if len(incoming) > 1:
        merged.merge_in_parallel(*incoming[1:])
    if base.reduce_method == "mean" and not base.clear_on_reduce:
        # Inputs resend their whole window (or EMA) each time: the newest merge replaces it.
        base._set_values(list(merged.values))
    else:
        base.merge_on_time_axis(merged)
        if base._throughput_stats is not None:
            base._recompute_throughput(added)
    return base


def compute_percentiles(sorted_values: Any, percentiles: list) -> dict:
    """{percentile: value} by linear interpolation in an ascending list (None when empty)."""
    values = list(sorted_values)
    n = len(values)
    if n == 0:
        return {p: None for p in percentiles}
    result = {}
    for p in percentiles:
        position = (p / 100) * (n - 1)
        low = int(position)
        weight = position - low
        result[p] = (
            values[low] if weight == 0 else (values[low] * (1 - weight) + values[low + 1] * weight)
        )
    return result


# -- helpers -----------------------------------------------------------------------------------
def _check_settings(
    reduce: str | None,
    window: float | None,
    ema_coeff: float | None,
    percentiles: bool | list,
    reduce_per_index_on_aggregate: bool,
    clear_on_reduce: bool,
) -> None:
    if reduce not in REDUCE_METHODS:
        raise ValueError(
            f"log_value(reduce={reduce!r}): reduce must be one of {list(REDUCE_METHODS)}"
        )
    if window is not None and window != INFINITY and ema_coeff is not None:
        raise ValueError(
            f"log_value(window={window!r}, ema_coeff={ema_coeff!r}): give a window "
            "or an ema_coeff, not both"
        )
    if window is not None and not (
        (isinstance(window, int) and not isinstance(window, bool) and window >= 1)
        or window == INFINITY
    ):
        raise ValueError(
            f"log_value(window={window!r}): window must be an int >= 1, float('inf') or None"
        )
    if ema_coeff is not None:
        if reduce != "mean":
            raise ValueError(
                f"log_value(ema_coeff={ema_coeff!r}, reduce={reduce!r}): ema_coeff "
                "only applies to reduce='mean'"
            )
        if not 0.0 < ema_coeff <= 1.0:
            raise ValueError(f"log_value(ema_coeff={ema_coeff!r}): must be in (0, 1]")
    if percentiles is not False:
        if reduce is not None:
            raise ValueError(
                f"log_value(percentiles={percentiles!r}, reduce={reduce!r}): "
                "percentiles need reduce=None"
            )
        if window is None or window == INFINITY:
            raise ValueError(
                f"log_value(percentiles={percentiles!r}): percentiles need a finite window"
            )
        if percentiles is not True and not (
            isinstance(percentiles, list)
            and all(isinstance(p, (int, float)) and 0 <= p <= 100 for p in percentiles)
        ):
            raise ValueError(
                f"log_value(percentiles={percentiles!r}): True or a list of numbers in [0, 100]"
            )
    if reduce_per_index_on_aggregate and reduce not in ("mean", "sum", "min", "max"):
        raise ValueError(
            f"log_value(reduce_per_index_on_aggregate=True, reduce={reduce!r}): "
            "only for mean, sum, min and max"
        )
    if reduce is None and (window is None or window == INFINITY) and not clear_on_reduce:
        raise ValueError(
            "log_value(reduce=None) without a window needs clear_on_reduce=True "
            "(else the list of values grows forever)"
        )


def new_id() -> str:
    return os.urandom(16).hex()


def _as_list(values: Any) -> list:
    if values is None:
        return []
    if isinstance(values, (list, tuple, deque)):
        return [_plain(v) for v in values]
    return [_plain(values)]


def _plain(value: Any) -> Any:
    """numpy scalars and 0-d arrays as Python numbers, so results are plain data."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    return value


def _is_lifetime_sum(stats: Stats) -> bool:
    return stats.reduce_method == "sum" and stats._inf_window and not stats.clear_on_reduce


def _only_nan(values: Any) -> bool:
    if len(values) != 1:
        return False
    value = values[0]
    try:
        return bool(np.all(np.isnan(value)))
    except TypeError:
        return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _nan_reduce(method: str, values: Any) -> Any:
    """numpy's `nanmean` / `nanmin` / `nanmax` / `nansum` (NaN when every value is NaN), in
    plain Python for Python numbers (the common case: several times faster)."""
    try:  # Python numbers; anything else (arrays, strings) raises and takes numpy's way
        kept = [v for v in values if v == v]
        if not kept:
            return math.nan
        if method == "sum":
            result = sum(kept)
        elif method == "mean":
            result = sum(kept) / len(kept)
        else:
            result = min(kept) if method == "min" else max(kept)
        if _is_number(result):
            return result
    except (TypeError, ValueError):
        pass
    array = np.asarray(list(values), dtype=float)
    if np.all(np.isnan(array)):
        return math.nan
    return getattr(np, "nan" + method)(array).item()


def _from_earlier_format(state: dict) -> dict:
    """A stat saved before RLlib 2.60's format ({..., "values", "ema", "total"}) in it."""
    values = list(state["values"])
    if state["ema"] is not None:
        values = [state["ema"]]
    elif state["total"] is not None:
        values = [state["total"]]
    return {
        "values": values,
        "reduce": state["reduce"],
        "window": state["window"],
        "ema_coeff": state["ema_coeff"],
        "clear_on_reduce": state["clear_on_reduce"],
    }
