"""`StatsBase`: what every statistic class of the `MetricsLogger` has (RLlib 2.60's
`ray.rllib.utils.metrics.stats.base`).

Stats live in a tree of loggers. A *leaf* stat (made by `log_value` on a logger) takes values
with `push()`; an aggregating stat (made by `aggregate()` on a receiving logger: `is_leaf=False`)
takes other stats with `merge()`. The *root* stat (on the Algorithm's logger) may keep what the
others reset on `reduce()`, such as lifetime sums. Each subclass names itself with
`stats_cls_identifier`, the key a checkpoint restores it by.
"""

from __future__ import annotations

import sys
import threading
import time
from abc import ABCMeta, abstractmethod
from collections import deque
from types import TracebackType
from typing import Any, SupportsIndex, TypeVar

import cloudpickle

if sys.version_info >= (3, 11):
    from typing import Self
else:  # typing_extensions: a dependency on Python 3.10 (setup.cfg)
    from typing_extensions import Self


class StatsBase(metaclass=ABCMeta):
    """One statistic: settings, the values its reduction works on, and how it merges."""

    #: The name a logger state stores this class under (set by each subclass).
    stats_cls_identifier: str | None = None

    def __init__(self, is_root: bool = False, is_leaf: bool = True):
        """`is_root`: this stat is on the root logger; `is_leaf`: values are pushed into it
        (else it only merges other stats). A stat can be both, or neither (an intermediate
        aggregator)."""
        if self.stats_cls_identifier is None:
            raise TypeError(
                f"{type(self).__name__} must set the class attribute stats_cls_identifier"
            )
        self.is_root = is_root
        self.is_leaf = is_leaf
        # Start times of `with stats:` blocks, one per thread (timing in parallel threads).
        self._start_times: dict[int, float] = {}
        if not self.is_leaf:
            #: What the newest `merge()` brought in (for `peek(latest_merged_only=True)`).
            self.latest_merged: Any = None

    # -- throughput ----------------------------------------------------------------------------
    @property
    def has_throughputs(self) -> bool:
        """Whether this stat estimates a throughput (sums can)."""
        return False

    @property
    def throughputs(self) -> float | dict[str, float]:
        """The throughput estimate(s) of a stat that has them (`has_throughputs`)."""
        raise ValueError(f"{type(self).__name__} does not track throughputs")

    def initialize_throughput_reference_time(self, time: float) -> None:
        """Sets the time the first throughput is measured from (the logger knows it, the stat
        does not). Stats with throughputs override this."""
        if self.has_throughputs:
            raise ValueError(
                "initialize_throughput_reference_time must be overridden by "
                "stats classes that have throughputs"
            )

    # -- numbers -------------------------------------------------------------------------------
    @abstractmethod
    def __len__(self) -> int:
        """The number of values held."""

    def __float__(self) -> float:
        value = self.peek(compile=True)
        if isinstance(value, (list, tuple, deque)):
            raise ValueError(f"Can not convert {self} to float.")
        return float(value)

    def __int__(self) -> int:
        value = self.peek(compile=True)
        if isinstance(value, (list, tuple, deque)):
            raise ValueError(f"Can not convert {self} to int.")
        return int(value)

    # A stat compares and computes as its current value (RLlib's convenience for tests).
    def __eq__(self, other: Any) -> bool:
        return float(self) == float(other)

    # Equal by value, so not hashable; object's __hash__ is a method, hence the ignore.
    __hash__ = None  # type: ignore[assignment]

    def __le__(self, other: Any) -> bool:
        return float(self) <= float(other)

    def __ge__(self, other: Any) -> bool:
        return float(self) >= float(other)

    def __lt__(self, other: Any) -> bool:
        return float(self) < float(other)

    def __gt__(self, other: Any) -> bool:
        return float(self) > float(other)

    def __add__(self, other: Any) -> float:
        return float(self) + float(other)

    def __sub__(self, other: Any) -> float:
        return float(self) - float(other)

    def __mul__(self, other: Any) -> float:
        return float(self) * float(other)

    def __format__(self, fmt: str) -> str:
        return f"{float(self):{fmt}}"

    # -- timing --------------------------------------------------------------------------------
    def __enter__(self) -> StatsBase:
        """`with stats:` pushes the seconds the block took."""
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

    # -- copies and state ----------------------------------------------------------------------
    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """A stat of this class rebuilt from `get_state()`."""
        stats = cls(**cls._get_init_args(state=state))
        stats.set_state(state)
        return stats

    def clone(self, init_overrides: dict[str, Any] | None = None) -> Self:
        """A new stat with this one's settings (overridden by `init_overrides`) and no
        values."""
        init_args = type(self)._get_init_args(stats_object=self)
        if init_overrides:
            init_args.update(init_overrides)
        return type(self)(**init_args)

    def get_state(self) -> dict[str, Any]:
        """Settings and values as plain data; subclasses add theirs."""
        state = {
            "stats_cls_identifier": self.stats_cls_identifier,
            "is_root": self.is_root,
            "is_leaf": self.is_leaf,
        }
        if not self.is_leaf:
            state["latest_merged"] = self.latest_merged
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """Takes `get_state()`'s settings and values; subclasses take theirs."""
        if state["stats_cls_identifier"] != self.stats_cls_identifier:
            raise ValueError(
                f"a state of {state['stats_cls_identifier']!r} stats cannot be "
                f"set on {type(self).__name__} ({self.stats_cls_identifier!r})"
            )
        self.is_root = state["is_root"]
        self.is_leaf = state["is_leaf"]
        if not self.is_leaf:
            self.latest_merged = state.get("latest_merged")

    @staticmethod
    def _get_init_args(
        stats_object: StatsBase | None = None, state: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The constructor's arguments of a stat like `stats_object`, or like `state`."""
        if state is not None:
            return {"is_root": state["is_root"], "is_leaf": state["is_leaf"]}
        if stats_object is not None:
            return {"is_root": stats_object.is_root, "is_leaf": stats_object.is_leaf}
        raise ValueError("Either stats_object or state must be provided")

    def __getstate__(self) -> dict[str, Any]:
        # Pickled without the running timers (a reduce() result travels between processes).
        state = self.__dict__.copy()
        state["_start_times"] = {}
        return state

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple:
        # A reduce() result travels from the EnvRunner processes by plain pickle, which names a
        # class by its import path. A custom stats class that has none (defined in a function,
        # sent to the runners by value with the config) travels by value here too.
        cls = type(self)
        if _importable(cls):
            return (_new_stats, (cls,), self.__getstate__())
        return (_new_stats_of_pickled_class, (cloudpickle.dumps(cls),), self.__getstate__())

    # -- the statistic -------------------------------------------------------------------------
    @abstractmethod
    def __repr__(self) -> str: ...

    @abstractmethod
    def merge(self, incoming_stats: list[Self]) -> None:
        """Merges stats of parallel components (their `reduce(compile=False)` results) into
        this aggregating stat."""

    @abstractmethod
    def push(self, value: Any) -> None:
        """Adds one value (leaf stats only)."""

    def push_many(self, values: list) -> None:
        """`push()` of each of `values` in order (subclasses do it at once where they can)."""
        for value in values:
            self.push(value)

    @abstractmethod
    def peek(self, compile: bool = True, latest_merged_only: bool = False) -> Any:
        """The current reduction, changing nothing. `compile=False` gives a list.
        `latest_merged_only=True` (aggregating stats only) looks at the newest merge only."""

    @abstractmethod
    def reduce(self, compile: bool = True) -> Any:
        """Reduces the values and starts a new reduce cycle: the reduced value with
        `compile=True`, else a stat like this one holding what a receiver merges."""

    def _require_aggregating(self) -> None:
        # AssertionError as RLlib's (its tests expect that type).
        if self.is_leaf:
            raise AssertionError(
                f"{type(self).__name__} should only be merged at aggregation "
                "stages (root or intermediate), not into a leaf stat"
            )

    def _require_latest_merged_allowed(self) -> None:
        if self.is_leaf:
            raise ValueError(
                "latest_merged_only can only be used on aggregation stats objects (is_leaf=False)"
            )


#: Whether a class can be pickled by its import path (checked once per class).
_importable_classes: dict[type, bool] = {}


def _importable(cls: type) -> bool:
    known = _importable_classes.get(cls)
    if known is None:
        node: Any = sys.modules.get(cls.__module__)
        for part in cls.__qualname__.split("."):
            node = getattr(node, part, None)
        known = _importable_classes[cls] = node is cls
    return known


def _new_stats(cls: type[StatsBase]) -> StatsBase:
    return cls.__new__(cls)


def _new_stats_of_pickled_class(pickled_cls: bytes) -> StatsBase:
    cls = cloudpickle.loads(pickled_cls)
    return cls.__new__(cls)


_Stats = TypeVar("_Stats", bound=StatsBase)


def settings_source(stats_object: StatsBase | None, cls: type[_Stats]) -> _Stats:
    """`stats_object` as the `cls` whose settings a new stat copies (`_get_init_args`)."""
    if not isinstance(stats_object, cls):
        raise TypeError(
            f"{cls.__name__}: the stat to copy settings from is "
            f"{type(stats_object).__name__}, not {cls.__name__}"
        )
    return stats_object
