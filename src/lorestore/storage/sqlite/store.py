"""SQLite implementation of the Store protocol.

One connection per store object, in autocommit mode with explicit transactions: a write
transaction starts with ``BEGIN IMMEDIATE`` so concurrent writers (one MCP server per agent)
queue on the busy timeout instead of failing half-way; WAL lets readers proceed meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lorestore.core.errors import CAP_HINT, LorestoreError
from lorestore.core.records import AuditEvent, Lesson, LessonVersion, format_ts
from lorestore.core.search import fts5_expression
from lorestore.storage import migrations
from lorestore.storage.protocol import (
    AuditFilter,
    Binding,
    Invite,
    Membership,
    PolicyRow,
    RecallRecord,
    RecallRow,
    ScopeCount,
    SearchHit,
    StoredLesson,
    TokenRecord,
    Tombstone,
)
from lorestore.storage.queries import load_queries
from lorestore.storage.rows import (
    audit_dict,
    audit_from_row,
    dumps,
    gather_recall,
    invite_params,
    lesson_from_row,
    lesson_params,
    membership_from_row,
    policy_params,
    recall_from_row,
    recall_params,
    token_from_row,
    token_params,
    tombstone_from_row,
    tombstone_params,
    version_from_row,
    version_params,
)
from lorestore.storage.sqlite.portable import (
    FTS_AUTOMERGE,
    BulkLoad,
    PortablePrimitives,
    fts_automerge,
    set_fts_automerge,
)

Q = load_queries("lorestore.storage.sqlite", "queries.sql")


def _null(value: None) -> None:
    return value


# The sqlite3 module binds None only after looking for an adapter of it and failing twice
# to find one on the parameter's protocol and on None itself, raising and clearing an
# AttributeError each time: most of the cost of a row with a few NULLs (an import binds
# ten a lesson). Registered, the adapter is found at once; it returns None, which binds
# NULL exactly as before. The registry is the sqlite3 module's, for the whole process, and
# this adapter changes nothing any caller binds.
sqlite3.register_adapter(type(None), _null)
BUSY_TIMEOUT_MS = 30_000
CACHE_KIB = 32 * 1024
_MIGRATIONS_PACKAGE = "lorestore.storage.sqlite.migrations"

_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    number      INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    checksum    TEXT NOT NULL,
    applied_at  TEXT NOT NULL
)
"""


# The model's own validator, called without the wrapper of ``model_validate_json``: list
# pages and search decode dozens of records per call.
_lesson_from_json = Lesson.__pydantic_validator__.validate_json


def _stored_doc(row: sqlite3.Row) -> StoredLesson:
    """A row ``pk, value_digest, pending_version, doc, ...`` of the lesson_docs view: the record
    comes as JSON, validated in one step."""
    return StoredLesson(_lesson_from_json(row[3]), row[0], row[1], row[2])


def _stored(row: sqlite3.Row) -> StoredLesson:
    return StoredLesson(
        lesson_from_row(row), row["pk"], row["value_digest"], row["pending_version"]
    )


