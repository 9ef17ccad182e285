"""The read paths: read (with ``as_of`` / ``valid_at``), history, list, search, scopes, audit.

Every path names its scope and returns only served lessons: active, unexpired and not
rejected. History is the one exception, and shows a rejected lesson to reviewers only.
"""

from __future__ import annotations

from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.audit import check_chain
from lorestore.core.errors import LorestoreError, not_found
from lorestore.core.normalise import value_digests
from lorestore.core.patterns import pattern_within, scope_allowed
from lorestore.core.scope import parse_scope
from lorestore.core.search import (
    encode_cursor,
    invalid_cursor,
    listing_mark,
    paged_cursor,
)
from lorestore.core.timestamps import normalise_ts
from lorestore.core.trust import trust_as_of
from lorestore.core.validation import validate_key, validate_tags
from lorestore.models import (
    Address,
    AuditParams,
    AuditResult,
    AuditVerifyResult,
    ChainReport,
    HistoryResult,
    LessonResult,
    ListParams,
    ListResult,
    NoParams,
    ReadParams,
    ScopeInventory,
    ScopesResult,
)
from lorestore.service.base import ServiceBase, address, bounded, is_served
from lorestore.service.corrections import check_tombstone
from lorestore.storage.protocol import AuditFilter, LessonFilter


def _list_cursor(cursor: str, mark: str) -> tuple[str, int]:
    """A list cursor's (updated_at, pk): the time must be in the canonical form the store
    wrote, since PostgreSQL would fail on any other text where SQLite compares it as such."""
    at, pk = paged_cursor(cursor, (str, int), mark)
    assert isinstance(at, str) and isinstance(pk, int)
    try:
        canonical = normalise_ts(at, field="cursor")
    except LorestoreError as exc:
        raise invalid_cursor() from exc
    if canonical != at:
        raise invalid_cursor()
    return at, pk


def _browse_cursor(cursor: str, mark: str, sort: str) -> tuple[str | int, int]:
    if sort == "updated":
        return _list_cursor(cursor, mark)
    seen, pk = paged_cursor(cursor, (int, int), mark)
    assert isinstance(seen, int) and isinstance(pk, int)
    return seen - 1, pk  # carried plus one: a cursor's numbers are positive, a count may be 0


def scope_prefix(pattern: str) -> str:
    """The prefix of a listing pattern: text ending in one ``*`` (``repo::acme/*``), whose
    part before it is the start of a scope; any other ``*`` is refused."""
    prefix = pattern.strip().lower()[:-1]
    starts = ("global", "project::", "repo::", "branch::")
    begins_one = any(s.startswith(prefix) or prefix.startswith(s) for s in starts)
    if not prefix or "*" in prefix or not begins_one or any(c.isspace() for c in prefix):
        raise LorestoreError(
            "invalid_scope",
            f"{pattern!r} is no scope prefix: the start of a scope, then one *",
            hint='e.g. "repo::acme/*" (every scope beginning with repo::acme/) or "repo::*"; '
            'scopes use "::" as the separator',
        )
    return prefix


