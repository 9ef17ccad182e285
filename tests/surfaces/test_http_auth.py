"""Authentication and the operational guards of the HTTP server, in process: only a bearer
header authenticates, a token in a URL is refused, 401 and 403 mean what they should, the body
limit answers 413, CORS is off unless configured, and request logs carry no secret or value.
Every refusal sits beside a call that succeeds."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.datastructures import Headers
from tests.conftest import Clock
from tests.serving import Api, error_of, make_api

from lorestore.auth.actor import local_actor
from lorestore.core.errors import LorestoreError
from lorestore.models import TokenCreateParams, TokenRevokeParams
from lorestore.service import LessonService, utcnow
from lorestore.transports.http.auth import _optional_header

S = "repo::acme/app"
OTHER = "repo::other/app"


@pytest.fixture
def api(home: Path) -> Iterator[Api]:
    yield from make_api(home)


def expired_token(api: Api) -> str:
    """A token minted two days ago for one day, by a service on the same file."""
    past = LessonService(api.service.store, clock=Clock(utcnow() - timedelta(days=2)))
    params = TokenCreateParams(name="old", expires_days=1)  # type: ignore[call-arg]
    return past.token_create(local_actor(), params).token


def test_only_a_valid_bearer_header_authenticates(api: Api) -> None:
    revoked = api.service.token_create(local_actor(), TokenCreateParams(name="gone"))  # type: ignore[call-arg]
    api.service.token_revoke(local_actor(), TokenRevokeParams(id=revoked.info.id))
    refusals = {
        "missing": {},
        "basic": {"Authorization": "Basic dXNlcjpwYXNz"},
        "empty bearer": {"Authorization": "Bearer "},
        "two headers": [("Authorization", f"Bearer {api.token}"), ("Authorization", "Bearer x")],
        "malformed": {"Authorization": "Bearer not-a-token"},
        "unknown": {"Authorization": "Bearer lst_" + "A" * 43},
        "revoked": {"Authorization": f"Bearer {revoked.token}"},
        "expired": {"Authorization": f"Bearer {expired_token(api)}"},
    }
    for why, headers in refusals.items():
        response = api.client.post("/api/v1/memory_scopes", headers=headers)
        assert error_of(response, 401)["code"] == "unauthenticated", why
        assert response.headers["www-authenticate"].startswith("Bearer"), why
        assert "Authorization: Bearer" in response.json()["error"]["hint"], why
    # Positive control: the same route with a live token, in lower-case scheme too.
    live = api.client.post(
        "/api/v1/memory_scopes", headers={"Authorization": f"bearer {api.token}"}
    )
    assert live.status_code == 200


@pytest.mark.parametrize("param", ["token", "access_token", "api_key", "key"])
def test_a_token_in_the_url_is_refused_even_beside_a_valid_header(api: Api, param: str) -> None:
    api.ok("memory_write", {"scope": S, "key": "k", "value": "v"})
    query = {"scope": S, "key": "k", param: api.token}
    refused = api.client.get(
        "/api/v1/memory_read", params=query, headers={"Authorization": f"Bearer {api.token}"}
    )
    error = error_of(refused, 401)
    assert error["code"] == "unauthenticated" and "Authorization: Bearer" in error["hint"]
    assert api.token not in refused.text
    assert error_of(api.client.get("/healthz", params={"access_token": "x"}), 401)
    ok = api.get("memory_read", scope=S, key="k")
    assert ok.status_code == 200 and ok.json()["lesson"]["value"] == "v"


def test_permission_and_scope_refusals_are_403(api: Api) -> None:
    api.ok("memory_write", {"scope": S, "key": "k", "value": "inside"})
    api.ok("memory_write", {"scope": OTHER, "key": "k", "value": "outside"})
    reader = api.mint(permission="read")
    write = {"scope": S, "key": "k", "value": "changed"}
    assert error_of(api.post("memory_write", write, token=reader), 403)["code"] == "forbidden"
    assert api.post("memory_read", {"scope": S, "key": "k"}, token=reader).status_code == 200
    writer = api.mint(permission="write")
    verify = {"scope": S, "key": "k"}
    assert error_of(api.post("memory_verify", verify, token=writer), 403)["code"] == "forbidden"
    assert error_of(api.post("token_create", {"name": "x"}, token=writer), 403)["code"] == (
        "forbidden"
    )
    confined = api.mint(permission="write", scopes=["repo::acme/*"])
    outside = api.post("memory_read", {"scope": OTHER, "key": "k"}, token=confined)
    assert error_of(outside, 403)["details"]["scope"] == OTHER
    inventory = api.post("memory_scopes", token=confined).json()["scopes"]
    assert [s["scope"] for s in inventory] == [S]  # the other repo is not even listed
    inside = api.post("memory_read", {"scope": S, "key": "k"}, token=confined)
    assert inside.json()["lesson"]["value"] == "inside"
    assert api.ok("memory_read", {"scope": OTHER, "key": "k"})["lesson"]["version"] == 1


def test_session_and_agent_headers_are_recorded(api: Api) -> None:
    headers = {"Lorestore-Session": "sess-1", "Lorestore-Agent": "claude"}
    written = api.ok("memory_write", {"scope": S, "key": "k", "value": "v"}, headers=headers)
    assert written["lesson"]["source"]["session"] == "sess-1"
    assert written["lesson"]["source"]["agent"] == "claude"
    again = api.ok("memory_write", {"scope": S, "key": "k", "value": "v"}, headers=headers)
    assert (again["result"], again["lesson"]["seen_count"]) == ("seen", 1)
    other = api.ok("memory_write", {"scope": S, "key": "k", "value": "v"})
    assert other["lesson"]["seen_count"] == 2  # the token's own session is another one
    long = api.post("memory_scopes", headers={"Lorestore-Session": "s" * 300})
    assert error_of(long, 400)["code"] == "invalid_argument"
    # Header bytes are UTF-8 text, as every text lorestore takes: read so, not as Latin-1.
    utf8 = api.ok(
        "memory_write",
        {"scope": S, "key": "u", "value": "v"},
        headers={"Lorestore-Agent": "café".encode()},
    )
    assert utf8["lesson"]["source"]["agent"] == "café"
    for header in (b"s\x01x", b"a\x1b[2Jb"):  # a control character, an escape sequence
        bad = api.post(
            "memory_write",
            {"scope": S, "key": "bad", "value": "v"},
            headers={"Lorestore-Agent": header},
        )
        assert error_of(bad, 400)["code"] == "invalid_argument", header
    assert api.get("memory_read", scope=S, key="bad").status_code == 404  # nothing written
    # Bytes that are not UTF-8 (Latin-1 é): the test client re-encodes headers, so the
    # header reader is given them as the server receives them.
    with pytest.raises(LorestoreError) as refused:
        _optional_header(Headers(raw=[(b"lorestore-agent", b"caf\xe9")]), "Lorestore-Agent")
    assert refused.value.code == "invalid_argument"


def test_request_body_limit_is_413(home: Path) -> None:
    for api in make_api(home, max_request_bytes=4096):
        small = {"scope": S, "key": "k", "value": "x" * 1000}
        assert api.post("memory_write", small).status_code == 200
        big = {"scope": S, "key": "k2", "value": "x" * 5000}
        error = error_of(api.post("memory_write", big), 413)
        assert error["code"] == "value_too_large" and error["details"]["max_bytes"] == 4096

        payload = json.dumps(big).encode()
        streamed = api.client.post(
            "/api/v1/memory_write",
            content=iter([payload[:3000], payload[3000:]]),  # chunked: no Content-Length
            headers={"Authorization": f"Bearer {api.token}"},
        )
        assert error_of(streamed, 413)["code"] == "value_too_large"
        assert api.get("memory_read", scope=S, key="k2").status_code == 404


def test_cors_is_off_unless_configured(home: Path) -> None:
    origin = {"Origin": "https://dash.example"}
    for api in make_api(home):
        response = api.post("memory_scopes", headers=origin)
        assert response.status_code == 200
        assert "access-control-allow-origin" not in response.headers
    for api in make_api(home, cors_origins=("https://dash.example",)):
        response = api.post("memory_scopes", headers=origin)
        assert response.headers["access-control-allow-origin"] == "https://dash.example"
        preflight = api.client.options(
            "/api/v1/memory_scopes",
            headers={
                **origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        assert preflight.status_code == 200
        stranger = api.post("memory_scopes", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in stranger.headers
        refused = api.client.options(
            "/api/v1/memory_scopes",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert error_of(refused, 403)["code"] == "forbidden"  # a JSON error, as every error
        exposed = response.headers["access-control-expose-headers"].lower()
        assert "retry-after" in exposed and "www-authenticate" in exposed


def test_request_logs_carry_no_token_query_or_value(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    secret_value = "the staging password is hunter2"
    with caplog.at_level(logging.INFO, logger="lorestore.http.request"):
        api.ok("memory_write", {"scope": S, "key": "k", "value": secret_value})
        api.get("memory_read", scope=S, key="k")
        api.client.get("/api/v1/memory_read", params={"scope": S, "token": api.token})
    records = [r for r in caplog.records if r.name == "lorestore.http.request"]
    assert len(records) == 3
    fields: list[dict[str, Any]] = [r.fields for r in records]  # type: ignore[attr-defined]
    assert [f["status"] for f in fields] == [200, 200, 401]
    assert fields[0]["operation"] == "memory_write" and fields[0]["token_id"]
    assert fields[2]["error"] == "unauthenticated"
    text = json.dumps(fields) + " ".join(r.getMessage() for r in records)
    for leaked in (api.token, secret_value, "hunter2", S, "scope="):
        assert leaked not in text


def test_a_token_over_its_rate_is_429_with_retry_after(api: Api) -> None:
    api.service.rate_limit = 3  # per token per minute; the server's default is 600
    other = api.mint(permission="read")
    for _ in range(3):
        assert api.post("memory_scopes").status_code == 200
    limited = api.post("memory_scopes")
    assert error_of(limited, 429)["code"] == "rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert api.post("memory_scopes", token=other).status_code == 200  # another token is not


def test_a_confined_token_cannot_explain_a_recall_beyond_its_scopes(api: Api) -> None:
    api.ok("memory_write", {"scope": OTHER, "key": "deploy-key", "value": "in vault path X"})
    api.ok("memory_write", {"scope": S, "key": "k", "value": "inside"})
    task = {"repo": "other/app", "task": "rotate the prod database password"}
    theirs = api.ok("memory_recall", task)["recall_id"]
    confined = api.mint(permission="read", scopes=["repo::acme/*"])
    refused = api.post("memory_explain", {"recall_id": theirs}, token=confined)
    body = error_of(refused, 404)
    assert body["code"] == "not_found" and "other" not in json.dumps(body)
    # The positive controls: the token explains its own recall; the unconfined one both.
    mine = api.post("memory_recall", {"repo": "acme/app"}, token=confined).json()["recall_id"]
    explained = api.post("memory_explain", {"recall_id": mine}, token=confined).json()
    assert [e["key"] for e in explained["offered"]] == ["k"]
    assert api.ok("memory_explain", {"recall_id": theirs})["context"]["task"] == task["task"]


def test_import_refuses_a_repeated_query_parameter_and_writes_nothing(api: Api) -> None:
    line = (
        '{"type":"lesson","id":"11111111-1111-4111-8111-000000000001","scope":"global",'
        '"key":"dr1","value":"v","version":1,"recorded_at":"2026-01-01T00:00:00Z",'
        '"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}\n'
    )
    headers = {"Content-Type": "application/x-ndjson", "Authorization": f"Bearer {api.token}"}
    for query in ("dry_run=true&dry_run=false", "format=jsonl&format=lorekit"):
        answer = api.client.post(f"/api/v1/memory_import?{query}", content=line, headers=headers)
        assert error_of(answer, 400)["code"] == "invalid_argument", query
    gone = api.post("memory_read", {"scope": "global", "key": "dr1"})
    assert error_of(gone, 404)["code"] == "not_found"
    landed = api.client.post(  # the positive control: named once, it is obeyed
        "/api/v1/memory_import?dry_run=false", content=line, headers=headers
    )
    assert landed.json()["lessons"]["added"] == 1
