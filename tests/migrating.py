"""Helpers for the migrate tests: a store seeded through the service with every kind of
record lorestore keeps, and two views of a store to compare copies by: what each actor sees
through the operations, and every raw row read past row-level security."""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row
from tests.conftest import Clock
from tests.pg import admin_url, url_for

from lorestore.auth.actor import Actor, local_actor
from lorestore.core.jsontext import dumps
from lorestore.core.timestamps import format_ts
from lorestore.models import (
    Address,
    AuditParams,
    ChangeParams,
    DependencyRef,
    DisputeParams,
    ExplainParams,
    ListParams,
    NoParams,
    OrgAcceptParams,
    OrgBindParams,
    OrgCreateParams,
    OrgInviteParams,
    OrgParams,
    PolicyParams,
    ProjectAddParams,
    RecallParams,
    RejectParams,
    ReviewQueueParams,
    TokenCreateParams,
    TokenRevokeParams,
    VerifyParams,
    WriteParams,
)
from lorestore.portable.jsonl import Incoming
from lorestore.portable.models import ImportParams
from lorestore.service import LessonService
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore

LOCAL = local_actor(session="local-1")
ALICE = local_actor(principal="user:alice", session="alice-1")
BOB = local_actor(principal="user:bob", session="bob-1")
ACTORS = (LOCAL, ALICE, BOB)
TEAM = "repo::acme/app"
BLOB = "a" * 40
TABLES = (
    "principals",
    "memberships",
    "invites",
    "scope_bindings",
    "tokens",
    "scope_policies",
    "owner_stats",
    "tombstones",
    "lessons",
    "lesson_versions",
    "lesson_sessions",
    "audit_log",
    "recall_log",
    "foreign_records",
)

# The lead registers the command in cli/main.py with this one line; until then the tests


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def pg_url(conninfo: str) -> str:
    """The postgresql:// URL of a libpq connection string (the fixtures hand out the latter)."""
    p = conninfo_to_dict(conninfo)
    auth = quote(str(p["user"]), safe="")
    if p.get("password"):
        auth += ":" + quote(str(p["password"]), safe="")
    host = str(p.get("host", "127.0.0.1"))
    port = f":{p['port']}" if p.get("port") else ""
    if host.startswith("/"):
        return f"postgresql://{auth}@/{p['dbname']}?host={quote(host, safe='')}&port={p['port']}"
    return f"postgresql://{auth}@{host}{port}/{p['dbname']}"


# --- a store worth copying -------------------------------------------------------------


def write(service: LessonService, actor: Actor, scope: str, key: str, value: str, **kw: Any):  # type: ignore[no-untyped-def]
    return service.memory_write(actor, WriteParams(scope=scope, key=key, value=value, **kw))


