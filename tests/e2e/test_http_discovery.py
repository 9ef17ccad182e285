"""What an MCP host meets before it has a token: OAuth discovery and registration paths
answer 404 with the fix (lorestore takes bearer tokens; a 401 there read as "Dynamic Client
Registration rejected"), while the API and /mcp still answer 401 with WWW-Authenticate.
And the remote client waits out a 429 (Retry-After, bounded) instead of failing at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx2
import pytest
from tests.serving import Server

from lorestore.core.errors import LorestoreError
from lorestore.models import NoParams, ScopesResult
from lorestore.operations import BY_NAME
from lorestore.transports.http import client as remote

DISCOVERY = [
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/mcp",
    "/.well-known/openid-configuration",
]


@pytest.fixture
def server(home: Path) -> Iterator[Server]:
    served = Server(home, "--no-admin-token")
    yield served
    served.stop()


@pytest.mark.slow
def test_oauth_discovery_says_bearer_tokens_not_401(server: Server) -> None:
    with httpx2.Client(base_url=server.url) as http:
        for path in DISCOVERY:
            answer = http.get(path)
            assert answer.status_code == 404, path
            error = answer.json()["error"]
            assert error["code"] == "not_found" and "bearer tokens, not OAuth" in error["message"]
            assert "Authorization: Bearer" in error["hint"]
        assert http.post("/register", json={"client_name": "claude"}).status_code == 404
        # The controls: what needs a token still says so, the way hosts expect.
        for path in ("/mcp", "/api/v1/memory_scopes"):
            refused = http.post(path, json={})
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"].startswith("Bearer")


class _Throttled(BaseHTTPRequestHandler):
    """A server that answers 429 with the configured Retry-After, then 200."""

    answers: ClassVar[list[tuple[int, str | None]]] = []
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append(self.path)
        status, retry_after = type(self).answers.pop(0) if type(self).answers else (200, None)
        body = (
            json.dumps({"scopes": []})
            if status == 200
            else json.dumps({"error": {"code": "rate_limited", "message": "slow down"}})
        ).encode()
        self.send_response(status)
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def throttled() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Throttled)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Throttled.seen.clear()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_the_remote_client_waits_out_a_429(throttled: str) -> None:
    op = BY_NAME["memory_scopes"]
    _Throttled.answers[:] = [(429, "1"), (429, "0")]
    client = remote.RemoteClient(throttled, "lst_" + "A" * 43)
    try:
        assert isinstance(client.invoke(op, NoParams()), ScopesResult)
        assert len(_Throttled.seen) == 3  # two refusals waited out, then the answer
        # A wait longer than the bound is not waited: the error comes at once.
        _Throttled.seen.clear()
        _Throttled.answers[:] = [(429, str(int(remote.RETRY_WAIT_SECONDS) + 30))]
        with pytest.raises(LorestoreError) as refused:
            client.invoke(op, NoParams())
        assert refused.value.code == "rate_limited" and len(_Throttled.seen) == 1
        # Every retry refused: it gives up after RETRIES more tries.
        _Throttled.seen.clear()
        _Throttled.answers[:] = [(429, "0")] * (remote.RETRIES + 2)
        with pytest.raises(LorestoreError):
            client.invoke(op, NoParams())
        assert len(_Throttled.seen) == remote.RETRIES + 1
    finally:
        client.close()
