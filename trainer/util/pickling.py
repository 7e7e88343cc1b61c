"""cloudpickle for what travels to the EnvRunner processes, refusing what must not travel.

cloudpickle copies a file opened for reading by value (its whole content, read once, at pickle
time) and fails on one opened for writing. Either way the worker would not hold the user's
file: `travel_dumps` refuses every open file object with the same clear error. It also pickles
the objects it is told to name (callbacks) each on its own, so that one that cannot be
unpickled in the worker (its module missing there, its `__setstate__` raising) is reported by
name instead of as a failed start.

Code objects travel whole (marshal, as the interpreter stores them in .pyc files): cloudpickle 3
renames a pickled function's file to "<dynamic-code>", which would leave a traceback from the
worker without the user's file and source lines.
"""

from __future__ import annotations

import io
import marshal
import types
from typing import Any

import cloudpickle

from trainer.errors import ProcessBoundObject as ProcessBoundObject


# Internal: the worker turns it into the CallbackError the user sees (trainer.runners.worker).
class UnpicklingFailed(Exception):
    """A named object (a callback) could not be unpickled in the receiving process; `label`
    names it, `error` is what unpickling raised."""

    def __init__(self, label: str, error: BaseException):
        self.label = label
        self.error = error
        super().__init__(f"{label} could not be unpickled here: {type(error).__name__}: {error}")


def _load_code(blob: bytes) -> types.CodeType:
    """Runs in the receiving process: a code object with its own file name and line table."""
    return marshal.loads(blob)


def _load_named(label: str, blob: bytes) -> Any:
    """Runs in the receiving process: unpickles one named object, naming it if that fails."""
    try:
        return cloudpickle.loads(blob)
    except Exception as error:
        raise UnpicklingFailed(label, error) from error


class _TravelPickler(cloudpickle.Pickler):
    def __init__(self, file: io.BytesIO, named: dict[int, str]):
        super().__init__(file)
        self._named = named

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is types.CodeType:
            # The same interpreter version runs on both sides (a worker process, or a Ray
            # actor on a cluster Ray requires to match), so the marshal format is the same.
            try:
                return _load_code, (marshal.dumps(obj),)
            except ValueError:  # a hand-built code object holding an unmarshallable constant
                return super().reducer_override(obj)
        label = self._named.get(id(obj))
        if label is not None:
            # Pickled on its own, so a failure to unpickle it names it (see _load_named).
            return _load_named, (label, travel_dumps(obj))
        if isinstance(obj, io.IOBase):
            name = getattr(obj, "name", None)
            mode = getattr(obj, "mode", None)
            raise ProcessBoundObject(
                f"an open file ({type(obj).__name__}"
                f"{f' {name!r}' if name is not None else ''}"
                f"{f', mode {mode!r}' if mode is not None else ''}) cannot be sent to another "
                "process: a file opened for reading would be copied as it is now, one opened "
                "for writing cannot be pickled. Open it inside the function instead"
            )
        return super().reducer_override(obj)


def travel_dumps(obj: Any, named: dict[int, str] | None = None) -> bytes:
    """`cloudpickle.dumps(obj)`, raising `ProcessBoundObject` for any open file inside. The
    objects in `named` (id -> label) are pickled each on its own: if one cannot be unpickled in
    the receiving process, `UnpicklingFailed` names it."""
    buffer = io.BytesIO()
    _TravelPickler(buffer, named or {}).dump(obj)
    return buffer.getvalue()
