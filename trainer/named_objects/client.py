"""Named shared objects: one object, reachable by name from the main process and from env and
callback code in every EnvRunner process (what RLlib's docs do with Ray's named actors).

    # in the main process
    counter = create_named_object("global_counter", Counter)
    # in env or callback code, in any EnvRunner process
    get_named_object("global_counter").inc(1)
    # back in the main process
    counter.get()

The object lives in one server process (`trainer.named_objects.server`), started by the first
`create_named_object` and stopped by `shutdown_named_objects()`, which `Algorithm.stop()` (for a
server started after that algorithm was built) and
interpreter exit call. Every method call travels there and runs under the object's lock, one at a
time, in the order the calls arrive. `handle.method(*args)` waits for the result;
`handle.method.remote(*args)` (Ray's spelling) does not, and its calls still run in the order
each process made them. EnvRunner processes wait for their own `.remote()` calls before answering
the main process, so after `train()` the main process reads every call made during it.
Arguments and results travel with pickle.

A server that dies, stops or hangs is reported to every process that waits on it within
seconds, not after `CALL_TIMEOUT_S`: see `_Connection` and `trainer.named_objects.health`; a
method that runs long on a healthy server is waited for.

Ray's spelling works too, for porting the docs' example with only the imports changed:
`@remote class Counter`, `Counter.options(name="global_counter").remote()`,
`get_actor("global_counter")`, `counter.inc.remote(1)`, `get(counter.get.remote())`,
`exceptions.RayError`.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from multiprocessing import AuthenticationError
from multiprocessing.connection import Connection, answer_challenge, deliver_challenge
from typing import Any

import cloudpickle

from trainer.errors import EnvRunnerCrashed, EnvRunnerTimeout, RemoteError
from trainer.errors import NamedObjectError as NamedObjectError
from trainer.named_objects import on_ray
from trainer.named_objects.health import (
    EXIT_SHOW_S,
    HEALTH_CHECK_INTERVAL_S,
    PING_TIMEOUT_S,
    ServerFailure,
    ServerProcess,
    peer_pid,
)
from trainer.named_objects.object_ref import ObjectRef as ObjectRef
from trainer.util.child_process import end_process, spawn

logger = logging.getLogger("trainer")
#: Longest wait for the server process to accept connections after it was started.
STARTUP_TIMEOUT_S = 30.0
#: Longest a connection's authentication handshake may take, on either side: a client that
#: connects and says nothing is dropped after this, and never delays anyone else.
HANDSHAKE_TIMEOUT_S = 5.0
#: Longest wait for the reply to one request from a server that is alive and answers its health
#: checks (a method call runs under its object's lock, so a reply this late means a method that
#: never returns). A dead, stopped or unanswering server is reported much sooner:
#: `UNRESPONSIVE_REPORTED_WITHIN_S` (`trainer.named_objects.health`).
CALL_TIMEOUT_S = 300.0


def handshake(
    sock: socket.socket, authkey: bytes, *, server_side: bool, timeout_s: float
) -> Connection:
    """Authenticates a connected Unix socket both ways (multiprocessing's HMAC challenges) within
    `timeout_s`, and returns it as a `Connection`. Raises `OSError`, `EOFError` or
    `AuthenticationError` when the other side fails, hangs up, or is silent past the deadline
    (the socket is shut down, which ends the blocked read)."""
    conn = Connection(os.dup(sock.fileno()))
    lock, done = threading.Lock(), [False]

    def expire() -> None:
        with lock:
            if not done[0]:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    timer = threading.Timer(timeout_s, expire)
    timer.daemon = True
    timer.start()
    try:
        if server_side:
            deliver_challenge(conn, authkey)
            answer_challenge(conn, authkey)
        else:
            answer_challenge(conn, authkey)
            deliver_challenge(conn, authkey)
        with lock:
            done[0] = True
    except BaseException:
        conn.close()
        raise
    finally:
        timer.cancel()
        sock.close()
    return conn


def open_socket(address: str, timeout_s: float = HANDSHAKE_TIMEOUT_S) -> socket.socket:
    """A Unix socket connected to `address` (not yet authenticated), within `timeout_s`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(address)
        sock.settimeout(None)
    except BaseException:
        sock.close()
        raise
    return sock


def connect(address: str, authkey: bytes, timeout_s: float = HANDSHAKE_TIMEOUT_S) -> Connection:
    """A client connection to the server at `address`, authenticated within `timeout_s`."""
    sock = open_socket(address, timeout_s)
    return handshake(sock, authkey, server_side=False, timeout_s=timeout_s)


class exceptions:  # noqa: N801 (a namespace: Ray's `ray.exceptions` module)
    """Ray's exception names for the errors here: `RayError` is the base of every error about
    other processes, `RayActorError` an EnvRunner process that died, `GetTimeoutError` one that
    did not answer in time."""

    RayError = RemoteError
    RayActorError = EnvRunnerCrashed
    GetTimeoutError = EnvRunnerTimeout


#: `.remote()` calls are sent in batches of at most this many (fewer system calls and pickles).
BATCH_SIZE = 64
#: Most batches of one process awaiting their replies; one more waits for the oldest.
MAX_BATCHES_IN_FLIGHT = 8
#: How often `.remote()` looks whether the server still holds this process's connection (one
#: poll of the socket, no round trip): a server that died is raised in the code calling
#: `.remote()` (a callback: its `CallbackError`), as Ray raises `RayActorError` in the caller.
REMOTE_CHECK_INTERVAL_S = 0.05


class _Connection:
    """This process's connection to the server, shared by its threads (under a lock). Requests
    are answered in order. `.remote()` calls are collected into a batch, which is sent when it
    is full, before any waiting call (so that call's effect follows theirs), on `get()` of one of
    them, and on `flush()`.

    While it waits for a reply it checks the server every `HEALTH_CHECK_INTERVAL_S`: its process
    (dead, dying or stopped: reported at once) and a ping over a second connection, which the
    server answers on a thread of its own even while a method runs. A server that does not
    answer the ping within `PING_TIMEOUT_S`, used no CPU meanwhile and has no thread waiting
    for a CPU is reported as stuck; one that answers (or computes, or waits for a CPU) is waited
    for, up to `CALL_TIMEOUT_S`. A
    connection the server closed is reported at once, with how the server ended where this
    process can know it."""

    def __init__(self, address: Any, authkey: bytes):
        self.address = address
        self.authkey = authkey
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self._batch: list[tuple] = []
        self._batch_refs: list[ObjectRef] = []
        #: Per request sent and not yet answered: None (a waiting call) or a batch's refs.
        self._in_flight: deque[list[ObjectRef] | None] = deque()
        #: Names known to exist (they stay until the server stops).
        self.known_names: set[str] = set()
        #: The process at the other end of the last connection made (None before the first).
        self.server: ServerProcess | None = None
        #: The health checks' own connection to the server (made on the first check).
        self._probe: Connection | None = None
        #: When `submit` next looks whether the server is still there (`time.monotonic()`).
        self._next_remote_check = 0.0

    def _send(self, message: tuple) -> None:
        if self._conn is None:
            sock = open_socket(self.address)
            try:
                pid = peer_pid(sock)
                self.server = ServerProcess(pid, _popen_of(pid))
                # A stopped server accepts connections (the kernel queues them) and answers
                # no handshake: say so now rather than after the handshake's deadline.
                self._fail_unless_alive(self.server)
            except BaseException:
                sock.close()
                raise
            self._conn = handshake(
                sock, self.authkey, server_side=False, timeout_s=HANDSHAKE_TIMEOUT_S
            )
        self._conn.send(message)

    def _read_one(self) -> tuple[str, Any]:
        if self._conn is None:  # only read after a send, which connects
            raise NamedObjectError("no connection to the named-object server to read from")
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not self._conn.poll(HEALTH_CHECK_INTERVAL_S):
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"no reply within {CALL_TIMEOUT_S:g} s, while the server answered its "
                    "health checks (a method that does not return)"
                )
            self._check_server()
        status, value = self._conn.recv()
        refs = self._in_flight.popleft()
        if refs is not None and status == "error":  # the batch's results could not be sent
            for ref in refs:
                ref._set(status, value)
        elif refs is not None:  # a batch: one (status, value) per call
            for ref, (call_status, call_value) in zip(refs, value, strict=True):
                ref._set(call_status, call_value)
        return status, value

    def _check_server(self) -> None:
        """Returns if the server is alive and answers a ping (or computes); raises
        `ServerFailure` saying what it is otherwise."""
        server = self.server or ServerProcess(None)
        self._fail_unless_alive(server)
        cpu_before = server.cpu_ticks()
        if self._ping():
            return
        self._fail_unless_alive(server)
        cpu_after = server.cpu_ticks()
        if cpu_before is not None and cpu_after is not None and cpu_after > cpu_before:
            return  # busy in C code that holds Python's lock: working, not stuck
        if server.has_runnable_thread():
            return  # waiting for a CPU on a busy machine: slow, not stuck
        raise ServerFailure(
            f"{server} did not answer a health check within {PING_TIMEOUT_S:g} s, used no "
            "CPU meanwhile and has no thread ready to run: it is stuck (the call waiting on it "
            "is given up)",
            "stuck",
        )

    def _fail_unless_alive(self, server: ServerProcess) -> None:
        condition, how = server.condition()
        if condition == "dying":  # killed: its exit status shows in a moment
            condition, how = server.wait_for_exit(EXIT_SHOW_S)
        if condition != "alive":
            raise ServerFailure(self._failure_text(server, condition, how), _kind_of(condition))

    def _ping(self) -> bool:
        """Whether the server answers a ping within `PING_TIMEOUT_S` on the probe connection
        (made now if there is none; closed if the ping fails, so no late answer is misread)."""
        try:
            if self._probe is None:
                self._probe = connect(self.address, self.authkey, timeout_s=PING_TIMEOUT_S)
            self._probe.send(("ping",))
            if self._probe.poll(PING_TIMEOUT_S):
                self._probe.recv()
                return True
        except (OSError, EOFError, AuthenticationError):
            pass
        self._close_probe()
        return False

    def _failure_text(self, server: ServerProcess, condition: str, how: str) -> str:
        if condition == "stopped":
            return f"{server} {how}; the call waiting on it is given up"
        return (
            f"{server} died ({how}); its objects are gone (a new create_named_object() in the "
            "main process starts a new server)"
        )

    def _send_batch(self) -> None:
        if not self._batch:
            return
        while self._in_flight and (
            len(self._in_flight) >= MAX_BATCHES_IN_FLIGHT
            or (self._conn is not None and self._conn.poll(0))
        ):
            self._read_one()
        batch, refs = self._batch, self._batch_refs
        self._batch, self._batch_refs = [], []
        self._in_flight.append(refs)
        try:
            self._send(("batch", batch))
        except BaseException:
            self._in_flight.pop()
            self._batch_refs = refs  # _broken() fails them
            raise

    def _broken(self, error: BaseException) -> ServerFailure:
        """The server is gone, stopped or stuck: every call in flight fails with the returned
        error, and the next call connects anew."""
        if isinstance(error, ServerFailure):
            failure = error
        elif isinstance(error, TimeoutError):
            failure = ServerFailure(f"the named-object server did not answer: {error}", "stuck")
        else:
            failure = ServerFailure(*self._describe(error))
        refs = [ref for batch in self._in_flight if batch for ref in batch] + self._batch_refs
        for ref in refs:
            ref._set("error", str(failure))
            # Every caller of `_broken` raises the failure: that reports these calls, not a
            # warning for each one whose result nobody reads.
            ref._read = True
        self._in_flight.clear()
        self._batch, self._batch_refs = [], []
        self.close()
        return failure

    def _describe(self, error: BaseException) -> tuple[str, str]:
        """What `error` (an `OSError`, `EOFError` or `AuthenticationError` of a connection to
        the server) says about the server, and the `ServerFailure.kind` of that."""
        server = self.server
        if server is not None and not isinstance(error, FileNotFoundError):
            # The server closed the connection (or refuses new ones): a server that died closes
            # its sockets a moment before its exit shows, so wait for that (bounded).
            condition, how = server.wait_for_exit(EXIT_SHOW_S)
            if condition != "alive":
                return self._failure_text(server, condition, how), _kind_of(condition)
            if not isinstance(error, ConnectionRefusedError):
                return (
                    f"{server} closed the connection while it runs ({type(error).__name__}: "
                    f"{error}); the next call connects anew",
                    "gone",
                )
        text = (
            "the named-object server is not running (it starts with the first "
            "create_named_object() in the main process, stops with Algorithm.stop(), and a new "
            "create_named_object() starts it again if it died): "
            f"{type(error).__name__}: {error}"
        )
        if on_ray.connected() and isinstance(error, (FileNotFoundError, ConnectionRefusedError)):
            text += (
                " (this is a Ray actor, and the named objects were created before the main "
                "process connected to Ray, so they live in a server on the main process's "
                "machine that other nodes cannot reach: call ray.init() before the first "
                "create_named_object(), or shutdown_named_objects() before creating them again)"
            )
        return text, "gone"

    def request(self, *message: Any) -> Any:
        """Sends `message` and waits for its reply (after those of earlier calls)."""
        with self._lock:
            try:
                self._send_batch()
                self._send(message)
                self._in_flight.append(None)
                while True:
                    status, value = self._read_one()
                    if not self._in_flight:
                        break
            except (OSError, EOFError, AuthenticationError, ServerFailure) as error:
                raise self._broken(error) from None
        if status == "error":
            raise NamedObjectError(value)
        return value

    def submit(self, *message: Any) -> ObjectRef:
        """Queues `message` without waiting; its reply is read later (`ObjectRef`)."""
        ref = ObjectRef(self)
        with self._lock:
            self._batch.append(message)
            self._batch_refs.append(ref)
            try:
                if len(self._batch) >= BATCH_SIZE:
                    self._send_batch()
                elif time.monotonic() >= self._next_remote_check:
                    self._check_still_served()
            except (OSError, EOFError, AuthenticationError, ServerFailure) as error:
                raise self._broken(error) from None
        return ref

    def _check_still_served(self) -> None:
        """Raises (`OSError`, `EOFError`) if the server is gone: without a connection the batch
        is sent now, which connects; with one, the replies already there are read, and a
        connection the server closed reads as an end of file. Cheap enough for `submit`,
        which calls it every `REMOTE_CHECK_INTERVAL_S`."""
        self._next_remote_check = time.monotonic() + REMOTE_CHECK_INTERVAL_S
        if self._conn is None:
            self._send_batch()
            return
        while self._in_flight and self._conn.poll(0):
            self._read_one()
        if not self._in_flight and self._conn.poll(0):
            self._conn.recv()  # nothing is owed: only the end of file can be read here

    def flush(self, until: ObjectRef | None = None) -> None:
        """Sends the batch and reads replies until `until` is answered (default: all). Raises
        `NamedObjectError` if the server is gone: the calls in flight are lost, and saying so
        beats a warning about a dropped call."""
        with self._lock:
            try:
                self._send_batch()
                while self._in_flight and (until is None or not until._done):
                    self._read_one()
            except (OSError, EOFError, AuthenticationError, ServerFailure) as error:
                raise self._broken(error) from None

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None
        self._close_probe()

    def _close_probe(self) -> None:
        if self._probe is not None:
            try:
                self._probe.close()
            except OSError:
                pass
            self._probe = None


