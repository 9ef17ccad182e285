"""Each owner's audit chain head (how many events, the last one's hash) is kept where the
application cannot rewind it, so that `lorestore audit verify` sees the newest events deleted,
which the hash chain alone cannot (what is left of a chain cut at its end still links).
Through the CLI on both backends: the untouched store (the control) verifies, exit 0; the
store with its tail cut verifies not, exit 1; the application's own rights cannot move a head
but by appending."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from tests.conftest import Cli, app_connection
from tests.migrating import pg_url
from tests.pg import Template, admin_url

from lorestore.auth.actor import local_actor
from lorestore.core.audit import GENESIS, AuditEntry
from lorestore.models import NoParams, WriteParams
from lorestore.service import LessonService
from lorestore.storage import migrations
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.protocol import Store
from lorestore.storage.sqlite import SQLiteStore
from lorestore.storage.sqlite.ledger import PACKAGE, SQLiteLedger

S = "repo::acme/app"
REFUSED = (sqlite3.IntegrityError, psycopg.errors.InsufficientPrivilege)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Store]:
    """The store the CLI opens: LORESTORE_HOME's SQLite file, or a PostgreSQL database
    reached as the application role (LORESTORE_DATABASE_URL); the object is for tampering."""
    store: Store
    if request.param == "sqlite":
        store = SQLiteStore(home / "lorestore.db")
    else:
        template: Template = request.getfixturevalue("pg_template")
        url = template.app_url(request.getfixturevalue("pg_database"))
        monkeypatch.setenv("LORESTORE_DATABASE_URL", pg_url(url))
        store = PostgresStore(url, max_size=2)
    yield store
    store.close()


def _six_events(cli: Cli) -> None:
    cli.ok("write", S, "k", "one")
    cli.ok("write", S, "k", "two")
    cli.ok("archive", S, "k", "--reason", "stale")
    cli.ok("restore", S, "k")
    cli.ok("write", S, "other", "three")
    cli.ok("write", S, "other", "four")


def cut_tail(store: Store, newest: int) -> None:
    """What someone with the database's owner rights could do and the hash chain alone would
    not show: delete the newest events of the chain (the append-only guard switched off)."""
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        conn.execute("DROP TRIGGER audit_log_no_delete")
        conn.execute(
            "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log ORDER BY id DESC LIMIT ?)",
            (newest,),
        )
        conn.commit()
        conn.close()
        return
    assert isinstance(store, PostgresStore)
    admin = conninfo_to_dict(admin_url())
    admin["dbname"] = conninfo_to_dict(store.url)["dbname"]
    with psycopg.connect(make_conninfo(**admin), autocommit=True) as conn:
        # For this session only (a superuser's right): every trigger off, the schema unchanged.
        conn.execute("SET session_replication_role = replica")
        conn.execute(
            "DELETE FROM audit_log WHERE id IN "
            "(SELECT id FROM audit_log ORDER BY id DESC LIMIT %s)",
            (newest,),
        )


def test_untouched_store_verifies_and_a_cut_tail_exits_1(backend: Store, cli: Cli) -> None:
    _six_events(cli)
    intact = cli("audit", "verify", "--json")
    assert intact.exit_code == 0, intact.stderr  # the control
    (chain,) = intact.json()["chains"]
    assert chain["ok"] is True and chain["events"] == 6 and chain["head_events"] == 6
    assert chain["faults"] == []

    cut_tail(backend, 2)
    cut = cli("audit", "verify", "--json")
    assert cut.exit_code == 1
    report = cut.json()
    (chain,) = report["chains"]
    assert report["ok"] is False and chain["ok"] is False
    assert chain["events"] == 4 and chain["head_events"] == 6
    assert chain["first_break"] is None  # what is left still links: only the head shows it
    assert chain["faults"] == ["truncated"]
    shown = cli("audit", "verify")
    assert shown.exit_code == 1
    assert "2 events missing" in shown.stdout


def test_a_chain_cut_to_nothing_is_reported(backend: Store, cli: Cli) -> None:
    _six_events(cli)
    cut_tail(backend, 6)
    cut = cli("audit", "verify", "--json")
    assert cut.exit_code == 1
    (chain,) = cut.json()["chains"]
    assert (chain["events"], chain["head_events"], chain["faults"]) == (0, 6, ["truncated"])


def test_appends_after_a_cut_do_not_hide_it(backend: Store, cli: Cli) -> None:
    """Writing on after the tail was cut links onto what is left, so the chain verifies; the
    head still counts the events that were removed."""
    _six_events(cli)
    cut_tail(backend, 2)
    cli.ok("write", S, "later", "five")
    cli.ok("write", S, "later", "six")
    cut = cli("audit", "verify", "--json")
    assert cut.exit_code == 1
    (chain,) = cut.json()["chains"]
    assert chain["events"] == 6 and chain["head_events"] == 8
    assert chain["first_break"] is None and chain["faults"] == ["truncated"]


def test_the_app_cannot_move_a_head_but_by_appending(backend: Store, cli: Cli) -> None:
    _six_events(cli)
    with app_connection(backend) as conn:
        head = "SELECT events, last_hash FROM audit_heads WHERE owner = 'user:local'"
        events, last = conn.execute(head).fetchone()  # the control: the app reads its head
        assert events == 6
        newest = conn.execute("SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1").fetchone()
        assert last == newest[0]
        for statement in (
            "UPDATE audit_heads SET events = 4",
            "UPDATE audit_heads SET last_hash = 'x'",
            "DELETE FROM audit_heads",
            "INSERT INTO audit_heads (owner, events, last_hash) VALUES ('user:other', 1, 'x')",
            "DELETE FROM audit_log",
        ):
            with pytest.raises(REFUSED):
                conn.execute(statement)
        assert conn.execute(head).fetchone() == (6, last)
        assert conn.execute("SELECT count(*) FROM audit_heads").fetchone() == (1,)
    cli.ok("write", S, "k", "three")  # the append path moves it
    assert cli("audit", "verify", "--json").json()["chains"][0]["head_events"] == 7


def test_a_store_opened_with_a_cut_tail_is_warned_about(
    sqlite_store: SQLiteStore, cli: Cli, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedded store compares each head with the last event on open (one indexed row per
    owner) and says so on stderr; the command itself still runs."""
    _six_events(cli)
    with caplog.at_level(logging.WARNING, logger="lorestore"):
        assert cli("read", S, "k").exit_code == 0
    assert "audit" not in caplog.text  # the control: nothing to warn about
    cut_tail(sqlite_store, 2)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lorestore"):
        assert cli("read", S, "k").exit_code == 0
    assert "audit chain of user:local" in caplog.text
    assert "lorestore audit verify" in caplog.text


