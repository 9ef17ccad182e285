"""A server runs its requests' service calls on as many worker threads as its store serves
best (two on SQLite, whose calls hold the GIL; the pool's connections on PostgreSQL), and a
long call does not take their turns: imports whose bodies are still arriving leave every
other request answered, and an operation the catalog marks long-running (the audit chains'
verification) waits for a long call's turn, not a short one's. Through the real
application, and a real `lorestore serve`."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.to_thread import current_default_thread_limiter
from starlette.testclient import TestClient
from tests.pg import Template
from tests.portable import header, lesson, line
from tests.serving import Server, agent_server

from lorestore.config import load_settings
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.sqlite import SQLiteStore
from lorestore.transports.http.app import build_app

IMPORTS = 3  # more than SQLite's two worker threads


def _tokens(service: LessonService) -> int:
    with TestClient(build_app(service, load_settings())) as client:
        assert client.portal is not None
        return int(client.portal.call(lambda: current_default_thread_limiter().total_tokens))


def test_the_worker_threads_are_sized_for_the_store(
    home: Path, pg_template: Template, pg_database: str
) -> None:
    sqlite = LessonService(SQLiteStore(home / "threads.db"))
    assert _tokens(sqlite) == SQLiteStore.concurrent_calls == 2  # anyio's default is 40
    sqlite.store.close()
    pg = LessonService(PostgresStore(pg_template.app_url(pg_database), max_size=6))
    assert _tokens(pg) == 6  # the pool's connections
    pg.store.close()


@pytest.fixture
def served(home: Path) -> Iterator[tuple[Server, str]]:
    with agent_server(home) as server:
        yield server


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _begin_import(port: int, token: str) -> socket.socket:
    """An import whose body has begun (its header line) and waits for the rest."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(
        (
            "POST /api/v1/memory_import HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\r\n"
        ).encode()
        + _chunk(header() + b"\n")
    )
    return sock


def _finish_imports(waiting: list[socket.socket], prefix: str) -> list[dict[str, object]]:
    """Every import's body ended first, then each answer read: an import that has no turn yet
    (more imports than the long calls' turns) gets one as the others end, whichever of them
    the server took first."""
    for n, sock in enumerate(waiting):
        key = f"{prefix}{n}"
        sock.sendall(_chunk(line(lesson(key, f"imported while others read: {key}")) + b"\n"))
        sock.sendall(b"0\r\n\r\n")
    return [_answer(sock) for sock in waiting]


def _answer(sock: socket.socket) -> dict[str, object]:
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
        part = sock.recv(65536)
        if not part:
            break
        answer += part
    sock.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), answer[:300]
    if b"chunked" in head.lower():  # the JSON between the chunk sizes
        body = b"".join(body.split(b"\r\n")[1::2])
    result: dict[str, object] = json.loads(body)
    return result


@pytest.mark.slow
def test_imports_waiting_on_their_bodies_leave_other_requests_answered(
    served: tuple[Server, str],
) -> None:
    server, token = served
    waiting = [_begin_import(server.port, token) for _ in range(IMPORTS)]
    try:
        # Each import now holds a thread, reading its body as it comes: on the short requests'
        # two threads, these reads would wait behind them until the client's timeout.
        for _ in range(3):
            listed = server.call("GET", "/api/v1/memory_scopes", token)
            assert listed.status_code == 200, listed.text
    finally:
        results = _finish_imports(waiting, "k")
    # The control: the imports were running all along, and land once their bodies end.
    assert [r["lessons"]["added"] for r in results] == [1] * IMPORTS  # type: ignore[index]


@pytest.mark.slow
def test_a_long_running_operation_takes_a_long_calls_turn(served: tuple[Server, str]) -> None:
    server, token = served
    waiting = [_begin_import(server.port, token) for _ in range(2)]  # both long turns taken
    answers: list[int] = []
    verifying = threading.Thread(
        target=lambda: answers.append(
            server.call("POST", "/api/v1/audit_verify", token, json={}).status_code
        )
    )
    try:
        verifying.start()
        for _ in range(3):  # the short requests' turns are free
            assert server.call("GET", "/api/v1/memory_scopes", token).status_code == 200
        # On a short turn the verification of this small store ends in milliseconds; it
        # waits for an import to end instead.
        verifying.join(timeout=2)
        assert verifying.is_alive() and answers == []
    finally:
        results = _finish_imports(waiting, "v")
    verifying.join(timeout=60)
    assert answers == [200]  # the control: it ran once a long turn came free
    assert [r["lessons"]["added"] for r in results] == [1, 1]  # type: ignore[index]