def seed(service: LessonService, store: Store, clock: Clock) -> dict[str, str]:
    """Every kind of record the store keeps, written the way users write them. Returns the
    secrets of the live tokens."""
    service.org_create(ALICE, OrgCreateParams(slug="acme", name="Acme"))
    service.org_bind(ALICE, OrgBindParams(org="acme", pattern="repo::acme/*"))
    code = service.org_invite(ALICE, OrgInviteParams(org="acme", user="bob", role="member")).code
    service.org_accept(BOB, OrgAcceptParams(code=code))
    service.org_invite(ALICE, OrgInviteParams(org="acme", user="carol", role="viewer"))
    # An org lesson: two versions, corroborated by a second session, verified, then a proposal.
    write(
        service,
        ALICE,
        TEAM,
        "deploy",
        "Deploys go through the staging pipeline.",
        tags=["ci", "deploy"],
        source={"repo": "acme/app", "commit": "c" * 40, "pr": 7},
        valid_from="2025-06-01",
        depends_on=[DependencyRef(path="deploy/pipeline.yml", blob=BLOB)],
    )
    clock.advance(minutes=1)
    write(service, ALICE, TEAM, "deploy", "Deploys go through staging, then canary.")
    write(service, BOB, TEAM, "deploy", "Deploys go through staging, then canary.")
    service.memory_verify(ALICE, VerifyParams(scope=TEAM, key="deploy", note="checked"))
    clock.advance(minutes=1)
    write(service, BOB, TEAM, "deploy", "Deploys go through canary only.")  # proposed
    # An accepted revision (accepted_at differs from recorded_at).
    write(service, ALICE, TEAM, "lint", "Run make lint before pushing.")
    service.memory_verify(ALICE, VerifyParams(scope=TEAM, key="lint"))
    write(service, BOB, TEAM, "lint", "Run make lint and make type before pushing.")
    clock.advance(minutes=5)
    service.memory_verify(ALICE, VerifyParams(scope=TEAM, key="lint", revision=True))
    # A rejected value (live tombstone) and a lifted rejection.
    write(service, ALICE, "repo::alice/notes", "tabs", "Indent with tabs.")
    service.memory_reject(ALICE, RejectParams(scope="repo::alice/notes", key="tabs", reason="no"))
    write(service, ALICE, "global", "undo", "Prefer rebase over merge.")
    service.memory_reject(ALICE, RejectParams(scope="global", key="undo", reason="unsure"))
    service.memory_reject(
        ALICE, RejectParams(scope="global", key="undo", reason="it was fine", undo=True)
    )
    # Archived, disputed and expiring lessons of other owners.
    write(service, BOB, "repo::bob/dotfiles", "old", "Use zsh.", kind="signal")
    service.memory_archive(BOB, ChangeParams(scope="repo::bob/dotfiles", key="old", reason="x"))
    write(service, LOCAL, "global", "flaky", "test_upload is flaky on CI.")
    service.memory_dispute(LOCAL, DisputeParams(scope="global", key="flaky", reason="fixed?"))
    write(service, LOCAL, "project::billing", "temp", "Freeze until Friday.", ttl_days=1)
    write(service, LOCAL, "branch::local/x::feature/a", "b", "Branch lesson.", tags=["x"])
    # Tokens (one revoked), policies, a recall with its log entry, a raised cap.
    secrets = {
        "local": service.token_create(
            LOCAL, TokenCreateParams(name="ci", permission="read", scopes=["repo::acme/*"])
        ).token,
        "alice": service.token_create(
            ALICE, TokenCreateParams(name="laptop", orgs=["acme"], expires_days=30)
        ).token,
    }
    gone = service.token_create(BOB, TokenCreateParams(name="old")).info.id
    service.token_revoke(BOB, TokenRevokeParams(id=gone))
    service.memory_policy(ALICE, PolicyParams(scope=TEAM, revision_policy="commit"))
    service.memory_policy(LOCAL, PolicyParams(scope="*", require_review=True))
    service.project_add(LOCAL, ProjectAddParams(name="billing", repos=["local/x", "local/y"]))
    service.memory_recall(LOCAL, RecallParams(repo="local/x", branch="feature/a", task="ci"))
    with store.transaction(write=True, actor="user:bob") as tx:
        tx.set_max_active("user:bob", 500)
    # A record of a type this lorestore does not know, kept by an import.
    note = Incoming(line=1, record={"type": "note", "scope": TEAM, "text": "kept as given"})
    service.memory_import(ALICE, ImportParams(), [note])
    clock.advance(days=2)  # the project lesson is expired now
    return secrets


def add_ext(path: Path) -> None:
    """Unknown imported fields, kept verbatim (no service operation writes them yet)."""
    conn = sqlite3.connect(path)
    ext = dumps({"lorekit": {"origin": "x", "n": 1, "tags": ["é"]}})  # as the store writes JSON
    conn.execute("UPDATE lessons SET ext = ? WHERE key = 'lint'", (ext,))
    conn.commit()
    conn.close()


# --- what a store holds, seen two ways -------------------------------------------------


def _addresses(service: LessonService, actor: Actor) -> list[tuple[str, str]]:
    found = []
    for event in service.memory_audit(actor, AuditParams(limit=500)).events:
        if event.scope and event.key:
            found.append((event.scope, event.key))
    return sorted(set(found))