class ReadOperations(ServiceBase):
    def memory_read(self, actor: Actor, p: ReadParams) -> LessonResult:
        scope, key = address(p.scope, p.key)
        self._authorise(actor, "read", scope)
        as_of = normalise_ts(p.as_of, field="as_of")
        valid_at = normalise_ts(p.valid_at, field="valid_at")
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            # Most addresses are the reader's own: the lesson there is read together with
            # the scope bindings (one wait where statements are pipelined), and read again
            # only when a binding routes the scope to an org.
            tx.ask_bindings(actor.principal)
            tx.ask_lesson_at(actor.owner, scope, key)
            owner = self._owner_for(tx, actor, scope, write=False)
            stored = tx.lesson_at(owner, scope, key)
            if stored is None or not is_served(stored.lesson, self._now()):
                raise not_found(scope, key)
            lesson = stored.lesson
            if as_of is None and valid_at is None:
                return LessonResult(lesson=lesson)
            version = tx.version_at(stored.pk, lesson.id, as_of=as_of, valid_at=valid_at)
            then: dict[str, Any] = {}
            if as_of is not None:  # trust as it stood then, and no review made since
                events = tx.trust_events(owner, scope, key, lesson.id, as_of)
                then["trust"] = trust_as_of(events) or lesson.trust
                if lesson.review is not None and lesson.review.at > as_of:
                    then["review"] = None
                if lesson.updated_at > as_of and version is not None:
                    # Not a change made since: the version's own time, as known then.
                    then["updated_at"] = version.accepted_at or version.recorded_at
                if stored.pending_version is not None:  # proposed by then, or only since
                    pending = tx.version(stored.pk, lesson.id, stored.pending_version)
                    then["pending_revision"] = pending is not None and pending.recorded_at <= as_of
            if version is not None and valid_at is not None and as_of is None:
                # What was true then: a value rejected since never was (as of now).
                try:
                    check_tombstone(tx, owner, parse_scope(scope), value_digests(version.value))
                except LorestoreError as rejected:
                    raise LorestoreError(
                        "not_found",
                        f"the value {scope} / {key} held at that time was rejected since: "
                        f"{rejected.message}",
                        details={"valid_at": valid_at, "version": version.version},
                    ) from None
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
                | then
            )
        )

    def memory_history(self, actor: Actor, p: Address) -> HistoryResult:
        scope, key = address(p.scope, p.key)
        self._authorise(actor, "read", scope)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            owner = self._owner_for(tx, actor, scope, write=False)
            stored = tx.lesson_at(owner, scope, key)
            if stored is None or (stored.lesson.trust == "rejected" and not actor.can("review")):
                raise not_found(scope, key)
            versions = tx.versions(stored.pk, stored.lesson.id)
        return HistoryResult(
            lesson_id=stored.lesson.id,
            scope=scope,
            key=key,
            status=stored.lesson.status,
            trust=stored.lesson.trust,
            versions=versions,
        )

    def memory_list(self, actor: Actor, p: ListParams) -> ListResult:
        if p.scope.strip().endswith("*") or (p.trust, p.state, p.sort) != (
            None,
            "active",
            "updated",
        ):
            return self._browse(actor, p)
        scope = parse_scope(p.scope).text
        self._authorise(actor, "read", scope)
        tags = validate_tags(p.tags)
        limit = bounded("limit", p.limit, 1, 200)
        mark = listing_mark("list", scope, sorted(tags))
        after = _list_cursor(p.cursor, mark) if p.cursor else None
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            page, more = tx.list_lessons(
                self._owner_for(tx, actor, scope, write=False),
                scope,
                tags=tags,
                now=self._now(),
                after=after,
                limit=limit,
            )
        next_cursor = None
        if more:
            next_cursor = encode_cursor(page[-1].lesson.updated_at, page[-1].pk, mark)
        return ListResult(lessons=[r.lesson for r in page], next_cursor=next_cursor)

    def _browse(self, actor: Actor, p: ListParams) -> ListResult:
        """memory_list with its filters: a scope prefix (the lessons of every owner the actor
        reads), a trust, a state (archived and expired lessons are a reviewer's to see) or
        the seen sort."""
        prefix = scope_prefix(p.scope) if p.scope.strip().endswith("*") else None
        scope = None if prefix is not None else parse_scope(p.scope).text
        if prefix is None:
            self._authorise(actor, "read", str(scope))
        else:
            self._require(actor, "read")
            if actor.scopes is not None and not pattern_within(prefix + "*", actor.scopes):
                raise LorestoreError(
                    "forbidden",
                    f"this token does not cover every scope beginning with {prefix}",
                    hint="list a prefix or a scope within the token's scope patterns",
                    details={"token_scopes": list(actor.scopes)},
                )
        if p.state != "active":
            self._require(actor, "review")
        tags = validate_tags(p.tags)
        limit = bounded("limit", p.limit, 1, 200)
        mark = listing_mark("browse", scope, prefix, sorted(tags), p.trust, p.state, p.sort)
        after = _browse_cursor(p.cursor, mark, p.sort) if p.cursor else None
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            owners = (
                self._readable_owners(tx, actor)
                if scope is None
                else [self._owner_for(tx, actor, scope, write=False)]
            )
            query = LessonFilter(
                owners=tuple(owners),
                now=self._now(),
                scope=scope,
                prefix=prefix,
                tags=tuple(tags),
                trust=p.trust,
                state=p.state,
                sort=p.sort,
                after=after,
                limit=limit,
            )
            page, more = tx.browse_lessons(query)
        next_cursor = None
        if more:
            last = page[-1]
            value = last.lesson.updated_at if p.sort == "updated" else last.lesson.seen_count + 1
            next_cursor = encode_cursor(value, last.pk, mark)
        return ListResult(lessons=[r.lesson for r in page], next_cursor=next_cursor)

    def memory_scopes(self, actor: Actor, p: NoParams) -> ScopesResult:
        self._require(actor, "read")
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            counts = tx.scope_counts(self._readable_owners(tx, actor), self._now())
        if actor.scopes is not None:
            counts = [c for c in counts if scope_allowed(actor.scopes, parse_scope(c.scope))]
        return ScopesResult(
            scopes=[
                ScopeInventory(
                    owner=c.owner,
                    scope=c.scope,
                    active=c.active,
                    archived=c.archived,
                    expired=c.expired,
                    rejected=c.rejected,
                    trust=c.trust,
                )
                for c in counts
            ]
        )

    def audit_verify(self, actor: Actor, p: NoParams) -> AuditVerifyResult:
        """Recompute every readable owner's audit hash chain from the first event and compare
        its end with the head the store keeps beside it (a cut tail shows only there)."""
        self._authorise(actor, "read")
        chains = []
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            for owner in self._readable_owners(tx, actor):
                # The head before the chain: an append committed in between lies past the
                # head, never before it (check_chain).
                head = tx.audit_head(owner)
                check = check_chain(tx.audit_chain(owner), head)
                chains.append(
                    ChainReport(
                        owner=owner,
                        events=check.events,
                        ok=not check.faults,
                        first_break=check.first_break,
                        head_events=check.head_events,
                        faults=list(check.faults),
                    )
                )
        return AuditVerifyResult(ok=all(c.ok for c in chains), chains=chains)

    def memory_audit(self, actor: Actor, p: AuditParams) -> AuditResult:
        # Omitted is every scope (or key); given empty is a mistake, never "all".
        scope = parse_scope(p.scope).text if p.scope is not None else None
        self._authorise(actor, "read", *([scope] if scope else []))
        limit = bounded("limit", p.limit, 1, 500)
        key = validate_key(p.key) if p.key is not None else None
        since = normalise_ts(p.since, field="since")
        until = normalise_ts(p.until, field="until")
        if since and until and until <= since:  # as export says it: an empty window is a mistake
            raise LorestoreError("invalid_time", "until must be after since")
        mark = listing_mark("audit", scope, key, since, until)
        after_id = int(str(paged_cursor(p.cursor, (int,), mark)[0])) if p.cursor else None
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            owners = (
                [self._owner_for(tx, actor, scope, write=False)]
                if scope
                else self._readable_owners(tx, actor)
            )
            query = AuditFilter(
                owners=tuple(owners),
                scope=scope,
                key=key,
                since=since,
                until=until,
                after_id=after_id,
                limit=limit + 1,
            )
            events = tx.audit_events(query)
        page = events[:limit]
        cursor = encode_cursor(page[-1].id, mark) if len(events) > limit else None
        return AuditResult(events=page, next_cursor=cursor)
