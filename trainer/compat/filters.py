"""RLlib's `ray.rllib.utils.filter`: the old stack's observation filters (`NoFilter`,
`MeanStdFilter`, `ConcurrentMeanStdFilter`, `get_filter`) and `RunningStat`, the running mean
and variance (Welford's) that RLlib's scripts and tests read from `MeanStdFilter` connector
states.

The new stack's connector `MeanStdFilter` (`ray.rllib.connectors.env_to_module`) is
`trainer.connectors.env_to_module`'s; `RunningStat.from_state` reads its states too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from trainer.compat.rllib_numpy import SMALL_NUMBER
from trainer.compat.serialization import _deserialize_ndarray, _serialize_ndarray
from trainer.compat.space_utils import _map

__all__ = [
    "ConcurrentMeanStdFilter",
    "Filter",
    "MeanStdFilter",
    "NoFilter",
    "RunningStat",
    "get_filter",
]


class Filter:
    """An observation filter: called on each observation, possibly updating its state;
    filters in several workers are merged with `apply_changes` and `sync`."""

    #: Whether one instance may be called from several threads at once.
    is_concurrent = False

    def __call__(self, x: Any, update: bool = True) -> Any:
        raise NotImplementedError

    def apply_changes(self, other: Filter, *args: Any, **kwargs: Any) -> None:
        """Adds what `other` has seen since its last `reset_buffer()` to this filter."""
        raise NotImplementedError

    def copy(self) -> Filter:
        """A new filter with the same state."""
        raise NotImplementedError

    def sync(self, other: Filter) -> None:
        """Takes all of `other`'s state."""
        raise NotImplementedError

    def reset_buffer(self) -> None:
        """Forgets what was seen since the last reset (the part `apply_changes` sends)."""
        raise NotImplementedError

    def as_serializable(self) -> Filter:
        """A copy that can be pickled (no locks)."""
        raise NotImplementedError


class NoFilter(Filter):
    """Passes observations through: arrays, dicts and tuples as they are, anything else as
    `np.asarray(x)` (a value that cannot become an array raises ValueError naming it)."""

    is_concurrent = True

    def __call__(self, x: Any, update: bool = True) -> Any:
        if isinstance(x, (np.ndarray, dict, tuple)):
            return x
        try:
            return np.asarray(x)
        except Exception as failure:
            raise ValueError(f"Failed to convert to array: {x!r} ({failure})") from failure

    def apply_changes(self, other: Filter, *args: Any, **kwargs: Any) -> None:
        pass

    def copy(self) -> NoFilter:
        return self

    def sync(self, other: Filter) -> None:
        pass

    def reset_buffer(self) -> None:
        pass

    def as_serializable(self) -> NoFilter:
        return self


