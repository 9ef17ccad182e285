"""LoreKit's real, unmodified CLI in remote mode against a ``lorestore serve`` started here, with
``LOREKIT_ENDPOINT`` at the server's LoreKit mount: every command and both Claude Code hooks a
LoreKit team uses, each followed by a look at the store through lorestore's own CLI; tombstones,
trust and tenancy holding through the LoreKit surface. On SQLite and on PostgreSQL (as the
application role, so row-level security is in play)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from tests.conftest import Cli
from tests.gitrepo import make_work_tree
from tests.lorekit import LOREKIT, LoreKitCli, node_or_skip
from tests.serving import Server, mcp_client

from lorestore.auth.actor import local_actor
from lorestore.composition import build_service
from lorestore.config import load_settings
from lorestore.models import TokenCreateParams

pytestmark = pytest.mark.slow
S = "repo::example/app"  # the work tree's repository scope, as LoreKit derives it
VALUE = "Retry flaky network tests at most twice."


@dataclass
class Kit:
    server: Server
    lk: LoreKitCli  # alice's LoreKit CLI (user:local, the store's person)
    bob: str  # another tenant's LoreKit token
    cli: Cli  # lorestore's own CLI, on the server's store

    def read(self, key: str, scope: str = S) -> dict[str, Any]:
        lesson: dict[str, Any] = self.cli.ok("read", scope, key)["lesson"]
        return lesson

    def absent(self, key: str, scope: str = S) -> bool:
        done = self.cli("read", scope, key, "--json")
        return done.exit_code == 1 and done.error()["code"] == "not_found"


@pytest.fixture(params=["sqlite", "postgres"])
def kit(
    request: pytest.FixtureRequest,
    home: Path,
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Kit]:
    node = node_or_skip()
    env: dict[str, str] = {}
    if request.param == "postgres":
        from tests.migrating import pg_url

        template = request.getfixturevalue("pg_template")
        env["LORESTORE_DATABASE_URL"] = pg_url(
            template.app_url(request.getfixturevalue("pg_database"))
        )
        monkeypatch.setenv("LORESTORE_DATABASE_URL", env["LORESTORE_DATABASE_URL"])
    service = build_service(load_settings())

    def lorekit_token(principal: str) -> str:
        params = TokenCreateParams(name="lorekit", permission="write", lorekit=True)  # type: ignore[call-arg]
        return service.token_create(local_actor(principal=principal), params).token

    alice, bob = lorekit_token("user:local"), lorekit_token("user:bob")
    service.store.close()
    server = Server(home, "--no-admin-token", **env)
    work_tree = make_work_tree(tmp_path, monkeypatch)
    endpoint = f"{server.url}/lorekit/functions/v1/mcp"
    lk = LoreKitCli(node, tmp_path / "lorekit-home", work_tree, endpoint, alice)
    yield Kit(server, lk, bob, cli)
    server.stop()


def test_write_show_list_search_scopes_stats_land_in_the_store(kit: Kit) -> None:
    done = kit.lk(
        "write", f"{S}::retry-policy", VALUE, "--tags", "ci,flaky", "--source-agent", "claude",
        "--trigger", "manual", "--ttl-days", "30",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lesson = kit.read("retry-policy")
    assert (lesson["value"], lesson["tags"], lesson["trust"]) == (
        VALUE,
        ["ci", "flaky"],
        "candidate",
    )
    assert lesson["source"]["agent"] == "claude" and lesson["source"]["trigger"] == "manual"
    assert lesson["source"]["repo"] == "example/app" and lesson["source"]["branch"] == "main"
    assert lesson["expires_at"] is not None  # ttl_days became lorestore's expiry

    shown = kit.lk("show", f"{S}::retry-policy")
    assert shown.returncode == 0 and VALUE in shown.stdout, shown.stdout + shown.stderr
    listed = kit.lk("list")
    assert "retry-policy" in listed.stdout and VALUE in listed.stdout, listed.stdout
    found = kit.lk("search", "flaky")
    assert "retry-policy" in found.stdout, found.stdout
    missed = kit.lk("search", "kubernetes")  # beside the hit above: the filter is real
    assert "retry-policy" not in missed.stdout
    scopes = kit.lk("scopes")
    assert scopes.returncode == 0 and f"{S}  1" in scopes.stdout, scopes.stdout
    stats = kit.lk("stats")
    assert stats.returncode == 0 and S in stats.stdout, stats.stdout
    assert kit.read("retry-policy")["seen_count"] == 1  # reads changed nothing


def test_archive_restore_delete_through_lorekit(kit: Kit) -> None:
    assert kit.lk("write", f"{S}::ci-cache", "CI caches node_modules per lockfile").returncode == 0
    assert kit.lk("archive", f"{S}::ci-cache").returncode == 0
    assert kit.absent("ci-cache")
    assert kit.cli.ok("history", S, "ci-cache")["status"] == "archived"
    assert kit.lk("show", f"{S}::ci-cache").returncode == 1  # LoreKit's "not found"
    assert kit.lk("restore", f"{S}::ci-cache").returncode == 0
    assert kit.read("ci-cache")["status"] == "active"
    # LoreKit's delete archives; --force erases, which is an admin's call in lorestore.
    assert kit.lk("delete", f"{S}::ci-cache").returncode == 0
    assert kit.cli.ok("history", S, "ci-cache")["status"] == "archived"
    forced = kit.lk("delete", "--force", f"{S}::ci-cache")
    assert forced.returncode == 1
    assert kit.cli.ok("history", S, "ci-cache")["versions"]  # still there, nothing erased


def test_doctor_deep_passes_every_server_check(kit: Kit) -> None:
    done = kit.lk("doctor", "--deep")
    assert done.returncode == 0, done.stdout + done.stderr
    for check in ("connectivity", "authentication", "round-trip —"):
        assert f"PASS {check}" in done.stdout, done.stdout
    assert "token — read+write (lk_rw_*)" in done.stdout
    # The round trip wrote through the mount; its clean-up is a hard delete, which an agent's
    # write token may not do, so doctor warns and the lesson stays for a person to remove.
    assert "WARN round-trip cleanup" in done.stdout
    assert "round-trip" in kit.read("lorekit-memory::doctor-check")["value"]


def _hook(kit: Kit, event: str, **payload: object) -> str:
    body = {"hook_event_name": event, "cwd": str(kit.lk.cwd), **payload}
    done = kit.lk("hook", "--adapter", "claude", "--event", event, input=json.dumps(body))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_claude_code_hooks_read_lessons_through_the_mount(kit: Kit) -> None:
    assert kit.lk("write", f"{S}::retry-policy", VALUE, "--tags", "ci").returncode == 0
    assert (
        kit.lk("write", "global::pg-local", "Integration suites need a local PostgreSQL").returncode
        == 0
    )
    started = _hook(kit, "SessionStart", session_id="s1", source="startup")
    context = json.loads(started)["hookSpecificOutput"]["additionalContext"]
    assert f"({S}) retry-policy" in context and "(global) pg-local" in context, context
    prompt = _hook(kit, "UserPromptSubmit", session_id="s2", prompt="why are flaky tests retried")
    context = json.loads(prompt)["hookSpecificOutput"]["additionalContext"]
    assert "retry-policy" in context and "pg-local" not in context, context
    failed = _hook(
        kit,
        "PostToolUseFailure",
        session_id="s4",
        tool_name="Bash",
        tool_response={"stderr": "flaky network test timed out"},
    )
    assert "retry-policy" in json.loads(failed)["hookSpecificOutput"]["additionalContext"]
    # A prompt that matches nothing stays silent (the control for the hit above).
    assert _hook(kit, "UserPromptSubmit", session_id="s3", prompt="rename the logo asset") == ""
    lesson = kit.read("retry-policy")
    assert (lesson["seen_count"], lesson["trust"]) == (1, "candidate")  # recall moved nothing


def _mcp_write(kit: Kit, arguments: dict[str, Any]) -> tuple[bool, str]:
    """``memory.write`` through LoreKit's own stdio MCP server (``lorekit mcp``), remote mode."""
    params = StdioServerParameters(
        command=kit.lk.node,
        args=[str(LOREKIT / "lorekit.mjs"), "mcp"],
        env=kit.lk.environment(LOREKIT_MODE="remote"),
        cwd=str(kit.lk.cwd),
    )

    async def call() -> tuple[bool, str]:
        async with Client(params) as client:
            result = await client.call_tool("memory.write", arguments)
            return bool(result.is_error), result.content[0].text  # type: ignore[union-attr]

    return anyio.run(call)


