"""What the PostgreSQL store does differently from the shared primitives (``storage/sql``):
lists bind as arrays, a new key comes back through ``RETURNING``, rows decode by column name
(times and JSON as text, by the pool's loaders: postgres/store.py), ids are uuids, advisory
locks order what must not interleave, and org creation and invites go through the definer
functions that read the actor from the session."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import psycopg

from lorestore.core.jsontext import compact_encoder
from lorestore.core.owner import Owner
from lorestore.core.records import LessonVersion
from lorestore.core.search import tsquery_expression
from lorestore.storage.protocol import ImportedLesson, StoredLesson
from lorestore.storage.queries import load_queries
from lorestore.storage.rows import LESSON_COLUMNS, imported_row, lesson_from_row, version_from_row
from lorestore.storage.sql import SQLTransaction, stored

Q = load_queries("lorestore.storage.postgres", "queries.sql") | load_queries(
    "lorestore.storage.postgres", "webhooks.sql"
)
Row = dict[str, Any]
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_SHARED_LOCK = "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))"

# Rows per statement of a batch insert: a JSON array of 500 rows is a few hundred KiB.
ROWS_PER_STATEMENT = 500
_rows_text = compact_encoder(sort_keys=False, allow_nan=False)


def rows_json(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows by column name as the one JSON array parameter (``%(rows)s``) of a batch insert."""
    return _rows_text(list(rows))


