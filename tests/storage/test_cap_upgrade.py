"""A store made before the byte cap and the default caps, upgraded: the hidden cap of 10,000
written in every row of the old owner_stats gives way to the store's default (none on the
personal store, 10,000 on a server), a cap someone set is kept, and both counters are
recounted from the rows (archived lessons, versions and foreign records included)."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from tests.pg import Template, url_for

from lorestore.storage import migrations
from lorestore.storage.postgres.setup import PACKAGE as POSTGRES
from lorestore.storage.postgres.setup import PostgresLedger, init_database
from lorestore.storage.sqlite import SQLiteStore
from lorestore.storage.sqlite.ledger import PACKAGE as SQLITE
from lorestore.storage.sqlite.ledger import SQLiteLedger

T = "2026-01-01T00:00:00.000000Z"
# Two lessons of user:local: "abc" active, "de" archived, one version each; a kept record.
LESSONS = (("k1", "abc", "active"), ("k2", "de", "archived"))
RECORD = '{"type":"x-note"}'
TOMBSTONE_EXT = '{"x":1}'  # the unknown fields an import kept on a tombstone


def before_caps(package: str) -> list[migrations.Migration]:
    """The migrations that came before the one that bounds stored bytes."""
    known = migrations.discover(package)
    at = next(i for i, m in enumerate(known) if m.name.endswith("_bound_owner_caps.sql"))
    return known[:at]


def _seed(conn: Any, mark: str) -> None:
    """The old schema's rows, as that release's triggers left them (placeholders: ``mark``)."""
    q = mark
    overriding = "OVERRIDING SYSTEM VALUE " if mark == "%s" else ""  # PostgreSQL's identity pk
    conn.execute(
        f"INSERT INTO principals (id, kind, name, created_at) VALUES ({q}, 'org', 'acme', {q})",
        ["org:acme", T],
    )
    for pk, (key, value, status) in enumerate(LESSONS, start=1):
        conn.execute(
            "INSERT INTO lessons (pk, owner, id, scope, key, value, value_digest, status, version,"
            f" recorded_at, created_at, updated_at) {overriding}VALUES ({q}, 'user:local', {q},"
            " 'global',"
            f" {q}, {q}, 'd', {q}, 1, {q}, {q}, {q})",
            [pk, str(uuid.uuid4()), key, value, status, T, T, T],
        )
    conn.execute(
        "INSERT INTO foreign_records (owner, digest, type, record, imported_at, imported_by)"
        f" VALUES ('user:local', 'x', 'x-note', {q}, {q}, 'user:local')",
        [RECORD, T],
    )
    conn.execute(
        "INSERT INTO tombstones (id, owner, scope, value_digest, reason, actor, created_at, ext)"
        f" VALUES ({q}, 'user:local', 'global', 'd', 'r', 'user:local', {q}, {q})",
        [str(uuid.uuid4()), T, TOMBSTONE_EXT],
    )
    # A count gone astray, at the hidden default; and a cap a person set for the org.
    conn.execute("UPDATE owner_stats SET active_lessons = 7 WHERE owner = 'user:local'")
    conn.execute("INSERT INTO owner_stats (owner, max_active) VALUES ('org:acme', 500)")


def _versions(conn: Any, mark: str, owner_column: bool) -> None:
    for pk, (_, value, _) in enumerate(LESSONS, start=1):
        columns = "owner, " if owner_column else ""
        owner = "'user:local', " if owner_column else ""
        conn.execute(
            f"INSERT INTO lesson_versions ({columns}lesson_pk, version, value, value_digest,"
            f" recorded_at, actor) VALUES ({owner}{mark}, 1, {mark}, 'd', {mark}, 'user:local')",
            [pk, value, T],
        )


# value + ext "{}" of each lesson, each version's value, the record, the tombstone's ext.
STORED = (3 + 2) + (2 + 2) + 3 + 2 + len(RECORD) + len(TOMBSTONE_EXT)
STATS = "SELECT owner, active_lessons, stored_bytes, max_active, max_bytes FROM owner_stats"


def test_an_older_personal_store_loses_only_the_hidden_cap(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    ledger = SQLiteLedger(conn)
    ledger.prepare()
    for migration in before_caps(SQLITE):
        with ledger.locked():
            ledger.apply(migration)
    _seed(conn, "?")
    _versions(conn, "?", owner_column=False)
    assert conn.execute(
        STATS.replace(", stored_bytes", "").replace(", max_bytes", "")
    ).fetchall() == [
        ("user:local", 7, 10_000),
        ("org:acme", 0, 500),
    ]
    conn.close()
    store = SQLiteStore(path)  # applies the rest
    try:
        with store.transaction(write=False) as tx:
            local, acme = tx.owner_caps("user:local"), tx.owner_caps("org:acme")
    finally:
        store.close()
    assert (local.active_lessons, local.stored_bytes, local.active_cap, local.bytes_cap) == (
        1,
        STORED,
        None,
        None,
    )
    assert (acme.max_active, acme.active_cap) == (500, 500)


def test_an_older_server_database_keeps_its_caps(pg_template: Template) -> None:
    name = f"lorestore_up_{uuid.uuid4().hex[:10]}"
    admin = pg_template.admin
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = url_for(admin, name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("GRANT CREATE, USAGE ON SCHEMA public TO lorestore_owner")
            conn.execute("GRANT CREATE ON SCHEMA public TO lorestore_definer")
            conn.execute("GRANT USAGE ON SCHEMA public TO lorestore_app, lorestore_definer")
            conn.execute("SET ROLE lorestore_owner")
            ledger = PostgresLedger(conn)
            with ledger.locked():
                ledger.prepare()
            for migration in before_caps(POSTGRES):
                with ledger.locked():
                    ledger.apply(migration)
            conn.execute("RESET ROLE")
            conn.execute(
                "INSERT INTO principals (id, kind, name) VALUES ('user:local', 'user', 'local')"
            )
            _seed(conn, "%s")
            _versions(conn, "%s", owner_column=True)
        init_database(url)  # applies the rest, as an upgrade does
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(STATS + " ORDER BY owner").fetchall()
            defaults = conn.execute("SELECT max_active, max_bytes FROM cap_defaults").fetchall()
    finally:
        pg_template.drop(name)
    # jsonb keeps {"type": "x-note"} and {"x": 1}: a byte more each than the text given.
    assert rows == [
        ("org:acme", 0, 0, 500, None),
        ("user:local", 1, STORED + 2, None, None),  # None: the server's default
    ]
    assert defaults == [(10_000, 1024**3)]