def _kind_of(condition: str) -> str:
    """The `ServerFailure.kind` of a `ServerProcess.condition()` other than "alive"."""
    return "stopped" if condition == "stopped" else "gone"


class _Server:
    """The main process's handle on the server process."""

    def __init__(self, address: Any, authkey: bytes):
        self.address, self.authkey = address, authkey
        self.process = spawn("trainer.named_objects.server", stdin=subprocess.PIPE)
        # The address, key and import path go through stdin: the key never shows in `ps`.
        stdin = self.process.stdin
        if stdin is None:  # spawned with stdin=PIPE
            raise NamedObjectError("the named-object server has no input pipe")
        stdin.write(cloudpickle.dumps((address, authkey, list(sys.path))))
        stdin.close()
        self._finalizer = weakref.finalize(self, end_process, self.process, terminate_first=True)
        self.watch = ServerProcess(self.process.pid, self.process)
        #: The process that started it, the only one that may wait for it (a process forked
        #: from this one inherits this object, not the child).
        self.parent_pid = os.getpid()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self.answers(HANDSHAKE_TIMEOUT_S):
            # Not listening yet (no socket file, or the one of a server before it that died),
            # or a handshake that a busy machine delayed past its deadline: try again.
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise NamedObjectError(
                    "the named-object server did not start (exit code "
                    f"{self.process.poll()}) within {STARTUP_TIMEOUT_S} s"
                )
            time.sleep(0.005)

    def answers(self, timeout_s: float) -> bool:
        """Whether it accepts a connection and answers a ping on it within `timeout_s` (each)."""
        try:
            probe = connect(self.address, self.authkey, timeout_s=timeout_s)
        except (OSError, EOFError, AuthenticationError):
            return False
        try:
            probe.send(("ping",))
            return probe.poll(timeout_s) and probe.recv()[0] == "ok"
        except (OSError, EOFError):
            return False
        finally:
            probe.close()

    def stop(self) -> None:
        self._finalizer()

    def is_alive(self) -> bool:
        """False once it exited, or is certain to (killed, exiting: it serves nothing again)."""
        return self.watch.condition()[0] in ("alive", "stopped")


