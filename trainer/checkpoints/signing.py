"""Signed pickled configs: a checkpoint's `class_and_config.pkl` carries an HMAC-SHA256 made
with this user's secret key, so `Algorithm.from_checkpoint(path)` unpickles the configs this
user saved (lambdas, classes defined in `__main__`, as RLlib does) and no other.

The key: 32 random bytes, hex, in `checkpoint.key` under `$LOCALRL_CONFIG_DIR`, else
`$XDG_CONFIG_HOME/localrl`, else `~/.config/localrl`; `$LOCALRL_KEY_FILE` names the file
itself. It is created on first use, atomically (written to a private temporary file, then
linked into place, so two processes starting at once end with the same key), with mode 0600 in
a directory created 0700. A key file that others can read or write, or that another user owns,
is refused: a key others can read signs nothing.

The signature lives in the checkpoint's `metadata.json` (`"config_signature"`: scheme, the key's
id, the file it signs and the HMAC), written in the same atomic save and sealed with the rest.
The HMAC covers the pickle's bytes; the key id (a SHA-256 of the key, first 16 hex digits)
only tells "signed with another key" from "damaged" in messages.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from dataclasses import dataclass
from typing import Any

from trainer.checkpoints.format import CLASS_AND_CONFIG_FILE
from trainer.errors import CheckpointError

KEY_FILE_ENV = "LOCALRL_KEY_FILE"
CONFIG_DIR_ENV = "LOCALRL_CONFIG_DIR"
KEY_FILE_NAME = "checkpoint.key"
SIGNATURE_KEY = "config_signature"
SCHEME = "hmac-sha256"
_KEY_BYTES = 32
#: Prefixed to the signed bytes: a signature of this library's configs signs nothing else.
_DOMAIN = b"localrl class_and_config.pkl v1\0"


class KeyFileError(CheckpointError):
    """The signing key file cannot be used (names the file and why)."""


def key_file_path() -> str:
    """Where this user's signing key is (or will be created)."""
    explicit = os.environ.get(KEY_FILE_ENV)
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    directory = os.environ.get(CONFIG_DIR_ENV)
    if not directory:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        directory = os.path.join(base, "localrl")
    return os.path.join(os.path.abspath(os.path.expanduser(directory)), KEY_FILE_NAME)


def _refuse(path: str, cause: str) -> KeyFileError:
    return KeyFileError(
        path,
        f"{cause}. The checkpoint signing key must be readable by you alone: "
        f"chmod 600 {path} (or remove it to make a new one; checkpoints it signed then need "
        f"`python -m trainer trust PATH`). Set {KEY_FILE_ENV} to use another file",
    )


def _read_key(path: str) -> bytes:
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as error:
        raise _refuse(path, f"the key file cannot be opened ({error})") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, "the key file is not a regular file")
        if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
            raise _refuse(path, f"the key file belongs to another user (uid {info.st_uid})")
        if info.st_mode & 0o077:
            raise _refuse(
                path,
                f"the key file has mode {stat.S_IMODE(info.st_mode):04o}: others can read or "
                "write it",
            )
        text = os.read(descriptor, 4 * _KEY_BYTES)
    finally:
        os.close(descriptor)
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        raise _refuse(path, f"the key file does not hold {_KEY_BYTES} bytes as hex")
    return key


def _create_key(path: str) -> None:
    """Creates the key file unless it exists: written whole to a private temporary file, then
    hard-linked into place (which fails if another process got there first)."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as error:
        raise _refuse(path, f"its directory cannot be created ({error})") from None
    temporary = os.path.join(directory, f".{KEY_FILE_NAME}.{os.getpid()}.{os.urandom(4).hex()}")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(descriptor, (os.urandom(_KEY_BYTES).hex() + "\n").encode())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process created it first: theirs is the key
    except OSError as error:
        raise _refuse(path, f"the key file cannot be created ({error})") from None
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def load_key(*, create: bool = True) -> bytes:
    """This user's signing key, created on first use when `create`."""
    path = key_file_path()
    if create and not os.path.lexists(path):
        _create_key(path)
    return _read_key(path)


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"localrl key id\0" + key).hexdigest()[:16]


def sign(data: bytes, key: bytes | None = None) -> dict[str, str]:
    """The `config_signature` metadata entry for the pickle bytes `data`."""
    key = load_key() if key is None else key
    return {
        "scheme": SCHEME,
        "file": CLASS_AND_CONFIG_FILE,
        "key_id": key_id(key),
        "hmac": hmac.new(key, _DOMAIN + data, hashlib.sha256).hexdigest(),
    }


@dataclass(frozen=True)
class SignatureCheck:
    """What a checkpoint's signature says about its pickle: `valid` (signed with this user's
    key), else `reason` says why not ("unsigned", "signed with another key", ...)."""

    valid: bool
    reason: str


def check_signature(data: bytes, entry: Any) -> SignatureCheck:
    """Checks the metadata entry `entry` (or None) against the pickle bytes `data` with this
    user's key. Never raises for a bad entry: a malformed signature is simply not valid."""
    if entry is None:
        return SignatureCheck(False, "it is unsigned")
    if (
        not isinstance(entry, dict)
        or entry.get("scheme") != SCHEME
        or entry.get("file") != CLASS_AND_CONFIG_FILE
        or not isinstance(entry.get("hmac"), str)
        or not isinstance(entry.get("key_id"), str)
    ):
        return SignatureCheck(False, f"its {SIGNATURE_KEY} entry is malformed")
    key = load_key()
    if entry["key_id"] != key_id(key):
        return SignatureCheck(
            False,
            f"it was signed with another key (key id {entry['key_id'][:16]!r}; yours, in "
            f"{key_file_path()}, is {key_id(key)!r}): it was saved by another user or machine",
        )
    expected = hmac.new(key, _DOMAIN + data, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, entry["hmac"]):
        return SignatureCheck(False, "its signature does not match the pickle")
    return SignatureCheck(True, "signed with your key")
