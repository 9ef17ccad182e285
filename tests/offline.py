"""The network, blocked for the test process: a connect to anything but this machine fails
at once (loopback TCP, for PostgreSQL and the test servers, and Unix sockets stay open), so a
test that would reach the network, a model download included, fails instead of passing on a
machine that happens to be online."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


class NetworkBlockedError(OSError):
    """A test process tried to reach another machine."""


def _local(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # a Unix socket's path
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False  # a name: it would be resolved and reached over the network


@contextmanager
def network_blocked() -> Iterator[None]:
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not _local(address):
            raise NetworkBlockedError(f"tests run offline: connect to {address!r} refused")
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if not _local(address):
            raise NetworkBlockedError(f"tests run offline: connect to {address!r} refused")
        return connect_ex(self, address)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", guarded_connect)
        patch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
        yield
