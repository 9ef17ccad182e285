"""TCP_NODELAY on both ends of the HTTP connections of ``lorestore serve`` and remote mode:
without it on the server's sockets, each request on a reused connection waited ~40 ms for a
delayed ACK (Nagle's algorithm against a response written in two parts). Checked on the
sockets themselves, beside a plain socket that shows what the operating system gives."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.serving import Server, agent_server

from lorestore.transports.http.client import RemoteClient
from lorestore.transports.http.server import bind
from lorestore.transports.http.streaming_client import StreamingClient


def _nodelay(sock: socket.socket) -> bool:
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def _accepted(listener: socket.socket) -> bool:
    """Whether a connection accepted on ``listener`` has the option."""
    with socket.create_connection(listener.getsockname()[:2]):
        conn, _ = listener.accept()
        with conn:
            return _nodelay(conn)


def test_the_servers_accepted_connections_do_not_wait_for_acks() -> None:
    with socket.create_server(("127.0.0.1", 0)) as plain, bind("127.0.0.1", 0) as listener:
        assert not _accepted(plain)  # the default: Nagle on, which stalled every request
        assert _accepted(listener)


@pytest.fixture
def server(home: Path) -> Iterator[tuple[Server, str]]:
    with agent_server(home) as served:
        yield served


@pytest.mark.slow
def test_remote_clients_connect_without_nagle_too(server: tuple[Server, str]) -> None:
    """httpcore sets the option on the sockets it opens; remote mode relies on it."""
    served, token = server
    for client in (RemoteClient(served.url, token)._http, StreamingClient(served.url, token)._http):
        with client.stream("GET", "/healthz") as response:
            assert response.status_code == 200
            stream = response.extensions["network_stream"]
            assert _nodelay(stream.get_extra_info("socket"))
