"""PostgreSQL implementation of the Store protocol.

Connects as the application role, which owns nothing and cannot bypass row-level security.
Each transaction first binds its actor with ``set_config('lorestore.actor', ..., true)``;
the policies read that setting, so a query that forgot its owner filter still sees only
the actor's tenants. Writers to one address are serialised with an advisory lock.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from lorestore.core.errors import LorestoreError
from lorestore.core.records import AuditEvent, Lesson, LessonVersion
from lorestore.core.search import tsquery_expression
from lorestore.storage.postgres.errors import translate
from lorestore.storage.postgres.portable import PortablePrimitives
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

Q = load_queries("lorestore.storage.postgres", "queries.sql")
Row = dict[str, Any]


def _stored(row: Row) -> StoredLesson:
    return StoredLesson(
        lesson_from_row(row), row["pk"], row["value_digest"], row["pending_version"]
    )


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


class PostgresTransaction(PortablePrimitives):
    """The Transaction primitives over one open PostgreSQL transaction."""

    def __init__(self, conn: psycopg.Connection[Row], *, write: bool) -> None:
        self._conn = conn
        self._write = write

    def _exec(self, name: str, params: Any) -> psycopg.Cursor[Row]:
        return self._conn.execute(Q[name], params)

    def _one(self, name: str, params: Any) -> Row | None:
        return self._exec(name, params).fetchone()

    def _all(self, name: str, params: Any) -> list[Row]:
        return self._exec(name, params).fetchall()

    def lock_corrections(self, owner: str, *, exclusive: bool) -> None:
        lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        self._conn.execute(
            f"SELECT {lock}(hashtextextended(%s, 0))", (f"lorestore.corrections:{owner}",)
        )

    def lesson_at(self, owner: str, scope: str, key: str) -> StoredLesson | None:
        if self._write:
            # Two writers creating one address would both see it absent; the lock queues them.
            self._conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"lorestore.address:{owner}\x1f{scope}\x1f{key}",),
            )
        row = self._one("lesson_at", {"owner": owner, "scope": scope, "key": key})
        return _stored(row) if row else None

    def lesson_by_id(self, owner: str, lesson_id: str) -> StoredLesson | None:
        if not _is_uuid(lesson_id):
            return None
        row = self._one("lesson_by_id", {"owner": owner, "id": lesson_id})
        return _stored(row) if row else None

    def insert_lesson(self, lesson: Lesson, value_digest: str) -> int:
        row = self._one("insert_lesson", lesson_params(lesson, value_digest, None))
        assert row is not None
        return int(row["pk"])

    def save_lesson(
        self, pk: int, lesson: Lesson, value_digest: str, pending_version: int | None = None
    ) -> None:
        params = lesson_params(lesson, value_digest, pending_version)
        params["pk"] = pk
        self._exec("save_lesson", params)

    def delete_lesson(self, pk: int) -> None:
        self._exec("delete_lesson", {"pk": pk})

    def compact_search_index(self) -> None:
        """Nothing to do: a deleted row's GIN entries go with it (vacuum reclaims space)."""

    def insert_version(self, pk: int, version: LessonVersion) -> None:
        self._exec("insert_version", version_params(pk, version))

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
        params = {"pk": pk, "number": number, "state": state, "accepted_at": accepted_at}
        self._exec("set_version_state", params)

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
        params = {"pk": pk, "value_digest": value_digest, "session": session, "at": at}
        return self._exec("add_session", params).rowcount == 1

    def clear_sessions(self, pk: int) -> None:
        self._exec("clear_sessions", {"pk": pk})

    def find_tombstone(
        self, owner: str, scopes: Sequence[str], value_digest: str
    ) -> Tombstone | None:
        params = {"owner": owner, "value_digest": value_digest, "scopes": list(scopes)}
        row = self._one("find_tombstone", params)
        return tombstone_from_row(row) if row else None

    def insert_tombstone(self, tombstone: Tombstone) -> None:
        self._exec("insert_tombstone", tombstone_params(tombstone))

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
        params = {
            "owner": owner,
            "scope": scope,
            "value_digest": value_digest,
            "lifted_by": lifted_by,
            "at": at,
            "reason": reason,
            "lesson_id": lesson_id,
        }
        return self._exec("lift_tombstones", params).rowcount

    def lessons_with_digest(self, owner: str, value_digest: str) -> list[StoredLesson]:
        rows = self._all("lessons_with_digest", {"owner": owner, "value_digest": value_digest})
        return [_stored(r) for r in rows]

    def review_queue(
        self, owners: Sequence[str], scope: str | None, *, now: str, limit: int
    ) -> list[tuple[str, StoredLesson]]:
        params = {"owners": list(owners), "scope": scope, "now": now, "limit": limit}
        return [(r["queue_reason"], _stored(r)) for r in self._all("review_queue", params)]

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
        }
        rows = self._all("list_lessons", params)
        return [_stored(r) for r in rows[:limit]], len(rows) > limit

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
            "owners": [owner for owner, _ in addresses],
            "scopes": [scope for _, scope in addresses],
            "match": tsquery_expression(list(terms)),
            "now": now,
            "limit": limit,
            "tags": dumps(list(tags)),
        }
        return [
            SearchHit(lesson_from_row(r), float(r["score"]), r["snippet"])
            for r in self._all("search", params)
        ]

    def scope_counts(self, owners: Sequence[str], now: str) -> list[ScopeCount]:
        rows = self._all("scope_counts", {"owners": list(owners), "now": now})
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
        return self._exec("purge_recall_log", {"owner": owner, "cutoff": cutoff}).rowcount

    def last_audit_hash(self, owner: str) -> str | None:
        # Concurrent writers of one owner would fork the chain; the lock keeps it linear.
        self._exec("lock_audit_chain", {"owner": owner})
        row = self._one("last_audit_hash", {"owner": owner})
        return row["hash"] if row else None

    def append_audit(self, event: dict[str, Any]) -> int:
        params = dict(event)
        params["detail"] = dumps(event.get("detail") or {})
        row = self._one("append_audit", params)
        assert row is not None
        return int(row["id"])

    def audit_events(self, query: AuditFilter) -> list[AuditEvent]:
        params = {
            "owners": list(query.owners),
            "scope": query.scope,
            "key": query.key,
            "since": query.since,
            "until": query.until,
            "after_id": query.after_id,
            "limit": query.limit,
        }
        return [audit_from_row(r) for r in self._all("audit_events", params)]

    def audit_chain(self, owner: str) -> Iterator[dict[str, Any]]:
        for row in self._exec("audit_chain", {"owner": owner}):
            yield audit_dict(row)

    def insert_token(self, token: TokenRecord, token_hash: str) -> None:
        self._exec("insert_token", token_params(token, token_hash))

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        row = self._one("token_by_hash", {"token_hash": token_hash})
        return token_from_row(row) if row else None

    def list_tokens(self, principal: str) -> list[TokenRecord]:
        return [token_from_row(r) for r in self._all("list_tokens", {"principal": principal})]

    def revoke_token(self, principal: str, token_id: str, at: str) -> bool:
        if not _is_uuid(token_id):
            return False
        params = {"principal": principal, "id": token_id, "at": at}
        return self._exec("revoke_token", params).rowcount == 1

    def touch_token(self, token_id: str, at: str) -> None:
        self._exec("touch_token", {"id": token_id, "at": at})

    def bindings_for(self, principal: str) -> list[Binding]:
        rows = self._all("bindings_for", {"principal": principal})
        return [Binding(r["org"], r["pattern"], r["role"]) for r in rows]

    def memberships(self, principal: str) -> list[Membership]:
        return [membership_from_row(r) for r in self._all("memberships", {"principal": principal})]

    def org_members(self, org: str) -> list[Membership]:
        return [membership_from_row(r) for r in self._all("org_members", {"org": org})]

    def create_org(self, org: str, name: str, owner: str, at: str) -> bool:
        # The definer function makes the acting user (the session's actor) the owner.
        row = self._one("create_org", {"slug": org.removeprefix("org:"), "name": name})
        return bool(row and row["created"])

    def set_member(self, org: str, member: str, role: str, at: str) -> None:
        self._exec("set_member", {"org": org, "member": member, "role": role, "at": at})

    def remove_member(self, org: str, member: str) -> bool:
        return self._exec("remove_member", {"org": org, "member": member}).rowcount == 1

    def insert_invite(self, invite: Invite, code_hash: str) -> None:
        self._exec("insert_invite", invite_params(invite, code_hash))

    def accept_invite(self, code_hash: str, principal: str, at: str) -> str | None:
        # The definer function checks the invite names the session's actor.
        row = self._one("accept_invite", {"code_hash": code_hash, "at": at})
        return None if row is None or row["org"] is None else str(row["org"])

    def insert_binding(self, org: str, pattern: str, by: str, at: str) -> bool:
        params = {"org": org, "pattern": pattern, "by": by, "at": at}
        return self._exec("insert_binding", params).rowcount == 1

    def delete_binding(self, org: str, pattern: str) -> bool:
        return self._exec("delete_binding", {"org": org, "pattern": pattern}).rowcount == 1

    def scopes_held_by_others(self, org: str, actor: str, likes: Sequence[str]) -> bool:
        # The function takes the actor from the session: ``actor`` is that same principal.
        row = self._one("scopes_held_by_others", {"org": org, "likes": list(likes)})
        return bool(row and row["held"])

    def set_max_active(self, owner: str, limit: int) -> None:
        self._exec("set_max_active", {"owner": owner, "limit": limit})

    def count_request(self, token_id: str, principal: str, window: str) -> int:
        params = {"token_id": token_id, "principal": principal, "window": window}
        row = self._one("count_request", params)
        assert row is not None
        return int(row["requests"])

    def recall_candidates(
        self, addresses: Sequence[tuple[str, str]], terms: Sequence[str] | None, *, limit: int
    ) -> list[RecallRow]:
        text = None
        if terms:
            text = {
                "match": tsquery_expression(list(terms)),
                "owners": [owner for owner, _ in addresses],
                "scopes": [scope for _, scope in addresses],
                "limit": limit * len(addresses),
            }
        return gather_recall(self._all, addresses, text, limit)

    def insert_recall(self, record: RecallRecord) -> None:
        self._exec("insert_recall", recall_params(record))

    def has_more_lessons(self, owner: str, scope: str, than: int) -> bool:
        row = self._one("count_recall_lessons", {"owner": owner, "scope": scope, "cap": than + 1})
        assert row is not None
        return int(row["n"]) > than

    def get_recall(self, owners: Sequence[str], recall_id: str) -> RecallRecord | None:
        if not _is_uuid(recall_id):
            return None
        row = self._one("get_recall", {"recall_id": recall_id, "owners": list(owners)})
        return recall_from_row(row) if row else None

    def scope_policies(self, owner: str, scopes: Sequence[str]) -> list[PolicyRow]:
        rows = self._all("scope_policies", {"owner": owner, "scopes": list(scopes)})
        return [
            PolicyRow(r["scope"], r["revision_policy"], bool(r["require_review"])) for r in rows
        ]

    def set_policy(self, owner: str, policy: PolicyRow, *, by: str, at: str) -> None:
        self._exec("set_policy", policy_params(owner, policy, by=by, at=at))


