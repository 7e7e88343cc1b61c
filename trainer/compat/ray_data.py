"""Ray Data's readers of local files, for the data RLlib's examples record and read back
(`ray.data.read_parquet("local:///tmp/cartpole").count()`) and for the datasets RLlib's
`OfflineData` reads and maps with an `OfflinePreLearner`: `read_parquet`, `read_json` (over
pyarrow, the `offline` extra) and `read_binary_files` give a `Dataset` of the files' rows, read
lazily, in file order, in this process.

A `Dataset` counts its rows, shows its columns, takes rows and batches, iterates rows and
batches (`iter_batches`, RLlib's `_collate_fn` included), converts to pandas, and maps rows
(`map`) and batches (`map_batches`, a function or a class built once per pass with
`fn_constructor_kwargs`), each pass reading the files again (`materialize()` keeps the rows in
memory). Ray's scheduling settings (`concurrency`, `num_cpus`, `zero_copy_batch`,
`prefetch_batches`, ...) are taken and have no effect: everything runs here, one batch at a
time. Ray Data's other functions and the Dataset's other methods (shuffles, splits, writes)
raise `RLlibNotAvailable` when used, as do paths with a scheme other than `local://`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np

from trainer.capabilities import RAY_DATA
from trainer.errors import RLlibNotAvailable
from trainer.offline.files import LOCAL_SCHEME, dataset_files, files_at, import_extra

__all__ = ["Dataset", "read_binary_files", "read_json", "read_parquet"]

_INSTEAD = (
    "ray.data.read_parquet/read_json/read_binary_files(...) and its Dataset's count, "
    "columns, take, take_all, take_batch, iter_rows, iter_batches, map, map_batches, "
    "materialize, to_pandas, show"
)
#: Ray's `map`/`map_batches`/`iter_batches` settings that place or pace the work on a
#: cluster: taken, without effect here (one process, one batch at a time).
_SCHEDULING = frozenset(
    {
        "compute",
        "concurrency",
        "num_cpus",
        "num_gpus",
        "memory",
        "resources",
        "ray_remote_args_fn",
        "zero_copy_batch",
        "scheduling_strategy",
        "max_concurrency",
        "prefetch_batches",
        "local_shuffle_buffer_size",
        "local_shuffle_seed",
        "drop_last_batch",
    }
)
Row = dict[str, Any]


def column(values: list[Any]) -> np.ndarray:
    """Values of one column as Ray Data's numpy batches hold them: one array of the values'
    common shape; an object array where they are bytes, strings, dicts or of unequal shapes."""
    if any(isinstance(v, (bytes, str, dict)) or v is None for v in values):
        held = np.empty(len(values), dtype=object)
        held[:] = values
        return held
    try:
        return np.asarray(values)
    except ValueError:  # unequal shapes
        held = np.empty(len(values), dtype=object)
        for index, value in enumerate(values):
            held[index] = value
        return held


def batch_of(rows: list[Row]) -> dict[str, np.ndarray]:
    """Rows as a numpy batch: each column one array (`column`)."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    return {name: column([row.get(name) for row in rows]) for name in names}


