"""A checkpoint's JSON files: parsed within bounds, and `metadata.json` sealed with its own
SHA-256.

`parse_json` refuses, as a `CheckpointError` naming the file, anything Python's `json` would
turn into another exception: invalid UTF-8 or JSON (`ValueError`), nesting deep enough for a
`RecursionError` (measured by a scan of the bytes before parsing), and files past a size bound.

`metadata.json` lists the size and SHA-256 of every other file (the manifest); to verify the
manifest itself, the writer seals it: the top-level key `"self_sha256"` holds the SHA-256 of
the file's bytes with that value's 64 characters written as zeros. `check_seal` recomputes it
from the raw bytes before anything parses them, so any changed byte (a bit flip, a truncation,
an edit) is caught. The seal detects damage, not forgery: it is no secret (the pickled config
is protected against forgery by its HMAC, see `trainer.checkpoints.signing`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import numpy as np

from trainer.checkpoints.format import CheckpointError

#: Deepest nesting of objects and arrays a checkpoint's JSON may have (real ones stay under 15;
#: Python's parser fails with a RecursionError near 1000).
MAX_JSON_DEPTH = 100
#: The most a checkpoint's JSON file other than metadata.json may hold (config.json is a few KB).
MAX_JSON_BYTES = 16 << 20

SEAL_KEY = "self_sha256"
_SEAL_MARKER = f'"{SEAL_KEY}": "'.encode()
_DIGEST_LENGTH = 64
_ZEROS = b"0" * _DIGEST_LENGTH
#: A JSON string (escapes included): removed before brackets are counted.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPENING = np.zeros(256, dtype=np.int8)
_OPENING[[ord("["), ord("{")]] = 1
_OPENING[[ord("]"), ord("}")]] = -1


def json_depth(data: bytes) -> int:
    """How deep the arrays and objects of the JSON text `data` nest (brackets inside strings
    are not counted). Linear in the size, with no recursion."""
    outside_strings = _JSON_STRING.sub(b"", data)
    if not outside_strings:
        return 0
    steps = _OPENING[np.frombuffer(outside_strings, dtype=np.uint8)].astype(np.int64)
    return int(np.cumsum(steps).max(initial=0))


def parse_json(path: str, name: str, data: bytes, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON value in `data` (the file `name` of the checkpoint at `path`); any problem is a
    `CheckpointError` naming the file."""
    if len(data) > max_bytes:
        raise CheckpointError(
            path, f"{name} is larger than {max_bytes} bytes: not a checkpoint's {name}"
        )
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise CheckpointError(
            path, f"{name} is damaged: nested {depth} levels deep (at most {MAX_JSON_DEPTH})"
        )
    try:
        return json.loads(data)
    except (ValueError, RecursionError, MemoryError) as error:
        # ValueError covers JSONDecodeError and UnicodeDecodeError.
        raise CheckpointError(path, f"{name} is damaged (not JSON: {error})") from None


def sealed_json(document: dict) -> bytes:
    """`document` as metadata.json's bytes, with `"self_sha256"` the SHA-256 of those bytes
    (its own value counted as 64 zeros)."""
    text = json.dumps({**document, SEAL_KEY: _ZEROS.decode()}, indent=2, sort_keys=True).encode()
    placeholder = _SEAL_MARKER + _ZEROS
    if text.count(placeholder) != 1:
        raise ValueError(f"metadata holds {_SEAL_MARKER.decode()!r} twice")
    digest = hashlib.sha256(text).hexdigest().encode()
    return text.replace(placeholder, _SEAL_MARKER + digest)


def check_seal(path: str, name: str, data: bytes) -> str | None:
    """The seal of the metadata file `name` (bytes `data`) after checking it against the bytes;
    None when the file has none (written before sealing existed). Raises `CheckpointError`
    when the bytes do not match."""
    count = data.count(_SEAL_MARKER)
    if count == 0:
        return None
    start = data.find(_SEAL_MARKER) + len(_SEAL_MARKER)
    stored = data[start : start + _DIGEST_LENGTH]
    zeroed = data[:start] + _ZEROS + data[start + _DIGEST_LENGTH :]
    if count > 1 or data[start + _DIGEST_LENGTH : start + _DIGEST_LENGTH + 1] != b'"':
        raise CheckpointError(path, f"{name} is damaged: its {SEAL_KEY} entry is malformed")
    if hashlib.sha256(zeroed).hexdigest().encode() != stored:
        raise CheckpointError(
            path,
            f"{name} is damaged or was altered: its bytes do not match the SHA-256 it records "
            f"({SEAL_KEY})",
        )
    return stored.decode("ascii")