def test_a_rejected_value_is_refused_through_lorekit(kit: Kit) -> None:
    assert kit.lk("write", f"{S}::retry-policy", VALUE).returncode == 0
    kit.cli.ok("reject", S, "retry-policy", "--reason", "we fix flaky tests, never retry them")
    again = kit.lk("write", f"{S}::retry-again", "retry flaky network tests at most twice")
    assert again.returncode == 1
    assert "Error writing to remote store" in again.stderr  # (v1.55.1 prints the error object)
    assert kit.absent("retry-again")
    # Our message reaches the user through LoreKit's MCP server, which prints error.message.
    refused, text = _mcp_write(
        kit, {"scope": S, "key": "retry-again", "value": "Retry flaky network tests at most twice"}
    )
    assert refused and "we fix flaky tests, never retry them" in text, text
    assert json.loads(text)["error"]["code"] == "rejected_value"
    assert kit.absent("retry-again")
    # The control: another value at that key is written.
    assert kit.lk("write", f"{S}::retry-again", "Quarantine a flaky test").returncode == 0
    assert kit.read("retry-again")["value"] == "Quarantine a flaky test"


def test_an_upsert_of_a_verified_lesson_becomes_a_proposed_revision(kit: Kit) -> None:
    assert kit.lk("write", f"{S}::retry-policy", VALUE).returncode == 0
    kit.cli.ok("verify", S, "retry-policy")
    done = kit.lk("write", f"{S}::retry-policy", "Retry flaky tests five times.")
    assert done.returncode == 0 and "Written" in done.stdout, done.stdout + done.stderr
    lesson = kit.read("retry-policy")
    assert (lesson["value"], lesson["trust"], lesson["pending_revision"]) == (
        VALUE,
        "verified",
        True,
    )
    states = [v["state"] for v in kit.cli.ok("history", S, "retry-policy")["versions"]]
    assert "proposed" in states
    shown = kit.lk("show", f"{S}::retry-policy")  # LoreKit is served the verified value
    assert VALUE in shown.stdout and "five times" not in shown.stdout