def _chained(owner: str, count: int) -> list[dict[str, Any]]:
    events, prev = [], GENESIS
    for n in range(count):
        entry = AuditEntry(owner=owner, at=f"2026-01-01T00:00:0{n}Z", actor=owner, action="x")
        event = entry.chained(prev)
        events.append(event)
        prev = event["hash"]
    return events


def test_heads_of_an_older_store_are_set_from_its_chains(home: Path, cli: Cli) -> None:
    """A store whose events predate the heads gets them from its chains when it is upgraded."""
    path = home / "lorestore.db"
    path.parent.mkdir(mode=0o700, parents=True)
    conn = sqlite3.connect(path, isolation_level=None)
    ledger = SQLiteLedger(conn)
    ledger.prepare()
    with ledger.locked():
        for migration in migrations.discover(PACKAGE):
            if migration.name.endswith("_create_audit_heads.sql"):
                break
            ledger.apply(migration)
    columns = "owner, at, actor, action, detail, prev_hash, hash"
    for event in _chained("user:local", 3) + _chained("user:alice", 2):
        conn.execute(
            f"INSERT INTO audit_log ({columns}) VALUES (?, ?, ?, ?, '{{}}', ?, ?)",
            [event[c] for c in ("owner", "at", "actor", "action", "prev_hash", "hash")],
        )
    conn.close()
    report = cli("audit", "verify", "--json")
    assert report.exit_code == 0, report.stdout
    (chain,) = report.json()["chains"]
    assert (chain["events"], chain["head_events"]) == (3, 3)
    heads = sqlite3.connect(path).execute("SELECT owner, events FROM audit_heads ORDER BY owner")
    assert heads.fetchall() == [("user:alice", 2), ("user:local", 3)]


