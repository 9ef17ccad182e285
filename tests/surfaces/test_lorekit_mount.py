"""The LoreKit mount (``/lorekit/functions/v1``) through the real application in process, on both
backends: LoreKit's answers and error bodies, its field names mapped onto lorestore's, its
filters, the ``?token=`` form (this mount only, warned, never logged), LoreKit-form tokens in
the one token store, and the dotted MCP tools through the MCP SDK's client."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from tests.conftest import Cli, set_cap
from tests.serving import Api, api_on_both_backends

M = "/lorekit/functions/v1"
S = "repo::acme/app"


api = api_on_both_backends()


@pytest.fixture
def kit(api: Api) -> str:
    """An agent's LoreKit-form write token."""
    return api.mint(permission="write", lorekit=True)


def call(api: Api, method: str, path: str, token: str | None, **kw: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return api.client.request(method, M + path, headers=headers, **kw)


def write(api: Api, token: str, **body: Any) -> Any:
    return call(api, "POST", "/memories", token, json={"scope": S, **body})


def test_health_is_public_and_the_token_forms_are_lorekits(api: Api, kit: str) -> None:
    assert call(api, "GET", "/health", None).json()["status"] == "ok"
    assert kit.startswith("lk_rw_") and len(kit) == len("lk_rw_") + 43
    reader = api.mint(permission="read", lorekit=True)
    assert reader.startswith("lk_ro_")
    # Read tokens read and are refused writes (403, not 401: doctor tells them apart).
    assert call(api, "GET", "/memories", reader, params={"scope": S}).status_code == 200
    refused = write(api, reader, key="k", value="v")
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    unknown = call(api, "GET", "/memories", "lk_rw_" + "x" * 43, params={"limit": 1})
    assert unknown.status_code == 401
    assert unknown.json()["code"] == "unauthorized" and unknown.json()["error"]
    # Listed beside lorestore's own tokens: one token store.
    listed = {t["prefix"][:6] for t in api.ok("token_list")["tokens"]}
    assert {"lk_rw_", "lk_ro_"} <= listed


def test_a_person_token_cannot_be_made_in_lorekit_form(cli: Cli, api: Api) -> None:
    done = cli("token", "create", "--name", "ci", "--permission", "admin", "--lorekit", "--json")
    assert done.exit_code == 2 and done.error()["code"] == "invalid_argument"
    assert "read or write" in done.error()["message"]
    made = cli.ok("token", "create", "--name", "ci", "--permission", "write", "--lorekit")
    assert made["token"].startswith("lk_rw_") and made["info"]["permission"] == "write"


def test_write_maps_lorekits_fields_and_leaves_ours_out(api: Api, kit: str) -> None:
    body = {
        "key": "retry", "value": "Retry twice", "tags": ["ci"], "source_agent": "claude",
        "trigger": "manual", "kind": "signal", "host": "reviewer", "ttl_days": 7,
        "origin_repo": "acme/app", "origin_branch": "main", "origin_commit": "a" * 40,
        "origin_pr": 12,
    }  # fmt: skip
    created = write(api, kit, **body)
    assert created.status_code == 201, created.text
    entry = created.json()
    for field in ("source_agent", "trigger", "kind", "host", "origin_repo", "origin_pr"):
        assert entry[field] == body[field]
    assert entry["tags"] == ["ci"] and entry["seen_count"] == 1 and entry["expires_at"]
    assert not {"trust", "version", "owner", "valid_from", "review", "source"} & set(entry)
    lesson = api.ok("memory_read", {"scope": S, "key": "retry"})["lesson"]
    assert lesson["source"]["agent"] == "claude" and lesson["source"]["pr"] == 12
    assert lesson["kind"] == "signal" and "host::reviewer" in lesson["tags"]
    assert write(api, kit, key="retry", value="Retry twice").status_code == 200  # an update
    events = api.ok("memory_audit", {"scope": S, "key": "retry"})["events"]
    assert events and all(e["actor"] == "user:local" for e in events)  # the service audited


def test_bad_input_is_refused_with_lorekits_body_and_changes_nothing(api: Api, kit: str) -> None:
    bad_scope = write(api, kit, key="k", value="v", scope="repo:acme/app")
    assert bad_scope.status_code == 400
    assert (
        bad_scope.json()["code"] == "invalid_scope"
        and "repo::acme/app" in bad_scope.json()["error"]
    )
    unknown = write(api, kit, key="k", value="v", ttl_minutes=5)
    assert unknown.status_code == 400 and "ttl_minutes" in unknown.json()["error"]
    not_json = call(api, "POST", "/memories", kit, content=b"{nope")
    assert not_json.status_code == 400 and "valid JSON" in not_json.json()["error"]
    assert api.ok("memory_list", {"scope": S})["lessons"] == []
    assert write(api, kit, key="k", value="v").status_code == 201  # the control


def test_get_memories_filters_as_lorekit_does(api: Api, kit: str) -> None:
    for key, tags, host in (("a1", ["x"], None), ("a2", ["y"], "rev"), ("b1", ["z"], None)):
        assert (
            write(api, kit, key=key, value=f"value {key}", tags=tags, host=host).status_code < 300
        )

    def keys(**params: Any) -> list[str]:
        answer = call(api, "GET", "/memories", kit, params={"scope": S, **params}).json()
        return sorted(e["key"] for e in answer["entries"])

    assert keys() == ["a1", "a2", "b1"]
    assert keys(key="a2") == ["a2"]  # exact
    assert keys(tags="x,y") == ["a1", "a2"]  # any of the tags, as LoreKit matches
    assert keys(host="rev") == ["a2"]
    assert keys(key_prefix="a") == ["a1", "a2"]
    paged = call(api, "GET", "/memories", kit, params={"scope": S, "limit": 2}).json()
    assert len(paged["entries"]) == 2 and paged["hasMore"] and paged["nextCursor"]
    rest = call(api, "GET", "/memories", kit, params={"scope": S, "cursor": paged["nextCursor"]})
    assert len(rest.json()["entries"]) == 1 and rest.json()["hasMore"] is False
    # doctor's probe names no scope: authorised, and lorestore lists no "all".
    probe = call(api, "GET", "/memories", kit, params={"limit": 1})
    assert probe.status_code == 200 and probe.json()["entries"] == []


def test_archive_restore_search_scopes_answer_lorekits_shapes(api: Api, kit: str) -> None:
    assert write(api, kit, key="pg", value="Integration tests need Postgres").status_code == 201
    found = call(
        api, "POST", "/memories/search", kit, json={"q": "postgres OR mysql", "scopes": [S]}
    )
    assert [e["key"] for e in found.json()["entries"]] == ["pg"]
    assert found.json()["entries"][0]["scope"] == S and "rank" in found.json()["entries"][0]
    assert call(api, "GET", "/memories/scopes", kit).json() == {
        "scopes": [{"scope": S, "count": 1}]
    }
    gone = call(api, "DELETE", "/memories", kit, params={"scope": S, "key": "pg"})
    assert gone.status_code == 204
    assert (
        call(api, "GET", "/memories", kit, params={"scope": S, "key": "pg"}).json()["entries"] == []
    )
    again = call(api, "DELETE", "/memories", kit, params={"scope": S, "key": "pg"})
    assert again.status_code == 204  # archiving is idempotent
    restored = call(api, "POST", "/memories/restore", kit, json={"scope": S, "key": "pg"})
    assert restored.json() == {"restored": True}
    missing = call(api, "DELETE", "/memories", kit, params={"scope": S, "key": "nope"})
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    erase = call(api, "DELETE", "/memories", kit, params={"scope": S, "key": "pg", "force": "true"})
    assert erase.status_code == 403  # an agent's token never erases
    assert call(api, "POST", "/memories/purge", kit, json={"retention_days": 30}).status_code == 403
    assert call(api, "GET", "/nowhere", kit).json() == {"error": "Not found", "code": "not_found"}


def test_rate_limit_is_429_with_retry_after_in_both_forms(api: Api, kit: str) -> None:
    api.service.rate_limit = 2
    for _ in range(2):
        assert call(api, "GET", "/memories/scopes", kit).status_code == 200
    limited = call(api, "GET", "/memories/scopes", kit)
    assert limited.status_code == 429 and limited.json()["code"] == "rate_limited"
    assert int(limited.headers["retry-after"]) == limited.json()["retryAfterSeconds"] >= 1


def test_a_cap_is_lorekits_terminal_429_memory_cap(api: Api, kit: str) -> None:
    assert write(api, kit, key="first", value="one").status_code == 201  # the control
    set_cap(api.service.store, "user:local", 1)
    capped = write(api, kit, key="second", value="two")
    assert capped.status_code == 429 and capped.json()["code"] == "memory_cap"
    assert "retry-after" not in capped.headers  # not a wait: `lorekit migrate` stops
    assert [e["key"] for e in api.ok("memory_list", {"scope": S})["lessons"]] == ["first"]


def test_a_query_token_works_on_this_mount_only_warned_and_never_logged(
    api: Api, kit: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="lorestore.http.request"):
        answer = api.client.get(f"{M}/memories", params={"scope": S, "token": kit})
        refused = api.client.get("/api/v1/memory_list", params={"scope": S, "token": kit})
    assert answer.status_code == 200 and answer.headers["deprecation"] == "true"
    assert "Authorization: Bearer" in answer.headers["warning"]
    assert refused.status_code == 401  # lorestore's own routes never take one
    records = [r for r in caplog.records if r.name == "lorestore.http.request"]
    text = json.dumps([r.fields for r in records])  # type: ignore[attr-defined]
    assert kit not in text and kit[:12] not in text and "token=" not in text
    assert records[0].fields["token_id"]  # type: ignore[attr-defined]


def test_the_mcp_endpoint_has_lorekits_tools_and_shapes(api: Api, kit: str) -> None:
    transport = httpx2.ASGITransport(app=api.client.app)  # the same application, in process

    async def session() -> None:
        async with (
            httpx2.AsyncClient(
                transport=transport,
                base_url="http://127.0.0.1",
                headers={"Authorization": f"Bearer {kit}"},
            ) as http,
            Client(streamable_http_client(f"http://127.0.0.1{M}/mcp", http_client=http)) as c,
        ):
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"memory.write", "memory.read", "memory.search", "org.list"} <= names
            written = await c.call_tool("memory.write", {"scope": S, "key": "k", "value": "v1"})
            assert set(json.loads(written.content[0].text)) == {"id", "created_at"}  # type: ignore[union-attr]
            read = await c.call_tool("memory.read", {"scope": S, "key": "k"})
            assert json.loads(read.content[0].text)["value"] == "v1"  # type: ignore[union-attr]
            gone = await c.call_tool("memory.read", {"scope": S, "key": "nope"})
            assert gone.content[0].text == "null"  # type: ignore[union-attr]
            with pytest.raises(MCPError) as refused:
                await c.call_tool(
                    "memory.write", {"scope": "repo:acme/app", "key": "k", "value": "v"}
                )
            assert refused.value.code == -32603 and "repo::acme/app" in refused.value.message

    anyio.run(session)
    assert api.ok("memory_read", {"scope": S, "key": "k"})["lesson"]["value"] == "v1"


