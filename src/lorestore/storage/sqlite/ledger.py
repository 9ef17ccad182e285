"""The SQLite file's side of the shared migration runner (``storage/migrations.py``): its
``schema_migrations`` record, ``BEGIN IMMEDIATE`` as the migration lock, and each file run
statement by statement inside that transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from lorestore.core.errors import LorestoreError
from lorestore.core.timestamps import format_ts
from lorestore.storage.migrations import Migration
from lorestore.storage.sqlite.dialect import Q

PACKAGE = "lorestore.storage.sqlite.migrations"

_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    number      INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    applied_at  TEXT NOT NULL
)
"""


def statements(script: str) -> Iterator[str]:
    """The statements of a SQL file, each with the comments before it. ``executescript``
    would commit the open transaction first, letting go of the lock the runner checked under;
    ``complete_statement`` is SQLite's own tokenizer, so a ``;`` inside a trigger body, a
    string or a comment does not end a statement."""
    start, end = 0, script.find(";")
    while end != -1:
        if sqlite3.complete_statement(script[start : end + 1]):
            yield script[start : end + 1]
            start = end + 1
        end = script.find(";", end + 1)
    if script[start:].strip():
        yield script[start:]  # trailing comments (a no-op), or a last statement without ';'


class SQLiteLedger:
    """The migration record of one open connection (in autocommit mode)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def applied(self) -> dict[int, tuple[str, str]]:
        try:
            rows = self._conn.execute(Q["applied_migrations"]).fetchall()
        except sqlite3.OperationalError:  # a new file: no schema_migrations yet
            return {}
        return {int(r[0]): (str(r[1]), str(r[2])) for r in rows}

    @contextmanager
    def locked(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def prepare(self) -> None:
        self._conn.execute(_MIGRATIONS_TABLE)

    def apply(self, migration: Migration) -> None:
        try:
            for statement in statements(migration.sql):
                self._conn.execute(statement)
        except sqlite3.Error as exc:
            raise LorestoreError(
                "migration_error", f"migration {migration.name} failed: {exc}"
            ) from exc
        at = format_ts(datetime.now(UTC))
        record = (migration.number, migration.name, migration.checksum, at)
        self._conn.execute(Q["record_migration"], record)
