"""What the shared Transaction primitives stand on: the dialect a backend supplies (its
queries, how a list and a ladder of (owner, scope) pairs bind, how a new key comes back, how a
lesson row decodes) and the plumbing that runs a named query.

The hooks are plain attributes of the backend's subclass, so a hot path (``lesson_at``,
``search``, ``recall_candidates``) pays one attribute lookup for each, as it did when every
backend spelled its primitives out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from lorestore.storage.protocol import StoredLesson
from lorestore.storage.rows import lesson_from_row

if TYPE_CHECKING:
    from lorestore.core.records import Lesson


class Cursor(Protocol):
    """What the primitives use of a DB-API cursor (sqlite3's, psycopg's)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    def execute(self, query: str, params: Any = ..., /) -> Cursor: ...


def stored(row: Any) -> StoredLesson:
    """A full ``lessons`` row (by column name) as a stored lesson."""
    return StoredLesson(
        lesson_from_row(row), row["pk"], row["value_digest"], row["pending_version"]
    )


class SQLBase:
    """One open transaction and the dialect hooks; a backend's subclass gives each hook."""

    Q: ClassVar[Mapping[str, str]]

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    # The dialect: a subclass gives each of these.

    @staticmethod
    def _array(values: Sequence[Any]) -> Any:
        """A list parameter as the driver binds it (``= ANY``, ``json_each``)."""
        raise NotImplementedError

    @staticmethod
    def _search_addresses(addresses: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """The parameters naming the (owner, scope) pairs a search reads."""
        raise NotImplementedError

    @staticmethod
    def _recall_addresses(addresses: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """The parameters naming the (owner, scope) rungs of recall's full-text pass."""
        raise NotImplementedError

    @staticmethod
    def _match(terms: list[str]) -> str:
        """A full-text expression of the words."""
        raise NotImplementedError

    @staticmethod
    def _stored_doc(row: Any) -> StoredLesson:
        """A row of the read paths' lesson queries (lesson_at, list_lessons, export_lessons,
        lessons_by_ids) as a stored lesson."""
        raise NotImplementedError

    @staticmethod
    def _doc_lesson(row: Any) -> Lesson:
        """The lesson of a ``search`` row."""
        raise NotImplementedError

    @staticmethod
    def _valid_id(text: str) -> bool:
        """Whether a caller's id can name a row at all (a PostgreSQL uuid column refuses
        other text, where no row is the answer)."""
        raise NotImplementedError

    def _inserted(self, name: str, params: Any) -> int:
        """Run an insert; the key the new row got."""
        raise NotImplementedError

    def _executemany(self, name: str, params: Iterable[Any]) -> None:
        """Run the named one-row statement once per parameter set."""
        raise NotImplementedError

    def _insert_rows(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert rows (by column name) with the named query, in their order: SQLite runs its
        one-row statement per row, PostgreSQL one statement per batch of rows."""
        raise NotImplementedError

    def _embed(self, lessons: Sequence[tuple[int, Lesson]]) -> None:
        """Keep the vector of each (pk, lesson) written (sql/vectors.py)."""
        raise NotImplementedError

    # Shared plumbing.

    def _exec(self, name: str, params: Any = ()) -> Cursor:
        return self._conn.execute(self.Q[name], params)

    def _count(self, name: str, params: Any) -> int:
        """Run a statement; how many rows it changed."""
        return self._conn.execute(self.Q[name], params).rowcount

    def _one(self, name: str, params: Any) -> Any:
        return self._read(name, params).fetchone()

    def _all(self, name: str, params: Any) -> list[Any]:
        return self._read(name, params).fetchall()

    def _ask(self, name: str, params: dict[str, Any]) -> None:
        """Send a named read now, for the ``_one`` or ``_all`` of the same read to take its
        answer: on PostgreSQL, whose transactions are pipelined (postgres/store.py), it then
        comes with the next wait, whichever read that is for. On SQLite nothing is sent: the
        read runs when it is read."""

    def _read(self, name: str, params: Any) -> Cursor:
        """The cursor of a named read: the one ``_ask`` sent, else the read run now."""
        return self._conn.execute(self.Q[name], params)

    def _all_at_once(self, calls: Sequence[tuple[str, Any]]) -> list[list[Any]]:
        """Named reads sent before any is read: on PostgreSQL, whose transactions are
        pipelined (postgres/store.py), one wait for all; on SQLite one after another."""
        cursors = [self._conn.execute(self.Q[name], params) for name, params in calls]
        return [cursor.fetchall() for cursor in cursors]

    def _lock_address(self, owner: str, scope: str, key: str) -> None:
        """Queue the writers of one address until this transaction ends (PostgreSQL; SQLite
        runs write transactions one at a time)."""
