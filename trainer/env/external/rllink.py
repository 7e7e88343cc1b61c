"""RLlib's RLlink protocol: how an external simulator (a game engine, a robot, a process in
any language) and an EnvRunner talk over one TCP connection.

A message is an 8-byte header, the body's length as zero-padded ASCII digits, then the body:
a msgpack map with a "type" (an `RLlink` name) and the message's fields. Numpy arrays travel
as msgpack_numpy writes them (a map of b"nd", b"type", b"kind", b"shape", b"data"), so a client
using RLlib's own `send_rllink_message` / `get_rllink_message` talks to this server unchanged.

The conversation (client -> server, then server's answer):

- PING -> PONG (the handshake);
- GET_CONFIG -> SET_CONFIG {"config": the pickled AlgorithmConfig};
- GET_STATE -> SET_STATE {"state": {"rl_module": weights, "weights_seq_no": n}};
- EPISODES {"episodes": [episode states], "timesteps": n}: no answer;
- EPISODES_AND_GET_STATE: the same, then the client waits for the SET_STATE that follows the
  next training step (on-policy sampling).

Differences from RLlib, on hostile input: an object array (msgpack_numpy pickles those) is
never unpickled; it is read as None. A header that is not digits, or a body that is not a map
with a known "type", is a `ConnectionError`, as a lost peer is.
"""

from __future__ import annotations

import socket
from enum import Enum
from typing import Any

import numpy as np
import ormsgpack

from trainer.util.msgpack_numpy import PickledArray, from_map, is_numpy_map, to_map

#: Bytes in a message's length header.
HEADER_BYTES = 8


class RLlink(Enum):
    """The message types (RLlib's names and values)."""

    # Requests: client (external env) -> server (EnvRunner).
    PING = "PING"
    EPISODES = "EPISODES"
    GET_STATE = "GET_STATE"
    GET_CONFIG = "GET_CONFIG"
    EPISODES_AND_GET_STATE = "EPISODES_AND_GET_STATE"
    # Responses: server -> client.
    PONG = "PONG"
    SET_STATE = "SET_STATE"
    SET_CONFIG = "SET_CONFIG"
    # RLlib's old API stack (PolicyServerInput): named so that they parse, never served.
    ACTION_SPACE = "ACTION_SPACE"
    OBSERVATION_SPACE = "OBSERVATION_SPACE"
    GET_WORKER_ARGS = "GET_WORKER_ARGS"
    GET_WEIGHTS = "GET_WEIGHTS"
    REPORT_SAMPLES = "REPORT_SAMPLES"
    START_EPISODE = "START_EPISODE"
    GET_ACTION = "GET_ACTION"
    LOG_ACTION = "LOG_ACTION"
    LOG_RETURNS = "LOG_RETURNS"
    END_EPISODE = "END_EPISODE"

    def __str__(self) -> str:
        return self.name


def _encode(obj: Any) -> Any:
    """msgpack-numpy's map of a numpy array or scalar (ormsgpack's `default` hook)."""
    if isinstance(obj, (np.ndarray, np.generic)):
        return to_map(obj)
    raise TypeError(f"{type(obj).__name__} cannot travel over RLlink")


def _decode(obj: Any) -> Any:
    """The message with msgpack-numpy's maps turned back into arrays and scalars (an object
    array, which msgpack-numpy pickles, is None: never unpickled); every other bytes key
    becomes text."""
    if isinstance(obj, list):
        return [_decode(item) for item in obj]
    if not isinstance(obj, dict):
        return obj
    if is_numpy_map(obj):
        try:
            return from_map(obj)
        except PickledArray:
            return None
    return {
        (key.decode("utf-8", "replace") if isinstance(key, bytes) else key): _decode(value)
        for key, value in obj.items()
    }


def pack(message: dict) -> bytes:
    """A message's bytes on the wire: header and body."""
    body = ormsgpack.packb(message, default=_encode, option=ormsgpack.OPT_NON_STR_KEYS)
    if len(body) >= 10**HEADER_BYTES:
        raise ValueError(f"an RLlink message holds at most {10**HEADER_BYTES - 1} bytes")
    return str(len(body)).zfill(HEADER_BYTES).encode("ascii") + body


def unpack(body: bytes) -> tuple[RLlink, dict]:
    """A message body's type and fields; `ConnectionError` for anything else."""
    try:
        message = _decode(ormsgpack.unpackb(body, option=ormsgpack.OPT_NON_STR_KEYS))
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError) as error:
        raise ConnectionError(f"RLlink protocol error: the body is not msgpack ({error})") from None
    if not isinstance(message, dict) or "type" not in message:
        raise ConnectionError("RLlink protocol error: the message has no `type` field")
    kind = message.pop("type")
    try:
        return RLlink(kind), message
    except ValueError:
        raise ConnectionError(
            f"RLlink protocol error: unknown message type {kind!r}; "
            f"known: {[member.value for member in RLlink]}"
        ) from None


def send_rllink_message(sock_: socket.socket, message: dict) -> None:
    """Sends `message` (a dict with a "type") on `sock_`; `ConnectionError` when it cannot."""
    data = pack(message)
    try:
        sock_.sendall(data)
    except OSError as error:
        raise ConnectionError(
            f"Error sending RLlink message {message.get('type')} on socket {sock_}: {error}"
        ) from error


def get_rllink_message(sock_: socket.socket) -> tuple[RLlink, dict]:
    """The next message on `sock_`: its type and its fields. `ConnectionError` when the peer
    is gone or breaks the protocol."""
    header = _get_num_bytes(sock_, HEADER_BYTES)
    if not header.isdigit():
        raise ConnectionError(f"RLlink protocol error: the length header {header!r} is not digits")
    return unpack(_get_num_bytes(sock_, int(header)))


def _get_num_bytes(sock_: socket.socket, num_bytes: int) -> bytes:
    chunks, received = [], 0
    while received < num_bytes:
        try:
            packet = sock_.recv(min(num_bytes - received, 1 << 20))
        except OSError as error:
            raise ConnectionError(f"Error receiving from socket {sock_}: {error}") from error
        if not packet:
            raise ConnectionError(f"The peer closed socket {sock_}")
        chunks.append(packet)
        received += len(packet)
    return b"".join(chunks)
