"""`MetricsLogger`: named `Stats` in a nested dict, RLlib 2.60's class
(`ray.rllib.utils.metrics.metrics_logger`).

Data flow in training: every EnvRunner logs into its own logger; each `sample()` reply carries
`reduce()` of it (a non-root logger reduces to a tree of `Stats` holding what the receiver must
merge: windows, running sums, EMAs). The Algorithm's logger (`root=True`) `aggregate()`s the
replies of one sampling round under `"env_runners"` (see `trainer.metrics.stats` for how
parallel stats merge), logs its own timers and learner results, and at the end of `train()`
`reduce()`s everything into the result dict of plain values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from trainer.metrics.stats import (
    DEFAULT_THROUGHPUT_EMA_COEFF,
    Stats,
    merge_stats,
    new_id,
)
from trainer.util.state_checks import StateError, require_map, require_numeric_data

logger = logging.getLogger("trainer")

Key = str | tuple[str, ...] | list[str]
#: Joins a nested key into one string in `get_state()` (RLlib's choice).
STATE_KEY_SEPARATOR = "--"


class MetricsLogger:
    """Collects values under (nested) keys and reduces them per their settings.

        logger = MetricsLogger(root=True)
        logger.log_value("loss", 0.01, window=10)               # mean of the last 10
        logger.log_value(("timers", "sample"), 0.5, ema_coeff=0.1)
        logger.log_value("steps", 100, reduce="sum")            # lifetime sum
        with logger.log_time("update_time"):                    # seconds, EMA 0.01
            ...
        logger.peek("loss"); logger.peek("timers")              # values, nothing cleared
        results = logger.reduce()                               # {"loss": ..., "timers": ...}

    A root logger's `reduce()` gives plain values; any other logger's gives `Stats` objects for
    a receiver's `aggregate()`.
    """

    def __init__(self, root: bool = False):
        #: The nested dict of `Stats` (keys as logged; a tuple key nests).
        self.stats: dict = {}
        self._is_root_logger = root
        self._tensor_mode = False
        self._warned: set = set()

    # -- logging -----------------------------------------------------------------------------
    def log_value(self, key: Key, value: Any, *, reduce: str | None = "mean",
                  window: float | None = None, ema_coeff: float | None = None,
                  percentiles: list | bool = False, clear_on_reduce: bool = False,
                  with_throughput: bool = False, throughput_ema_coeff: float | None = None,
                  reduce_per_index_on_aggregate: bool = False) -> None:
        """Logs `value` under `key`. The first call for a key fixes its settings (see
        `trainer.metrics.stats`); later calls add values (differing settings are ignored,
        with one warning per key)."""
        # A top-level key that exists: the common case, looked up once.
        stats = self.stats.get(key) if isinstance(key, str) else None
        if not isinstance(stats, Stats):
            path = _path(key)
            stats = self._find(path)
            if stats is None:
                self._set(path, _new_stats(value, reduce, window, ema_coeff, percentiles,
                                           clear_on_reduce, with_throughput,
                                           throughput_ema_coeff,
                                           reduce_per_index_on_aggregate))
                return
        if _settings_differ(stats, reduce, window, clear_on_reduce, with_throughput):
            self._warn_on_new_settings(_path(key), stats, reduce, window, clear_on_reduce,
                                       with_throughput)
        stats.push(value)

    def log_values(self, key: Key, values: list, **settings: Any) -> None:
        """`log_value(key, value, **settings)` for each of `values` in order, with one lookup
        and one settings check for them all (the EnvRunner logs its episodes' metrics so)."""
        if not values:
            return
        self.log_value(key, values[0], **settings)
        if len(values) > 1:
            self._find(_path(key)).push_many(values[1:])

    def _warn_on_new_settings(self, path: tuple, stats: Stats, reduce, window, clear_on_reduce,
                              with_throughput) -> None:
        if path in self._warned:
            return
        # Defaults are what a repeated call usually passes: only explicit changes warn.
        changed = [f"{name}={given!r} (kept: {kept!r})" for name, given, default, kept in (
            ("reduce", reduce, "mean", stats.reduce_method),
            ("window", window, None, stats.window),
            ("clear_on_reduce", clear_on_reduce, False, stats.clear_on_reduce),
            ("with_throughput", with_throughput, False, stats.has_throughput),
        ) if given != default and given != kept]
        if changed:
            self._warned.add(path)
            logger.warning("MetricsLogger: %r was first logged with other settings; ignoring %s",
                           path if len(path) > 1 else path[0], ", ".join(changed))

    def log_dict(self, value_dict: dict, *, key: Key | None = None,
                 reduce: str | None = "mean", window: float | None = None,
                 ema_coeff: float | None = None, percentiles: list | bool = False,
                 clear_on_reduce: bool = False, with_throughput: bool = False,
                 throughput_ema_coeff: float | None = None,
                 reduce_per_index_on_aggregate: bool = False) -> None:
        """Logs every leaf of a (nested) dict, under `key` if given, with these settings."""
        if not isinstance(value_dict, dict):
            raise TypeError(f"log_dict(value_dict={value_dict!r}): must be a dict")
        prefix = () if key is None else _path(key)
        for path, value in _leaves(value_dict):
            if isinstance(value, Stats):
                raise TypeError(f"log_dict(): {path} holds a Stats object (another logger's "
                                "reduce() result); merge those with aggregate([...])")
            self.log_value(prefix + path, value, reduce=reduce, window=window,
                           ema_coeff=ema_coeff, percentiles=percentiles,
                           clear_on_reduce=clear_on_reduce, with_throughput=with_throughput,
                           throughput_ema_coeff=throughput_ema_coeff,
                           reduce_per_index_on_aggregate=reduce_per_index_on_aggregate)

    def log_time(self, key: Key, *, reduce: str | None = "mean", window: float | None = None,
                 ema_coeff: float | None = None, percentiles: list | bool = False,
                 clear_on_reduce: bool = False, with_throughput: bool = False,
                 throughput_ema_coeff: float = DEFAULT_THROUGHPUT_EMA_COEFF,
                 reduce_per_index_on_aggregate: bool = False) -> Stats:
        """`with logger.log_time(key): ...` logs the seconds the block took (the returned
        `Stats` is the context manager)."""
        path = _path(key)
        stats = self._find(path)
        if stats is None:
            stats = _new_stats(None, reduce, window, ema_coeff, percentiles, clear_on_reduce,
                               with_throughput, throughput_ema_coeff,
                               reduce_per_index_on_aggregate)
            self._set(path, stats)
        return stats

    def set_value(self, key: Key, value: Any, **settings: Any) -> None:
        """Replaces the values under `key` with `[value]` (settings apply only to a new key)."""
        stats = self._find(_path(key))
        if stats is None:
            self.log_value(key, value, **settings)
        else:
            stats._set_values([value])

    # -- merging -----------------------------------------------------------------------------
    def aggregate(self, stats_dicts: list[dict], *, key: Key | None = None) -> None:
        """Merges the `reduce()` results of n parallel loggers (EnvRunners, Learners) into this
        one, under `key` if given: in parallel with each other, on the time axis with what is
        here (see `trainer.metrics.stats`)."""
        if not isinstance(stats_dicts, list):
            raise TypeError(f"aggregate(stats_dicts={type(stats_dicts).__name__}): must be a "
                            "list of reduce() results")
        prefix = () if key is None else _path(key)
        incoming: dict[tuple, list[Stats]] = {}
        for stats_dict in stats_dicts:
            for path, leaf in _leaves(stats_dict):
                own = self._find(prefix + path)
                incoming.setdefault(prefix + path, []).append(_as_stats(leaf, own))
        for path, stats_list in incoming.items():
            self._set(path, merge_stats(self._find(path), stats_list))

    def merge_and_log_n_dicts(self, stats_dicts: list[dict], *, key: Key | None = None) -> None:
        """RLlib's older name of `aggregate()`."""
        if "merge_and_log_n_dicts" not in self._warned:
            self._warned.add("merge_and_log_n_dicts")
            logger.warning("MetricsLogger.merge_and_log_n_dicts() is deprecated (as in RLlib); "
                           "use aggregate()")
        self.aggregate(stats_dicts, key=key)

    # -- reading -----------------------------------------------------------------------------
    def peek(self, key: Key | None = None, default: Any = None, compile: bool = True,
             throughput: bool = False) -> Any:
        """The current value(s) under `key` (a nested dict for a key prefix; everything for
        None), nothing cleared. A missing key gives `default`, or `KeyError` when `default` is
        None (RLlib's rule). `throughput=True` gives the throughput(s) instead."""
        if throughput:
            return self._throughputs(key, default)
        node = self.stats if key is None else self._node(_path(key))
        if isinstance(node, Stats):
            return node.peek(compile=compile)
        if node is None or (key is not None and not node):
            if default is None:
                raise KeyError(f"MetricsLogger.peek(): nothing logged under {key!r}")
            return default
        return _map_stats(lambda s: s.peek(compile=compile), node)

    @staticmethod
    def peek_results(results: Any, compile: bool = True) -> Any:
        """`peek()` of every `Stats` leaf in a `reduce()` result."""
        if isinstance(results, Stats):
            return results.peek(compile=compile)
        if isinstance(results, dict):
            return {k: MetricsLogger.peek_results(v, compile) for k, v in results.items()}
        return results

    def reduce(self) -> dict:
        """Reduces every stat (clearing the `clear_on_reduce` ones): plain values from a root
        logger, `Stats` for a receiver's `aggregate()` from any other."""
        def reduce_one(path: tuple, stats: Stats) -> Any:
            try:
                return stats.reduce(compile=self._is_root_logger)
            except Exception as error:  # name the key whose values do not reduce
                raise ValueError(f"MetricsLogger.reduce(): the values under {path} do not "
                                 f"reduce ({error}); values: {list(stats.values)}") from error
        return _map_stats_with_path(reduce_one, self.stats)

    def compile(self) -> dict:
        """`reduce()` with every throughput added under `<key>_throughput`, one-item lists as
        their item."""
        values = self.reduce()
        _deep_update(values, self._throughputs(None, None) or {})
        return _unwrap_single_item_lists(values)

    @property
    def tensor_mode(self) -> bool:
        return self._tensor_mode

    def activate_tensor_mode(self) -> None:
        """RLlib detaches torch tensors in this mode; values here are numbers, so only the
        flag changes."""
        self._tensor_mode = True

    def deactivate_tensor_mode(self) -> None:
        self._tensor_mode = False

    def __contains__(self, key: Key) -> bool:
        return self._node(_path(key)) is not None

    # -- removing ----------------------------------------------------------------------------
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

    # -- state -------------------------------------------------------------------------------
    def get_state(self) -> dict:
        """Every stat's state, keyed by its path joined with "--" (plain data)."""
        return {"stats": {STATE_KEY_SEPARATOR.join(path): stats.get_state()
                          for path, stats in _iter_stats(self.stats)}}

    def set_state(self, state: dict) -> None:
        """Replaces everything here with `state` (RLlib keeps keys the state lacks; a restore
        here gives exactly the saved logger)."""
        self.stats = _restored_stats(state)

    @staticmethod
    def check_state(state: Any, where: str = "metrics") -> None:
        """Raises `StateError` unless `state` is a logger state whose every stat can be rebuilt
        and holds numbers only (nothing here changes)."""
        _restored_stats(state, where)

    # -- internals ---------------------------------------------------------------------------
    def _node(self, path: tuple) -> Any:
        node: Any = self.stats
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def _find(self, path: tuple) -> Stats | None:
        node = self._node(path)
        return node if isinstance(node, Stats) else None

    def _set(self, path: tuple, stats: Stats) -> None:
        _insert(self.stats, path, stats)

    def _throughputs(self, key: Key | None, default: Any) -> Any:
        node = self.stats if key is None else self._node(_path(key))
        if isinstance(node, Stats):
            if not node.has_throughput:
                raise ValueError(f"MetricsLogger.peek({key!r}, throughput=True): this key was "
                                 "not logged with_throughput=True")
            return node.throughput
        if not node:
            return default
        throughputs: dict = {}
        for path, stats in _iter_stats(node):
            if stats.has_throughput:
                _insert(throughputs, path[:-1] + (path[-1] + "_throughput",), stats.throughput)
        return throughputs or default


# -- helpers -----------------------------------------------------------------------------------
def _new_stats(init_values: Any, reduce, window, ema_coeff, percentiles, clear_on_reduce,
               with_throughput, throughput_ema_coeff, reduce_per_index_on_aggregate) -> Stats:
    """The Stats a first `log_value` / `log_time` makes, with RLlib's logger defaults."""
    if reduce is None and (window is None or window == float("inf")):
        clear_on_reduce = True  # an unreduced, unbounded list is emptied each reduce()
    if with_throughput and throughput_ema_coeff is None:
        throughput_ema_coeff = DEFAULT_THROUGHPUT_EMA_COEFF
    return Stats(init_values, reduce=reduce, percentiles=percentiles, window=window,
                 ema_coeff=ema_coeff, clear_on_reduce=clear_on_reduce,
                 throughput=with_throughput, throughput_ema_coeff=throughput_ema_coeff,
                 reduce_per_index_on_aggregate=reduce_per_index_on_aggregate)


def _settings_differ(stats: Stats, reduce, window, clear_on_reduce, with_throughput) -> bool:
    return (reduce != stats.reduce_method or window != stats.window
            or clear_on_reduce != stats.clear_on_reduce
            or with_throughput != (stats._throughput_stats is not None))


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
            raise ValueError(f"metrics key {path}: {part!r} already holds a value, so it cannot "
                             "also hold nested keys")
        node = child
    if isinstance(node.get(path[-1]), dict) and node[path[-1]]:
        raise ValueError(f"metrics key {path}: it already holds nested keys, so it cannot also "
                         "hold a value")
    node[path[-1]] = value


def _leaves(tree: dict, prefix: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    for name, value in tree.items():
        if isinstance(value, dict):
            yield from _leaves(value, prefix + (name,))
        else:
            yield prefix + (name,), value


def _iter_stats(tree: dict, prefix: tuple = ()) -> Iterator[tuple[tuple, Stats]]:
    for path, leaf in _leaves(tree, prefix):
        if isinstance(leaf, Stats):
            yield path, leaf


def _map_stats(fn: Callable[[Stats], Any], tree: dict) -> dict:
    return {k: _map_stats(fn, v) if isinstance(v, dict) else fn(v) if isinstance(v, Stats)
            else v for k, v in tree.items()}


def _map_stats_with_path(fn: Callable[[tuple, Stats], Any], tree: dict,
                         prefix: tuple = ()) -> dict:
    return {k: _map_stats_with_path(fn, v, prefix + (k,)) if isinstance(v, dict)
            else fn(prefix + (k,), v) if isinstance(v, Stats) else v for k, v in tree.items()}


def _as_stats(leaf: Any, own: Stats | None) -> Stats:
    """An incoming leaf as a `Stats`: another logger's reduced `Stats` as is; plain values (a
    root logger's results) with the receiver's settings, or a window-less mean."""
    if isinstance(leaf, Stats):
        return leaf
    values = leaf if isinstance(leaf, list) else [leaf]
    if own is None:
        return Stats(values, reduce="mean", window=max(len(values), 1))
    stats = Stats.similar_to(own, init_values=values)
    stats.id_ = new_id()  # another source than `own`
    return stats


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


def _restored_stats(state: Any, where: str = "metrics") -> dict:
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
        require_map(stats_state, place, ("values", "reduce", "window", "ema_coeff",
                                         "clear_on_reduce"))
        for key in ("values", "_last_reduced", "prev_merge_values"):
            if key in stats_state:
                require_numeric_data(stats_state[key], f"{place}[{key!r}]")
        try:
            stats = Stats.from_state(stats_state)
        except Exception as error:  # Stats' own checks raise ValueError, TypeError, KeyError
            raise StateError(place, f"{type(error).__name__}: {error}") from None
        try:
            _insert(restored, tuple(flat_key.split(STATE_KEY_SEPARATOR)), stats)
        except ValueError as error:
            raise StateError(place, str(error)) from None
    return restored
