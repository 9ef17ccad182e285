"""The HTTP server under test: in process (Starlette's TestClient on the real application) for
most REST behaviour, and as a real ``lorestore serve`` process on a loopback port for end-to-end
tests, with the clients that talk to it: REST over httpx2, MCP through the official SDK."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.testclient import TestClient

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams
from lorestore.service import LessonService
from lorestore.transports.http.app import build_app

EXE = str(Path(sys.executable).parent / "lorestore")
START_DEADLINE_SECONDS = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def base_env(home: Path, **env: str) -> dict[str, str]:
    """The environment of a child process: the test's home, no inherited lorestore settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LORESTORE_")}
    return {**clean, "LORESTORE_HOME": str(home), **env}


class Server:
    """``lorestore serve`` on a free port; stdout and stderr are kept for inspection."""

    def __init__(self, home: Path, *args: str, **env: str) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env.setdefault("LORESTORE_MAINTENANCE_HOURS", "off")
        self.process = subprocess.Popen(
            [EXE, "serve", "--port", str(self.port), *args],
            env=base_env(home, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout = ""
        self.stderr = ""
        self._wait_until_healthy()

    def _wait_until_healthy(self) -> None:
        # Waiting for readiness, not asserting on time: the deadline only stops a broken start.
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise AssertionError(f"server exited at start:\n{self.stderr}")
            try:
                if httpx2.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx2.TransportError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError(f"server did not become healthy:\n{self.stderr}")

    def rest(self, token: str | None, **headers: str) -> httpx2.Client:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx2.Client(base_url=self.url, headers=headers, timeout=30)

    def call(self, method: str, path: str, token: str | None, **kw: Any) -> httpx2.Response:
        """One request on a connection of its own."""
        with self.rest(token) as http:
            return http.request(method, path, **kw)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        out, err = self.process.communicate(timeout=60)
        self.stdout += out
        self.stderr += err
        return self.process.returncode

    def log_records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stderr.splitlines() if line.strip()]


@contextlib.contextmanager
def agent_server(home: Path) -> Iterator[tuple[Server, str]]:
    """A real ``lorestore serve`` on the store at ``home`` (no first-start admin token) and a
    write token of the store's person, minted before it starts: an agent's view of it."""
    service = build_service(load_settings())
    params = TokenCreateParams.model_validate({"name": "agent", "permission": "write"})
    token = service.token_create(local_actor(), params).token
    service.store.close()
    server = Server(home, "--no-admin-token")
    try:
        yield server, token
    finally:
        server.stop()


@asynccontextmanager
async def mcp_client(
    url: str, token: str | None, *, statuses: list[int] | None = None, path: str = "/mcp"
) -> AsyncIterator[Client]:
    """The SDK's client over streamable HTTP, sending the token as a bearer header; the HTTP
    statuses it receives are appended to ``statuses``."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    seen = statuses if statuses is not None else []

    async def record(response: httpx2.Response) -> None:
        seen.append(response.status_code)

    async with (
        httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]}) as http,
        Client(streamable_http_client(url + path, http_client=http)) as client,
    ):
        yield client


async def mcp_refusal(url: str, token: str | None, path: str = "/mcp") -> list[int]:
    """Connect and list tools, expecting the server to refuse; returns the statuses seen."""
    statuses: list[int] = []
    try:
        async with mcp_client(url, token, statuses=statuses, path=path) as client:
            await client.list_tools()
    except Exception:  # the SDK wraps the HTTP refusal in an exception group
        return statuses
    raise AssertionError(f"the MCP server accepted {token!r} at {path}")


@dataclasses.dataclass
class Api:
    """The application in process (Starlette's TestClient), with an admin token."""

    client: TestClient
    service: LessonService
    token: str

    def mint(self, **kw: Any) -> str:
        kw.setdefault("name", "test")
        return self.service.token_create(local_actor(), TokenCreateParams(**kw)).token

    def post(self, name: str, body: Any = None, token: str | None = None, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {token or self.token}", **kw.pop("headers", {})}
        return self.client.post(f"/api/v1/{name}", json=body, headers=headers, **kw)

    def get(self, name: str, token: str | None = None, **params: Any) -> Any:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        return self.client.get(f"/api/v1/{name}", params=params, headers=headers)

    def ok(self, name: str, body: Any = None, **kw: Any) -> dict[str, Any]:
        response = self.post(name, body, **kw)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result


def make_api(home: Path, **settings: Any) -> Iterator[Api]:
    """The application in process on the store of LORESTORE_HOME (``home``), maintenance off,
    with an admin token; ``settings`` override fields of the loaded Settings."""
    config = dataclasses.replace(load_settings(), maintenance_hours=None, **settings)
    service = build_service(config)
    admin = TokenCreateParams.model_validate({"name": "admin", "permission": "admin"})
    token = service.token_create(local_actor(), admin).token
    with TestClient(build_app(service, config), base_url="http://127.0.0.1") as client:
        yield Api(client, service, token)
    service.store.close()


def backend_api(request: Any, home: Path, monkeypatch: Any, **settings: Any) -> Iterator[Api]:
    """``make_api`` on the backend a fixture is parametrised with (``sqlite`` or ``postgres``:
    a pooled database, reached as the application role); ``settings`` as for ``make_api``."""
    if request.param == "postgres":
        from tests.migrating import pg_url

        template = request.getfixturevalue("pg_template")
        name = request.getfixturevalue("pg_database")
        monkeypatch.setenv("LORESTORE_DATABASE_URL", pg_url(template.app_url(name)))
    yield from make_api(home, **settings)


def api_on_both_backends() -> Any:
    """A module's ``api`` fixture (``api = api_on_both_backends()``): ``backend_api`` on
    SQLite and on PostgreSQL, each test run on both."""

    @pytest.fixture(params=["sqlite", "postgres"])
    def api(request: Any, home: Path, monkeypatch: Any) -> Iterator[Api]:
        yield from backend_api(request, home, monkeypatch)

    return api


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()["error"]
    assert set(body) <= {"code", "message", "hint", "details"}
    return body
