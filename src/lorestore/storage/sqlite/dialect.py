"""What the embedded store does differently from the shared primitives (``storage/sql``): lists
bind as JSON text for ``json_each``, a new key comes back as ``lastrowid``, the read paths decode
records that SQLite builds as JSON (the ``lesson_docs`` view), locks are not needed (``BEGIN
IMMEDIATE`` runs writers one at a time), orgs and invites are plain statements, and an import
lands a batch of lessons through a staged ``INSERT ... SELECT``."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lorestore.core.jsontext import dumps
from lorestore.core.search import fts5_expression
from lorestore.storage.protocol import ImportedLesson, StoredLesson
from lorestore.storage.queries import load_queries
from lorestore.storage.rows import imported_row
from lorestore.storage.sql import SQLTransaction
from lorestore.storage.sqlite.bulk import BulkLoad

if TYPE_CHECKING:
    from lorestore.core.records import Lesson, LessonVersion

Q = load_queries("lorestore.storage.sqlite", "queries.sql") | load_queries(
    "lorestore.storage.sqlite", "webhooks.sql"
)


@functools.cache
def _from_json() -> tuple[Callable[[str], Lesson], Callable[[str], LessonVersion]]:
    """The models' own validators, called without the wrapper of ``model_validate_json``: list
    pages and search decode dozens of records per call, an export page 500. Looked up at the
    first record decoded: recall (and so a hook) decodes none, and loads no pydantic."""
    from lorestore.core.records import Lesson, LessonVersion

    return (
        Lesson.__pydantic_validator__.validate_json,
        LessonVersion.__pydantic_validator__.validate_json,
    )


def _stored_doc(row: sqlite3.Row) -> StoredLesson:
    """A row ``pk, value_digest, pending_version, doc, ...`` of the lesson_docs view: the record
    comes as JSON, validated in one step."""
    return StoredLesson(_from_json()[0](row[3]), row[0], row[1], row[2])


def _doc_lesson(row: sqlite3.Row) -> Lesson:
    return _from_json()[0](row[3])


def _json_list(values: Sequence[Any]) -> str:
    return dumps(list(values))


def _search_addresses(addresses: Sequence[tuple[str, str]]) -> dict[str, Any]:
    # Matched against ``owner || char(31) || scope`` of each hit.
    return {"addresses": dumps([f"{owner}\x1f{scope}" for owner, scope in addresses])}


def _recall_addresses(addresses: Sequence[tuple[str, str]]) -> dict[str, Any]:
    # Looked up as pairs in recall_addresses (migration recall_create_addresses).
    return {"addresses": dumps([[owner, scope] for owner, scope in addresses])}


def _any_id(text: str) -> bool:
    return True  # ids are text columns: one that names nothing finds no row


class SQLiteTransaction(SQLTransaction):
    """The Transaction primitives over one open SQLite transaction."""

    Q = Q
    _array = staticmethod(_json_list)
    _search_addresses = staticmethod(_search_addresses)
    _recall_addresses = staticmethod(_recall_addresses)
    _match = staticmethod(fts5_expression)
    _stored_doc = staticmethod(_stored_doc)
    _doc_lesson = staticmethod(_doc_lesson)
    _valid_id = staticmethod(_any_id)

    def __init__(self, conn: sqlite3.Connection, bulk: BulkLoad | None = None) -> None:
        super().__init__(conn)
        self._conn: sqlite3.Connection = conn
        self._bulk = bulk

    def _browse_by_trust(self, params: dict[str, Any]) -> list[Any]:
        # Without statistics SQLite's planner takes the browse's own index and walks every
        # lesson of the owner to find a trust few have; browse_by_trust names lessons_by_trust.
        return self._all("browse_by_trust", params)

    def _inserted(self, name: str, params: Any) -> int:
        key = self._conn.execute(Q[name], params).lastrowid
        assert key is not None
        return key

    def _executemany(self, name: str, params: Iterable[Any]) -> None:
        self._conn.executemany(Q[name], params)

    def _insert_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._conn.executemany(Q[name], rows)

    def lock_corrections(self, owner: str, *, exclusive: bool) -> None:
        """Nothing to do: BEGIN IMMEDIATE runs write transactions one at a time."""

    def compact_search_index(self) -> None:
        self._conn.execute(Q["compact_search_index"])

    def ensure_principal(self, principal: str, at: str) -> None:
        """Register a principal the first time it acts or is named (PostgreSQL's definer
        functions do this themselves)."""
        kind, _, name = principal.partition(":")
        params = {"id": principal, "kind": kind, "name": name, "at": at}
        self._conn.execute(Q["ensure_principal"], params)

    def create_org(self, org: str, name: str, owner: str, at: str) -> bool:
        cur = self._conn.execute(Q["insert_org"], {"id": org, "name": name, "at": at})
        if cur.rowcount != 1:
            return False
        self.set_member(org, owner, "owner", at)
        return True

    def set_member(self, org: str, member: str, role: str, at: str) -> None:
        self.ensure_principal(member, at)
        super().set_member(org, member, role, at)

    def accept_invite(self, code_hash: str, principal: str, at: str) -> str | None:
        params = {"code_hash": code_hash, "principal": principal, "at": at}
        row = self._one("live_invite", params)
        if row is None:
            return None
        self.set_member(row["org"], principal, row["role"], at)
        self._conn.execute(Q["mark_invite_accepted"], {"id": row["id"], "at": at})
        return str(row["org"])

    def versions_of(self, pks: Sequence[int]) -> dict[int, list[LessonVersion]]:
        found: dict[int, list[LessonVersion]] = {pk: [] for pk in pks}
        for pk, doc in self._conn.execute(Q["versions_of"], {"pks": dumps(list(pks))}):
            found[pk].append(_from_json()[1](doc))
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
        pks = [landed.get(lesson.id) for lesson in lessons]
        self._embed_imported(lessons, pks)
        return pks
