"""GitHub capture end to end: a real ``lorestore serve`` process on loopback, a webhook added
with the real CLI, signed deliveries posted over HTTP, and the lesson read back with the CLI;
the server's request log names the route and the outcome's status, never a body or a secret."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from cryptography.fernet import Fernet
from tests import github
from tests.conftest import Cli
from tests.serving import Server

pytestmark = pytest.mark.slow
KEY = Fernet.generate_key().decode()
TEXT = "Use the frozen_clock fixture; a mocked clock hides the retry bug in these tests."


def test_a_real_server_captures_a_signed_review_comment(
    home: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LORESTORE_WEBHOOK_KEY", KEY)
    secret = cli.ok("webhook", "add", "acme/app")["secret"]
    server = Server(home, LORESTORE_WEBHOOK_KEY=KEY)
    try:
        url = server.url + "/webhooks/github"
        ping = github.body_of(github.ping_event())
        answer = httpx2.post(url, content=ping, headers=github.headers("ping", ping, secret))
        assert (answer.status_code, answer.json()["outcome"]) == (200, "ping")
        body = github.body_of(github.review_comment_event(github.review_comment(901, TEXT)))
        unsigned = github.headers("pull_request_review_comment", body, None)
        assert httpx2.post(url, content=body, headers=unsigned).status_code == 401
        signed = github.headers("pull_request_review_comment", body, secret, "e2e-901")
        answer = httpx2.post(url, content=body, headers=signed)
        assert (answer.status_code, answer.json()["outcome"]) == (200, "created")
        again = httpx2.post(url, content=body, headers=signed)
        assert again.json()["outcome"] == "replay"
    finally:
        server.stop()
    [lesson] = cli.ok("list", "repo::acme/app")["lessons"]
    assert lesson["key"] == "github-review-comment-901" and lesson["value"].endswith(TEXT)
    records = [r for r in server.log_records() if r.get("path") == "/webhooks/github"]
    assert [r["status"] for r in records] == [200, 401, 200, 200]
    assert secret not in server.stderr and TEXT not in server.stderr