def batches(rows: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``rows`` in slices of ROWS_PER_STATEMENT, in order."""
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        yield rows[start : start + ROWS_PER_STATEMENT]


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _list(values: Sequence[Any]) -> list[Any]:
    return list(values)


def _addresses(addresses: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {
        "owners": [owner for owner, _ in addresses],
        "scopes": [scope for _, scope in addresses],
    }


class PostgresTransaction(SQLTransaction):
    """The Transaction primitives over one open PostgreSQL transaction."""

    Q = Q
    _array = staticmethod(_list)
    _search_addresses = staticmethod(_addresses)
    _recall_addresses = staticmethod(_addresses)
    _match = staticmethod(tsquery_expression)
    _stored_doc = staticmethod(stored)
    _doc_lesson = staticmethod(lesson_from_row)
    _valid_id = staticmethod(_is_uuid)

    def __init__(
        self,
        conn: psycopg.Connection[Row],
        *,
        write: bool,
        pipeline: psycopg.Pipeline | None = None,
    ) -> None:
        super().__init__(conn)
        self._conn: psycopg.Connection[Row] = conn
        self._write = write
        self._pipeline = pipeline
        self._asked: dict[tuple[str, str], psycopg.Cursor[Row]] = {}  # _ask
        self._reserved: psycopg.Cursor[Row] | None = None  # ask_new_lesson_key

    @staticmethod
    def _asked_key(name: str, params: dict[str, Any]) -> tuple[str, str]:
        return name, repr(sorted(params.items()))

    def _ask(self, name: str, params: dict[str, Any]) -> None:
        self._asked[self._asked_key(name, params)] = self._conn.execute(Q[name], params)

    def _was_asked(self, name: str, params: dict[str, Any]) -> bool:
        """Whether ``_ask`` sent this read and its answer is not taken yet (no key is built
        when nothing was asked: most reads)."""
        return bool(self._asked) and self._asked_key(name, params) in self._asked

    def _read(self, name: str, params: Any) -> psycopg.Cursor[Row]:
        if self._asked and isinstance(params, dict):
            asked = self._asked.pop(self._asked_key(name, params), None)
            if asked is not None:
                return asked
        return self._conn.execute(Q[name], params)

    def _count(self, name: str, params: Any) -> int:
        # Pipelined, a statement's row count is known once the server has answered it.
        cursor = self._conn.execute(Q[name], params)
        if self._pipeline is not None:  # migrate's transaction runs statement by statement
            self._pipeline.sync()
        return cursor.rowcount

    def ask_new_lesson_key(self) -> None:
        if self._write and self._reserved is None:
            self._reserved = self._conn.execute(Q["reserve_lesson_key"])

    def _inserted(self, name: str, params: Any) -> int:
        inserted = self._conn.execute(Q[name], params)
        given = params.get("pk") if isinstance(params, Mapping) else None
        if given is not None:
            return int(given)  # the row's key was given: nothing to wait for
        row = inserted.fetchone()
        assert row is not None  # the query's RETURNING names the one key column
        (returned,) = row.values()
        return int(returned)

    def _reserved_key(self) -> int | None:
        """The key ``ask_new_lesson_key`` reserved (its answer came with a wait since), taken
        once; None when none was."""
        reserved, self._reserved = self._reserved, None
        row = None if reserved is None else reserved.fetchone()
        return None if row is None else int(row["pk"])

    def _executemany(self, name: str, params: Iterable[Any]) -> None:
        rows = list(params)
        if rows:
            with self._conn.cursor() as cur:
                cur.executemany(Q[name], rows)

    def _insert_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        # One statement per batch: migration 0033's counting triggers run once for it.
        for batch in batches(rows):
            self._conn.execute(Q[name], {"rows": rows_json(batch)})

    def lock_corrections(self, owner: str, *, exclusive: bool) -> None:
        lock = _LOCK if exclusive else _SHARED_LOCK
        self._conn.execute(lock, (f"lorestore.corrections:{owner}",))

    def ask_lesson_at(self, owner: str, scope: str, key: str) -> None:
        self._lock_address(owner, scope, key)  # the read runs after the lock, as below
        super().ask_lesson_at(owner, scope, key)

    def lesson_at(self, owner: str, scope: str, key: str) -> StoredLesson | None:
        if self._write and not self._was_asked(
            "lesson_at", {"owner": owner, "scope": scope, "key": key}
        ):
            self._lock_address(owner, scope, key)  # asked: locked when it was asked
        return super().lesson_at(owner, scope, key)

    def _lock_address(self, owner: str, scope: str, key: str) -> None:
        if self._write:
            # Two writers creating one address would both see it absent; the lock queues them.
            self._conn.execute(_LOCK, (f"lorestore.address:{owner}\x1f{scope}\x1f{key}",))

    def ask_audit_head(self, owner: str) -> None:
        # Concurrent writers of one owner would fork the chain; the lock keeps it linear. The
        # read runs after the lock is granted (statements run in order), so it sees the head
        # the lock guards until this transaction ends.
        if self._was_asked("last_audit_hash", {"owner": owner}):
            return  # locked, and its answer not taken yet
        self._conn.execute(Q["lock_audit_chain"], {"owner": owner})
        self._ask("last_audit_hash", {"owner": owner})

    def last_audit_hash(self, owner: str) -> str | None:
        if not self._was_asked("last_audit_hash", {"owner": owner}):
            self.ask_audit_head(owner)  # locked and asked now: the head is read next
        return super().last_audit_hash(owner)

    def compact_search_index(self) -> None:
        """Nothing to do: a deleted row's GIN entries go with it (vacuum reclaims space)."""

    def create_org(self, org: str, name: str, owner: str, at: str) -> bool:
        # The definer function makes the acting user (the session's actor) the owner.
        row = self._one("create_org", {"slug": Owner.parse(org).name, "name": name})
        return bool(row and row["created"])

    def accept_invite(self, code_hash: str, principal: str, at: str) -> str | None:
        # The definer function checks the invite names the session's actor, and its expiry
        # by the database's clock: ``at`` is not the caller's to choose here.
        row = self._one("accept_invite", {"code_hash": code_hash})
        return None if row is None or row["org"] is None else str(row["org"])

    def versions_of(self, pks: Sequence[int]) -> dict[int, list[LessonVersion]]:
        found: dict[int, list[LessonVersion]] = {pk: [] for pk in pks}
        for row in self._all("versions_of", {"pks": list(pks)}):
            found[row["lesson_pk"]].append(version_from_row(row, str(row["lesson_id"])))
        return found

    def import_lessons(self, lessons: Sequence[ImportedLesson]) -> list[int | None]:
        # One statement per batch, which skips a taken id or address row by row, as one
        # statement per lesson did; the ids of a batch are distinct (the service's rule).
        landed: dict[str, int] = {}
        rows = [dict(zip(LESSON_COLUMNS, imported_row(lesson), strict=True)) for lesson in lessons]
        for batch in batches(rows):
            for row in self._all("import_lessons", {"rows": rows_json(batch)}):
                landed[str(row["id"])] = int(row["pk"])
        pks = [landed.get(lesson.id) for lesson in lessons]
        self._embed_imported(lessons, pks)
        return pks