class SQLiteTransaction(PortablePrimitives):
    """The Transaction primitives over one open SQLite transaction."""

    def __init__(self, conn: sqlite3.Connection, bulk: BulkLoad | None = None) -> None:
        self._conn = conn
        self._bulk = bulk

    def _one(self, name: str, params: Any) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self._conn.execute(Q[name], params).fetchone()
        return row

    def _all(self, name: str, params: Any) -> list[sqlite3.Row]:
        return self._conn.execute(Q[name], params).fetchall()

    def lock_corrections(self, owner: str, *, exclusive: bool) -> None:
        """Nothing to do: BEGIN IMMEDIATE runs write transactions one at a time."""

    def lesson_at(self, owner: str, scope: str, key: str) -> StoredLesson | None:
        row = self._one("lesson_at", {"owner": owner, "scope": scope, "key": key})
        return _stored_doc(row) if row else None

    def lesson_by_id(self, owner: str, lesson_id: str) -> StoredLesson | None:
        row = self._one("lesson_by_id", {"owner": owner, "id": lesson_id})
        return _stored(row) if row else None

    def insert_lesson(self, lesson: Lesson, value_digest: str) -> int:
        cur = self._conn.execute(Q["insert_lesson"], lesson_params(lesson, value_digest, None))
        assert cur.lastrowid is not None
        return cur.lastrowid

    def save_lesson(
        self, pk: int, lesson: Lesson, value_digest: str, pending_version: int | None = None
    ) -> None:
        params = lesson_params(lesson, value_digest, pending_version)
        params["pk"] = pk
        self._conn.execute(Q["save_lesson"], params)

    def delete_lesson(self, pk: int) -> None:
        self._conn.execute(Q["delete_lesson"], {"pk": pk})

    def compact_search_index(self) -> None:
        self._conn.execute(Q["compact_search_index"])

    def insert_version(self, pk: int, version: LessonVersion) -> None:
        self._conn.execute(Q["insert_version"], version_params(pk, version))

    def versions(self, pk: int, lesson_id: str) -> list[LessonVersion]:
        return [version_from_row(r, lesson_id) for r in self._all("versions", {"pk": pk})]

    def version(self, pk: int, lesson_id: str, number: int) -> LessonVersion | None:
        row = self._one("version", {"pk": pk, "number": number})
        return version_from_row(row, lesson_id) if row else None

    def max_version(self, pk: int) -> int:
        row = self._one("max_version", {"pk": pk})
        return int(row["n"]) if row and row["n"] is not None else 0

    def set_version_state(
        self, pk: int, number: int, state: str, *, accepted_at: str | None = None
    ) -> None:
        self._conn.execute(
            Q["set_version_state"],
            {"pk": pk, "number": number, "state": state, "accepted_at": accepted_at},
        )

    def version_at(
        self, pk: int, lesson_id: str, *, as_of: str | None, valid_at: str | None
    ) -> LessonVersion | None:
        row = self._one("version_at", {"pk": pk, "as_of": as_of, "valid_at": valid_at})
        return version_from_row(row, lesson_id) if row else None

    def trust_events(
        self, owner: str, scope: str, key: str, lesson_id: str, at: str
    ) -> list[tuple[str, str | None]]:
        params = {"owner": owner, "scope": scope, "key": key, "lesson_id": lesson_id, "at": at}
        return [(r["action"], r["trust"]) for r in self._all("trust_events", params)]

    def add_session(self, pk: int, value_digest: str, session: str, at: str) -> bool:
        cur = self._conn.execute(
            Q["add_session"], {"pk": pk, "value_digest": value_digest, "session": session, "at": at}
        )
        return cur.rowcount == 1

    def clear_sessions(self, pk: int) -> None:
        self._conn.execute(Q["clear_sessions"], {"pk": pk})

    def find_tombstone(
        self, owner: str, scopes: Sequence[str], value_digest: str
    ) -> Tombstone | None:
        params = {"owner": owner, "value_digest": value_digest, "scopes": dumps(list(scopes))}
        row = self._one("find_tombstone", params)
        return tombstone_from_row(row) if row else None

    def insert_tombstone(self, tombstone: Tombstone) -> None:
        self._conn.execute(Q["insert_tombstone"], tombstone_params(tombstone))

    def lift_tombstones(
        self,
        owner: str,
        scope: str,
        value_digest: str,
        *,
        lifted_by: str,
        at: str,
        reason: str,
        lesson_id: str | None = None,
    ) -> int:
        cur = self._conn.execute(
            Q["lift_tombstones"],
            {
                "owner": owner,
                "scope": scope,
                "value_digest": value_digest,
                "lifted_by": lifted_by,
                "at": at,
                "reason": reason,
                "lesson_id": lesson_id,
            },
        )
        return cur.rowcount

    def lessons_with_digest(self, owner: str, value_digest: str) -> list[StoredLesson]:
        rows = self._all("lessons_with_digest", {"owner": owner, "value_digest": value_digest})
        return [_stored(r) for r in rows]

    def review_queue(
        self, owners: Sequence[str], scope: str | None, *, now: str, limit: int
    ) -> list[tuple[str, StoredLesson]]:
        params = {"owners": dumps(list(owners)), "scope": scope, "now": now, "limit": limit}
        rows = self._all("review_queue", params)
        return [(r["queue_reason"], _stored(r)) for r in rows]

    def list_lessons(
        self,
        owner: str,
        scope: str,
        *,
        tags: Sequence[str],
        now: str,
        after: tuple[str, int] | None,
        limit: int,
    ) -> tuple[list[StoredLesson], bool]:
        params = {
            "owner": owner,
            "scope": scope,
            "now": now,
            "limit": limit + 1,
            "after_at": after[0] if after else None,
            "after_pk": after[1] if after else None,
            "tags": dumps(list(tags)),
            "ntags": len(tags),
        }
        rows = self._all("list_lessons", params)
        return [_stored_doc(r) for r in rows[:limit]], len(rows) > limit

    def search(
        self,
        addresses: Sequence[tuple[str, str]],
        terms: Sequence[str],
        *,
        tags: Sequence[str],
        now: str,
        limit: int,
    ) -> list[SearchHit]:
        params = {
            "addresses": dumps([f"{owner}\x1f{scope}" for owner, scope in addresses]),
            "match": fts5_expression(list(terms)),
            "now": now,
            "limit": limit,
            "tags": dumps(list(tags)),
            "ntags": len(tags),
        }
        return [
            SearchHit(_lesson_from_json(r["doc"]), float(r["score"]), r["snippet"])
            for r in self._all("search", params)
        ]

    def scope_counts(self, owners: Sequence[str], now: str) -> list[ScopeCount]:
        rows = self._all("scope_counts", {"owners": dumps(list(owners)), "now": now})
        return [
            ScopeCount(
                r["owner"], r["scope"], r["active"], r["archived"], r["expired"], r["rejected"]
            )
            for r in rows
        ]

    def archived_before(self, owner: str, cutoff: str, limit: int) -> list[StoredLesson]:
        rows = self._all("archived_before", {"owner": owner, "cutoff": cutoff, "limit": limit})
        return [_stored(r) for r in rows]

    def expired_before(self, owner: str, now: str, limit: int) -> list[StoredLesson]:
        rows = self._all("expired_before", {"owner": owner, "now": now, "limit": limit})
        return [_stored(r) for r in rows]

    def due_owners(self, now: str, archived_cutoff: str, recall_cutoff: str) -> list[str]:
        params = {"now": now, "archived_cutoff": archived_cutoff, "recall_cutoff": recall_cutoff}
        return sorted(str(r["owner"]) for r in self._all("due_owners", params))

    def purge_recall_log(self, owner: str, cutoff: str) -> int:
        cur = self._conn.execute(Q["purge_recall_log"], {"owner": owner, "cutoff": cutoff})
        return cur.rowcount

    def last_audit_hash(self, owner: str) -> str | None:
        row = self._one("last_audit_hash", {"owner": owner})
        return row["hash"] if row else None

    def append_audit(self, event: dict[str, Any]) -> int:
        params = dict(event)
        params["detail"] = dumps(event.get("detail") or {})
        cur = self._conn.execute(Q["append_audit"], params)
        assert cur.lastrowid is not None
        return cur.lastrowid

    def audit_events(self, query: AuditFilter) -> list[AuditEvent]:
        params = {
            "owners": dumps(list(query.owners)),
            "scope": query.scope,
            "key": query.key,
            "since": query.since,
            "until": query.until,
            "after_id": query.after_id,
            "limit": query.limit,
        }
        return [audit_from_row(r) for r in self._all("audit_events", params)]

    def audit_chain(self, owner: str) -> Iterator[dict[str, Any]]:
        for row in self._conn.execute(Q["audit_chain"], {"owner": owner}):
            yield audit_dict(row)

    def insert_token(self, token: TokenRecord, token_hash: str) -> None:
        self._conn.execute(Q["insert_token"], token_params(token, token_hash))

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        row = self._one("token_by_hash", {"token_hash": token_hash})
        return token_from_row(row) if row else None

    def list_tokens(self, principal: str) -> list[TokenRecord]:
        return [token_from_row(r) for r in self._all("list_tokens", {"principal": principal})]

    def revoke_token(self, principal: str, token_id: str, at: str) -> bool:
        params = {"principal": principal, "id": token_id, "at": at}
        return self._conn.execute(Q["revoke_token"], params).rowcount == 1

    def touch_token(self, token_id: str, at: str) -> None:
        self._conn.execute(Q["touch_token"], {"id": token_id, "at": at})

    def bindings_for(self, principal: str) -> list[Binding]:
        rows = self._all("bindings_for", {"principal": principal})
        return [Binding(r["org"], r["pattern"], r["role"]) for r in rows]

    def memberships(self, principal: str) -> list[Membership]:
        return [membership_from_row(r) for r in self._all("memberships", {"principal": principal})]

    def org_members(self, org: str) -> list[Membership]:
        return [membership_from_row(r) for r in self._all("org_members", {"org": org})]

    def create_org(self, org: str, name: str, owner: str, at: str) -> bool:
        cur = self._conn.execute(Q["insert_org"], {"id": org, "name": name, "at": at})
        if cur.rowcount != 1:
            return False
        self.set_member(org, owner, "owner", at)
        return True

    def set_member(self, org: str, member: str, role: str, at: str) -> None:
        self.ensure_principal(member, at)
        params = {"org": org, "member": member, "role": role, "at": at}
        self._conn.execute(Q["set_member"], params)

    def remove_member(self, org: str, member: str) -> bool:
        cur = self._conn.execute(Q["remove_member"], {"org": org, "member": member})
        return cur.rowcount == 1

    def insert_invite(self, invite: Invite, code_hash: str) -> None:
        self._conn.execute(Q["insert_invite"], invite_params(invite, code_hash))

    def accept_invite(self, code_hash: str, principal: str, at: str) -> str | None:
        params = {"code_hash": code_hash, "principal": principal, "at": at}
        row = self._one("live_invite", params)
        if row is None:
            return None
        self.set_member(row["org"], principal, row["role"], at)
        self._conn.execute(Q["mark_invite_accepted"], {"id": row["id"], "at": at})
        return str(row["org"])

    def insert_binding(self, org: str, pattern: str, by: str, at: str) -> bool:
        params = {"org": org, "pattern": pattern, "by": by, "at": at}
        return self._conn.execute(Q["insert_binding"], params).rowcount == 1

    def delete_binding(self, org: str, pattern: str) -> bool:
        params = {"org": org, "pattern": pattern}
        return self._conn.execute(Q["delete_binding"], params).rowcount == 1

    def scopes_held_by_others(self, org: str, actor: str, likes: Sequence[str]) -> bool:
        params = {"org": org, "actor": actor, "likes": dumps(list(likes))}
        row = self._one("scopes_held_by_others", params)
        return bool(row and row["held"])

    def set_max_active(self, owner: str, limit: int) -> None:
        self._conn.execute(Q["set_max_active"], {"owner": owner, "limit": limit})

    def ensure_principal(self, principal: str, at: str) -> None:
        kind, _, name = principal.partition(":")
        params = {"id": principal, "kind": kind, "name": name, "at": at}
        self._conn.execute(Q["ensure_principal"], params)

    def count_request(self, token_id: str, principal: str, window: str) -> int:
        row = self._one("count_request", {"token_id": token_id, "window": window})
        assert row is not None
        return int(row["requests"])

    def recall_candidates(
        self, addresses: Sequence[tuple[str, str]], terms: Sequence[str] | None, *, limit: int
    ) -> list[RecallRow]:
        text = None
        if terms:
            text = {
                "match": fts5_expression(list(terms)),
                "addresses": dumps([[owner, scope] for owner, scope in addresses]),
                "limit": limit * len(addresses),
            }
        return gather_recall(self._all, addresses, text, limit)

    def insert_recall(self, record: RecallRecord) -> None:
        self._conn.execute(Q["insert_recall"], recall_params(record))

    def has_more_lessons(self, owner: str, scope: str, than: int) -> bool:
        row = self._one("count_recall_lessons", {"owner": owner, "scope": scope, "cap": than + 1})
        assert row is not None
        return int(row["n"]) > than

    def get_recall(self, owners: Sequence[str], recall_id: str) -> RecallRecord | None:
        row = self._one("get_recall", {"recall_id": recall_id, "owners": dumps(list(owners))})
        return recall_from_row(row) if row else None

    def scope_policies(self, owner: str, scopes: Sequence[str]) -> list[PolicyRow]:
        rows = self._all("scope_policies", {"owner": owner, "scopes": dumps(list(scopes))})
        return [
            PolicyRow(r["scope"], r["revision_policy"], bool(r["require_review"])) for r in rows
        ]

    def set_policy(self, owner: str, policy: PolicyRow, *, by: str, at: str) -> None:
        self._conn.execute(Q["set_policy"], policy_params(owner, policy, by=by, at=at))