class RunningStat:
    """The running count, mean and sum of squared deviations (Welford) of arrays of one
    `shape`, with the deltas since the last sync kept apart (`update` merges another's
    deltas, Chan et al.'s formula). `std` is the sample standard deviation (0 below two
    values), as RLlib's."""

    def __init__(self, shape: tuple[int, ...] | Any = ()):
        self.num_pushes = 0
        self.num_pushes_delta = 0
        self.mean_array = np.zeros(shape)
        self.mean_delta_array = np.zeros(shape)
        self.sum_sq_diff_array = np.zeros(shape)
        self.sum_sq_diff_delta_array = np.zeros(shape)

    def copy(self) -> RunningStat:
        other = RunningStat(self.shape)
        other.num_pushes = self.num_pushes
        other.num_pushes_delta = self.num_pushes_delta
        other.mean_array = np.copy(self.mean_array)
        other.mean_delta_array = np.copy(self.mean_delta_array)
        other.sum_sq_diff_array = np.copy(self.sum_sq_diff_array)
        other.sum_sq_diff_delta_array = np.copy(self.sum_sq_diff_delta_array)
        return other

    def push(self, x: Any) -> None:
        """Adds one value of the stat's shape (ValueError for another shape, naming both)."""
        x = np.asarray(x)
        if x.shape != self.mean_array.shape:
            raise ValueError(
                f"RunningStat.push: unexpected input shape {x.shape}, expected "
                f"{self.mean_array.shape}, value = {x}"
            )
        old_mean = np.copy(self.mean_array)
        self.num_pushes += 1
        self.num_pushes_delta += 1
        if self.num_pushes == 1:
            self.mean_array[...] = x
            self.mean_delta_array[...] = x
            return
        delta = x - old_mean
        self.mean_array[...] += delta / self.num_pushes
        self.mean_delta_array[...] += delta / self.num_pushes
        self.sum_sq_diff_array[...] += delta * (x - self.mean_array)
        self.sum_sq_diff_delta_array[...] += delta * (x - self.mean_array)

    def update(self, other: RunningStat) -> None:
        """Merges what `other` saw since its last sync (its deltas) into this stat."""
        n1, n2 = self.num_pushes, other.num_pushes_delta
        if n1 + n2 == 0:
            return
        n = float(n1 + n2)
        delta_mean = other.mean_delta_array - self.mean_array
        self.mean_array += delta_mean * n2 / n
        self.sum_sq_diff_array += other.sum_sq_diff_delta_array + delta_mean * delta_mean * (
            n1 * n2 / n
        )
        self.num_pushes = n1 + n2

    def __repr__(self) -> str:
        return f"(n={self.n}, mean_mean={np.mean(self.mean)}, mean_std={np.mean(self.std)})"

    @property
    def n(self) -> int:
        """How many values were pushed (or merged)."""
        return self.num_pushes

    @property
    def mean(self) -> np.ndarray:
        return self.mean_array

    @property
    def var(self) -> np.ndarray:
        """The sample variance (float32; zeros below two values)."""
        if self.num_pushes <= 1:
            return np.zeros_like(self.mean_array).astype(np.float32)
        return (self.sum_sq_diff_array / (float(self.num_pushes) - 1)).astype(np.float32)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.maximum(0, self.var))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.mean_array.shape

    def to_state(self) -> dict[str, Any]:
        """The stat as plain data, in RLlib's layout (arrays as `_serialize_ndarray` text)."""
        return {
            "num_pushes": self.num_pushes,
            "num_pushes_delta": self.num_pushes_delta,
            "mean_array": _serialize_ndarray(self.mean_array),
            "mean_delta_array": _serialize_ndarray(self.mean_delta_array),
            "sum_sq_diff_array": _serialize_ndarray(self.sum_sq_diff_array),
            "sum_sq_diff_delta_array": _serialize_ndarray(self.sum_sq_diff_delta_array),
        }

    @staticmethod
    def from_state(state: dict[str, Any]) -> RunningStat:
        """The stat `to_state()` described; also reads the states of this project's
        connector `MeanStdFilter` (`{"n", "mean", "m2"}`: no deltas since a sync)."""
        if "mean_array" not in state and {"n", "mean", "m2"} <= set(state):
            mean = np.array(state["mean"], dtype=np.float64)
            stat = RunningStat(mean.shape)
            stat.num_pushes = int(state["n"])
            stat.mean_array = mean
            stat.sum_sq_diff_array = np.array(state["m2"], dtype=np.float64)
            return stat

        def array(key: str) -> np.ndarray:
            value = state[key]
            return _deserialize_ndarray(value) if isinstance(value, str) else np.asarray(value)

        stat = RunningStat(array("mean_array").shape)
        stat.num_pushes = state["num_pushes"]
        stat.num_pushes_delta = state["num_pushes_delta"]
        stat.mean_array = array("mean_array")
        stat.mean_delta_array = array("mean_delta_array")
        stat.sum_sq_diff_array = array("sum_sq_diff_array")
        stat.sum_sq_diff_delta_array = array("sum_sq_diff_delta_array")
        return stat


def _stats_for(shape: Any) -> Any:
    """One RunningStat per leaf shape (an array of ints is one shape, not a struct)."""
    if isinstance(shape, np.ndarray):
        return RunningStat(tuple(shape.tolist()))
    if isinstance(shape, dict):
        return {key: _stats_for(sub) for key, sub in shape.items()}
    if isinstance(shape, (tuple, list)) and any(isinstance(s, (tuple, list)) for s in shape):
        return tuple(_stats_for(sub) for sub in shape)
    return None if shape is None else RunningStat(tuple(shape))


