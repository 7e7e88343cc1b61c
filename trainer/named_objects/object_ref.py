"""The result of a named-object `.remote()` call: one class for both connections (the server's,
`trainer.named_objects.client`, and Ray's, `trainer.named_objects.on_ray`), each of which hands
them out and fills them in (`_set`) as answers arrive. It is also the reference of a result that
is already here (`ObjectRef.of_value`), and what `ray.ObjectRef` names under the RLlib
launcher."""

from __future__ import annotations

import logging
from typing import Any

from trainer.errors import NamedObjectError

logger = logging.getLogger("trainer")


class ObjectRef:
    """The result of a `.remote()` call, to read with `get(ref)` (or `ref.result()`). An error
    that nobody reads is logged when the ref is dropped."""

    __slots__ = ("_connection", "_done", "_status", "_value", "_read")

    def __init__(self, connection: Any):
        """`connection`: what made the call; its `flush(until=ref)` waits for the answer."""
        self._connection = connection
        self._done = False
        self._read = False

    @classmethod
    def of_value(cls, value: Any) -> ObjectRef:
        """A reference already holding `value`: what a call that ran elsewhere returns in
        place of a value (`foreach_env_runner(return_obj_refs=True)`); `get()` reads it."""
        ref = cls(None)
        ref._set("ok", value)
        return ref

    def _set(self, status: str, value: Any) -> None:
        self._status, self._value, self._done = status, value, True

    def result(self) -> Any:
        if not self._done:
            self._connection.flush(until=self)
        self._read = True
        if self._status == "error":
            raise NamedObjectError(self._value)
        return self._value

    def __del__(self) -> None:
        if self._done and not self._read and self._status == "error":
            logger.warning(
                "a named-object call made with .remote() failed and its result was never read: %s",
                self._value,
            )
