"""Ray Data's `read_parquet` for the data RLlib's examples record and read back
(`ray.data.read_parquet("local:///tmp/cartpole").count()`), over pyarrow (the `offline`
extra): a `Dataset` of the files' rows that counts them (from the files' footers), shows its
schema and columns, takes rows and batches, iterates rows, and converts to pandas. Ray Data's
other functions and the Dataset's other methods (transformations, writes, splits) need Ray
Data and raise `RLlibNotAvailable` when used."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from trainer.capabilities import RAY_DATA
from trainer.errors import RLlibNotAvailable
from trainer.offline.files import dataset_files, import_extra

__all__ = ["Dataset", "read_parquet"]

_INSTEAD = "ray.data.read_parquet(...) and its Dataset's count, schema, columns, take, take_all, take_batch, iter_rows, to_pandas, show"


class Dataset:
    """The rows of some parquet files, in file order (see the module docstring)."""

    def __init__(self, files: list[Path]) -> None:
        self._files = list(files)

    def __repr__(self) -> str:
        return f"Dataset(num_rows={self.count()}, schema={self.schema()})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise RLlibNotAvailable(f"ray.data.Dataset.{name}", RAY_DATA, _INSTEAD)

    def _table(self) -> Any:
        pa = import_extra("pyarrow")
        parquet = import_extra("pyarrow.parquet")
        return pa.concat_tables([parquet.read_table(path) for path in self._files])

    def count(self) -> int:
        """The number of rows (read from the files' metadata)."""
        parquet = import_extra("pyarrow.parquet")
        return sum(parquet.ParquetFile(path).metadata.num_rows for path in self._files)

    def schema(self) -> Any:
        """The first file's pyarrow schema."""
        parquet = import_extra("pyarrow.parquet")
        return parquet.read_schema(self._files[0])

    def columns(self) -> list[str]:
        return list(self.schema().names)

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Each row as a dict by column, file by file."""
        parquet = import_extra("pyarrow.parquet")
        for path in self._files:
            yield from parquet.read_table(path).to_pylist()

    def take(self, limit: int = 20) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for row in self.iter_rows():
            if len(rows) >= limit:
                break
            rows.append(row)
        return rows

    def take_all(self, limit: int | None = None) -> list[dict[str, Any]]:
        rows = self._table().to_pylist()
        if limit is not None and len(rows) > limit:
            raise ValueError(f"The dataset has more than the given limit of {limit} records.")
        return rows

    def take_batch(self, batch_size: int = 20, *, batch_format: str | None = "default") -> Any:
        """The first `batch_size` rows as columns: numpy arrays by name (`"numpy"`,
        `"default"`), or a pandas DataFrame (`"pandas"`)."""
        table = self._table().slice(0, batch_size)
        if batch_format == "pandas":
            return table.to_pandas()
        if batch_format not in ("default", "numpy", None):
            raise ValueError(
                f"take_batch(batch_format={batch_format!r}): 'default', 'numpy' or 'pandas'"
            )
        return {name: np.asarray(table.column(name).to_pylist()) for name in table.column_names}

    def to_pandas(self, limit: int | None = None) -> Any:
        table = self._table()
        if limit is not None and table.num_rows > limit:
            raise ValueError(f"The dataset has more than the given limit of {limit} records.")
        return table.to_pandas()

    def show(self, limit: int = 20) -> None:
        for row in self.take(limit):
            print(row)


def read_parquet(paths: Any, **kwargs: Any) -> Dataset:
    """The rows of the parquet files at `paths` (a path, a glob or a folder, `local://`
    allowed, or a list of them). Ray Data's reading options (`filesystem`, `columns`, ...)
    are not taken."""
    if kwargs:
        raise RLlibNotAvailable(
            f"ray.data.read_parquet({', '.join(f'{key}=...' for key in kwargs)})",
            RAY_DATA,
            "ray.data.read_parquet(paths) with paths alone",
        )
    return Dataset(dataset_files(paths, "read_parquet"))
