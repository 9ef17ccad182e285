"""The migration runner: applies from blank, records checksums, refuses a changed file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lorestore.core.errors import LorestoreError
from lorestore.storage import migrations
from lorestore.storage.sqlite import SQLiteStore

PACKAGE = "lorestore.storage.sqlite.migrations"


def test_blank_database_gets_every_migration_once(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    first = SQLiteStore(path)
    assert [m.number for m in first.applied] == [m.number for m in migrations.discover(PACKAGE)]
    first.close()
    again = SQLiteStore(path)
    assert again.applied == []
    again.close()
    rows = (
        sqlite3.connect(path).execute("SELECT number, checksum FROM schema_migrations").fetchall()
    )
    assert rows == [(m.number, m.checksum) for m in migrations.discover(PACKAGE)]


def test_migration_files_have_the_documented_header() -> None:
    for migration in migrations.discover(PACKAGE):
        head = migration.sql[:2500]
        for part in ("Why:", "What changes:", "Tenancy:", "Compatibility:", "Verify:"):
            assert part in head, f"{migration.name} lacks {part}"


def test_changed_applied_migration_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_migrations SET checksum = 'f00d' WHERE number = 1")
    conn.commit()
    conn.close()
    with pytest.raises(LorestoreError) as err:
        SQLiteStore(path)
    assert err.value.code == "migration_error"
    assert "changed after it was applied" in err.value.message


def test_database_from_a_newer_lorestore_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (999, '0999_future.sql', 'x', 'now')")
    conn.commit()
    conn.close()
    with pytest.raises(LorestoreError, match="newer version"):
        SQLiteStore(path)


def test_pending_lists_only_new_files() -> None:
    found = migrations.discover(PACKAGE)
    applied = {found[0].number: (found[0].name, found[0].checksum)}
    assert migrations.pending(found, applied) == found[1:]