class MeanStdFilter(Filter):
    """Normalizes observations by their running mean and standard deviation (`demean`,
    `destd`), then clips them to [-clip, clip] (None: no clipping), updating the statistics
    with each observation unless `update=False`. `shape` is the observation shape, or a
    dict/tuple of shapes for a Dict/Tuple space (None leaves pass unchanged)."""

    is_concurrent = False

    def __init__(
        self, shape: Any, demean: bool = True, destd: bool = True, clip: float | None = 10.0
    ):
        self.shape = shape
        self.no_preprocessor = shape is None or isinstance(shape, dict)
        self.demean = demean
        self.destd = destd
        self.clip = clip
        self.running_stats: Any = _stats_for(shape)
        self.buffer: Any = None
        self.reset_buffer()

    def reset_buffer(self) -> None:
        self.buffer = _stats_for(self.shape)

    def apply_changes(
        self, other: Filter, with_buffer: bool = False, *args: Any, **kwargs: Any
    ) -> None:
        """Merges `other`'s buffer (what it saw since its last reset) into this filter's
        statistics; with `with_buffer`, takes a copy of `other`'s buffer as this one's."""
        if not isinstance(other, MeanStdFilter):
            raise TypeError(f"MeanStdFilter.apply_changes: {other!r} is no MeanStdFilter")
        _each_stat(lambda rs, o: rs.update(o), self.running_stats, other.buffer)
        if with_buffer:
            self.buffer = _each_stat(lambda b: b.copy(), other.buffer)

    def copy(self) -> MeanStdFilter:
        other = MeanStdFilter(self.shape)
        other.sync(self)
        return other

    def as_serializable(self) -> MeanStdFilter:
        return self.copy()

    def sync(self, other: Filter) -> None:
        """Takes `other`'s settings, statistics and buffer (copies)."""
        if not isinstance(other, MeanStdFilter):
            raise TypeError(f"MeanStdFilter.sync: {other!r} is no MeanStdFilter")
        self.demean, self.destd, self.clip = other.demean, other.destd, other.clip
        self.running_stats = _each_stat(lambda rs: rs.copy(), other.running_stats)
        self.buffer = _each_stat(lambda b: b.copy(), other.buffer)

    def __call__(self, x: Any, update: bool = True) -> Any:
        def normalize(value: Any, stat: RunningStat | None, buffer: RunningStat | None) -> Any:
            value = np.asarray(value)
            if stat is None or buffer is None:  # a Discrete/MultiDiscrete part
                return value
            dtype = value.dtype
            if update:
                rows = value if value.ndim == len(stat.shape) + 1 else [value]
                for row in rows:  # a batch of observations, or one
                    stat.push(row)
                    buffer.push(row)
            if self.demean:
                value = value - stat.mean
            if self.destd:
                value = value / (stat.std + SMALL_NUMBER)
            if self.clip:
                value = np.clip(value, -self.clip, self.clip)
            return value.astype(dtype)

        if isinstance(self.running_stats, (dict, tuple)):
            return _map(normalize, x, self.running_stats, self.buffer)
        return normalize(x, self.running_stats, self.buffer)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.shape}, {self.demean}, {self.destd}, {self.clip}, "
            f"{self.running_stats}, {self.buffer})"
        )


def _each_stat(fn: Callable[..., Any], stats: Any, *others: Any) -> Any:
    """`fn` over the RunningStat leaves of `stats` (and `others`, alike); None leaves stay."""
    if stats is None:
        return None
    if isinstance(stats, RunningStat):
        return fn(stats, *others)
    return _map(lambda s, *o: None if s is None else fn(s, *o), stats, *others)


class ConcurrentMeanStdFilter(MeanStdFilter):
    """A `MeanStdFilter` whose calls hold a lock (several threads may share it)."""

    is_concurrent = True

    def __init__(self, *args: Any, **kwargs: Any):
        self._lock = threading.RLock()
        super().__init__(*args, **kwargs)

    def __call__(self, x: Any, update: bool = True) -> Any:
        with self._lock:
            return super().__call__(x, update)

    def apply_changes(
        self, other: Filter, with_buffer: bool = False, *args: Any, **kwargs: Any
    ) -> None:
        with self._lock:
            super().apply_changes(other, with_buffer)

    def sync(self, other: Filter) -> None:
        with self._lock:
            super().sync(other)

    def as_serializable(self) -> MeanStdFilter:
        """A plain `MeanStdFilter` with this one's state (no lock to pickle)."""
        other = MeanStdFilter(self.shape)
        other.sync(self)
        return other

    def copy(self) -> ConcurrentMeanStdFilter:
        other = ConcurrentMeanStdFilter(self.shape)
        other.sync(self)
        return other

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


def get_filter(filter_config: str | Callable[[Any], Filter], shape: Any) -> Filter:
    """The filter `filter_config` names ("MeanStdFilter", "ConcurrentMeanStdFilter" (both
    without clipping), "NoFilter") or makes (a callable of the shape)."""
    if filter_config == "MeanStdFilter":
        return MeanStdFilter(shape, clip=None)
    if filter_config == "ConcurrentMeanStdFilter":
        return ConcurrentMeanStdFilter(shape, clip=None)
    if filter_config == "NoFilter":
        return NoFilter()
    if callable(filter_config):
        return filter_config(shape)
    raise ValueError(
        f"get_filter: unknown observation_filter {filter_config!r} (allowed: 'MeanStdFilter', "
        "'ConcurrentMeanStdFilter', 'NoFilter', or a callable (shape) -> Filter)"
    )
