"""`ray._common.network_utils` under the RLlib launcher: Ray's helpers for host:port strings,
which RLlib's examples use to name the address of a server they start (Ray Serve's HTTP port,
an external simulator's TCP port). Ray's own are C++ bindings (`ray._raylet`); these give the
same answers for addresses written as literals. A host name is not looked up: `is_ipv6`
answers True only for an IPv6 literal (Ray resolves a name, and answers True where it
resolves to IPv6 only)."""

from __future__ import annotations

import ipaddress
import socket
from contextlib import closing


def is_ipv6(host: str) -> bool:
    """Whether `host` is an IPv6 address literal ("::1", "fe80::1%eth0"; not "[::1]")."""
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False


def is_localhost(host: str) -> bool:
    """Whether `host` names this machine's loopback: "localhost", 127.0.0.0/8 or "::1"."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def get_localhost_ip() -> str:
    """The loopback address Ray uses for "localhost"."""
    return "127.0.0.1"


def build_address(host: str, port: int | str) -> str:
    """`host:port`, with a host that holds a colon (an IPv6 address) in brackets:
    `[::1]:8000` (as Ray's, a host given in brackets gets a second pair)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_address(address: str) -> tuple[str, str] | None:
    """(host, port) of `host:port` or `[ipv6]:port`, both strings; None where `address` has no
    port or is a bare IPv6 address (whose colons cannot be told from the port's)."""
    if address.startswith("["):
        host, bracket, port = address[1:].partition("]:")
        return (host, port) if bracket else None
    if address.count(":") != 1:
        return None
    host, _, port = address.partition(":")
    return host, port


def find_free_port(family: socket.AddressFamily = socket.AF_INET) -> int:
    """A TCP port free on this machine now (the system picks it)."""
    with closing(socket.socket(family, socket.SOCK_STREAM)) as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


__all__ = [
    "build_address",
    "find_free_port",
    "get_localhost_ip",
    "is_ipv6",
    "is_localhost",
    "parse_address",
]
