"""The operations. Each one: authorise -> validate -> one store transaction -> audit.

Transports (MCP, REST, CLI) are thin adapters over these methods; the rules of DESIGN §5
(versions kept, recurrence, tombstones checked first, archive keeping the address) live here
and nowhere else, so both backends and every surface behave the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from lorestore.auth.actor import Actor, Permission
from lorestore.core.audit import GENESIS, chain_hash
from lorestore.core.errors import LorestoreError, not_found
from lorestore.core.normalise import value_digest
from lorestore.core.records import Lesson, LessonVersion, Source, format_ts, normalise_ts
from lorestore.core.scope import parse_scope
from lorestore.core.search import decode_cursor, encode_cursor, fts_expression
from lorestore.core.validation import (
    validate_key,
    validate_tags,
    validate_ttl,
    validate_value,
)
from lorestore.models import (
    Address,
    AuditParams,
    AuditResult,
    ChangeParams,
    DeleteParams,
    DeleteResult,
    HistoryResult,
    LessonResult,
    ListParams,
    ListResult,
    NoParams,
    PurgeParams,
    PurgeResult,
    ReadParams,
    ScopeInventory,
    ScopesResult,
    SearchHitOut,
    SearchParams,
    SearchResult,
    WriteParams,
    WriteResult,
)
from lorestore.storage.protocol import AuditFilter, Store, StoredLesson, Transaction

Clock = Callable[[], datetime]
PURGE_BATCH = 500


def utcnow() -> datetime:
    return datetime.now(UTC)


def _bounded(name: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not low <= value <= high:
        raise LorestoreError("invalid_argument", f"{name} must be between {low} and {high}")
    return value


def _is_expired(lesson: Lesson, now: str) -> bool:
    return lesson.expires_at is not None and lesson.expires_at <= now


class LessonService:
    """The lesson operations over one Store."""

    def __init__(self, store: Store, *, clock: Clock = utcnow, corroborate_at: int = 3) -> None:
        self.store = store
        self.clock = clock
        self.corroborate_at = corroborate_at

    def _now(self) -> str:
        return format_ts(self.clock())

    @staticmethod
    def _authorise(actor: Actor, permission: Permission) -> None:
        if not actor.can(permission):
            raise LorestoreError(
                "forbidden",
                f"this operation needs the {permission!r} permission",
                hint="ask an admin for a token with that permission",
            )

    # -- writing ---------------------------------------------------------------------------

    def memory_write(self, actor: Actor, p: WriteParams) -> WriteResult:
        self._authorise(actor, "write")
        scope = parse_scope(p.scope)
        key, value = validate_key(p.key), validate_value(p.value)
        tags = None if p.tags is None else list(validate_tags(p.tags))
        ttl = validate_ttl(p.ttl_days)
        if ttl is not None and p.clear_ttl:
            raise LorestoreError("invalid_argument", "pass ttl_days or clear_ttl, not both")
        valid_from = normalise_ts(p.valid_from, field="valid_from")
        valid_to = normalise_ts(p.valid_to, field="valid_to")
        if valid_from and valid_to and valid_to < valid_from:
            raise LorestoreError("invalid_time", "valid_to is before valid_from")
        digest = value_digest(value)
        session = p.session or actor.session
        source = (p.source or Source()).model_copy(
            update={"session": session, "agent": (p.source and p.source.agent) or actor.agent}
        )
        now_dt = self.clock()
        now = format_ts(now_dt)
        expires_at = format_ts(now_dt + timedelta(days=ttl)) if ttl else None
        with self.store.transaction(write=True) as tx:
            self._check_tombstone(
                tx, actor, [scope.text, *(s.text for s in scope.broader())], digest
            )
            stored = tx.lesson_at(actor.owner, scope.text, key)
            self._check_if_version(p.if_version, stored)
            if stored is None:
                lesson = Lesson(
                    id=str(uuid.uuid4()),
                    scope=scope.text,
                    key=key,
                    value=value,
                    tags=tags or [],
                    kind=p.kind,
                    owner=_owner_dict(actor.owner),
                    version=1,
                    seen_count=1,
                    valid_from=valid_from,
                    valid_to=valid_to,
                    recorded_at=now,
                    created_at=now,
                    updated_at=now,
                    expires_at=expires_at,
                    source=source,
                    depends_on=p.depends_on or [],
                )
                pk = tx.insert_lesson(lesson, digest)
                tx.insert_version(pk, _version_of(lesson, digest, actor))
                if session:
                    tx.add_session(pk, digest, session, now)
                self._audit(tx, actor, "write.created", lesson, after=(1, digest))
                return WriteResult(result="created", lesson=lesson)
            current = stored.lesson
            if current.status == "archived":
                raise LorestoreError(
                    "archived",
                    f"the lesson at {scope.text} / {key} is archived; a write would "
                    "silently bring it back",
                    hint=f"restore it first: lorestore restore {scope.text} {key!r}",
                    details={"scope": scope.text, "key": key},
                )
            if _is_expired(current, now) and ttl is None and not p.clear_ttl:
                raise LorestoreError(
                    "expired",
                    f"the lesson at {scope.text} / {key} expired at {current.expires_at}",
                    hint="pass ttl_days to renew it or clear_ttl to keep it without expiry",
                    details={"expires_at": current.expires_at},
                )
            new_expiry = None if p.clear_ttl else (expires_at or current.expires_at)
            changes: dict[str, Any] = {"updated_at": now, "expires_at": new_expiry}
            if tags is not None:
                changes["tags"] = tags
            if digest == stored.value_digest:
                return self._seen(tx, actor, stored, session, changes, now)
            return self._new_version(
                tx,
                actor,
                stored,
                value,
                digest,
                session,
                now,
                changes
                | {
                    "valid_from": valid_from,
                    "valid_to": valid_to,
                    "source": source,
                    "depends_on": p.depends_on if p.depends_on is not None else current.depends_on,
                },
            )

    def _seen(
        self,
        tx: Transaction,
        actor: Actor,
        stored: StoredLesson,
        session: str | None,
        changes: dict[str, Any],
        now: str,
    ) -> WriteResult:
        lesson = stored.lesson
        if session and tx.add_session(stored.pk, stored.value_digest, session, now):
            changes["seen_count"] = lesson.seen_count + 1
            if lesson.trust == "candidate" and changes["seen_count"] >= self.corroborate_at:
                changes["trust"] = "corroborated"
        updated = lesson.model_copy(update=changes)
        tx.save_lesson(stored.pk, updated, stored.value_digest, stored.pending_version)
        self._audit(
            tx,
            actor,
            "write.seen",
            updated,
            before=(lesson.version, stored.value_digest),
            after=(lesson.version, stored.value_digest),
            detail={"seen_count": updated.seen_count, "trust": updated.trust},
        )
        return WriteResult(result="seen", lesson=updated)

    def _new_version(
        self,
        tx: Transaction,
        actor: Actor,
        stored: StoredLesson,
        value: str,
        digest: str,
        session: str | None,
        now: str,
        changes: dict[str, Any],
    ) -> WriteResult:
        lesson = stored.lesson
        updated = lesson.model_copy(
            update=changes
            | {
                "value": value,
                "version": lesson.version + 1,
                "recorded_at": now,
                "seen_count": 1,
                "trust": "candidate",
                "review": None,
            }
        )
        tx.save_lesson(stored.pk, updated, digest, stored.pending_version)
        tx.insert_version(stored.pk, _version_of(updated, digest, actor))
        if session:
            tx.add_session(stored.pk, digest, session, now)
        self._audit(
            tx,
            actor,
            "write.updated",
            updated,
            before=(lesson.version, stored.value_digest),
            after=(updated.version, digest),
        )
        return WriteResult(result="updated", lesson=updated)

    @staticmethod
    def _check_if_version(expected: int | None, stored: StoredLesson | None) -> None:
        if expected is None:
            return
        actual = stored.lesson.version if stored else 0
        if actual != expected:
            raise LorestoreError(
                "version_conflict",
                f"the lesson is at version {actual}, not {expected}",
                hint="read it again, merge your change, and retry with the current version",
                details={"expected": expected, "actual": actual},
            )

    @staticmethod
    def _check_tombstone(tx: Transaction, actor: Actor, scopes: list[str], digest: str) -> None:
        tomb = tx.find_tombstone(actor.owner, scopes, digest)
        if tomb is not None:
            raise LorestoreError(
                "rejected_value",
                f"this value was rejected at {tomb.scope} by {tomb.actor} on {tomb.created_at}: "
                f"{tomb.reason}",
                hint="write a corrected lesson instead; a reviewer can lift the rejection with "
                "`lorestore reject --undo`",
                details={
                    "scope": tomb.scope,
                    "rejected_by": tomb.actor,
                    "rejected_at": tomb.created_at,
                    "reason": tomb.reason,
                },
            )

    # -- reading ---------------------------------------------------------------------------

    def memory_read(self, actor: Actor, p: ReadParams) -> LessonResult:
        self._authorise(actor, "read")
        scope, key = parse_scope(p.scope).text, validate_key(p.key)
        as_of = normalise_ts(p.as_of, field="as_of")
        valid_at = normalise_ts(p.valid_at, field="valid_at")
        now = self._now()
        with self.store.transaction(write=False) as tx:
            stored = tx.lesson_at(actor.owner, scope, key)
            if (
                stored is None
                or stored.lesson.status != "active"
                or _is_expired(stored.lesson, now)
            ):
                raise not_found(scope, key)
            lesson = stored.lesson
            if as_of is None and valid_at is None:
                return LessonResult(lesson=lesson)
            version = tx.version_at(stored.pk, lesson.id, as_of=as_of, valid_at=valid_at)
        if version is None:
            raise LorestoreError(
                "not_found",
                f"{scope} / {key} had no version at that time",
                details={"as_of": as_of, "valid_at": valid_at},
            )
        return LessonResult(
            lesson=lesson.model_copy(
                update={
                    "value": version.value,
                    "version": version.version,
                    "tags": version.tags,
                    "valid_from": version.valid_from,
                    "valid_to": version.valid_to,
                    "recorded_at": version.recorded_at,
                    "source": version.source,
                }
            )
        )

    def memory_history(self, actor: Actor, p: Address) -> HistoryResult:
        self._authorise(actor, "read")
        scope, key = parse_scope(p.scope).text, validate_key(p.key)
        with self.store.transaction(write=False) as tx:
            stored = tx.lesson_at(actor.owner, scope, key)
            if stored is None:
                raise not_found(scope, key)
            versions = tx.versions(stored.pk, stored.lesson.id)
        return HistoryResult(
            lesson_id=stored.lesson.id,
            scope=scope,
            key=key,
            status=stored.lesson.status,
            versions=versions,
        )

    def memory_list(self, actor: Actor, p: ListParams) -> ListResult:
        self._authorise(actor, "read")
        scope = parse_scope(p.scope).text
        tags = validate_tags(p.tags)
        limit = _bounded("limit", p.limit, 1, 200)
        after = None
        if p.cursor:
            at, pk = decode_cursor(p.cursor, (str, int))
            after = (str(at), int(pk))  # type: ignore[call-overload]
        with self.store.transaction(write=False) as tx:
            rows = tx.list_lessons(
                actor.owner, scope, tags=tags, now=self._now(), after=after, limit=limit + 1
            )
        page = rows[:limit]
        next_cursor = None
        if len(rows) > limit:
            last = page[-1]
            next_cursor = encode_cursor(last.lesson.updated_at, last.pk)
        return ListResult(lessons=[r.lesson for r in page], next_cursor=next_cursor)

    def memory_search(self, actor: Actor, p: SearchParams) -> SearchResult:
        self._authorise(actor, "read")
        if not p.scopes:
            raise LorestoreError(
                "invalid_scope",
                "search needs at least one scope",
                hint='pass e.g. scopes=["repo::acme/app", "global"]',
            )
        scopes = list(dict.fromkeys(parse_scope(s).text for s in p.scopes))
        tags = validate_tags(p.tags)
        limit = _bounded("limit", p.limit, 1, 100)
        match = fts_expression(p.query)
        with self.store.transaction(write=False) as tx:
            hits = tx.search(actor.owner, scopes, match, tags=tags, now=self._now(), limit=limit)
        return SearchResult(
            hits=[SearchHitOut(lesson=h.lesson, score=h.score, snippet=h.snippet) for h in hits]
        )

    def memory_scopes(self, actor: Actor, p: NoParams) -> ScopesResult:
        self._authorise(actor, "read")
        with self.store.transaction(write=False) as tx:
            counts = tx.scope_counts(actor.owner, self._now())
        return ScopesResult(
            scopes=[
                ScopeInventory(
                    scope=c.scope, active=c.active, archived=c.archived, expired=c.expired
                )
                for c in counts
            ]
        )

    def memory_audit(self, actor: Actor, p: AuditParams) -> AuditResult:
        self._authorise(actor, "read")
        limit = _bounded("limit", p.limit, 1, 500)
        after_id = int(decode_cursor(p.cursor, (int,))[0]) if p.cursor else None  # type: ignore[call-overload]
        query = AuditFilter(
            owner=actor.owner,
            scope=parse_scope(p.scope).text if p.scope else None,
            key=validate_key(p.key) if p.key else None,
            since=normalise_ts(p.since, field="since"),
            until=normalise_ts(p.until, field="until"),
            after_id=after_id,
            limit=limit + 1,
        )
        with self.store.transaction(write=False) as tx:
            events = tx.audit_events(query)
        page = events[:limit]
        cursor = encode_cursor(page[-1].id) if len(events) > limit else None
        return AuditResult(events=page, next_cursor=cursor)

    # -- lifecycle -------------------------------------------------------------------------

    def memory_archive(self, actor: Actor, p: ChangeParams) -> LessonResult:
        return self._set_status(actor, p, "archived")

    def memory_restore(self, actor: Actor, p: ChangeParams) -> LessonResult:
        return self._set_status(actor, p, "active")

    def _set_status(self, actor: Actor, p: ChangeParams, status: str) -> LessonResult:
        self._authorise(actor, "write")
        scope, key = parse_scope(p.scope).text, validate_key(p.key)
        now = self._now()
        with self.store.transaction(write=True) as tx:
            stored = tx.lesson_at(actor.owner, scope, key)
            if stored is None:
                raise not_found(scope, key)
            if stored.lesson.status == status:
                return LessonResult(lesson=stored.lesson)
            updated = stored.lesson.model_copy(
                update={
                    "status": status,
                    "updated_at": now,
                    "archived_at": now if status == "archived" else None,
                }
            )
            tx.save_lesson(stored.pk, updated, stored.value_digest, stored.pending_version)
            action = "archive" if status == "archived" else "restore"
            version = (updated.version, stored.value_digest)
            self._audit(tx, actor, action, updated, before=version, after=version, reason=p.reason)
        return LessonResult(lesson=updated)

    def memory_delete(self, actor: Actor, p: DeleteParams) -> DeleteResult:
        self._authorise(actor, "admin")
        scope, key = parse_scope(p.scope).text, validate_key(p.key)
        with self.store.transaction(write=True) as tx:
            stored = tx.lesson_at(actor.owner, scope, key)
            if stored is None:
                raise not_found(scope, key)
            erased = self._erase(tx, actor, stored, "delete", p.reason)
            tx.compact_search_index()
        self.store.flush_erased()
        return DeleteResult(
            deleted=True, lesson_id=stored.lesson.id, scope=scope, key=key, versions_erased=erased
        )

    def memory_purge(self, actor: Actor, p: PurgeParams) -> PurgeResult:
        self._authorise(actor, "admin")
        days = _bounded("retention_days", p.retention_days, 0, 3650)
        cutoff = format_ts(self.clock() - timedelta(days=days))
        return self._sweep(
            actor,
            lambda tx: tx.archived_before(actor.owner, cutoff, PURGE_BATCH),
            "purge",
            f"archived more than {days} days",
        )

    def memory_purge_expired(self, actor: Actor, p: NoParams) -> PurgeResult:
        self._authorise(actor, "admin")
        now = self._now()
        return self._sweep(
            actor,
            lambda tx: tx.expired_before(actor.owner, now, PURGE_BATCH),
            "purge_expired",
            "expired",
        )

    def _sweep(
        self,
        actor: Actor,
        batch: Callable[[Transaction], list[StoredLesson]],
        action: str,
        reason: str,
    ) -> PurgeResult:
        ids: list[str] = []
        while True:
            with self.store.transaction(write=True) as tx:
                rows = batch(tx)
                for stored in rows:
                    self._erase(tx, actor, stored, action, reason)
                    ids.append(stored.lesson.id)
                if rows:
                    tx.compact_search_index()
            if len(rows) < PURGE_BATCH:
                if ids:
                    self.store.flush_erased()
                return PurgeResult(purged=len(ids), lesson_ids=ids)

    def _erase(
        self, tx: Transaction, actor: Actor, stored: StoredLesson, action: str, reason: str | None
    ) -> int:
        versions = tx.versions(stored.pk, stored.lesson.id)
        tx.delete_lesson(stored.pk)
        self._audit(
            tx,
            actor,
            action,
            stored.lesson,
            before=(stored.lesson.version, stored.value_digest),
            reason=reason,
            detail={
                "versions_erased": len(versions),
                "version_digests": [v.value_digest for v in versions],
            },
        )
        return len(versions)

    # -- audit -----------------------------------------------------------------------------

    def _audit(
        self,
        tx: Transaction,
        actor: Actor,
        action: str,
        lesson: Lesson,
        *,
        before: tuple[int, str] | None = None,
        after: tuple[int, str] | None = None,
        reason: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        event: dict[str, Any] = {
            "owner": actor.owner,
            "at": self._now(),
            "actor": actor.principal,
            "action": action,
            "scope": lesson.scope,
            "key": lesson.key,
            "lesson_id": lesson.id,
            "before_version": before[0] if before else None,
            "after_version": after[0] if after else None,
            "before_digest": before[1] if before else None,
            "after_digest": after[1] if after else None,
            "reason": reason,
            "detail": detail or {},
        }
        if actor.session:
            event["detail"] = {**event["detail"], "session": actor.session}
        prev = tx.last_audit_hash(actor.owner) or GENESIS
        event["prev_hash"] = prev
        event["hash"] = chain_hash(prev, event)
        tx.append_audit(event)


def _owner_dict(owner: str) -> dict[str, str]:
    kind, _, ident = owner.partition(":")
    return {kind: ident}


def _version_of(lesson: Lesson, digest: str, actor: Actor) -> LessonVersion:
    return LessonVersion(
        lesson_id=lesson.id,
        version=lesson.version,
        state="accepted",
        value=lesson.value,
        value_digest=digest,
        tags=lesson.tags,
        valid_from=lesson.valid_from,
        valid_to=lesson.valid_to,
        recorded_at=lesson.recorded_at,
        actor=actor.principal,
        source=lesson.source,
    )