def _popen_of(pid: int | None) -> subprocess.Popen | None:
    """The server's `Popen` if this process started the server `pid` (the main process)."""
    server = _server
    if (
        server is not None
        and pid is not None
        and server.process.pid == pid
        and server.parent_pid == os.getpid()
    ):
        return server.process
    return None


# -- this process's state --------------------------------------------------------------------
_lock = threading.Lock()
_settings: dict | None = None  # {"address", "authkey", "ray"}: chosen by the main process
_server: _Server | None = None
_connection: _Connection | on_ray.RayConnection | None = None


def client_settings() -> dict:
    """Where this process's named objects are served (chosen now, served once used); sent to
    every EnvRunner process when it starts. "ray" is set when this process is connected to Ray
    the first time this is asked (after start, `shutdown_named_objects()` or `ray.shutdown()`):
    then named objects are Ray named actors (`trainer.named_objects.on_ray`) in its namespace."""
    global _settings, _connection
    with _lock:
        if _settings is None:
            # A socket file in a new directory only this user can enter (mkdtemp makes it
            # 0700): other local users cannot even connect. (Linux's abstract socket names have
            # no permissions at all.)
            directory = tempfile.mkdtemp(prefix="localrl-named-")
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            _settings = {
                "address": os.path.join(directory, "server.sock"),
                "authkey": os.urandom(32),
                "ray": None,
            }
        if _settings["ray"] and not on_ray.connected():
            # ray.shutdown() here ended this process's Ray named actors (a driver's actors end
            # with it): decided anew.
            _settings["ray"], _connection = None, None
        if _settings["ray"] is None and _server is None:
            _settings["ray"] = on_ray.settings_of_this_process() if on_ray.connected() else False
        return _settings


