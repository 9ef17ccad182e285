"""The one migration runner on both backends: each file once, in one transaction of its own,
pending migrations re-checked under the backend's lock, a changed applied file refused."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from tests.pg import Template, admin_url, url_for

from lorestore.core.errors import LorestoreError
from lorestore.storage import migrations
from lorestore.storage.postgres import PostgresStore
from lorestore.storage.postgres.setup import PACKAGE as POSTGRES
from lorestore.storage.postgres.setup import init_database
from lorestore.storage.sqlite import SQLiteStore
from lorestore.storage.sqlite.ledger import PACKAGE as SQLITE
from lorestore.storage.sqlite.ledger import SQLiteLedger, statements


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE name != 'schema_migrations' "
        "ORDER BY type, name"
    ).fetchall()


def test_statement_by_statement_builds_what_executescript_builds(tmp_path: Path) -> None:
    # The runner runs each file statement by statement inside its locked transaction; the
    # schema must be exactly the one the files give when run whole.
    whole = sqlite3.connect(tmp_path / "whole.db", isolation_level=None)
    split = sqlite3.connect(tmp_path / "split.db", isolation_level=None)
    for migration in migrations.discover(SQLITE):
        whole.executescript(migration.sql)
        parts = list(statements(migration.sql))
        joined = "".join(parts)  # nothing added, nothing dropped but trailing whitespace
        assert parts and migration.sql.startswith(joined)
        assert not migration.sql[len(joined) :].strip()
        for statement in parts:
            split.execute(statement)
    assert len(_schema(whole)) > 30 and _schema(split) == _schema(whole)


def test_statements_keeps_a_trigger_body_and_a_quoted_semicolon_whole() -> None:
    script = (
        "-- a comment; with a semicolon\nCREATE TABLE t (a TEXT DEFAULT ';');\n"
        "CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; SELECT 2; END;\n-- done\n"
    )
    parts = list(statements(script))
    assert len(parts) == 3 and parts[1].strip().startswith("CREATE TRIGGER")
    assert parts[1].rstrip().endswith("END;") and parts[2].strip() == "-- done"


def test_a_file_open_and_current_takes_no_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    SQLiteStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock throughout
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=0.05)
        assert migrations.migrate(SQLiteLedger(conn), SQLITE) == []
        conn.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_failed_migration_leaves_nothing_of_itself(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DELETE FROM schema_migrations WHERE number = 1")  # as if never applied
    with pytest.raises(LorestoreError) as err:
        migrations.migrate(SQLiteLedger(conn), SQLITE)  # its CREATE TABLE meets the table
    assert err.value.code == "migration_error" and "0001" in err.value.message
    assert not conn.in_transaction  # rolled back, the lock let go
    numbers = [r[0] for r in conn.execute("SELECT number FROM schema_migrations")]
    assert numbers == [m.number for m in migrations.discover(SQLITE)][1:]
    conn.close()


@pytest.fixture
def blank_database() -> Iterator[str]:
    admin = admin_url()
    name = f"lorestore_blank_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield url_for(admin, name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def test_concurrent_inits_apply_each_postgres_migration_once(blank_database: str) -> None:
    reports: list[list[str]] = []
    failures: list[BaseException] = []

    def init() -> None:
        try:
            reports.append(init_database(blank_database).applied)
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=init) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert failures == []
    names = [m.name for m in migrations.discover(POSTGRES)]
    assert sorted(name for report in reports for name in report) == sorted(names)
    with psycopg.connect(blank_database) as conn:
        rows = conn.execute("SELECT number, checksum FROM schema_migrations ORDER BY 1").fetchall()
    assert rows == [(m.number, m.checksum) for m in migrations.discover(POSTGRES)]


def test_a_changed_applied_postgres_migration_is_refused(blank_database: str) -> None:
    init_database(blank_database)
    assert init_database(blank_database).applied == []  # the positive control: current
    with psycopg.connect(blank_database, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'f00d' WHERE number = 2")
    with pytest.raises(LorestoreError) as err:
        init_database(blank_database)
    assert err.value.code == "migration_error"
    assert "changed after it was applied" in err.value.message


@pytest.mark.fresh_database  # it deletes a schema_migrations row: not a database to lend on
def test_a_store_behind_its_migrations_is_refused_where_it_is_never_migrated(
    tmp_path: Path, pg_template: Template, pg_database: str
) -> None:
    # lorestore migrate reads a SQLite source as it is, and the PostgreSQL store serves a
    # database as it is: each refuses one that lacks a migration, naming it.
    from lorestore.storage.sqlite.transfer import open_source

    path = tmp_path / "behind.db"
    SQLiteStore(path).close()
    open_source(path).close()  # the positive control: a current file is read
    last = migrations.discover(SQLITE)[-1]
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM schema_migrations WHERE number = ?", (last.number,))
    conn.commit()
    conn.close()
    with pytest.raises(LorestoreError) as err:
        open_source(path)
    assert err.value.code == "config_error"
    assert f"{path} lacks migrations {last.name}" in err.value.message

    PostgresStore(pg_template.app_url(pg_database)).close()  # the positive control
    newest = migrations.discover(POSTGRES)[-1]
    with psycopg.connect(url_for(admin_url(), pg_database), autocommit=True) as admin:
        admin.execute("DELETE FROM schema_migrations WHERE number = %s", (newest.number,))
    with pytest.raises(LorestoreError) as err:
        PostgresStore(pg_template.app_url(pg_database))
    assert err.value.code == "config_error"
    assert f"the database lacks migrations {newest.name}" in err.value.message