def test_two_tenants_cannot_see_or_change_each_others_lessons(kit: Kit) -> None:
    assert kit.lk("write", f"{S}::alice-only", "Alice's deploy checklist").returncode == 0
    # The controls: alice sees her lesson through every command bob is refused it by.
    assert "Alice's deploy checklist" in kit.lk("show", f"{S}::alice-only").stdout
    assert "alice-only" in kit.lk("list").stdout
    assert f"{S}  1" in kit.lk("scopes").stdout
    bob = kit.bob
    assert kit.lk("show", f"{S}::alice-only", token=bob).returncode == 1
    assert "alice-only" not in kit.lk("list", token=bob).stdout
    assert "alice-only" not in kit.lk("search", "deploy", token=bob).stdout
    assert f"{S}  1" not in kit.lk("scopes", token=bob).stdout
    assert kit.lk("archive", f"{S}::alice-only", token=bob).returncode == 1
    assert kit.lk("delete", f"{S}::alice-only", token=bob).returncode == 1
    # Bob writing the same address makes a lesson of his own; alice's is untouched.
    assert kit.lk("write", f"{S}::alice-only", "Bob's text", token=bob).returncode == 0
    assert kit.read("alice-only")["value"] == "Alice's deploy checklist"
    assert kit.read("alice-only")["status"] == "active"
    assert "Bob's text" in kit.lk("show", f"{S}::alice-only", token=bob).stdout


def test_a_token_in_the_url_works_on_the_mount_and_never_reaches_the_log(kit: Kit) -> None:
    """LoreKit's older .mcp.json form (``…/mcp?token=``), through a real server process."""
    token = kit.lk.token
    assert kit.lk("write", "global::pg-local", "Integration suites need PostgreSQL").returncode == 0

    async def agent() -> str:  # as `npx mcp-remote URL?token=...` connects: no header
        path = f"/lorekit/functions/v1/mcp?token={token}"
        async with mcp_client(kit.server.url, None, path=path) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"memory.read", "memory.write", "memory.search"} <= tools
            read = await client.call_tool("memory.read", {"scope": "global", "key": "pg-local"})
            return read.content[0].text  # type: ignore[union-attr]

    assert "Integration suites need PostgreSQL" in json.loads(anyio.run(agent))["value"]
    with kit.server.rest(None) as http:
        answer = http.get("/lorekit/functions/v1/memories", params={"scope": S, "token": token})
        own = http.get("/api/v1/memory_list", params={"scope": S, "token": token})
    assert answer.status_code == 200 and answer.headers["deprecation"] == "true"
    assert own.status_code == 401  # lorestore's own routes never take one
    kit.server.stop()
    records = [r for r in kit.server.log_records() if r.get("event") == "request"]
    assert any(r["path"] == "/lorekit/functions/v1/memories" and r["token_id"] for r in records)
    assert token not in kit.server.stderr and token[:12] not in kit.server.stderr


def test_lorekit_migrate_moves_a_local_tree_through_the_mount(kit: Kit, tmp_path: Path) -> None:
    tree = tmp_path / "laptop-tree"
    local = {"LOREKIT_HOME": str(tree), "LOREKIT_MODE": "local"}
    for address, value in (("global::local-one", "From the laptop"), (f"{S}::two", "Second")):
        written = kit.lk.run("write", "--local", address, value, env=local)
        assert written.returncode == 0, written.stderr
    moved = kit.lk("migrate", "--from", str(tree), "--to", "remote", "--yes")
    assert moved.returncode == 0 and "2 new" in moved.stdout, moved.stdout + moved.stderr
    assert kit.read("local-one", "global")["value"] == "From the laptop"
    assert kit.read("two")["value"] == "Second"
    again = kit.lk("migrate", "--from", str(tree), "--to", "remote", "--yes")
    assert again.returncode == 0 and "2 unchanged" in again.stdout, again.stdout
    assert kit.read("two")["version"] == 1  # the same value again: no new version


def test_list_all_pages_through_every_lesson_of_a_scope(kit: Kit) -> None:
    """``lorekit list --all`` walks ``/memories/scopes`` and pages of 100 by cursor."""
    for i in range(130):
        kit.cli.ok("write", "global", f"note-{i:03d}", f"Global note number {i}")
    done = kit.lk("list", "--all", "--json")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert all(f"note-{i:03d}" in text for i in range(130)), text[-2000:]
    plain = kit.lk("list", "--json")  # the control: without --all, LoreKit's page of 50
    assert sum(f'"note-{i:03d}"' in plain.stdout for i in range(130)) == 50