def configure_client(settings: dict | None) -> None:
    """Called in EnvRunner processes with the main process's `client_settings()`."""
    global _settings, _connection
    with _lock:
        _settings = settings
        _connection = None


def _get_connection() -> _Connection | on_ray.RayConnection:
    global _connection
    with _lock:
        if _connection is None:
            if _settings is None:
                raise NamedObjectError(
                    "no named objects exist: create one with "
                    "create_named_object(name, factory) in the main process"
                )
            if _settings.get("ray"):
                _connection = on_ray.RayConnection(_settings["ray"], CALL_TIMEOUT_S)
            else:
                _connection = _Connection(_settings["address"], _settings["authkey"])
        return _connection


def _replace_server_if_dead(settings: dict) -> None:
    """Starts the server if there is none, or a new one in place of one that exited or is
    certain to (killed, crashed: its objects are gone) at the same address, which every
    EnvRunner already knows. Called under `_lock`."""
    global _server, _connection
    if _server is not None and not _server.is_alive():
        _server.stop()  # reaps it (a killed one still exiting is waited for, bounded)
        logger.warning(
            "the named-object server had exited (%s); starting a new one",
            _server.watch.condition()[1],
        )
        _server = None
        if _connection is not None:
            _connection.close()
            _connection = None
    if _server is None:
        _server = _Server(settings["address"], settings["authkey"])


