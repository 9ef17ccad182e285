"""The bulk export and import primitives of the PostgreSQL store (``lorestore export`` /
``import``): keyset pages ordered by stable ids, and inserts that keep what is there. Every
statement runs as the app role with the actor bound, so row-level security still decides."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from lorestore.core.records import LessonVersion
from lorestore.storage.protocol import (
    ForeignRecord,
    ImportedLesson,
    PolicyRecord,
    PolicyRow,
    StoredLesson,
    Tombstone,
)
from lorestore.storage.queries import load_queries
from lorestore.storage.rows import (
    LESSON_COLUMNS,
    dumps,
    foreign_params,
    imported_row,
    json_value,
    lesson_from_row,
    policy_record_params,
    tombstone_from_row,
    tombstone_params,
    ts_text,
    version_from_row,
    version_params,
)

Q = load_queries("lorestore.storage.postgres", "queries.sql")
Row = dict[str, Any]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class PortablePrimitives:
    """Mixed into the PostgreSQL transaction; uses its open connection."""

    _conn: psycopg.Connection[Row]

    def export_lessons(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[StoredLesson]:
        params = {"owners": list(owners), "after_id": after_id, "limit": limit}
        return [
            StoredLesson(lesson_from_row(r), r["pk"], r["value_digest"], r["pending_version"])
            for r in self._conn.execute(Q["export_lessons"], params).fetchall()
        ]

    def versions_of(self, pks: Sequence[int]) -> dict[int, list[LessonVersion]]:
        found: dict[int, list[LessonVersion]] = {pk: [] for pk in pks}
        for row in self._conn.execute(Q["versions_of"], {"pks": list(pks)}).fetchall():
            found[row["lesson_pk"]].append(version_from_row(row, str(row["lesson_id"])))
        return found

    def import_lessons(self, lessons: Sequence[ImportedLesson]) -> list[int | None]:
        # One statement per lesson: PostgreSQL is not the bulk-load target the SQLite store
        # is, and each insert still skips a taken id or address on its own.
        pks: list[int | None] = []
        for lesson in lessons:
            params = dict(zip(LESSON_COLUMNS, imported_row(lesson), strict=True))
            row = self._conn.execute(Q["import_lesson"], params).fetchone()
            pks.append(None if row is None else int(row["pk"]))
        return pks

    def insert_versions(self, versions: Sequence[tuple[int, LessonVersion]]) -> None:
        if versions:
            with self._conn.cursor() as cur:
                cur.executemany(Q["insert_version"], [version_params(*v) for v in versions])

    def insert_served_versions(self, pks: Sequence[int], actor: str) -> None:
        if pks:
            self._conn.execute(Q["insert_served_versions"], {"pks": list(pks), "actor": actor})

    def append_audits(self, events: Sequence[dict[str, Any]]) -> None:
        params = [{**event, "detail": dumps(event.get("detail") or {})} for event in events]
        if params:
            with self._conn.cursor() as cur:
                cur.executemany(Q["append_audit"], params)

    def live_tombstones(self, owner: str, digests: Sequence[str]) -> list[Tombstone]:
        params = {"owner": owner, "digests": list(digests)}
        rows = self._conn.execute(Q["live_tombstones"], params).fetchall()
        return [tombstone_from_row(r) for r in rows]

    def lessons_by_ids(self, owner: str, ids: Sequence[str]) -> list[StoredLesson]:
        params = {"owner": owner, "ids": list(ids)}
        return [
            StoredLesson(lesson_from_row(r), r["pk"], r["value_digest"], r["pending_version"])
            for r in self._conn.execute(Q["lessons_by_ids"], params).fetchall()
        ]

    def export_tombstones(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[Tombstone]:
        params = {"owners": list(owners), "after_id": after_id, "limit": limit}
        rows = self._conn.execute(Q["export_tombstones"], params).fetchall()
        return [tombstone_from_row(r) for r in rows]

    def tombstone_by_id(self, owner: str, tombstone_id: str) -> Tombstone | None:
        params = {"owner": owner, "id": tombstone_id}
        row = self._conn.execute(Q["tombstone_by_id"], params).fetchone()
        return None if row is None else tombstone_from_row(row)

    def import_tombstone(self, tombstone: Tombstone) -> bool:
        params = tombstone_params(tombstone)
        return self._conn.execute(Q["import_tombstone"], params).rowcount == 1

    def export_policies(self, owners: Sequence[str]) -> list[PolicyRecord]:
        rows = self._conn.execute(Q["export_policies"], {"owners": list(owners)}).fetchall()
        return [
            PolicyRecord(
                owner=r["owner"],
                policy=PolicyRow(r["scope"], r["revision_policy"], bool(r["require_review"])),
                updated_at=ts_text(r["updated_at"]) or "",
                updated_by=r["updated_by"],
                ext=json_value(r["ext"]),
            )
            for r in rows
        ]

    def import_policy(self, policy: PolicyRecord) -> bool:
        return self._conn.execute(Q["import_policy"], policy_record_params(policy)).rowcount == 1

    def import_foreign(self, record: ForeignRecord) -> bool:
        return self._conn.execute(Q["import_foreign"], foreign_params(record)).rowcount == 1

    def export_foreign(
        self, owners: Sequence[str], after: tuple[str, str] | None, limit: int
    ) -> list[ForeignRecord]:
        params = {
            "owners": list(owners),
            "after_owner": after[0] if after else None,
            "after_digest": after[1] if after else None,
            "limit": limit,
        }
        return [
            ForeignRecord(
                owner=r["owner"],
                digest=r["digest"],
                type=r["type"],
                scope=r["scope"],
                record=json_value(r["record"]),
                imported_at=ts_text(r["imported_at"]) or "",
                imported_by=r["imported_by"],
            )
            for r in self._conn.execute(Q["export_foreign"], params).fetchall()
        ]