def store_error(exc: sqlite3.Error) -> LorestoreError:
    """A failure of the database itself, with a stable code: the write lock held by another
    process past the busy timeout (``busy``: retry), or a disk that is full, read-only or
    gone, or a damaged file (``storage_error``)."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        return LorestoreError(
            "busy",
            f"the SQLite store stayed locked by another writer for {BUSY_TIMEOUT_MS // 1000} s",
            hint="retry in a moment: a long import or purge, or another process, holds the "
            "write lock",
            details={"error": text},
        )
    return LorestoreError(
        "storage_error",
        f"the SQLite store failed: {text}",
        hint="check the disk (space, permissions) and the file: sqlite3 FILE 'PRAGMA "
        "integrity_check'",
        details={"error": text},
    )


def _unusable(path: str | Path, exc: Exception) -> LorestoreError:
    """A path SQLite cannot open or a file that is not a lesson store: a configuration error,
    like an unreachable PostgreSQL (a lock held past the busy timeout is ``busy``)."""
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return store_error(exc)
    return LorestoreError(
        "config_error",
        f"cannot open the SQLite store at {path}: {exc}",
        hint="check LORESTORE_DATABASE_URL (sqlite:///PATH) or LORESTORE_HOME: the path must "
        "name a lorestore SQLite file, or a new file in a directory that can be created",
    )


def _identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` (device and inode), None when there is none."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _replaced(path: Path) -> LorestoreError:
    """The open store's file was deleted or replaced: SQLite would go on writing to the
    unlinked file, and every write would be lost when the process ends."""
    return LorestoreError(
        "storage_error",
        f"the SQLite store {path} was deleted or replaced while this process had it open; "
        "nothing was written",
        hint="restart the server (or command) so that it opens the file now at that path",
        details={"path": str(path)},
    )


class SQLiteStore:
    """A lesson store in one SQLite file; migrates it on open."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(path),
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
            )
        except (OSError, sqlite3.Error) as exc:
            raise _unusable(path, exc) from exc
        try:
            self._open()
        except (OSError, sqlite3.Error) as exc:
            self._conn.close()
            raise _unusable(path, exc) from exc
        except BaseException:
            self._conn.close()
            raise
        self._registered: set[str] = set()
        self._bulk = BulkLoad(self._conn, self._lock)
        # Absolute: the check below must not depend on the working directory of the moment.
        self._where = Path(os.path.abspath(path))
        self._file = None if str(path) == ":memory:" else _identity(self._where)

    def _open(self) -> None:
        """Set the connection up and migrate the file; an unusable file raises here."""
        self._refuse_foreign()
        self._conn.row_factory = sqlite3.Row
        self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        # Up to 32 MiB of page cache (SQLite's default is 2 MiB): the indexes that recall,
        # search and list walk at 100k lessons do not fit in 2 MiB. Memory is taken as pages
        # are read, per open store.
        self._conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        self._conn.execute("PRAGMA foreign_keys = ON")
        # A hard delete must erase content from the file, not just unlink its pages.
        self._conn.execute("PRAGMA secure_delete = ON")
        self.applied = self._migrate()
        if fts_automerge(self._conn) != FTS_AUTOMERGE:  # an import died before turning it on
            set_fts_automerge(self._conn, FTS_AUTOMERGE)
        self._conn.execute(Q["lesson_docs"])

    def _refuse_foreign(self) -> None:
        """Refuse, before anything is written, a SQLite file that holds tables but not
        lorestore's: another program's database must not gain lorestore's schema (nor be
        switched to WAL) because a path pointed at it."""
        names = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master")}
        if names and "schema_migrations" not in names:
            raise LorestoreError(
                "config_error",
                f"{self.path} is a SQLite database of something else, not a lorestore store",
                hint="point LORESTORE_DATABASE_URL (sqlite:///PATH) or LORESTORE_HOME at a "
                "lorestore file, or at a path where one can be created",
                details={"path": str(self.path), "tables": sorted(names)[:10]},
            )

    def _migrate(self) -> list[migrations.Migration]:
        with self._lock:
            if not self._pending():
                return []  # the common open: nothing to apply, and no write lock taken
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(_MIGRATIONS_TABLE)
                rows = self._conn.execute(Q["applied_migrations"]).fetchall()
                applied = {r["number"]: (r["name"], r["checksum"]) for r in rows}
                todo = migrations.pending(migrations.discover(_MIGRATIONS_PACKAGE), applied)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            for migration in todo:
                self._apply(migration)
            return todo

    def _pending(self) -> bool:
        """Whether migrations wait, read without the write lock (a writer holding it must not
        hold up every reader's and every new server's start); an applied file that changed
        is refused here as under the lock."""
        try:
            rows = self._conn.execute(Q["applied_migrations"]).fetchall()
        except sqlite3.OperationalError:  # a new file: no schema_migrations yet
            return True
        applied = {r["number"]: (r["name"], r["checksum"]) for r in rows}
        return bool(migrations.pending(migrations.discover(_MIGRATIONS_PACKAGE), applied))

    def _apply(self, migration: migrations.Migration) -> None:
        # executescript runs the whole file inside the transaction opened by its first line
        # and leaves it open, so the record of the migration commits with it or not at all.
        try:
            self._conn.executescript("BEGIN IMMEDIATE;\n" + migration.sql)
            already = self._conn.execute(
                "SELECT 1 FROM schema_migrations WHERE number = ?", (migration.number,)
            ).fetchone()
            if not already:
                self._conn.execute(
                    Q["record_migration"],
                    (
                        migration.number,
                        migration.name,
                        migration.checksum,
                        format_ts(datetime.now(UTC)),
                    ),
                )
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if "already exists" in str(exc):
                # Another process applied it between our check and our BEGIN; re-check.
                self._migrate()
                return
            raise LorestoreError(
                "migration_error", f"migration {migration.name} failed: {exc}"
            ) from exc

    @contextmanager
    def transaction(
        self,
        *,
        write: bool,
        actor: str | None = None,
        meanwhile: Callable[[], None] | None = None,
    ) -> Iterator[SQLiteTransaction]:
        """One transaction. There is no row-level security in SQLite: the service's owner
        filters are the boundary (one machine, one trust domain). See ``Store.transaction``
        for ``meanwhile``."""
        with self._lock:
            if write and self._file is not None and _identity(self._where) != self._file:
                raise _replaced(self.path)
            try:
                self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.OperationalError as exc:
                raise store_error(exc) from exc
            try:
                tx = SQLiteTransaction(self._conn, self._bulk)
                register = write and actor is not None and actor not in self._registered
                if register:
                    tx.ensure_principal(str(actor), format_ts(datetime.now(UTC)))
                yield tx
            except sqlite3.IntegrityError as exc:
                self._conn.execute("ROLLBACK")
                if "cap_exceeded" in str(exc):
                    raise LorestoreError(
                        "cap_exceeded",
                        "this owner has reached its limit of active lessons",
                        hint=CAP_HINT,
                    ) from exc
                raise
            except sqlite3.DatabaseError as exc:
                self._rollback()
                if isinstance(exc, sqlite3.ProgrammingError):
                    raise  # a bug of ours, not the database's
                raise store_error(exc) from exc
            except BaseException:
                self._rollback()
                raise
            try:
                self._commit(meanwhile)
            except sqlite3.DatabaseError as exc:
                self._rollback()
                raise store_error(exc) from exc
            if register:
                self._registered.add(str(actor))

    def _commit(self, meanwhile: Callable[[], None] | None) -> None:
        """COMMIT; with ``meanwhile``, in a thread of its own while ``meanwhile`` runs here.
        SQLite writes the pages (and checkpoints) without holding the interpreter, so a
        large import reads its next batch during the last one's commit. The store's lock
        stays held by this thread throughout: nothing else uses the connection meanwhile."""
        if meanwhile is None:
            self._conn.execute("COMMIT")
            return
        failed: list[BaseException] = []

        def commit() -> None:
            try:
                self._conn.execute("COMMIT")
            except BaseException as exc:
                failed.append(exc)

        worker = threading.Thread(target=commit, name="lorestore-commit")
        worker.start()
        try:
            meanwhile()
        finally:
            worker.join()
            if failed:  # the commit's failure is the one to report
                raise failed[0]

    def _rollback(self) -> None:
        """Roll back what is open; a rollback that fails too (a vanished disk) leaves SQLite
        to roll back at the next open, and the first error is the one reported."""
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def bulk_load(self) -> AbstractContextManager[None]:
        """See ``BulkLoad``: a bigger page cache and fewer checkpoints while importing."""
        return self._bulk.session()

    def flush_erased(self) -> None:
        # Old page images of erased rows live in the WAL until a checkpoint copies the
        # zeroed pages back and truncates it.
        with self._lock:
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity_check(self) -> str:
        with self._lock:
            row = self._conn.execute("PRAGMA integrity_check").fetchone()
            return str(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
