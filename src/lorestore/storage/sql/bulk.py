"""The shared primitives of ``lorestore export`` / ``import``: keyset pages ordered by stable
ids, and inserts that keep what the store already holds. A dialect adds the two that differ
(``import_lessons``, ``versions_of``: SQLite's staged insert and JSON records)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from lorestore.storage.protocol import (
    AddressReads,
    ForeignRecord,
    PolicyRecord,
    PolicyRow,
    StoredLesson,
    Tombstone,
)
from lorestore.storage.rows import (
    foreign_params,
    json_value,
    policy_record_params,
    tombstone_from_row,
    tombstone_params,
    ts_text,
    version_params,
)
from lorestore.storage.sql.base import SQLBase

if TYPE_CHECKING:
    from lorestore.core.records import LessonVersion


class BulkPrimitives(SQLBase):
    """Export pages and keep-what-is-there inserts, over the dialect."""

    def export_lessons(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[StoredLesson]:
        params = {"owners": self._array(owners), "after_id": after_id, "limit": limit}
        return list(map(self._stored_doc, self._all("export_lessons", params)))

    def lessons_by_ids(self, owner: str, ids: Sequence[str]) -> list[StoredLesson]:
        params = {"owner": owner, "ids": self._array(ids)}
        return list(map(self._stored_doc, self._all("lessons_by_ids", params)))

    def insert_versions(self, versions: Sequence[tuple[int, LessonVersion]]) -> None:
        self._insert_rows("insert_versions", [version_params(*v) for v in versions])

    def insert_served_versions(self, pks: Sequence[int], actor: str) -> None:
        if pks:
            self._exec("insert_served_versions", {"pks": self._array(pks), "actor": actor})

    def address_reads(
        self,
        owner: str,
        scope: str,
        key: str,
        *,
        digests: Sequence[str],
        ladder: Sequence[str],
        skeleton: str,
        alongside: Callable[[], None] | None = None,
    ) -> AddressReads:
        self._lock_address(owner, scope, key)
        if alongside is not None:
            alongside()
        tombs, at, rejected, keys = self._all_at_once(
            [
                ("live_tombstones", {"owner": owner, "digests": self._array(digests)}),
                ("lesson_at", {"owner": owner, "scope": scope, "key": key}),
                ("rejected_values", {"owner": owner, "scopes": self._array(ladder)}),
                ("lookalike_keys", {"owner": owner, "scope": scope, "skeleton": skeleton}),
            ]
        )
        return AddressReads(
            tombstones=[tombstone_from_row(r) for r in tombs],
            stored=self._stored_doc(at[0]) if at else None,
            rejected=[(str(r["key"]), str(r["value"])) for r in rejected],
            lookalikes=[str(r["key"]) for r in keys],
        )

    def live_tombstones(self, owner: str, digests: Sequence[str]) -> list[Tombstone]:
        params = {"owner": owner, "digests": self._array(digests)}
        return [tombstone_from_row(r) for r in self._all("live_tombstones", params)]

    def export_tombstones(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[Tombstone]:
        params = {"owners": self._array(owners), "after_id": after_id, "limit": limit}
        return [tombstone_from_row(r) for r in self._all("export_tombstones", params)]

    def tombstone_by_id(self, owner: str, tombstone_id: str) -> Tombstone | None:
        row = self._one("tombstone_by_id", {"owner": owner, "id": tombstone_id})
        return None if row is None else tombstone_from_row(row)

    def import_tombstone(self, tombstone: Tombstone) -> bool:
        return self._count("import_tombstone", tombstone_params(tombstone)) == 1

    def export_policies(self, owners: Sequence[str]) -> list[PolicyRecord]:
        return [
            PolicyRecord(
                owner=r["owner"],
                policy=PolicyRow(r["scope"], r["revision_policy"], bool(r["require_review"])),
                updated_at=ts_text(r["updated_at"]) or "",
                updated_by=r["updated_by"],
                ext=json_value(r["ext"]),
            )
            for r in self._all("export_policies", {"owners": self._array(owners)})
        ]

    def import_policy(self, policy: PolicyRecord) -> bool:
        return self._count("import_policy", policy_record_params(policy)) == 1

    def import_foreign(self, record: ForeignRecord) -> bool:
        return self._count("import_foreign", foreign_params(record)) == 1

    def export_foreign(
        self, owners: Sequence[str], after: tuple[str, str] | None, limit: int
    ) -> list[ForeignRecord]:
        params = {
            "owners": self._array(owners),
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
            for r in self._all("export_foreign", params)
        ]