def rows_of(batch: Any, where: str) -> list[Row]:
    """A batch (dict of equally long columns, or a pandas DataFrame) back into rows."""
    if hasattr(batch, "to_dict") and hasattr(batch, "columns"):  # pandas
        return list(batch.to_dict("records"))
    if not isinstance(batch, dict):
        raise TypeError(f"{where} returned {type(batch).__name__}: give a dict of columns")
    lengths = {name: len(values) for name, values in batch.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{where} returned columns of unequal lengths: {lengths}")
    count = next(iter(lengths.values()), 0)
    return [{name: values[i] for name, values in batch.items()} for i in range(count)]


def _check_scheduling(call: str, kwargs: dict[str, Any]) -> None:
    unknown = sorted(set(kwargs) - _SCHEDULING)
    if unknown:
        raise RLlibNotAvailable(
            f"ray.data.Dataset.{call}({', '.join(f'{key}=...' for key in unknown)})",
            RAY_DATA,
            f"{call} with the function's own settings (fn_kwargs, fn_constructor_kwargs, "
            "batch_size, batch_format)",
        )


def _batches(rows: Iterable[Row], size: int | None) -> Iterator[list[Row]]:
    held: list[Row] = []
    for row in rows:
        held.append(row)
        if size is not None and len(held) >= size:
            yield held
            held = []
    if held:
        yield held


class _MapRows:
    """A `map` step: the function on each row."""

    def __init__(self, fn: Callable, fn_args: tuple, fn_kwargs: dict, constructor_kwargs: dict):
        self.fn, self.args, self.kwargs = fn, fn_args, fn_kwargs
        self.constructor_kwargs = constructor_kwargs

    def _callable(self) -> Callable:
        factory: Any = self.fn
        if inspect.isclass(factory):  # a callable class: one instance per pass
            return cast(Callable, factory(**self.constructor_kwargs))
        return cast(Callable, factory)

    def __call__(self, rows: Iterable[Row]) -> Iterator[Row]:
        fn = self._callable()
        for row in rows:
            made = fn(row, *self.args, **self.kwargs)
            if not isinstance(made, dict):
                raise TypeError(
                    f"ray.data.Dataset.map({self.fn!r}) returned {type(made).__name__} for a "
                    "row: give a dict"
                )
            yield made


class _MapBatches(_MapRows):
    """A `map_batches` step: the function on each batch of `batch_size` rows."""

    def __init__(self, fn: Callable, batch_size: int | None, batch_format: str, **kwargs: Any):
        super().__init__(fn, **kwargs)
        self.batch_size = batch_size
        self.batch_format = batch_format

    def __call__(self, rows: Iterable[Row]) -> Iterator[Row]:
        fn = self._callable()
        where = f"ray.data.Dataset.map_batches({self.fn!r})"
        for rows_in in _batches(rows, self.batch_size):
            batch = _formatted(rows_in, self.batch_format, "map_batches")
            yield from rows_of(fn(batch, *self.args, **self.kwargs), where)


def _formatted(rows: list[Row], batch_format: str | None, call: str) -> Any:
    if batch_format == "pandas":
        return import_extra("pandas").DataFrame(rows)
    if batch_format not in ("default", "numpy", None):
        raise ValueError(f"{call}(batch_format={batch_format!r}): 'default', 'numpy' or 'pandas'")
    return batch_of(rows)


class Dataset:
    """Rows of some files (see the module docstring), lazily read and mapped."""

    def __init__(
        self,
        files: list[Path],
        read: Callable[[Path], Iterator[Row]] | None = None,
        steps: tuple[Callable[[Iterable[Row]], Iterator[Row]], ...] = (),
        rows: list[Row] | None = None,
    ) -> None:
        self._files = list(files)
        self._read = read or _parquet_rows
        self._steps = steps
        self._rows = rows  # materialized

    def __repr__(self) -> str:
        return f"Dataset(num_rows={self.count()}, columns={self.columns()})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise RLlibNotAvailable(f"ray.data.Dataset.{name}", RAY_DATA, _INSTEAD)

    def _is_plain_parquet(self) -> bool:
        return self._read is _parquet_rows and not self._steps and self._rows is None

    def _with(self, step: Callable[[Iterable[Row]], Iterator[Row]]) -> Dataset:
        return Dataset(self._files, self._read, (*self._steps, step), self._rows)

    # -- rows ----------------------------------------------------------------------------------
    def iter_rows(self) -> Iterator[Row]:
        """Each row as a dict by column: file by file, through the maps."""
        rows: Iterable[Row] = (
            self._rows
            if self._rows is not None
            else (row for path in self._files for row in self._read(path))
        )
        for step in self._steps:
            rows = step(rows)
        yield from rows

    def count(self) -> int:
        """The number of rows (a parquet dataset's from the files' metadata)."""
        if self._is_plain_parquet():
            parquet = import_extra("pyarrow.parquet")
            return sum(parquet.ParquetFile(path).metadata.num_rows for path in self._files)
        return sum(1 for _ in self.iter_rows())

    def schema(self) -> Any:
        """The first file's pyarrow schema (an unmapped parquet dataset's only)."""
        if not self._is_plain_parquet():
            raise RLlibNotAvailable(
                "ray.data.Dataset.schema() of a mapped or non-parquet dataset",
                RAY_DATA,
                "Dataset.columns()",
            )
        parquet = import_extra("pyarrow.parquet")
        return parquet.read_schema(self._files[0])

    def columns(self) -> list[str]:
        if self._is_plain_parquet():
            return list(self.schema().names)
        return list(next(self.iter_rows(), {}))

    def take(self, limit: int = 20) -> list[Row]:
        rows: list[Row] = []
        for row in self.iter_rows():
            if len(rows) >= limit:
                break
            rows.append(row)
        return rows

    def take_all(self, limit: int | None = None) -> list[Row]:
        rows = list(self.iter_rows())
        if limit is not None and len(rows) > limit:
            raise ValueError(f"The dataset has more than the given limit of {limit} records.")
        return rows

    def take_batch(self, batch_size: int = 20, *, batch_format: str | None = "default") -> Any:
        """The first `batch_size` rows as columns: numpy arrays by name (`"numpy"`,
        `"default"`), or a pandas DataFrame (`"pandas"`)."""
        return _formatted(self.take(batch_size), batch_format, "take_batch")

    def iter_batches(
        self,
        *,
        batch_size: int | None = 256,
        batch_format: str | None = "default",
        drop_last: bool = False,
        _collate_fn: Callable | None = None,
        **scheduling: Any,
    ) -> Iterator[Any]:
        """The rows in batches of `batch_size` (None: one batch), each as `take_batch` gives
        it, or what `_collate_fn` (RLlib's last-mile step) makes of it."""
        _check_scheduling("iter_batches", scheduling)
        for rows in _batches(self.iter_rows(), batch_size):
            if drop_last and batch_size is not None and len(rows) < batch_size:
                return
            batch = _formatted(rows, batch_format, "iter_batches")
            yield _collate_fn(batch) if _collate_fn is not None else batch

    def to_pandas(self, limit: int | None = None) -> Any:
        rows = self.take_all(limit)
        return import_extra("pandas").DataFrame(rows)

    def show(self, limit: int = 20) -> None:
        for row in self.take(limit):
            print(row)

    # -- transformations -----------------------------------------------------------------------
    def map(
        self,
        fn: Callable,
        *,
        fn_args: Iterable[Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
        **scheduling: Any,
    ) -> Dataset:
        """The dataset with `fn` applied to each row (a dict in, a dict out)."""
        _check_scheduling("map", scheduling)
        return self._with(
            _MapRows(
                fn, tuple(fn_args or ()), dict(fn_kwargs or {}), dict(fn_constructor_kwargs or {})
            )
        )

    def map_batches(
        self,
        fn: Callable,
        *,
        batch_size: int | None | str = "default",
        batch_format: str | None = "default",
        fn_args: Iterable[Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
        **scheduling: Any,
    ) -> Dataset:
        """The dataset with `fn` applied to each batch of `batch_size` rows (Ray's default:
        1024; None: all rows at once); a class is built once per pass over the data."""
        _check_scheduling("map_batches", scheduling)
        if batch_size == "default":
            batch_size = 1024
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise ValueError(f"map_batches(batch_size={batch_size!r}): a positive int or None")
        return self._with(
            _MapBatches(
                fn,
                batch_size,
                batch_format or "default",
                fn_args=tuple(fn_args or ()),
                fn_kwargs=dict(fn_kwargs or {}),
                constructor_kwargs=dict(fn_constructor_kwargs or {}),
            )
        )

    def materialize(self) -> Dataset:
        """The rows, read and mapped once, held in memory."""
        return Dataset([], rows=list(self.iter_rows()))


# -- readers -------------------------------------------------------------------------------------
def _parquet_rows(path: Path) -> Iterator[Row]:
    parquet = import_extra("pyarrow.parquet")
    yield from parquet.read_table(path).to_pylist()


def _json_rows(path: Path) -> Iterator[Row]:
    pa_json = import_extra("pyarrow.json")
    yield from pa_json.read_json(path).to_pylist()


def _binary_rows(include_paths: bool) -> Callable[[Path], Iterator[Row]]:
    def read(path: Path) -> Iterator[Row]:
        row: Row = {"bytes": path.read_bytes()}
        if include_paths:
            row["path"] = str(path)
        yield row

    return read


def _only_paths(call: str, kwargs: dict[str, Any], allowed: tuple[str, ...] = ()) -> None:
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise RLlibNotAvailable(
            f"ray.data.{call}({', '.join(f'{key}=...' for key in unknown)})",
            RAY_DATA,
            f"ray.data.{call}(paths{''.join(', ' + a + '=...' for a in allowed)})",
        )


def _local_files(call: str, paths: Any) -> list[Path]:
    """Every file at `paths` (a path, a glob or a folder, `local://` allowed, or a list of
    them; `trainer.offline.files.files_at`); another store's path is refused by name."""
    entries = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    texts = []
    for entry in entries:
        text = os.fspath(entry)
        if text.startswith(LOCAL_SCHEME):
            text = text[len(LOCAL_SCHEME) :]
        elif "://" in text:
            raise RLlibNotAvailable(
                f"ray.data.{call}({text!r})",
                RAY_DATA,
                "local files (a path, a glob, a folder, or local://...): copy the data from "
                "its store first",
            )
        texts.append(text)
    found = files_at(texts)
    if not found:
        raise FileNotFoundError(f"ray.data.{call}({paths!r}): no files there")
    return found


def read_parquet(paths: Any, **kwargs: Any) -> Dataset:
    """The rows of the parquet files at `paths` (a path, a glob or a folder, `local://`
    allowed, or a list of them). Ray Data's reading options (`filesystem`, `columns`, ...)
    are not taken."""
    _only_paths("read_parquet", kwargs)
    return Dataset(dataset_files(paths, "read_parquet"))


def read_json(paths: Any, **kwargs: Any) -> Dataset:
    """The rows of the JSON-lines files at `paths` (as `read_parquet` takes them)."""
    _only_paths("read_json", kwargs)
    return Dataset(dataset_files(paths, "read_json"), _json_rows)


def read_binary_files(paths: Any, *, include_paths: bool = False, **kwargs: Any) -> Dataset:
    """One row per file at `paths` (a path, a glob or a folder, `local://` allowed, or a list
    of them): its contents under `"bytes"` (and its path under `"path"`, with
    `include_paths=True`)."""
    _only_paths("read_binary_files", kwargs)
    return Dataset(_local_files("read_binary_files", paths), _binary_rows(include_paths))
