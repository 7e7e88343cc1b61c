"""The named-object server process:
`python -m trainer.named_objects.server PARENT_PID KERNEL` (`trainer.util.child_process`), with (address, authkey,
sys_path) cloudpickled on stdin (see `trainer.named_objects`).

It listens on a Unix socket file in a directory only its user can enter (mode 0700, made by the
main process), and hands each connection to a thread of its own at once: that thread runs the
authentication handshake (HMAC challenges with the key, `multiprocessing.connection`'s) under a
deadline (`HANDSHAKE_TIMEOUT_S`), then serves the client. So a client that connects and sends
nothing holds only its own thread until the deadline, never the accept loop. Each request gets
exactly one reply, ("ok", value) or ("error", message with the traceback):

    request                                        reply value
    ("create", name, payload, get_if_exists)       True if created, False if the name was taken
                                                   (payload: cloudpickled (factory, args, kwargs))
    ("call", name, method, args, kwargs)           getattr(object, method)(*args, **kwargs)
    ("names",)                                     the names, sorted
    ("kill", name)                                 True if an object was dropped (`ray.kill`:
                                                   its name is free; calls on it fail)
    ("ping",)                                      this process's pid (a health check)
    ("batch", [("call", ...), ...])                [(status, value) per call], run in order

Calls on one object run one at a time (a lock per object), in arrival order. A ping takes no
lock: the thread of its connection answers it while methods run on others (a client's health
checks use a connection of their own, `trainer.named_objects.health`). The process ends
when it is terminated or when its parent process is gone (`trainer.util.child_process`).
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trainer.named_objects import HANDSHAKE_TIMEOUT_S, handshake
from trainer.util.child_process import add_import_paths, start_child

if TYPE_CHECKING:
    import socket


class Registry:
    def __init__(self) -> None:
        self._objects: dict[str, tuple[object, threading.Lock]] = {}
        self._lock = threading.Lock()
        #: Names whose objects `kill` dropped (and not created again): a call names the kill.
        self._killed: set[str] = set()

    def create(self, name: str, payload: bytes, get_if_exists: bool) -> bool:
        import cloudpickle

        with self._lock:
            if name in self._objects:
                return False
            factory, args, kwargs = cloudpickle.loads(payload)
            self._objects[name] = (factory(*args, **kwargs), threading.Lock())
            self._killed.discard(name)
            return True

    def kill(self, name: str) -> bool:
        """Drops the object `name` at once, as Ray's `ray.kill` ends an actor: nothing of it
        runs (no `stop()`; a call under way finishes, later ones fail) and its name is free.
        Returns whether there was one (killing a killed object does nothing, as in Ray)."""
        with self._lock:
            dropped = self._objects.pop(name, None)
            if dropped is not None:
                self._killed.add(name)
        return dropped is not None

    def call(self, name: str, method: str, args: tuple, kwargs: dict) -> Any:
        try:
            obj, lock = self._objects[name]
        except KeyError:
            if name in self._killed:
                raise LookupError(
                    f"the named object {name!r} was killed (ray.kill): it takes no calls"
                ) from None
            raise LookupError(f"no named object {name!r}; existing: {self.names()}") from None
        with lock:
            return getattr(obj, method)(*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._objects)


def _answer(registry: Registry, kind: str, args: list) -> tuple[str, object]:
    """("ok", value) of one request, or ("error", what raised, with the traceback). A batch
    answers each of its ("call", ...) messages in order, this way."""
    try:
        if kind == "batch":
            return ("ok", [_answer(registry, "call", call) for _, *call in args[0]])
        handlers: dict[str, Callable[..., object]] = {
            "create": registry.create,
            "call": registry.call,
            "names": registry.names,
            "kill": registry.kill,
            "ping": os.getpid,
        }
        handler = handlers[kind]
        return ("ok", handler(*args))
    except Exception as error:
        where = f"{args[0]}.{args[1]}()" if kind == "call" else kind
        return (
            "error",
            f"{where} raised {type(error).__name__}: {error}\n{traceback.format_exc().rstrip()}",
        )


def _serve_client(sock: socket.socket, authkey: bytes, registry: Registry) -> None:
    from multiprocessing import AuthenticationError

    try:
        conn = handshake(sock, authkey, server_side=True, timeout_s=HANDSHAKE_TIMEOUT_S)
    except (OSError, EOFError, AuthenticationError):
        # A client that failed authentication, hung up (one that found this server stopped
        # and gave up), or said nothing in time: nothing to serve, nothing to report.
        return
    while True:
        try:
            kind, *args = conn.recv()
        except (EOFError, OSError):
            return
        reply = _answer(registry, kind, args)
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception as error:  # the result could not be pickled
            conn.send(
                (
                    "error",
                    f"the result of {kind} could not be sent back: {type(error).__name__}: {error}",
                )
            )


def main(argv: list[str]) -> None:
    import socket

    import cloudpickle

    start_child(argv)
    address, authkey, sys_path = cloudpickle.loads(sys.stdin.buffer.read())
    add_import_paths(sys_path)
    registry = Registry()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(address):
        os.unlink(address)  # the socket of a server before this one, which died
    listener.bind(address)
    os.chmod(address, 0o600)
    listener.listen(64)
    while True:
        try:
            sock, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=_serve_client, args=(sock, authkey, registry), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv)
