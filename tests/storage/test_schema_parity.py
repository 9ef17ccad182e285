"""Both backends' migrations build the same tables with the same columns: the shared
primitives (storage/sql) and `lorestore migrate` read and write them by column name, so a
column added on one side only is a bug the other side meets later. Tables that exist on one
side only are listed here with the reason."""

from __future__ import annotations

from pathlib import Path

import psycopg
from tests.pg import Template

from lorestore.storage.sqlite import SQLiteStore

# SQLite's FTS5 index of lessons and its shadow tables; PostgreSQL keeps a generated tsvector
# column and a GIN index on lessons instead.
SQLITE_FTS = {
    "lessons_fts",
    "lessons_fts_config",
    "lessons_fts_data",
    "lessons_fts_docsize",
    "lessons_fts_idx",
}
SQLITE_ONLY = SQLITE_FTS | {
    # AUTOINCREMENT's counters, kept by SQLite itself.
    "sqlite_sequence",
    # Recall's full-text pass looks each match up by an integer address (migration
    # recall_create_addresses); PostgreSQL's definer function filters by (owner, scope) in
    # the index scan instead (migration 0009).
    "recall_addresses",
    "recall_lessons",
    # A lesson's recalls: FTS5 of each recall's lesson ids and its shadow tables (migration
    # 0031); PostgreSQL has GIN indexes on recall_log's offered and held lists instead.
    "recall_lesson_ids",
    "recall_lesson_ids_config",
    "recall_lesson_ids_content",
    "recall_lesson_ids_data",
    "recall_lesson_ids_idx",
}
POSTGRES_ONLY: set[str] = set()
# Columns one backend has and the other has not, per table, with the reason.
SQLITE_ONLY_COLUMNS: dict[str, set[str]] = {}
POSTGRES_ONLY_COLUMNS = {
    # The generated full-text vector (SQLite: lessons_fts).
    "lessons": {"search"},
    # Every tenant row carries its owner for row-level security; SQLite reaches the owner
    # through the lesson.
    "lesson_versions": {"owner"},
    "lesson_sessions": {"owner"},
    # A rate-limit row names its token's principal: the row-level policy matches it to the
    # actor (SQLite has no policies to match).
    "token_usage": {"principal"},
}


def _sqlite_columns(path: Path) -> dict[str, set[str]]:
    store = SQLiteStore(path)
    try:
        conn = store._conn
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: {r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')} for t in tables}
    finally:
        store.close()


def _postgres_columns(url: str) -> dict[str, set[str]]:
    # pg_catalog, not information_schema: the app role sees every table's columns there,
    # whatever it may read.
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.relname, a.attname FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "JOIN pg_attribute AS a ON a.attrelid = c.oid "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') "
            "AND a.attnum > 0 AND NOT a.attisdropped"
        ).fetchall()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    return found


def test_every_table_has_the_same_columns_on_both_backends(
    tmp_path: Path, pg_template: Template, pg_database: str
) -> None:
    sqlite = _sqlite_columns(tmp_path / "schema.db")
    postgres = _postgres_columns(pg_template.app_url(pg_database))
    assert set(sqlite) - set(postgres) == SQLITE_ONLY
    assert set(postgres) - set(sqlite) == POSTGRES_ONLY
    shared = sorted(set(sqlite) & set(postgres))
    assert "lessons" in shared and "audit_log" in shared  # the positive control
    for table in shared:
        assert sqlite[table] - postgres[table] == SQLITE_ONLY_COLUMNS.get(table, set()), table
        assert postgres[table] - sqlite[table] == POSTGRES_ONLY_COLUMNS.get(table, set()), table