def test_postgres_app_role_may_only_read_heads(pg_template: Template, pg_database: str) -> None:
    """The app role reads heads and nothing more; the one writer is the definer trigger
    function, with a fixed search path (no object of the caller's can stand in for ours)."""
    with psycopg.connect(pg_template.admin_url(pg_database), autocommit=True) as conn:
        rights = conn.execute(
            "SELECT has_table_privilege('lorestore_app', 'audit_heads', 'SELECT'), "
            "has_table_privilege('lorestore_app', 'audit_heads', 'INSERT'), "
            "has_table_privilege('lorestore_app', 'audit_heads', 'UPDATE'), "
            "has_table_privilege('lorestore_app', 'audit_heads', 'DELETE'), "
            "has_table_privilege('lorestore_app', 'audit_heads', 'TRUNCATE')"
        ).fetchone()
        assert rights == (True, False, False, False, False)
        function = conn.execute(
            "SELECT prosecdef, proowner::regrole::text, proconfig FROM pg_proc "
            "WHERE proname = 'lorestore_advance_audit_head'"
        ).fetchone()
        assert function == (True, "lorestore_definer", ["search_path=pg_catalog, public, pg_temp"])


def test_verify_while_others_write_finds_no_fault(backend: Store) -> None:
    """The head is read before the chain, so events appended meanwhile lie past it: a verify
    run during writes never reports a fault that is not there."""
    service = LessonService(backend)
    errors: list[BaseException] = []
    reports: list[bool] = []

    def write(n: int) -> None:
        try:
            for i in range(15):
                params = WriteParams(scope=S, key=f"w{n}-{i}", value=f"lesson {n} {i}")
                service.memory_write(local_actor(session=f"s{n}"), params)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def verify() -> None:
        while any(t.is_alive() for t in writers):
            reports.append(service.audit_verify(local_actor(), NoParams()).ok)

    writers = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    checker = threading.Thread(target=verify)
    for thread in (*writers, checker):
        thread.start()
    for thread in (*writers, checker):
        thread.join()
    assert errors == []
    assert reports and all(reports)
    final = service.audit_verify(local_actor(), NoParams())
    assert final.ok and final.chains[0].events == final.chains[0].head_events == 45


def test_postgres_two_unlocked_appends_cannot_fork_the_head(
    pg_template: Template, pg_database: str
) -> None:
    """Raw appends that skip the chain lock: both read the same head, so the second insert of
    its next key fails once the first commits. The control: the first append lands."""
    url = pg_template.app_url(pg_database)
    insert = (
        "INSERT INTO audit_log (owner, at, actor, action, prev_hash, hash) "
        "VALUES ('user:local', now(), 'user:local', 'x', %s, %s)"
    )
    bind = "SELECT set_config('lorestore.actor', 'user:local', false)"
    with psycopg.connect(url) as first, psycopg.connect(url) as second:
        first.execute(bind)
        second.execute(bind)
        first.commit()
        second.commit()
        first.execute(insert, (GENESIS, "a" * 64))
        failed: list[BaseException] = []

        def race() -> None:
            try:
                second.execute(insert, (GENESIS, "b" * 64))
                second.commit()
            except psycopg.errors.UniqueViolation as exc:
                failed.append(exc)
                second.rollback()

        racer = threading.Thread(target=race)
        racer.start()
        racer.join(0.5)
        assert racer.is_alive()  # it waits on the first append's head
        first.commit()
        racer.join()
        assert len(failed) == 1
        heads = first.execute("SELECT events, last_hash FROM audit_heads").fetchall()
        assert heads == [(1, "a" * 64)]
