"""Where recorded data is: `offline_data(input_=...)` resolved to dataset files, and the
`offline` extra's libraries, imported when data is read or written."""

from __future__ import annotations

import glob
import importlib
import os
from pathlib import Path
from typing import Any

from trainer.capabilities import OFFLINE
from trainer.errors import UnsupportedValue, _CapabilityRefusal

#: RLlib's `input_read_method` names taken here -> the file suffixes they read.
READ_METHODS: dict[str, tuple[str, ...]] = {
    "read_parquet": (".parquet",),
    "read_json": (".json", ".jsonl"),
}
#: The scheme RLlib's examples put before local paths (`"local://" + path`).
LOCAL_SCHEME = "local://"


class MissingExtra(_CapabilityRefusal, ImportError):
    """A library of the `offline` extra is not installed (a `NotSupported` and an
    `ImportError`)."""


def import_extra(module: str) -> Any:
    """`module` of the `offline` extra (pyarrow, pyarrow.parquet, msgpack), or `MissingExtra`."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        name = module.split(".")[0]
        raise MissingExtra(
            f"reading and writing recorded data needs {name}: pip install -e '.[offline]' "
            f"(or pip install {name})",
            OFFLINE,
        ) from error


def local_path(path: str | os.PathLike) -> str:
    """`path` without RLlib's `local://` scheme; other schemes (s3://, gs://) are refused."""
    text = os.fspath(path)
    if text.startswith(LOCAL_SCHEME):
        text = text[len(LOCAL_SCHEME) :]
    elif "://" in text:
        raise UnsupportedValue(
            f"offline_data(input_={text!r}): only local files are read here (a path, a glob, a "
            "folder, or local://...); copy the data from its store first",
            OFFLINE,
        )
    return text


def files_at(texts: list[str], suffixes: tuple[str, ...] | None = None) -> list[Path]:
    """The files at local `texts` (each a path, a glob or a folder), in a stable order, once
    each: a folder gives every file under it whose name ends with one of `suffixes` (any
    name, with None), hidden ones left out; a file named itself is taken whatever its name."""
    found: list[Path] = []
    for text in texts:
        matches = sorted(glob.glob(text)) if glob.has_magic(text) else [text]
        for match in matches:
            path = Path(match)
            if path.is_dir():
                found += sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file()
                    and not p.name.startswith(".")
                    and (suffixes is None or p.name.endswith(suffixes))
                )
            elif path.is_file():
                found.append(path)
    return list(dict.fromkeys(found))


def dataset_files(input_: Any, read_method: str = "read_parquet") -> list[Path]:
    """The files of `input_` (a path, a glob or a folder, or a list of them) that
    `read_method` reads, in a stable order; a folder gives every such file under it. Raises
    `FileNotFoundError` naming what was looked for when there is none."""
    suffixes = READ_METHODS[read_method]
    entries = [input_] if isinstance(input_, (str, os.PathLike)) else list(input_)
    found = files_at([local_path(entry) for entry in entries], suffixes)
    if not found:
        raise FileNotFoundError(
            f"offline_data(input_={input_!r}): no {' or '.join(suffixes)} files there "
            f"(input_read_method={read_method!r} reads {', '.join(suffixes)} files, from "
            "paths, globs and folders)"
        )
    return found