class PostgresStore:
    """A lesson store in PostgreSQL, reached through a connection pool as the app role."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self._pool: ConnectionPool[psycopg.Connection[Row]] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"row_factory": dict_row},
            open=False,
        )
        try:
            # One connection first: a server that is down or a wrong URL is said at once, with
            # PostgreSQL's own reason, not after the pool's retries (each a logged warning).
            psycopg.connect(url, connect_timeout=10).close()
            self._pool.open(wait=True, timeout=10)
        except psycopg.Error as exc:
            raise LorestoreError(
                "config_error",
                f"cannot connect to PostgreSQL: {exc}",
                hint="check LORESTORE_DATABASE_URL; `lorestore db init` prints the app URL",
            ) from exc
        self._registered: set[str] = set()
        self._check_schema()

    def _check_schema(self) -> None:
        from lorestore.storage.postgres.setup import check_migrations

        with self._pool.connection() as conn:
            check_migrations(conn)

    @contextmanager
    def transaction(
        self,
        *,
        write: bool,
        actor: str | None = None,
        meanwhile: Callable[[], None] | None = None,
    ) -> Iterator[PostgresTransaction]:
        """One transaction as ``actor`` (``set_actor``: what row-level security reads).
        ``meanwhile`` runs after the commit (see ``Store.transaction``)."""
        register = write and actor is not None and actor not in self._registered
        with self._pool.connection() as conn, translate(), conn.transaction():
            conn.execute(Q["set_actor"], {"actor": actor or ""})
            if register:
                conn.execute(Q["register_actor"])
            yield PostgresTransaction(conn, write=write)
        if register:
            self._registered.add(str(actor))
        if meanwhile is not None:
            meanwhile()

    def flush_erased(self) -> None:
        """Deleted tuples are removed by (auto)vacuum; nothing is kept in a side log we own."""

    def bulk_load(self) -> AbstractContextManager[None]:
        """Nothing to tune: each import batch is one transaction like any other."""
        return nullcontext()

    def close(self) -> None:
        self._pool.close()