def service_view(store: Store, clock: Clock) -> dict[str, Any]:
    """What every actor sees through the operations: inventories, lists, histories, audit
    (without store-local ids), chain verification, tokens, orgs, review queues, policies,
    recall explanations."""
    service = LessonService(store, clock=clock)
    view: dict[str, Any] = {}
    for actor in ACTORS:
        audit = service.memory_audit(actor, AuditParams(limit=500))
        events = [e.model_dump(exclude={"id"}) for e in audit.events]
        scopes = service.memory_scopes(actor, NoParams()).model_dump()
        addresses = _addresses(service, actor)
        view[actor.principal] = {
            "scopes": scopes,
            "audit": events,
            "verify": service.audit_verify(actor, NoParams()).model_dump(),
            "tokens": service.token_list(actor, NoParams()).model_dump(),
            "orgs": service.org_list(actor, NoParams()).model_dump(),
            "projects": service.project_list(actor, NoParams()).model_dump(),
            "queue": service.memory_review_queue(actor, ReviewQueueParams()).model_dump(),
            "lists": {
                s["scope"]: service.memory_list(actor, ListParams(scope=s["scope"])).model_dump()
                for s in scopes["scopes"]
            },
            "history": {
                f"{s} {k}": service.memory_history(actor, Address(scope=s, key=k)).model_dump()
                for s, k in addresses
            },
        }
    view["members"] = service.org_members(ALICE, OrgParams(org="acme")).model_dump()
    view["policy"] = service.memory_policy(ALICE, PolicyParams(scope=TEAM)).model_dump()
    recall_id = _recall_id(store)
    view["explain"] = service.memory_explain(LOCAL, ExplainParams(recall_id=recall_id)).model_dump()
    return view


def _recall_id(store: Store) -> str:
    rows = raw_rows(store)["recall_log"]
    assert len(rows) == 1
    return str(rows[0]["recall_id"])


def _plain(value: Any) -> Any:
    """A PostgreSQL value in the form SQLite stores it."""
    if isinstance(value, datetime):
        return format_ts(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, dict | list):
        return dumps(value)
    return value


def raw_rows(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every row of every copied table, read past row-level security, with store-local keys
    replaced by what they stand for: a lesson pk by the lesson's id, audit ids by order."""
    tables = {t: [_plain_row(r) for r in _select(store, t)] for t in TABLES}
    ids = {r.pop("pk"): r["id"] for r in tables["lessons"]}
    for table in ("lesson_versions", "lesson_sessions"):
        for row in tables[table]:
            row["lesson_pk"] = ids[row["lesson_pk"]]
            row.pop("owner", None)  # PostgreSQL repeats it there for row-level security
    for row in tables["owner_stats"]:
        # Counted by each store's triggers in its own representation: PostgreSQL's jsonb
        # text of an ext or a foreign record has a space after each ':' and ','.
        row.pop("stored_bytes")
    chain_order = sorted(tables["audit_log"], key=lambda r: r["id"])
    tables["audit_log"] = [{k: v for k, v in r.items() if k != "id"} for r in chain_order]
    for table, rows in tables.items():
        if table != "audit_log":
            rows.sort(key=lambda r: json.dumps(r, sort_keys=True))
    return tables


def _plain_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in row.items() if k != "search"}


def _select(store: Store, table: str) -> list[dict[str, Any]]:
    query = f'SELECT * FROM "{table}"'  # a fixed list of table names
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(query)]
        conn.close()
        return rows
    assert isinstance(store, PostgresStore)
    with psycopg.connect(admin_of(store.url), row_factory=dict_row) as conn:
        return conn.execute(sql.SQL(query)).fetchall()  # type: ignore[arg-type]


def admin_of(app_conninfo: str) -> str:
    return url_for(admin_url(), str(conninfo_to_dict(app_conninfo)["dbname"]))


def comparable(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """user:local is created by the embedded store's first migration, so a fresh SQLite
    target has its own creation time for it (migrate keeps the target's principal row)."""
    out = dict(rows)
    out["principals"] = sorted(
        (
            {k: v for k, v in r.items() if (r["id"], k) != ("user:local", "created_at")}
            for r in rows["principals"]
        ),
        key=lambda r: str(r["id"]),
    )
    return out