def test_orgs_and_purges_are_an_admins_through_the_mount(api: Api, kit: str) -> None:
    created = call(api, "POST", "/orgs", api.token, json={"slug": "acme", "name": "Acme"})
    assert created.status_code == 201, created.text
    assert {k: created.json()[k] for k in ("id", "slug", "name")} == {
        "id": "acme",
        "slug": "acme",
        "name": "Acme",
    }
    assert [o["slug"] for o in call(api, "GET", "/orgs", api.token).json()["entries"]] == ["acme"]
    refused = call(api, "POST", "/orgs", kit, json={"slug": "other", "name": "Other"})
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    renamed = call(api, "PATCH", "/orgs/acme", api.token, json={"name": "Acme Inc"})
    assert renamed.status_code == 405 and "rename" in renamed.json()["error"]
    assert write(api, kit, key="old", value="archived long ago").status_code == 201
    assert (
        call(api, "DELETE", "/memories", kit, params={"scope": S, "key": "old"}).status_code == 204
    )
    purged = call(api, "POST", "/memories/purge", api.token, json={"retention_days": 1})
    assert purged.json() == {"purged": 0}  # archived today: kept
    expired = call(api, "POST", "/memories/purge-expired", api.token)
    assert expired.status_code == 200 and expired.json() == {"purged": 0}
    assert api.ok("memory_history", {"scope": S, "key": "old"})["status"] == "archived"


def test_a_search_takes_the_projects_declared_to_hold_its_repository(api: Api, kit: str) -> None:
    """LoreKit's client names the project of its own configuration, if any; lorestore adds the
    project rungs a person declared for the repository it searches (issue 21)."""
    billing = {
        "scope": "project::billing",
        "key": "ledger",
        "value": "Ledger rows are never updated",
    }
    assert call(api, "POST", "/memories", kit, json=billing).status_code == 201
    body = {"q": "ledger rows", "scopes": [S, "global"]}
    # The control: no project holds the repository, so the project's lesson is not found.
    assert call(api, "POST", "/memories/search", kit, json=body).json()["entries"] == []
    api.ok("project_add", {"name": "billing", "repos": ["acme/app"]})
    found = call(api, "POST", "/memories/search", kit, json=body).json()["entries"]
    assert [(e["scope"], e["key"]) for e in found] == [("project::billing", "ledger")]
    other = {"q": "ledger rows", "scopes": ["repo::acme/other", "global"]}
    assert call(api, "POST", "/memories/search", kit, json=other).json()["entries"] == []
