"""`MetricsLogger`: named statistics in a nested dict, RLlib 2.60's class
(`ray.rllib.utils.metrics.metrics_logger`).

Data flow in training: every EnvRunner logs into its own (leaf) logger; each `sample()` reply
carries its `reduce()` (a tree of stats holding what the receiver must merge: window means,
the growth of lifetime sums, EMAs), after which the runner's stats start a new cycle. The
Algorithm's logger (`root=True`) `aggregate()`s the replies of one round under
`"env_runners"`, logs its own timers and learner results, and at the end of `train()`
`compile()`s everything into the result dict of plain values.

Each `reduce=` kind is a stats class (`DEFAULT_STATS_CLS_LOOKUP`); a logger made with another
`stats_cls_lookup` (`AlgorithmConfig.reporting(custom_stats_cls_lookup=...)`) can override
them or add new kinds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from trainer.metrics.legacy_stats import _from_earlier_format
from trainer.metrics.stats import (
    EmaStats,
    ItemSeriesStats,
    ItemStats,
    LifetimeSumStats,
    MaxStats,
    MeanStats,
    MinStats,
    PercentilesStats,
    StatsBase,
    SumStats,
)
from trainer.util.state_checks import StateError, require_map, require_numeric_data

logger = logging.getLogger("trainer")

Key = str | tuple[str, ...] | list[str]
#: Joins a nested key into one string in `get_state()` (RLlib's choice).
STATE_KEY_SEPARATOR = "--"


#: The default of deprecated arguments, RLlib's `DEPRECATED_VALUE` (-1, as there): tells "not
#: passed" from the values a caller passes (a bool, a float, None).
DEPRECATED_VALUE: Any = -1


class _DefaultLookup(dict):
    """A dict that shows as its name (the settings table prints defaults with `repr`)."""

    def __repr__(self) -> str:
        return "DEFAULT_STATS_CLS_LOOKUP"


#: The stats class of each `reduce=` kind (RLlib's lookup; extend it through
#: `AlgorithmConfig.reporting(custom_stats_cls_lookup=...)`).
DEFAULT_STATS_CLS_LOOKUP: dict[str, type[StatsBase]] = _DefaultLookup(
    {
        "mean": MeanStats,
        "ema": EmaStats,
        "min": MinStats,
        "max": MaxStats,
        "sum": SumStats,
        "lifetime_sum": LifetimeSumStats,
        "percentiles": PercentilesStats,
        "item": ItemStats,
        "item_series": ItemSeriesStats,
    }
)

#: Deprecation messages given once per process.
_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.warning("MetricsLogger: %s", message)


def check_stats_cls_lookup(lookup: Any, setting: str = "stats_cls_lookup") -> None:
    """Raises ValueError unless `lookup` maps str kinds to `StatsBase` subclasses."""
    if not isinstance(lookup, dict):
        raise ValueError(
            f"{setting}={lookup!r}: must be a dict of reduce kind (str) -> StatsBase subclass"
        )
    for kind, cls in lookup.items():
        if not isinstance(kind, str) or not (isinstance(cls, type) and issubclass(cls, StatsBase)):
            raise ValueError(
                f"{setting}: entry {kind!r}: {cls!r} must map a str to a subclass "
                "of trainer.metrics.stats.StatsBase (RLlib's "
                "ray.rllib.utils.metrics.stats.StatsBase)"
            )


class MetricsLogger:
    """Collects values under (nested) keys and reduces them by their stats classes.

        logger = MetricsLogger(root=True)
        logger.log_value("loss", 0.01, reduce="mean", window=10)   # mean of the last 10
        logger.log_value(("timers", "sample"), 0.5)                # EMA, coefficient 0.01
        logger.log_value("steps", 100, reduce="lifetime_sum")      # never starts over
        logger.log_value("actions", 1, reduce="item_series")       # kept, not reduced
        with logger.log_time("update_time"):                       # seconds, EMA
            ...
        logger.peek("loss"); logger.peek("timers")                 # nothing changes
        results = logger.compile()                                  # plain values

    `reduce(compile=False)` (the default) gives a tree of stats for a receiver's `aggregate()`
    and starts a new reduce cycle; `reduce(compile=True)` gives plain values.
    """

    def __init__(
        self,
        root: bool = False,
        stats_cls_lookup: dict[str, type[StatsBase]] | None = DEFAULT_STATS_CLS_LOOKUP,
    ):
        """`root`: this is the root logger (lifetime sums keep their total here).
        `stats_cls_lookup`: the stats class of each `reduce=` kind (None: the default)."""
        if stats_cls_lookup is None:
            stats_cls_lookup = DEFAULT_STATS_CLS_LOOKUP
        check_stats_cls_lookup(stats_cls_lookup)
        #: The nested dict of stats (keys as logged; a tuple key nests).
        self.stats: dict = {}
        self._is_root_logger = root
        self._time_when_initialized = time.perf_counter()
        self.stats_cls_lookup = stats_cls_lookup
        self._warned_settings: set[tuple] = set()

    def __contains__(self, key: Key) -> bool:
        return self._node(_path(key)) is not None

    # -- reading -------------------------------------------------------------------------------
    def peek(
        self,
        key: Key | None = None,
        default: Any = None,
        compile: bool = True,
        throughput: bool = False,
        latest_merged_only: bool = False,
    ) -> Any:
        """The current value(s) under `key` (a nested dict for a key prefix; everything for
        None), nothing changed. A missing key gives `default`, or `KeyError` when `default`
        is None (RLlib's rule). `throughput=True` (root logger only) gives the throughput(s);
        `latest_merged_only=True` looks at the newest `aggregate()` only."""
        if throughput:
            if not self._is_root_logger:
                raise ValueError(
                    "MetricsLogger.peek(throughput=True): throughputs can only be "
                    "peeked from a root logger"
                )
            return self._get_throughputs(key, default)
        if key is None:
            return self._nested_peek(self.stats, (), compile, latest_merged_only)
        path = _path(key)
        node = self._node(path)
        if node is None and default is None:
            raise KeyError(f"MetricsLogger.peek(): nothing logged under {key!r}")
        if isinstance(node, StatsBase):
            return node.peek(compile=compile, latest_merged_only=latest_merged_only)
        if isinstance(node, dict) and node:
            return self._nested_peek(node, path, compile, latest_merged_only)
        return default

    @staticmethod
    def _nested_peek(tree: dict, prefix: tuple, compile: bool, latest_merged_only: bool) -> dict:
        def peek_one(path: tuple, stats: StatsBase) -> Any:
            try:
                return stats.peek(compile=compile, latest_merged_only=latest_merged_only)
            except Exception as error:  # name the key whose stats failed
                raise ValueError(
                    f"Error peeking stats {stats!r} with compile={compile} at path {path}: {error}"
                ) from error

        return _map_stats_with_path(peek_one, tree, prefix)

    @staticmethod
    def peek_results(results: Any, compile: bool = True) -> Any:
        """`peek()` of every stats leaf in a `reduce()` result (plain values as they are)."""
        if isinstance(results, StatsBase):
            return results.peek(compile=compile)
        if isinstance(results, dict):
            return {k: MetricsLogger.peek_results(v, compile) for k, v in results.items()}
        if isinstance(results, (list, tuple)):
            return type(results)(MetricsLogger.peek_results(v, compile) for v in results)
        return results

    # -- logging -------------------------------------------------------------------------------
    def log_value(
        self,
        key: Key,
        value: Any,
        *,
        reduce: str | None = None,
        window: int | float | None = None,
        ema_coeff: float | None = None,
        percentiles: list[int] | bool | None = None,
        clear_on_reduce: bool | None = DEPRECATED_VALUE,
        with_throughput: bool | None = None,
        throughput_ema_coeff: float | None = DEPRECATED_VALUE,
        reduce_per_index_on_aggregate: bool | None = DEPRECATED_VALUE,
        **kwargs: Any,
    ) -> None:
        """Logs `value` under `key`. The first call for a key creates its stats from these
        settings (`reduce` picks the class: a key of `stats_cls_lookup`; None means "mean"
        with a `window`, else "ema"); later calls only push values. `kwargs` go to a custom
        stats class's constructor."""
        explicit = reduce is not None
        reduce, clear_on_reduce = _legacy_reduce(reduce, window, clear_on_reduce)
        stats = self.stats.get(key) if isinstance(key, str) else None
        if not isinstance(stats, StatsBase):
            path = _path(key)
            stats = self._find(path)
            if stats is None:
                stats = self._new_stats(
                    path,
                    reduce=reduce,
                    window=window,
                    ema_coeff=ema_coeff,
                    percentiles=percentiles,
                    with_throughput=with_throughput,
                    throughput_ema_coeff=throughput_ema_coeff,
                    reduce_per_index_on_aggregate=reduce_per_index_on_aggregate,
                    **kwargs,
                )
                explicit = False
        if explicit and reduce != stats.stats_cls_identifier:
            self._warn_on_other_kind(key, stats, reduce)
        stats.push(value)

    def log_values(self, key: Key, values: list, **settings: Any) -> None:
        """`log_value(key, value, **settings)` for each of `values` in order, with one lookup
        for them all (the EnvRunner logs its episodes' metrics so)."""
        if not len(values):
            return
        self.log_value(key, values[0], **settings)
        stats = self._find(_path(key))
        if len(values) > 1 and stats is not None:  # log_value just made it
            stats.push_many(list(values[1:]))

    def _warn_on_other_kind(self, key: Key, stats: StatsBase, reduce: str) -> None:
        # RLlib ignores a later call's settings silently; one warning per key says so.
        path = _path(key)
        if path not in self._warned_settings:
            self._warned_settings.add(path)
            logger.warning(
                "MetricsLogger: %r was first logged with reduce=%r; ignoring reduce=%r",
                _show(path),
                stats.stats_cls_identifier,
                reduce,
            )

    def _new_stats(
        self,
        path: tuple,
        *,
        reduce: str = "ema",
        window: Any = None,
        ema_coeff: float | None = None,
        percentiles: Any = None,
        with_throughput: bool | None = None,
        throughput_ema_coeff: Any = DEPRECATED_VALUE,
        reduce_per_index_on_aggregate: Any = DEPRECATED_VALUE,
        **kwargs: Any,
    ) -> StatsBase:
        """Creates and stores the (leaf) stats of a first `log_value` / `log_time`, with
        RLlib's checks of the settings."""
        where = f"log_value({_show(path)!r}"
        if reduce == "ema" and ema_coeff is None:
            ema_coeff = 0.01
        if percentiles and reduce != "percentiles":
            raise ValueError(
                f"{where}, percentiles={percentiles!r}, reduce={reduce!r}): "
                "percentiles is only supported for reduce='percentiles'"
            )
        if reduce == "ema" and window is not None:
            raise ValueError(
                f"{where}, window={window!r}, reduce='ema'): window is not "
                "supported for ema reduction; for a window use reduce='mean'"
            )
        if reduce == "mean" and ema_coeff is not None:
            raise ValueError(
                f"{where}, ema_coeff={ema_coeff!r}, reduce='mean'): ema_coeff is "
                "not supported for mean reduction; use reduce='ema'"
            )
        if throughput_ema_coeff != DEPRECATED_VALUE:
            raise ValueError(
                f"{where}, throughput_ema_coeff={throughput_ema_coeff!r}): "
                "throughput_ema_coeff is deprecated (as in RLlib 2.60): "
                "throughputs are measured once per reduce(), not smoothed"
            )
        if reduce_per_index_on_aggregate != DEPRECATED_VALUE:
            _warn_once(
                "reduce_per_index_on_aggregate is deprecated: aggregation treats every "
                "incoming value with equal weight"
            )
        if with_throughput and reduce not in ("sum", "lifetime_sum"):
            _warn_once(
                f"with_throughput=True is only supported for reduce='sum' or "
                f"'lifetime_sum' (got reduce={reduce!r} for {_show(path)!r})"
            )
        try:
            stats_cls = self.stats_cls_lookup[reduce]
        except (KeyError, TypeError):
            raise ValueError(
                f"{where}, reduce={reduce!r}): Invalid reduce method {reduce!r} "
                f"could not be found in stats_cls_lookup (allowed: "
                f"{sorted(self.stats_cls_lookup)})"
            ) from None
        if window is not None:
            _check_window(window, where)
            kwargs["window"] = window
        if ema_coeff is not None:
            kwargs["ema_coeff"] = ema_coeff
        if percentiles is not None:
            kwargs["percentiles"] = percentiles
        if with_throughput is not None:
            kwargs["with_throughput"] = with_throughput
        try:
            stats = stats_cls(is_root=self._is_root_logger, is_leaf=True, **kwargs)
        except TypeError as error:  # a setting this class does not take
            raise ValueError(
                f"{where}, reduce={reduce!r}): {stats_cls.__name__} does not take "
                f"these settings ({error})"
            ) from None
        self._set(path, stats)
        return stats

    def log_dict(
        self,
        value_dict: dict,
        *,
        key: Key | None = None,
        reduce: str | None = "mean",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        percentiles: list[int] | bool | None = None,
        clear_on_reduce: bool | None = DEPRECATED_VALUE,
        with_throughput: bool | None = None,
        throughput_ema_coeff: float | None = DEPRECATED_VALUE,
        reduce_per_index_on_aggregate: bool | None = DEPRECATED_VALUE,
    ) -> None:
        """Logs every leaf of a (nested) dict, under `key` if given, with these settings."""
        if not isinstance(value_dict, dict):
            raise TypeError(f"log_dict(value_dict={value_dict!r}): must be a dict")
        prefix = () if key is None else _path(key)
        for path, value in _leaves(value_dict):
            if isinstance(value, StatsBase):
                raise TypeError(
                    f"log_dict(): {path} holds a Stats object (another logger's "
                    "reduce() result); merge those with aggregate([...])"
                )
            self.log_value(
                prefix + path,
                value,
                reduce=reduce,
                window=window,
                ema_coeff=ema_coeff,
                percentiles=percentiles,
                clear_on_reduce=clear_on_reduce,
                with_throughput=with_throughput,
                throughput_ema_coeff=throughput_ema_coeff,
                reduce_per_index_on_aggregate=reduce_per_index_on_aggregate,
            )

    def log_time(
        self,
        key: Key,
        *,
        reduce: str = "ema",
        window: int | float | None = None,
        ema_coeff: float | None = None,
        percentiles: list[int] | bool | None = None,
        clear_on_reduce: bool | None = DEPRECATED_VALUE,
        with_throughput: bool | None = None,
        throughput_ema_coeff: float | None = DEPRECATED_VALUE,
        reduce_per_index_on_aggregate: bool | None = DEPRECATED_VALUE,
    ) -> StatsBase:
        """`with logger.log_time(key): ...` logs the seconds the block took (the returned
        stats object is the context manager)."""
        if clear_on_reduce != DEPRECATED_VALUE:
            _warn_once(
                "clear_on_reduce is deprecated (as in RLlib 2.60); use "
                "reduce='lifetime_sum' for sums that never start over"
            )
        path = _path(key)
        stats = self._find(path)
        if stats is None:
            stats = self._new_stats(
                path,
                reduce=reduce,
                window=window,
                ema_coeff=ema_coeff,
                percentiles=percentiles,
                with_throughput=with_throughput,
                throughput_ema_coeff=throughput_ema_coeff,
                reduce_per_index_on_aggregate=reduce_per_index_on_aggregate,
            )
        return stats

    def set_value(self, *args: Any, **kwargs: Any) -> None:
        """Removed in RLlib 2.60 (an error there too)."""
        raise ValueError(
            "MetricsLogger.set_value() has been deprecated (as in RLlib 2.60): use "
            "log_value with reduce='item', or another reduction with a window of "
            "the appropriate size"
        )

    # -- merging -------------------------------------------------------------------------------
    def aggregate(self, stats_dicts: list[dict[str, Any]], *, key: Key | None = None) -> None:
        """Merges the `reduce()` results of n parallel loggers (EnvRunners, Learners) into this
        one, under `key` if given. Each key's stats here merge what came in (see each stats
        class's `merge()`); a key logged directly here cannot also be aggregated into."""
        if not isinstance(stats_dicts, list):
            raise TypeError(
                f"aggregate(stats_dicts={type(stats_dicts).__name__}): must be a "
                "list of reduce() results"
            )
        prefix = () if key is None else _path(key)
        incoming: dict[tuple, list[StatsBase]] = {}
        for stats_dict in stats_dicts:
            if not isinstance(stats_dict, dict):
                raise TypeError(
                    f"aggregate(): each item must be a reduce() result (a dict), "
                    f"got {type(stats_dict).__name__}"
                )
            for path, leaf in _leaves(stats_dict):
                if not isinstance(leaf, StatsBase):
                    raise TypeError(
                        f"aggregate(): {prefix + path} holds {leaf!r}, not a Stats object; "
                        "aggregate the reduce(compile=False) results of non-root loggers"
                    )
                incoming.setdefault(prefix + path, []).append(leaf)
        for path, stats_list in incoming.items():
            own = self._node(path)
            if isinstance(own, dict) and own:
                raise ValueError(
                    f"aggregate(): {_show(path)!r} already holds nested keys here, "
                    "so it cannot also hold a value"
                )
            if not isinstance(own, StatsBase):
                # The first aggregation under this key: an empty aggregating copy.
                own = stats_list[0].clone(
                    init_overrides={"is_root": self._is_root_logger, "is_leaf": False}
                )
                if own.has_throughputs:
                    own.initialize_throughput_reference_time(self._time_when_initialized)
                self._set(path, own)
            elif own.is_leaf:
                raise ValueError(
                    f"Cannot aggregate into key {_show(path)!r} because it was "
                    "created by direct logging. Aggregation keys must be separate "
                    "from direct logging keys."
                )
            own.merge(incoming_stats=stats_list)

    def merge_and_log_n_dicts(self, stats_dicts: list[dict], *, key: Key | None = None) -> None:
        """RLlib's older name of `aggregate()`."""
        _warn_once("merge_and_log_n_dicts() is deprecated (as in RLlib); use aggregate()")
        self.aggregate(stats_dicts, key=key)

    # -- reducing ------------------------------------------------------------------------------
    def reduce(self, compile: bool = False) -> dict:
        """Reduces every stat and starts a new reduce cycle: a tree of stats objects for a
        receiver's `aggregate()`, or plain values with `compile=True`. (RLlib calls this
        itself; user code reads with `peek()`.)"""

        def reduce_one(path: tuple, stats: StatsBase) -> Any:
            try:
                return stats.reduce(compile=compile)
            except Exception as error:  # name the key whose values do not reduce
                raise ValueError(
                    f"Error reducing stats {type(stats).__name__} with "
                    f"compile={compile} at path {path}: {error}"
                ) from error

        return _map_stats_with_path(reduce_one, self.stats)

    def compile(self) -> dict:
        """`reduce(compile=True)` with every throughput added under `<key>_throughput`, and
        one-item lists as their item: the Algorithm's result dict."""
        throughputs = self._get_throughputs()
        values = self.reduce(compile=True)
        _deep_update(values, throughputs or {})
        return _unwrap_single_item_lists(values)

    def activate_tensor_mode(self) -> None:
        """Deprecated in RLlib 2.60 (tensor mode is not needed any more): does nothing."""
        _warn_once("activate_tensor_mode() is deprecated: tensor mode is not required anymore")

    def deactivate_tensor_mode(self) -> None:
        """Deprecated in RLlib 2.60: does nothing."""
        _warn_once("deactivate_tensor_mode() is deprecated: tensor mode is not required anymore")

    # -- removing ------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forgets everything logged."""
        self.stats = {}

    def delete(self, *key: str, key_error: bool = True) -> None:
        """Removes `key` (given as its parts: `delete("timers", "sample")`)."""
        path = _path(key[0] if len(key) == 1 else tuple(key))
        parent = self._node(path[:-1]) if len(path) > 1 else self.stats
        if not isinstance(parent, dict) or path[-1] not in parent:
            if key_error:
                raise KeyError(f"MetricsLogger.delete(): nothing logged under {path}")
            return
        del parent[path[-1]]

    # -- state ---------------------------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """Every stat's state, keyed by its path joined with "--" (plain data)."""
        return {
            "stats": {
                STATE_KEY_SEPARATOR.join(path): stats.get_state()
                for path, stats in _iter_stats(self.stats)
            }
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Replaces everything here with `state` (this logger's `get_state()`, or a state of
        RLlib's earlier stats, converted as RLlib 2.60 converts them)."""
        self.stats = _restored_stats(state, self.stats_cls_lookup, self._is_root_logger)

    @staticmethod
    def check_state(
        state: Any,
        where: str = "metrics",
        stats_cls_lookup: dict[str, type[StatsBase]] | None = None,
    ) -> None:
        """Raises `StateError` unless `state` is a logger state whose every stat can be rebuilt
        (by `stats_cls_lookup`, default: RLlib's) and holds plain data (nothing changes)."""
        _restored_stats(state, stats_cls_lookup or DEFAULT_STATS_CLS_LOOKUP, True, where)

    # -- internals -----------------------------------------------------------------------------
    def _node(self, path: tuple) -> Any:
        node: Any = self.stats
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def _find(self, path: tuple) -> StatsBase | None:
        node = self._node(path)
        if isinstance(node, dict) and node:
            raise ValueError(
                f"metrics key {path}: it already holds nested keys, so it cannot also hold a value"
            )
        return node if isinstance(node, StatsBase) else None

    def _set(self, path: tuple, stats: StatsBase) -> None:
        _insert(self.stats, path, stats)

    def _get_throughputs(self, key: Key | None = None, default: Any = None) -> Any:
        node = self.stats if key is None else self._node(_path(key))
        if isinstance(node, StatsBase):
            if not node.has_throughputs:
                raise ValueError(
                    f"Key {key!r} does not have throughput tracking enabled (log "
                    "it with with_throughput=True)"
                )
            return node.throughputs
        if not node:
            return default
        throughputs: dict = {}
        for path, stats in _iter_stats(node):
            if stats.has_throughputs:
                _insert(throughputs, path[:-1] + (path[-1] + "_throughput",), stats.throughputs)
        return throughputs or default


# -- helpers -----------------------------------------------------------------------------------
def _legacy_reduce(reduce: str | None, window: Any, clear_on_reduce: Any) -> tuple[str, Any]:
    """RLlib 2.60's reading of the earlier settings: no `reduce` is "mean" with a window, else
    "ema"; `reduce="sum", clear_on_reduce=False` is a lifetime sum."""
    if reduce is None:
        reduce = "mean" if window is not None else "ema"
    if clear_on_reduce != DEPRECATED_VALUE:
        _warn_once(
            "clear_on_reduce is deprecated (as in RLlib 2.60); use "
            "reduce='lifetime_sum' for sums that never start over"
        )
        if reduce == "sum" and clear_on_reduce is False:
            reduce = "lifetime_sum"
    return reduce, clear_on_reduce


def _check_window(window: Any, where: str) -> None:
    if window == float("inf"):
        return
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(
            f"{where}, window={window!r}): window must be an int >= 1, float('inf') or None"
        )


def _show(path: tuple) -> Any:
    return path[0] if len(path) == 1 else path


def _path(key: Key) -> tuple:
    if isinstance(key, str):
        return (key,)
    if isinstance(key, (tuple, list)) and key and all(isinstance(k, str) for k in key):
        return tuple(key)
    raise TypeError(f"metrics key {key!r}: must be a str, or a non-empty tuple or list of str")


def _insert(tree: dict, path: tuple, value: Any) -> None:
    node = tree
    for part in path[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise ValueError(
                f"metrics key {path}: {part!r} already holds a value, so it cannot "
                "also hold nested keys"
            )
        node = child
    if isinstance(node.get(path[-1]), dict) and node[path[-1]]:
        raise ValueError(
            f"metrics key {path}: it already holds nested keys, so it cannot also hold a value"
        )
    node[path[-1]] = value


def _leaves(tree: dict, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    for name, value in tree.items():
        if isinstance(value, dict):
            yield from _leaves(value, prefix + (name,))
        else:
            yield prefix + (name,), value


def _iter_stats(tree: dict, prefix: tuple = ()) -> Iterator[tuple[tuple, StatsBase]]:
    for path, leaf in _leaves(tree, prefix):
        if isinstance(leaf, StatsBase):
            yield path, leaf


def _map_stats_with_path(
    fn: Callable[[tuple, StatsBase], Any], tree: dict, prefix: tuple = ()
) -> dict:
    return {
        k: _map_stats_with_path(fn, v, prefix + (k,))
        if isinstance(v, dict)
        else fn(prefix + (k,), v)
        if isinstance(v, StatsBase)
        else v
        for k, v in tree.items()
    }


def _deep_update(target: dict, updates: dict) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value


def _unwrap_single_item_lists(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _unwrap_single_item_lists(v) for k, v in tree.items()}
    if isinstance(tree, list) and len(tree) == 1:
        return tree[0]
    return tree


def stats_from_legacy_state(state: dict[str, Any], is_root: bool = False) -> StatsBase:
    """The stats object an earlier `Stats` state (RLlib's `legacy_stats`, or this project's
    states before RLlib 2.60's format) becomes, as RLlib 2.60 converts them: a sum that was
    never cleared is a lifetime sum (its total kept on the root only), a mean with an EMA
    coefficient an EMA, and values are kept under their window. `reduce=None` without
    percentiles (which RLlib cannot convert) becomes an item series."""
    if "ema" in state and "total" in state:
        state = _from_earlier_format(state)
    kind = state["reduce"]
    new_state: dict[str, Any] = {"is_leaf": not is_root, "is_root": is_root, "latest_merged": []}
    values = list(state.get("values", []))
    if state.get("clear_on_reduce", True) is False and kind == "sum":
        total = float(np.nansum(values)) if values else 0
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            total = sum(values)  # counts stay integers
        new_state.update(
            stats_cls_identifier="lifetime_sum",
            lifetime_sum=total if is_root else 0,
            track_throughputs=state.get("throughput_stats") is not None,
        )
        return LifetimeSumStats.from_state(new_state)
    if kind == "mean" and state.get("ema_coeff") is not None:
        kind = "ema"
        new_state.update(
            ema_coeff=state["ema_coeff"], value=float(np.nanmean(values)) if values else np.nan
        )
    elif kind in ("mean", "min", "max", "sum"):
        new_state.update(values=values, window=_finite_window(state.get("window")))
        if kind == "sum":
            new_state["track_throughput"] = state.get("throughput_stats") is not None
    elif kind is None and state.get("percentiles", False) is not False:
        kind = "percentiles"
        percentiles = state["percentiles"]
        new_state.update(
            values=values,
            window=_finite_window(state.get("window")),
            percentiles=None if percentiles is True else percentiles,
        )
    elif kind is None:
        kind = "item_series"
        new_state.update(items=values, window=_finite_window(state.get("window")))
    else:
        raise ValueError(
            f"reduce={kind!r}: not a reduce method of the earlier Stats (mean, "
            "min, max, sum or None)"
        )
    new_state["stats_cls_identifier"] = kind
    cls = DEFAULT_STATS_CLS_LOOKUP[kind]
    if kind == "percentiles" and new_state["percentiles"] is None:
        new_state["percentiles"] = cls().get_state()["percentiles"]
    return cls.from_state(new_state)


def _finite_window(window: Any) -> Any:
    return None if window == float("inf") else window


#: What each stats class's state must hold (beyond `stats_cls_identifier`, `is_root`,
#: `is_leaf`), and which of it must be numbers.
_STATE_KEYS = {
    "mean": (("values", "window"), ("values",)),
    "min": (("values", "window"), ("values",)),
    "max": (("values", "window"), ("values",)),
    "sum": (("values", "window", "track_throughput"), ("values",)),
    "lifetime_sum": (("lifetime_sum", "track_throughputs"), ("lifetime_sum", "latest_merged")),
    "ema": (("ema_coeff", "value"), ("ema_coeff", "value", "values_to_merge", "latest_merged")),
    "percentiles": (("values", "window", "percentiles"), ("values", "percentiles")),
    "item": (("item",), ()),
    "item_series": (("items", "window"), ()),
}


def _restored_stats(state: Any, lookup: dict, is_root: bool, where: str = "metrics") -> dict:
    """The nested stats a logger state describes; raises `StateError` for anything else."""
    require_map(state, where, ("stats",))
    stats_states = state["stats"]
    if isinstance(stats_states, list):  # this project's format before RLlib 2.60's
        try:
            stats_states = {STATE_KEY_SEPARATOR.join(path): s for path, s in stats_states}
        except (TypeError, ValueError):
            raise StateError(f"{where}['stats']", "not a list of (path, stats) pairs") from None
    require_map(stats_states, f"{where}['stats']")
    restored: dict = {}
    for flat_key, stats_state in stats_states.items():
        place = f"{where}['stats'][{flat_key!r}]"
        if not isinstance(flat_key, str) or not flat_key:
            raise StateError(place, "a metrics key must be a non-empty str")
        stats = _restored_one(stats_state, lookup, is_root, place)
        try:
            _insert(restored, tuple(flat_key.split(STATE_KEY_SEPARATOR)), stats)
        except ValueError as error:
            raise StateError(place, str(error)) from None
    return restored


def _restored_one(stats_state: Any, lookup: dict, is_root: bool, place: str) -> StatsBase:
    require_map(stats_state, place)
    identifier = stats_state.get("stats_cls_identifier")
    if identifier is None:
        if "reduce" not in stats_state:
            raise StateError(
                place,
                "has no 'stats_cls_identifier' (nor the 'reduce' of the earlier stats format)",
            )
        # RLlib's earlier (legacy) stats format, converted as RLlib 2.60 does.
        require_map(stats_state, place, ("values", "reduce", "window"))
        for key in ("values", "_last_reduced", "prev_merge_values"):
            if key in stats_state:
                require_numeric_data(stats_state[key], f"{place}[{key!r}]")
        build = lambda: stats_from_legacy_state(stats_state, is_root=is_root)  # noqa: E731
    else:
        if identifier not in lookup:
            raise StateError(
                place,
                f"stats class {identifier!r} is not in stats_cls_lookup "
                f"({sorted(lookup)}): was this checkpoint written with another "
                "custom_stats_cls_lookup?",
            )
        required, numeric = _STATE_KEYS.get(identifier, ((), ()))
        require_map(stats_state, place, ("is_root", "is_leaf", *required))
        for key in numeric:
            if key in stats_state:
                require_numeric_data(stats_state[key], f"{place}[{key!r}]")
        build = lambda: lookup[identifier].from_state(stats_state)  # noqa: E731
    try:
        return build()
    except StateError:
        raise
    except Exception as error:  # the classes' own checks raise ValueError, TypeError, ...
        raise StateError(place, f"{type(error).__name__}: {error}") from None
