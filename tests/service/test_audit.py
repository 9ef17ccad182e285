"""The audit log: every mutation recorded with actor and versions, append-only, hash-chained."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from tests.conftest import Cli, Clock, app_connection, table_rows, tamper_audit

from lorestore.auth.actor import local_actor
from lorestore.core.audit import first_break
from lorestore.core.errors import LorestoreError
from lorestore.models import AuditParams, ChangeParams, DeleteParams, NoParams, WriteParams
from lorestore.service import LessonService
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore

S = "repo::acme/app"


def _mutate(service: LessonService) -> None:
    actor = local_actor(session="s1")
    service.memory_write(actor, WriteParams(scope=S, key="k", value="one"))
    service.memory_write(local_actor(session="s2"), WriteParams(scope=S, key="k", value="ONE"))
    service.memory_write(actor, WriteParams(scope=S, key="k", value="two"))
    service.memory_archive(actor, ChangeParams(scope=S, key="k", reason="stale"))
    service.memory_restore(actor, ChangeParams(scope=S, key="k"))
    service.memory_delete(actor, DeleteParams(scope=S, key="k", reason="oops"))


def test_every_mutation_is_an_event_with_actor_and_versions(service: LessonService) -> None:
    _mutate(service)
    events = list(reversed(service.memory_audit(local_actor(), AuditParams()).events))
    assert [e.action for e in events] == [
        "write.created",
        "write.seen",
        "write.updated",
        "archive",
        "restore",
        "delete",
    ]
    assert {e.actor for e in events} == {"user:local"}
    assert [(e.before_version, e.after_version) for e in events] == [
        (None, 1),
        (1, 1),
        (1, 2),
        (2, 2),
        (2, 2),
        (2, None),
    ]
    assert events[3].reason == "stale"
    assert events[1].detail["seen_count"] == 2
    assert events[5].detail["versions_erased"] == 2
    assert all(e.before_digest is None or len(e.before_digest) == 64 for e in events)


def test_audit_holds_digests_never_values(service: LessonService, store: Store) -> None:
    service.memory_write(local_actor(), WriteParams(scope=S, key="k", value="the secret text"))
    audit = table_rows(store, "audit_log")
    assert audit and "the secret text" not in "\n".join(audit)
    assert "the secret text" in "\n".join(table_rows(store, "lessons"))  # positive control


REFUSED = (sqlite3.IntegrityError, psycopg.errors.InsufficientPrivilege)


def test_audit_log_refuses_update_and_delete(service: LessonService, store: Store) -> None:
    _mutate(service)
    with app_connection(store) as conn:
        count = "SELECT count(*) FROM audit_log"
        assert conn.execute(count).fetchone()[0] == 6  # positive control: the app can read it
        for statement in (
            "UPDATE audit_log SET action = 'forged'",
            "DELETE FROM audit_log",
            "DELETE FROM audit_log WHERE id = 1",
        ):
            with pytest.raises(REFUSED):
                conn.execute(statement)
        assert conn.execute(count).fetchone()[0] == 6


def test_hash_chain_verifies_and_shows_tampering(service: LessonService, store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _mutate(service)
    with store.transaction(write=False, actor="user:local") as tx:
        chain = list(tx.audit_chain("user:local"))
    assert first_break(chain) is None
    forged = [dict(e) for e in chain]
    forged[2]["reason"] = "rewritten"
    assert first_break(forged) == forged[2]["id"]
    assert first_break(chain[:2] + chain[3:]) == chain[3]["id"]  # a removed event shows too


def test_audit_filters(service: LessonService, clock) -> None:  # type: ignore[no-untyped-def]
    actor = local_actor()
    service.memory_write(actor, WriteParams(scope=S, key="a", value="a"))
    clock.advance(days=1)
    service.memory_write(actor, WriteParams(scope="global", key="b", value="b"))
    assert [e.key for e in service.memory_audit(actor, AuditParams(scope=S)).events] == ["a"]
    assert [e.key for e in service.memory_audit(actor, AuditParams(key="b")).events] == ["b"]
    since = clock.now.isoformat()
    assert [e.key for e in service.memory_audit(actor, AuditParams(since=since)).events] == ["b"]
    assert [e.key for e in service.memory_audit(actor, AuditParams(until=since)).events] == ["a"]
    page = service.memory_audit(actor, AuditParams(limit=1))
    assert page.next_cursor
    rest = service.memory_audit(actor, AuditParams(limit=1, cursor=page.next_cursor))
    assert [e.key for e in page.events + rest.events] == ["b", "a"]
    # Given empty, a scope or key is a mistake, never "all" (omitted is all).
    for empty, code in ({"scope": ""}, "invalid_scope"), ({"key": ""}, "invalid_key"):
        with pytest.raises(LorestoreError) as err:
            service.memory_audit(actor, AuditParams(**empty))
        assert err.value.code == code


def test_versions_are_immutable(service: LessonService, store: Store) -> None:
    service.memory_write(local_actor(), WriteParams(scope=S, key="k", value="original"))
    with app_connection(store) as conn:
        with pytest.raises(
            (sqlite3.IntegrityError, psycopg.errors.RaiseException), match="immutable"
        ):
            conn.execute("UPDATE lesson_versions SET value = 'rewritten'")
        assert conn.execute("SELECT value FROM lesson_versions").fetchall() == [("original",)]


@pytest.mark.fresh_database  # switches the append-only trigger off
def test_audit_verify_reports_a_rewritten_event(service: LessonService, store: Store) -> None:
    _mutate(service)
    report = service.audit_verify(local_actor(), NoParams())
    assert report.ok and [(c.owner, c.events, c.ok) for c in report.chains] == [
        ("user:local", 6, True)
    ]
    archived = next(
        e
        for e in service.memory_audit(local_actor(), AuditParams()).events
        if e.action == "archive"
    )
    tamper_audit(store, archived.id)
    broken = service.audit_verify(local_actor(), NoParams())
    assert not broken.ok
    assert broken.chains[0].first_break == archived.id


def test_audit_verify_exits_non_zero_on_a_broken_chain(
    sqlite_store: SQLiteStore, clock: Clock, cli: Cli
) -> None:
    """`lorestore audit verify` printed ok: false and exited 0; the intact chain (the control)
    still exits 0. Through the CLI on the embedded store it opens."""
    store = sqlite_store
    service = LessonService(store, clock=clock)
    _mutate(service)
    intact = cli("audit", "verify", "--json")
    assert intact.exit_code == 0 and intact.json()["ok"] is True
    archived = next(
        e
        for e in service.memory_audit(local_actor(), AuditParams()).events
        if e.action == "archive"
    )
    tamper_audit(store, archived.id)
    for args in (("audit", "verify", "--json"), ("audit", "verify")):
        broken = cli(*args)
        assert broken.exit_code == 1, args
    assert cli("audit", "verify", "--json").json()["chains"][0]["first_break"] == archived.id


def test_the_events_of_one_address_are_its_own_paged_newest_first(
    service: LessonService,
) -> None:
    """One address is read by a query of its own (the index by address seeks it): its events
    only, newest first, paged by the cursor; the same key in another scope and another key in
    the same scope are not among them, and are found when asked for."""
    me = local_actor()
    for n in range(3):
        service.memory_write(me, WriteParams(scope=S, key="k", value=f"v{n}"))
    service.memory_write(me, WriteParams(scope=S, key="other", value="x"))
    service.memory_write(me, WriteParams(scope="repo::acme/lib", key="k", value="y"))
    first = service.memory_audit(me, AuditParams(scope=S, key="k", limit=2))
    assert [(e.scope, e.key, e.after_version) for e in first.events] == [(S, "k", 3), (S, "k", 2)]
    rest = service.memory_audit(
        me, AuditParams(scope=S, key="k", limit=2, cursor=first.next_cursor)
    )
    assert [(e.scope, e.key, e.after_version) for e in rest.events] == [(S, "k", 1)]
    assert [e.key for e in service.memory_audit(me, AuditParams(scope=S)).events] == [
        "other", "k", "k", "k"]  # fmt: skip
    lib = service.memory_audit(me, AuditParams(scope="repo::acme/lib", key="k")).events
    assert [(e.scope, e.after_version) for e in lib] == [("repo::acme/lib", 1)]
