"""End to end against a real ``lorestore serve`` process on a loopback port: the SDK's MCP
client over streamable HTTP and a REST client run the same scenario and see the same results;
refused tokens (wrong, revoked, expired, in the URL, out of scope, too weak) each beside one
that works; the first-start admin token; JSON request logs; graceful shutdown."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.conftest import Clock
from tests.serving import EXE, Server, base_env, mcp_client, mcp_refusal

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import (
    AuditParams,
    ChangeParams,
    NoParams,
    TokenCreateParams,
    TokenRevokeParams,
    WriteParams,
)
from lorestore.service import LessonService, utcnow

pytestmark = pytest.mark.slow
S = "repo::acme/app"
OTHER = "repo::other/app"


@dataclass
class Served:
    server: Server
    service: LessonService
    admin: str

    def mint(self, **kw: Any) -> str:
        kw.setdefault("name", "test")
        return self.service.token_create(local_actor(), TokenCreateParams(**kw)).token

    def rest(self, name: str, body: Any = None, token: str | None = None) -> Any:
        with self.server.rest(token or self.admin) as http:
            return http.post(f"/api/v1/{name}", json=body)

    def ok(self, name: str, body: Any = None, token: str | None = None) -> dict[str, Any]:
        response = self.rest(name, body, token)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result


@pytest.fixture
def served(home: Path) -> Iterator[Served]:
    service = build_service(load_settings())
    admin = service.token_create(local_actor(), TokenCreateParams(name="admin", permission="admin"))  # type: ignore[call-arg]
    server = Server(home, "--no-admin-token")
    yield Served(server, service, admin.token)
    server.stop()
    service.store.close()


async def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    payload: dict[str, Any] = result.structured_content or {}
    return {"error": payload["error"]} if result.is_error else payload


SCENARIO: list[tuple[str, dict[str, Any]]] = [
    ("memory_write", {"scope": S, "key": "pg", "value": "Tests need Postgres 15", "tags": ["db"]}),
    ("memory_write", {"scope": S, "key": "ci", "value": "CI caches the Postgres image"}),
    ("memory_write", {"scope": S, "key": "pg", "value": "Tests need Postgres 16"}),
    ("memory_read", {"scope": S, "key": "pg"}),
    ("memory_search", {"query": "postgres", "scopes": [S]}),
    ("memory_archive", {"scope": S, "key": "ci", "reason": "moved to the wiki"}),
    ("memory_read", {"scope": S, "key": "ci"}),
    ("memory_history", {"scope": S, "key": "pg"}),
    ("memory_list", {"scope": S}),
    ("memory_audit", {"scope": S}),
    ("memory_write", {"scope": "repo:acme/app", "key": "k", "value": "v"}),
]
_VOLATILE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # ids
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z"  # times
    r"|[0-9a-f]{64}"  # audit hashes (they cover the times)
    r"|(?<=lorestore search )[0-9a-f]{16}"  # a search's id (it covers the lessons' ids)
)


def normalised(results: list[dict[str, Any]]) -> list[Any]:
    """Ids, times and hashes differ between two stores; everything else must not."""
    text = json.dumps(results, sort_keys=True)
    seen: dict[str, str] = {}
    text = _VOLATILE.sub(lambda m: seen.setdefault(m.group(), f"<{len(seen)}>"), text)
    return list(json.loads(text))


def test_mcp_and_rest_run_the_same_scenario_with_equal_results(tmp_path: Path) -> None:
    """The scenario runs once over MCP and once over REST, each on a fresh server with the
    same token name, so that even search scores must come out the same."""
    by_surface: dict[str, list[dict[str, Any]]] = {}
    for surface in ("mcp", "rest"):
        home = tmp_path / surface
        service = build_service(load_settings({"LORESTORE_HOME": str(home)}))
        admin = service.token_create(
            local_actor(), TokenCreateParams(name="admin", permission="admin")
        )  # type: ignore[call-arg]
        service.store.close()
        server = Server(home, "--no-admin-token")
        try:
            by_surface[surface] = anyio.run(run_scenario, surface, server, admin.token)
        finally:
            server.stop()
    assert normalised(by_surface["mcp"]) == normalised(by_surface["rest"])
    results = by_surface["rest"]
    assert [r.get("result") for r in results[:3]] == ["created", "created", "updated"]
    assert results[6]["error"]["code"] == "not_found"
    assert results[10]["error"]["code"] == "invalid_scope"
    assert len(results[7]["versions"]) == 2 and len(results[4]["hits"]) == 2


async def run_scenario(surface: str, server: Server, token: str) -> list[dict[str, Any]]:
    results = []
    if surface == "rest":
        with server.rest(token) as http:
            for name, arguments in SCENARIO:
                results.append(http.post(f"/api/v1/{name}", json=arguments).json())
        return results
    async with mcp_client(server.url, token) as mcp:
        for name, arguments in SCENARIO:
            results.append(await tool(mcp, name, **arguments))
    return results


def test_mcp_write_read_search_equal_rest(served: Served) -> None:
    """The other direction: what REST wrote and found, MCP reads and finds identically."""
    served.ok("memory_write", {"scope": S, "key": "k", "value": "flaky fixture in tests"})
    rest = {
        "read": served.ok("memory_read", {"scope": S, "key": "k"}),
        "search": served.ok("memory_search", {"query": "flaky", "scopes": [S]}),
        "history": served.ok("memory_history", {"scope": S, "key": "k"}),
    }
    got: dict[str, Any] = {}

    async def scenario() -> None:
        async with mcp_client(served.server.url, served.admin) as mcp:
            got["read"] = await tool(mcp, "memory_read", scope=S, key="k")
            got["search"] = await tool(mcp, "memory_search", query="flaky", scopes=[S])
            got["history"] = await tool(mcp, "memory_history", scope=S, key="k")

    anyio.run(scenario)
    assert got == rest


def expired_token(served: Served) -> str:
    past = LessonService(served.service.store, clock=Clock(utcnow() - timedelta(days=2)))
    params = TokenCreateParams(name="old", expires_days=1)  # type: ignore[call-arg]
    return past.token_create(local_actor(), params).token


def test_refused_tokens_each_beside_one_that_works(served: Served) -> None:
    revoked = served.service.token_create(local_actor(), TokenCreateParams(name="r"))  # type: ignore[call-arg]
    served.service.token_revoke(local_actor(), TokenRevokeParams(id=revoked.info.id))
    refused = {
        "missing": None,
        "wrong": "lst_" + "B" * 43,
        "revoked": revoked.token,
        "expired": expired_token(served),
    }
    url = served.server.url
    for why, token in refused.items():
        response = served.server.call("POST", "/api/v1/memory_scopes", token)
        assert response.status_code == 401, why
        assert response.json()["error"]["code"] == "unauthenticated", why
        assert 401 in anyio.run(mcp_refusal, url, token), why
    in_url = served.server.call("GET", f"/api/v1/memory_scopes?access_token={served.admin}", None)
    assert in_url.status_code == 401 and "Authorization" in in_url.json()["error"]["hint"]
    assert 401 in anyio.run(mcp_refusal, url, served.admin, f"/mcp?token={served.admin}")
    # Positive control: the admin token on both surfaces.
    assert served.rest("memory_scopes").status_code == 200

    async def works() -> None:
        async with mcp_client(url, served.admin) as mcp:
            assert "scopes" in await tool(mcp, "memory_scopes")

    anyio.run(works)


def test_permission_and_scope_apply_to_mcp_as_to_rest(served: Served) -> None:
    served.ok("memory_write", {"scope": S, "key": "k", "value": "inside"})
    served.ok("memory_write", {"scope": OTHER, "key": "k", "value": "outside"})
    confined = served.mint(permission="write", scopes=["repo::acme/*"])
    reader = served.mint(permission="read")
    assert served.rest("memory_read", {"scope": OTHER, "key": "k"}, confined).status_code == 403
    assert served.rest("memory_read", {"scope": S, "key": "k"}, confined).status_code == 200
    write = {"scope": S, "key": "k", "value": "changed"}
    assert served.rest("memory_write", write, reader).status_code == 403
    results: dict[str, Any] = {}

    async def scenario() -> None:
        async with mcp_client(served.server.url, confined) as mcp:
            results["outside"] = await tool(mcp, "memory_read", scope=OTHER, key="k")
            results["inside"] = await tool(mcp, "memory_read", scope=S, key="k")
            results["verify"] = await tool(mcp, "memory_verify", scope=S, key="k")
        async with mcp_client(served.server.url, reader) as mcp:
            results["write"] = await tool(mcp, "memory_write", **write)
            results["read"] = await tool(mcp, "memory_read", scope=S, key="k")

    anyio.run(scenario)
    assert results["outside"]["error"]["code"] == "forbidden"
    assert results["inside"]["lesson"]["value"] == "inside"
    assert results["verify"]["error"]["code"] == "forbidden"  # an agent's write token
    assert results["write"]["error"]["code"] == "forbidden"
    assert results["read"]["lesson"]["value"] == "inside"


def test_first_start_prints_an_admin_token_once(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    first = Server(home)
    assert first.stop() == 0
    assert f"lorestore serving {first.url}" in first.stdout
    tokens = re.findall(r"lst_[A-Za-z0-9_-]{20,}", first.stdout)
    assert tokens, first.stdout
    # The agent's line never carries the admin token: an agent gets a write token of its own.
    (agent_line,) = [line for line in first.stdout.splitlines() if "claude mcp add" in line]
    assert tokens[0] not in agent_line and "Bearer lst_..." in agent_line
    assert "--permission write" in first.stdout
    second = Server(home)
    try:
        with second.rest(tokens[0]) as http:
            assert http.post("/api/v1/token_list").json()["tokens"][0]["permission"] == "admin"
    finally:
        second.stop()
    # A live token exists: none is minted or shown; how to connect an agent still is.
    assert not re.findall(r"lst_[A-Za-z0-9_-]{20,}", second.stdout)
    assert "--permission write" in second.stdout
    assert tokens[0] not in first.stderr + second.stderr


def test_request_logs_are_json_without_secrets(served: Served) -> None:
    value = "the deploy key lives in vault path kv/ci"
    served.ok("memory_write", {"scope": S, "key": "k", "value": value})
    served.server.call("GET", f"/api/v1/memory_read?scope={S}&key=k&token={served.admin}", None)
    served.server.stop()
    records = served.server.log_records()
    requests = [r for r in records if r["event"] == "request"]
    assert {(r["path"], r["status"]) for r in requests} >= {
        ("/api/v1/memory_write", 200),
        ("/api/v1/memory_read", 401),
    }
    assert all({"ts", "level", "method", "duration_ms", "request_id"} <= set(r) for r in requests)
    for secret in (served.admin, value, "vault", "key=k"):
        assert secret not in served.server.stderr


def test_shutdown_finishes_the_request_in_flight(served: Served) -> None:
    body = json.dumps({"scope": S, "key": "late", "value": "written during shutdown"}).encode()
    head = (
        "POST /api/v1/memory_write HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {served.admin}\r\n"
        "Content-Type: application/json\r\nExpect: 100-continue\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", served.server.port), timeout=30) as sock:
        sock.sendall(head.encode())
        # "100 Continue" comes once the application asks for the body: the request is in flight.
        assert sock.recv(64).startswith(b"HTTP/1.1 100")
        served.server.process.send_signal(signal.SIGTERM)
        sock.sendall(body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert served.server.stop() == 0
    lesson = served.service.memory_read(local_actor(), _read(S, "late")).lesson
    assert lesson.value == "written during shutdown"


def _read(scope: str, key: str) -> Any:
    from lorestore.models import ReadParams

    return ReadParams.model_validate({"scope": scope, "key": key})


def test_a_taken_port_fails_without_announcing_or_minting(served: Served, tmp_path: Path) -> None:
    other = tmp_path / "other"
    service = build_service(load_settings({"LORESTORE_HOME": str(other)}))
    service.memory_write(local_actor(), WriteParams(scope="global", key="k", value="kept"))
    service.memory_archive(local_actor(), ChangeParams(scope="global", key="k"))
    events = len(service.memory_audit(local_actor(), AuditParams()).events)
    service.store.close()
    done = subprocess.run(
        [EXE, "serve", "--port", str(served.server.port)],
        # The maintenance sweep on (purging everything archived): it must not run either.
        env=base_env(other, LORESTORE_ARCHIVE_RETENTION_DAYS="0"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "lorestore serving" not in done.stdout and "lst_" not in done.stdout
    assert "config_error" in done.stderr and "address already in use" in done.stderr.lower()
    service = build_service(load_settings({"LORESTORE_HOME": str(other)}))
    assert service.token_list(local_actor(), NoParams()).tokens == []  # nothing was minted
    assert len(service.memory_audit(local_actor(), AuditParams()).events) == events  # no sweep
    service.store.close()
    bad = subprocess.run(
        [EXE, "serve", "--port", "99999"],
        env=base_env(other),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_client_that_leaves_mid_import_is_not_a_server_error(served: Served) -> None:
    line = (
        '{"type":"lesson","id":"11111111-1111-4111-8111-%012d","scope":"global","key":"k%d",'
        '"value":"v","version":1,"recorded_at":"2026-01-01T00:00:00Z",'
        '"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}\n'
    )
    body = "".join(line % (n, n) for n in range(1, 2101)).encode()
    head = (
        "POST /api/v1/memory_import HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {served.admin}\r\n"
        f"Content-Type: application/x-ndjson\r\nContent-Length: {len(body) * 10}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", served.server.port), timeout=30) as sock:
        sock.sendall(head.encode() + body)  # a tenth of what it announced, then gone
    # The positive control: the server still imports a whole body and answers.
    whole = line % (9999, 9999)
    with served.server.rest(served.admin) as http:
        answer = http.post(
            "/api/v1/memory_import",
            content=whole,
            headers={"Content-Type": "application/x-ndjson"},
        )
    assert answer.status_code == 200 and answer.json()["lessons"]["added"] == 1
    served.server.stop()
    imports = [
        r
        for r in served.server.log_records()
        if r["event"] == "request" and r["path"] == "/api/v1/memory_import"
    ]
    assert sorted(r["status"] for r in imports) == [200, 400]
    assert "Traceback" not in served.server.stderr


def test_logs_are_readable_lines_at_a_terminal_and_json_when_piped(tmp_path: Path) -> None:
    """JSON logs interleaved with the banner scrolled the one-time token away: a terminal gets
    readable lines; piped stays JSON (the control, with test_request_logs_are_json above)."""
    import os
    import pty
    import select
    import time

    from tests.serving import free_port

    port = free_port()
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [EXE, "serve", "--port", str(port)],
        env=base_env(tmp_path / "fresh", LORESTORE_MAINTENANCE_HOURS="off"),
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
    )
    os.close(follower)
    seen = ""
    try:
        deadline = time.monotonic() + 30
        while "Uvicorn running" not in seen and "startup complete" not in seen.lower():
            assert time.monotonic() < deadline, seen
            if select.select([leader], [], [], 0.5)[0]:
                seen += os.read(leader, 65536).decode(errors="replace")
    finally:
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
        os.close(leader)
    assert "Admin token, shown this once" in out
    assert not [line for line in seen.splitlines() if line.lstrip().startswith("{")]
    assert re.search(r"^\d\d:\d\d:\d\d info ", seen, re.MULTILINE), seen
    text = Server(tmp_path / "piped", "--no-admin-token", "--log-format", "text")
    assert text.stop() == 0
    assert re.search(r"^\d\d:\d\d:\d\d info ", text.stderr, re.MULTILINE)
    bad = subprocess.run(
        [EXE, "serve", "--log-format", "xml"],
        env=base_env(tmp_path / "bad"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert bad.returncode == 2 and "auto, json or text" in bad.stderr
    assert not (tmp_path / "bad").exists()  # refused before any store was opened
