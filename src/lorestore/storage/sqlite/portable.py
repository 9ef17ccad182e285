"""The bulk export and import primitives of the embedded store (``lorestore export`` /
``import``): keyset pages ordered by stable ids, inserts that keep what is there (a batch of
lessons in one statement), and the connection's settings while an import runs."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lorestore.core.records import Lesson, LessonVersion
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
    audit_row,
    dumps,
    foreign_params,
    imported_row,
    json_value,
    policy_record_params,
    tombstone_from_row,
    tombstone_params,
    version_params,
)

Q = load_queries("lorestore.storage.sqlite", "queries.sql")
# The model's own validator (as the store's read paths use it): a page of 500 records.
_lesson_from_json = Lesson.__pydantic_validator__.validate_json
_version_from_json = LessonVersion.__pydantic_validator__.validate_json
# While an import runs: a page cache of at least 16 MiB for the indexes an import touches at
# random (the store's own is 32 MiB; SQLite's default 2 MiB), and a checkpoint every 16,000
# WAL pages (64 MiB of log at 4 KiB) instead of after every commit of more than 1,000. Both
# are bounded, whatever the file's size; both go back to what they were when the import ends.
BULK_CACHE_KIB = 16 * 1024
BULK_CHECKPOINT_PAGES = 16_000
# FTS5 merges its index segments as it goes ("automerge", 4 segments a level by default):
# during an import that is a fifth of the cost of each lesson, and work the next batch
# redoes. An import that inserts lessons turns it off (in the transaction of its first
# insert, so an import that lands nothing leaves the file as it was) and, when it ends,
# turns it back on and merges what waits, a few hundred pages a transaction. The setting
# lives in the database file, so a store that finds it off at open (an import that died)
# turns it back on.
FTS_AUTOMERGE = 4
FTS_MERGE_PAGES = 500


def set_fts_automerge(conn: sqlite3.Connection, segments: int) -> None:
    conn.execute("INSERT INTO lessons_fts (lessons_fts, rank) VALUES ('automerge', ?)", (segments,))


def fts_automerge(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT v FROM lessons_fts_config WHERE k = 'automerge'").fetchone()
    return FTS_AUTOMERGE if row is None else int(row[0])


def merge_fts(conn: sqlite3.Connection) -> None:
    """Merge the segments an import left, as automerge would have: each ``merge`` is its own
    short transaction, and one that wrote (almost) nothing means nothing is left to merge."""
    while True:
        before = conn.total_changes
        conn.execute(
            "INSERT INTO lessons_fts (lessons_fts, rank) VALUES ('merge', ?)", (FTS_MERGE_PAGES,)
        )
        if conn.total_changes - before < 2:
            return


class BulkLoad:
    """The SQLite store's settings for many large write transactions in a row (``lorestore
    import``). Imports may overlap (a server runs several): the first in sets the
    connection up, the last out puts it back and checkpoints the log it let grow."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock
        self._depth = 0
        self._saved: tuple[int, int] = (0, 0)
        self._merging_deferred = False

    def defer_fts_merging(self) -> None:
        """Called before lessons are inserted in bulk: during an import, from the first such
        insert on, leave FTS5's segments unmerged until the import ends."""
        if self._depth and not self._merging_deferred:
            set_fts_automerge(self._conn, 0)
            self._merging_deferred = True

    @contextmanager
    def session(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                cache = int(self._conn.execute("PRAGMA cache_size").fetchone()[0])
                pages = int(self._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
                self._saved = (cache, pages)
                # A negative cache_size is KiB; never make the store's own cache smaller.
                self._set(min(cache, -BULK_CACHE_KIB), BULK_CHECKPOINT_PAGES)
            self._depth += 1
        try:
            yield
        except BaseException:
            self._leave(quiet=True)  # the import's own failure is the one to report
            raise
        self._leave(quiet=False)

    def _leave(self, *, quiet: bool) -> None:
        """The last import out puts the settings back, turns FTS5's merging back on and
        merges, and checkpoints. Each step is tried even when one before failed (a full
        disk): the settings come back first, and merging left undone is done by the next
        open, which finds automerge off. A failure is ``storage_error``, unless ``quiet``."""
        from lorestore.storage.sqlite.store import store_error  # store.py imports this module

        with self._lock:
            self._depth -= 1
            if self._depth:
                return
            failure: sqlite3.Error | None = None
            steps: list[Callable[[], object]] = [lambda: self._set(*self._saved)]
            if self._merging_deferred:
                self._merging_deferred = False
                steps.append(lambda: set_fts_automerge(self._conn, FTS_AUTOMERGE))
                steps.append(lambda: merge_fts(self._conn))
            steps.append(lambda: self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)"))
            for step in steps:
                try:
                    step()
                except sqlite3.Error as exc:
                    failure = failure or exc
            if failure is not None and not quiet:
                raise store_error(failure) from failure

    def _set(self, cache: int, pages: int) -> None:
        # PRAGMA takes no bound parameters; both values are integers of ours.
        self._conn.execute(f"PRAGMA cache_size = {int(cache)}")
        self._conn.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")


class PortablePrimitives:
    """Mixed into the SQLite transaction; uses its open connection."""

    _conn: sqlite3.Connection
    _bulk: BulkLoad | None

    def export_lessons(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[StoredLesson]:
        params = {"owners": dumps(list(owners)), "after_id": after_id, "limit": limit}
        return [
            StoredLesson(_lesson_from_json(doc), pk, digest, pending)
            for pk, digest, pending, doc in self._conn.execute(Q["export_lessons"], params)
        ]

    def versions_of(self, pks: Sequence[int]) -> dict[int, list[LessonVersion]]:
        found: dict[int, list[LessonVersion]] = {pk: [] for pk in pks}
        for pk, doc in self._conn.execute(Q["versions_of"], {"pks": dumps(list(pks))}):
            found[pk].append(_version_from_json(doc))
        return found

    def import_lessons(self, lessons: Sequence[ImportedLesson]) -> list[int | None]:
        if not lessons:
            return []
        if self._bulk is not None:
            self._bulk.defer_fts_merging()
        self._conn.execute(Q["create_import_stage"])
        # The store erases what it deletes (secure_delete); the scratch table holds only
        # copies of rows on their way into the store, and zeroing its pages each time it is
        # emptied cost an import a tenth of its time. Per connection, for its temp schema.
        self._conn.execute("PRAGMA temp.secure_delete = OFF")
        self._conn.executemany(Q["stage_lesson"], map(imported_row, lessons))
        cursor = self._conn.cursor()
        cursor.row_factory = None  # plain tuples: a Row per landed lesson costs more
        landed = {ident: pk for pk, ident in cursor.execute(Q["import_staged_lessons"])}
        self._conn.execute(Q["clear_import_stage"])
        return [landed.get(lesson.id) for lesson in lessons]

    def insert_versions(self, versions: Sequence[tuple[int, LessonVersion]]) -> None:
        self._conn.executemany(Q["insert_version"], (version_params(*v) for v in versions))

    def insert_served_versions(self, pks: Sequence[int], actor: str) -> None:
        if pks:
            params = {"pks": dumps(list(pks)), "actor": actor}
            self._conn.execute(Q["insert_served_versions"], params)

    def append_audits(self, events: Sequence[dict[str, Any]]) -> None:
        self._conn.executemany(Q["append_audit_row"], map(audit_row, events))

    def live_tombstones(self, owner: str, digests: Sequence[str]) -> list[Tombstone]:
        params = {"owner": owner, "digests": dumps(list(digests))}
        return [tombstone_from_row(r) for r in self._conn.execute(Q["live_tombstones"], params)]

    def lessons_by_ids(self, owner: str, ids: Sequence[str]) -> list[StoredLesson]:
        params = {"owner": owner, "ids": dumps(list(ids))}
        return [
            StoredLesson(
                Lesson.model_validate_json(r["doc"]),
                r["pk"],
                r["value_digest"],
                r["pending_version"],
            )
            for r in self._conn.execute(Q["lessons_by_ids"], params)
        ]

    def export_tombstones(
        self, owners: Sequence[str], after_id: str | None, limit: int
    ) -> list[Tombstone]:
        params = {"owners": dumps(list(owners)), "after_id": after_id, "limit": limit}
        return [tombstone_from_row(r) for r in self._conn.execute(Q["export_tombstones"], params)]

    def tombstone_by_id(self, owner: str, tombstone_id: str) -> Tombstone | None:
        params = {"owner": owner, "id": tombstone_id}
        row = self._conn.execute(Q["tombstone_by_id"], params).fetchone()
        return None if row is None else tombstone_from_row(row)

    def import_tombstone(self, tombstone: Tombstone) -> bool:
        cur = self._conn.execute(Q["import_tombstone"], tombstone_params(tombstone))
        return cur.rowcount == 1

    def export_policies(self, owners: Sequence[str]) -> list[PolicyRecord]:
        rows = self._conn.execute(Q["export_policies"], {"owners": dumps(list(owners))})
        return [
            PolicyRecord(
                owner=r["owner"],
                policy=PolicyRow(r["scope"], r["revision_policy"], bool(r["require_review"])),
                updated_at=r["updated_at"],
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
            "owners": dumps(list(owners)),
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
                imported_at=r["imported_at"],
                imported_by=r["imported_by"],
            )
            for r in self._conn.execute(Q["export_foreign"], params)
        ]