def _settle_server(settings: dict, failure: ServerFailure, deadline: float) -> None:
    """After `failure` of a request in the main process: waits until the server either answers
    a ping (then the next request uses a new connection) or shows that it exited (then a new
    one is started), until `deadline` (`time.monotonic()`). A server that was killed is seen as
    such at once on Linux (a pending SIGKILL); elsewhere its refused connections are waited out
    here. Raises `ServerFailure` for a stopped server, or one that does neither in time. Called
    under `_lock`."""
    global _connection
    while True:
        server = _server
        if server is None or not server.is_alive():
            _replace_server_if_dead(settings)
            return
        if server.watch.condition()[0] == "stopped":
            raise ServerFailure(str(failure), "stopped")
        if server.answers(HANDSHAKE_TIMEOUT_S):
            logger.warning(
                "a request to the named-object server failed (%s) while it runs and answers; "
                "retrying once on a new connection",
                failure,
            )
            if _connection is not None:
                _connection.close()
            return
        if time.monotonic() > deadline:
            raise ServerFailure(
                f"{failure} (and the server process, pid {server.process.pid}, neither "
                f"answered nor exited within {STARTUP_TIMEOUT_S:g} s)"
            )
        time.sleep(0.01)


def create_named_object(
    name: str, factory: Any, *args: Any, get_if_exists: bool = False, **kwargs: Any
) -> NamedObject:
    """Creates `factory(*args, **kwargs)` (a class, usually) in the server process under
    `name` and returns a handle to it. Starts the server on first use, and a new one in place
    of one that died. Raises `ValueError` if `name` is taken (unless `get_if_exists`: then the
    existing object's handle)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"create_named_object(name={name!r}): name must be a non-empty string")
    settings = client_settings()
    payload = cloudpickle.dumps((factory, args, kwargs))
    if settings["ray"]:  # a Ray named actor, reachable from every node
        connection = _get_connection()
        if not isinstance(connection, on_ray.RayConnection):  # settings["ray"] makes one
            raise NamedObjectError("named objects on Ray: no Ray connection")
        return _named_handle(name, connection.create(name, factory, payload), get_if_exists)
    with _lock:
        _replace_server_if_dead(settings)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        try:
            created = _get_connection().request("create", name, payload, get_if_exists)
            break
        except ServerFailure as failure:  # not the factory's error: the server did not answer
            # A "gone" failure: a server killed a moment ago passed the check above (on a busy
            # machine, or where no pending SIGKILL can be seen), or a busy machine delayed the
            # connection's handshake past its deadline. Either way the request did not run:
            # settle whether the server runs or ends, then try again on a new connection or a
            # new server. A stopped or stuck server is reported as it is.
            if failure.kind != "gone" or time.monotonic() > deadline:
                raise
            with _lock:
                _settle_server(settings, failure, deadline)
    return _named_handle(name, created, get_if_exists)


def _named_handle(name: str, created: bool, get_if_exists: bool) -> NamedObject:
    if not created and not get_if_exists:
        raise ValueError(
            f"create_named_object(name={name!r}): the name is taken; use "
            "get_named_object(name), or get_if_exists=True"
        )
    return NamedObject(name)


def get_named_object(name: str) -> NamedObject:
    """The handle to the object created under `name` (from any process of this training).
    Raises `ValueError` naming the existing objects if there is none by that name."""
    connection = _get_connection()
    if name in connection.known_names:  # names stay until the server stops: no round trip
        return NamedObject(name)
    names = connection.request("names")
    connection.known_names.update(names)
    if name not in names:
        raise ValueError(
            f"get_named_object({name!r}): no named object by that name; existing: {names}"
        )
    return NamedObject(name)


def kill_named_object(name: str) -> None:
    """Ends the named object `name` at once (Ray's `ray.kill(actor)`): it is dropped where it
    lives (a Ray actor is killed), later calls on it fail and its name is free. Killing one
    that is already gone does nothing, as in Ray."""
    connection = _get_connection()
    if isinstance(connection, on_ray.RayConnection):
        connection.kill(name)
        return
    connection.request("kill", name)
    connection.known_names.discard(name)


def shutdown_named_objects() -> None:
    """Stops the server, or ends the Ray named actors this process created (their objects are
    gone). A later `create_named_object` starts anew, on Ray if this process is connected to it
    by then."""
    global _server, _connection
    with _lock:
        server, _server = _server, None
        connection, _connection = _connection, None
        if _settings is not None:
            _settings["ray"] = None  # decided again by the next client_settings()
    if isinstance(connection, on_ray.RayConnection):
        connection.kill_created()
    elif connection is not None:
        connection.close()
    if server is not None:
        server.stop()


class NamedObject:
    """A handle to a named object: `handle.method(*args)` runs the method where the object
    lives and returns its result. Handles pickle by name, so they can be captured in callbacks
    and env configs and used in EnvRunner processes."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, method: str) -> _Method:
        if method.startswith("_"):
            raise AttributeError(method)
        return _Method(self.name, method)

    def __reduce__(self) -> tuple[type[NamedObject], tuple[str]]:
        return (NamedObject, (self.name,))

    def __repr__(self) -> str:
        return f"NamedObject({self.name!r})"


class _Method:
    __slots__ = ("name", "method")

    def __init__(self, name: str, method: str):
        self.name = name
        self.method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _get_connection().request("call", self.name, self.method, args, kwargs)

    def remote(self, *args: Any, **kwargs: Any) -> ObjectRef:
        """Ray's spelling: sends the call without waiting for it; `get(ref)` waits and returns
        its result. Calls of one process still run in the order they were made."""
        return _get_connection().submit("call", self.name, self.method, args, kwargs)


# -- Ray's spelling --------------------------------------------------------------------------
class ActorClass:
    """What `@remote` makes of a class: `.options(name=...).remote(*args)` creates it as a
    named object, `.remote(*args)` under a fresh name."""

    def __init__(self, cls: type, name: str | None = None, get_if_exists: bool = False):
        self._cls = cls
        self._name = name
        self._get_if_exists = get_if_exists

    def options(
        self, *, name: str | None = None, get_if_exists: bool = False, **ignored: Any
    ) -> ActorClass:
        return ActorClass(self._cls, name, get_if_exists)

    def remote(self, *args: Any, **kwargs: Any) -> NamedObject:
        name = self._name or f"{self._cls.__name__}-{os.urandom(6).hex()}"
        return create_named_object(
            name, self._cls, *args, get_if_exists=self._get_if_exists, **kwargs
        )


def remote(cls: type) -> ActorClass:
    """Ray's `@ray.remote` for classes: see `ActorClass`."""
    if not isinstance(cls, type):
        raise TypeError(f"remote() takes a class here (named objects), got {cls!r}")
    return ActorClass(cls)


def get_actor(name: str) -> NamedObject:
    """Ray's `ray.get_actor(name)`: `get_named_object(name)`."""
    return get_named_object(name)


def get(refs: Any) -> Any:
    """Ray's `ray.get(ref)`: the result of a `.remote()` call (a list of refs: a list of
    results)."""
    if isinstance(refs, (list, tuple)):
        return [get(ref) for ref in refs]
    return refs.result() if isinstance(refs, ObjectRef) else refs


def wait(
    refs: list, *, num_returns: int = 1, timeout: float | None = None, fetch_local: bool = True
) -> tuple[list, list]:
    """Ray's `ray.wait(refs, num_returns=1, timeout=None)`: (ready refs, the others). Calls
    here run in order, so waiting reads replies in order until `num_returns` refs are done
    (or all, when `timeout` is 0: then only those already answered count)."""
    refs = list(refs)
    if not 0 < num_returns <= len(refs):
        raise ValueError(
            f"wait(num_returns={num_returns}): must be in 1..{len(refs)} (the number of refs)"
        )
    if timeout != 0:
        for ref in refs:
            if sum(1 for r in refs if not isinstance(r, ObjectRef) or r._done) >= num_returns:
                break
            if isinstance(ref, ObjectRef) and not ref._done:
                ref._connection.flush(until=ref)
    ready = [r for r in refs if not isinstance(r, ObjectRef) or r._done][:num_returns]
    return ready, [r for r in refs if not any(r is x for x in ready)]


def init(*args: Any, **kwargs: Any) -> None:
    """Ray's `ray.init()`: nothing to start here (the named-object server starts with the first
    named object, EnvRunners with `build()`)."""


def shutdown() -> None:
    """Ray's `ray.shutdown()`: `shutdown_named_objects()`."""
    shutdown_named_objects()


def is_initialized() -> bool:
    """Ray's `ray.is_initialized()`: always True here (nothing needs starting)."""
    return True


def server_running() -> bool:
    """Whether this process has started the named-object server, or created Ray named actors
    (and not stopped or ended them)."""
    connection = _connection
    return _server is not None or (
        isinstance(connection, on_ray.RayConnection) and bool(connection.created)
    )


def flush() -> None:
    """Waits until every `.remote()` call made by this process has run. EnvRunner processes do
    this before each reply, so what the main process reads includes their calls."""
    connection = _connection
    if connection is not None:
        connection.flush()
