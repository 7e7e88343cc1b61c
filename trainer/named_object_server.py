"""The named-object server process: `python -m trainer.named_object_server PARENT_PID`, with
(address, authkey, sys_path) cloudpickled on stdin (see `trainer.named_objects`).

It listens on a Unix socket (`multiprocessing.connection.Listener`, authenticated with the key),
serves each client connection on a thread of its own, and answers each request with exactly one
reply, ("ok", value) or ("error", message with the traceback):

    request                                        reply value
    ("create", name, payload, get_if_exists)       True if created, False if the name was taken
                                                   (payload: cloudpickled (factory, args, kwargs))
    ("call", name, method, args, kwargs)           getattr(object, method)(*args, **kwargs)
    ("names",)                                     the names, sorted
    ("batch", [("call", ...), ...])                [(status, value) per call], run in order

Calls on one object run one at a time (a lock per object), in arrival order. The process ends
when it is terminated or when its parent process is gone (a watchdog thread).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)


class Registry:
    def __init__(self):
        self._objects: dict[str, tuple[object, threading.Lock]] = {}
        self._lock = threading.Lock()

    def create(self, name: str, payload: bytes, get_if_exists: bool) -> bool:
        import cloudpickle

        with self._lock:
            if name in self._objects:
                return False
            factory, args, kwargs = cloudpickle.loads(payload)
            self._objects[name] = (factory(*args, **kwargs), threading.Lock())
            return True

    def call(self, name: str, method: str, args: tuple, kwargs: dict):
        try:
            obj, lock = self._objects[name]
        except KeyError:
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
        handler = {"create": registry.create, "call": registry.call,
                   "names": registry.names}[kind]
        return ("ok", handler(*args))
    except Exception as error:
        where = f"{args[0]}.{args[1]}()" if kind == "call" else kind
        return ("error", f"{where} raised {type(error).__name__}: {error}\n"
                         f"{traceback.format_exc().rstrip()}")


def _serve_client(conn, registry: Registry) -> None:
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
            conn.send(("error", f"the result of {kind} could not be sent back: "
                                f"{type(error).__name__}: {error}"))


def main(argv: list[str]) -> None:
    import signal
    from multiprocessing.connection import Listener

    import cloudpickle

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    parent_pid = int(argv[1])
    address, authkey, sys_path = cloudpickle.loads(sys.stdin.buffer.read())
    for entry in sys_path:
        if entry not in sys.path:
            sys.path.append(entry)
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    registry = Registry()
    listener = Listener(address, family="AF_UNIX", authkey=authkey)
    while True:
        try:
            conn = listener.accept()
        except Exception:
            continue  # a client that failed authentication or hung up early
        threading.Thread(target=_serve_client, args=(conn, registry), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv)
