"""cloudpickle for what travels to the EnvRunner processes, refusing what must not travel.

cloudpickle copies a file opened for reading by value (its whole content, read once, at pickle
time) and fails on one opened for writing. Either way the worker would not hold the user's
file: `travel_dumps` refuses every open file object with the same clear error.
"""

from __future__ import annotations

import io
from typing import Any

import cloudpickle


class ProcessBoundObject(TypeError):
    """An object that cannot travel to another process (an open file)."""


class _TravelPickler(cloudpickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, io.IOBase):
            name = getattr(obj, "name", None)
            mode = getattr(obj, "mode", None)
            raise ProcessBoundObject(
                f"an open file ({type(obj).__name__}"
                f"{f' {name!r}' if name is not None else ''}"
                f"{f', mode {mode!r}' if mode is not None else ''}) cannot be sent to another "
                "process: a file opened for reading would be copied as it is now, one opened "
                "for writing cannot be pickled. Open it inside the function instead")
        return super().reducer_override(obj)


def travel_dumps(obj: Any) -> bytes:
    """`cloudpickle.dumps(obj)`, raising `ProcessBoundObject` for any open file inside."""
    buffer = io.BytesIO()
    _TravelPickler(buffer).dump(obj)
    return buffer.getvalue()
