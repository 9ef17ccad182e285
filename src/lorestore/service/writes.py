"""``memory_write``: create, new version, repeat sighting, or a proposed revision.

The tombstone check comes first, before anything about the address is decided, so a rejected
value cannot come back under any key (what the checks need is read at once, the address and
its tombstones together: ``Transaction.address_reads``). A verified lesson is never
overwritten by a write: the new value waits as a proposed revision until a person accepts or
rejects it.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import value_digest, value_digests
from lorestore.core.owner import Owner
from lorestore.core.records import (
    Dependency,
    Lesson,
    LessonKind,
    LessonVersion,
    Source,
)
from lorestore.core.scope import Scope, parse_scope
from lorestore.core.timestamps import format_ts, normalise_ts
from lorestore.core.trust import transition
from lorestore.core.validation import (
    validate_address,
    validate_new_key,
    validate_tags,
    validate_ttl,
    validate_value,
)
from lorestore.models import DependencyRef, WriteParams, WriteResult
from lorestore.service.base import ServiceBase, bounded, is_expired, version_of
from lorestore.service.corrections import address_reads, look_alike, refuse_rejected
from lorestore.storage.protocol import AddressReads, StoredLesson, Transaction

# Lessons whose value, labels, expiry and archiving are a reviewer's: verified ones, and
# disputed ones (withheld until a reviewer verifies or rejects them; disputing first is no
# way around review).
CURATED = ("verified", "disputed")


def _check_same_window(
    current: Lesson | LessonVersion, valid_from: str | None, valid_to: str | None
) -> None:
    """A sighting of the lesson's value keeps its world-time window: one given that differs
    is refused rather than dropped (each version carries the window it was written with)."""
    moved = [
        f"{name} {given} (the lesson's is {held or 'open'})"
        for name, given, held in (
            ("valid_from", valid_from, current.valid_from),
            ("valid_to", valid_to, current.valid_to),
        )
        if given is not None and given != held
    ]
    if moved:
        raise LorestoreError(
            "invalid_argument",
            f"this is the lesson's value already, with another {' and '.join(moved)}: a "
            "window goes with the value it was written with",
            hint="write the corrected lesson (its text saying what changed) with its window, "
            "or archive it when it no longer holds",
            details={"valid_from": current.valid_from, "valid_to": current.valid_to},
        )


def _digest(tags: list[str]) -> str:
    """The SHA-256 of a tag list, as the audit records tags."""
    return hashlib.sha256(json.dumps(tags, ensure_ascii=False).encode()).hexdigest()


_BLOB = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")


def _dependencies(refs: list[DependencyRef] | None) -> list[Dependency] | None:
    """Validate depends_on: repository-relative paths, each with its git blob hash."""
    if refs is None:
        return None
    found: dict[str, Dependency] = {}
    for ref in refs:
        raw = ref.path.strip()
        parts = PurePosixPath(raw).parts
        # As git writes a path: no "." segments or doubled slashes (the CLI's and a remote
        # client's spellings of one file are one dependency).
        path = "/".join(p for p in parts if p != ".")
        if not path or raw.startswith("/") or ".." in parts:
            raise LorestoreError(
                "invalid_argument",
                f"depends_on path {ref.path!r} must be relative to the repository root",
                hint="e.g. tests/conftest.py",
            )
        if parts[0] == ".git":
            raise LorestoreError(
                "invalid_argument",
                f"depends_on path {ref.path!r} is inside .git, which is git's, not a file of "
                "the repository",
                hint="name a tracked file, e.g. tests/conftest.py",
            )
        if ref.blob is None or not _BLOB.match(ref.blob):
            raise LorestoreError(
                "invalid_argument",
                f"depends_on {path!r} has no git blob hash",
                hint="the CLI and `lorestore mcp` read it from git inside a checkout; "
                "elsewhere, and over REST, give it: PATH=BLOB (git hash-object PATH)",
            )
        found[path] = Dependency(path=path, blob=ref.blob)
    return list(found.values())


@dataclass(frozen=True, slots=True)
class PreparedWrite:
    """A write's arguments validated, before its transaction: what ``_apply_write`` stores."""

    scope: Scope
    key: str
    value: str
    tags: list[str] | None
    kind: LessonKind
    ttl: int | None
    clear_ttl: bool
    if_version: int | None
    valid_from: str | None
    valid_to: str | None
    digests: tuple[str, ...]
    depends_on: list[Dependency] | None
    session: str | None
    source: Source
    now: str
    expires_at: str | None


class WriteOperations(ServiceBase):
    def memory_write(self, actor: Actor, p: WriteParams) -> WriteResult:
        w = self._prepare_write(actor, p)
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            # Most writes land in the writer's own tenant: what the write decides on is read
            # there together with the scope bindings (one wait where statements are pipelined),
            # and read again only when a binding routes the scope to an org.
            tx.ask_bindings(actor.principal)
            guessed = self._decision_reads(tx, actor.owner, w)
            owner = self._owner_for(tx, actor, w.scope.text, write=True)
            return self._apply_write(tx, actor, owner, w, guessed if owner == actor.owner else None)

    def _prepare_write(self, actor: Actor, p: WriteParams) -> PreparedWrite:
        """Authorise and validate a write: all of it that needs no transaction."""
        scope = parse_scope(p.scope)
        self._authorise(actor, "write", scope.text)
        key, value = validate_new_key(p.key), validate_value(p.value)
        validate_address(scope.text, key)
        tags = None if p.tags is None else list(validate_tags(p.tags))
        ttl = validate_ttl(p.ttl_days)
        if ttl is not None and p.clear_ttl:
            raise LorestoreError("invalid_argument", "pass ttl_days or clear_ttl, not both")
        valid_from = normalise_ts(p.valid_from, field="valid_from")
        valid_to = normalise_ts(p.valid_to, field="valid_to")
        if valid_from and valid_to and valid_to < valid_from:
            raise LorestoreError("invalid_time", "valid_to is before valid_from")
        # An agent's session is its process's (or its connection's): one it names itself in
        # the call cannot count as another session towards corroboration.
        agent_session = None if actor.is_person else actor.session
        session = agent_session or p.session or actor.session
        source = (p.source or Source()).model_copy(
            update={"session": session, "agent": (p.source and p.source.agent) or actor.agent}
        )
        now_dt = self.clock()
        return PreparedWrite(
            scope=scope,
            key=key,
            value=value,
            tags=tags,
            kind=p.kind,
            ttl=ttl,
            clear_ttl=p.clear_ttl,
            if_version=p.if_version,
            valid_from=valid_from,
            valid_to=valid_to,
            digests=value_digests(value),
            depends_on=_dependencies(p.depends_on),
            session=session,
            source=source,
            now=format_ts(now_dt),
            expires_at=format_ts(now_dt + timedelta(days=ttl)) if ttl else None,
        )

    @staticmethod
    def _decision_reads(tx: Transaction, owner: str, w: PreparedWrite) -> AddressReads:
        """What a write at ``owner`` decides on, read with the owner's corrections locked
        (shared: a rejection of this owner's waits until the write is done). With the reads
        go, in the same wait, the owner's audit head (its chain locked, after the address, as
        every writer locks them) and a key for a lesson the write may create: the rows the
        write then sends need no answer before its COMMIT (two waits on PostgreSQL)."""
        tx.lock_corrections(owner, exclusive=False)
        chain = Owner.parse(owner).key

        def alongside() -> None:
            tx.ask_audit_head(chain)
            tx.ask_new_lesson_key()

        return address_reads(tx, owner, w.scope, w.key, w.digests, alongside)

    def _apply_write(
        self,
        tx: Transaction,
        actor: Actor,
        owner: str,
        w: PreparedWrite,
        reads: AddressReads | None = None,
    ) -> WriteResult:
        """A prepared write in ``tx``, at ``owner``: the tombstone check first, then create,
        count a sighting, version or propose. ``reads``: ``_decision_reads`` at ``owner``,
        when the caller made them already."""
        scope, key, value, tags, ttl = w.scope, w.key, w.value, w.tags, w.ttl
        valid_from, valid_to, session, source = w.valid_from, w.valid_to, w.session, w.source
        now, expires_at, depends_on = w.now, w.expires_at, w.depends_on
        digests = w.digests
        digest = digests[0]
        if reads is None:
            reads = self._decision_reads(tx, owner, w)
        refuse_rejected(tx, reads.tombstones, scope, digests)
        stored = reads.stored
        self._check_if_version(w.if_version, stored)
        if stored is None:
            held = look_alike(key, value, reads, new_address=True)
            lesson = Lesson(
                id=str(uuid.uuid4()),
                scope=scope.text,
                key=key,
                value=value,
                tags=tags or [],
                kind=w.kind,
                owner=Owner.parse(owner),
                version=1,
                seen_count=1,
                valid_from=valid_from,
                valid_to=valid_to,
                recorded_at=now,
                created_at=now,
                updated_at=now,
                expires_at=expires_at,
                source=source,
                depends_on=depends_on or [],
                trust=transition("candidate", "hold") if held else "candidate",
            )
            # Its key was reserved, and the audit head asked for, with the reads above: the
            # insert and every row after it go with the COMMIT (_decision_reads).
            pk = tx.insert_lesson(lesson, digest)
            tx.insert_version(pk, version_of(lesson, digest, actor))
            if session:
                tx.add_session(pk, digest, session, now)
            self._audit(
                tx,
                actor,
                "write.created",
                lesson,
                after=(1, digest),
                at=now,
                detail={"held": held} if held else None,
            )
            return WriteResult(result="created", lesson=lesson, held=held)
        current = stored.lesson
        self._check_writable(current, now, ttl is not None or w.clear_ttl)
        changes: dict[str, Any] = {
            "updated_at": now,
            "expires_at": None if w.clear_ttl else (expires_at or current.expires_at),
        }
        if tags is not None:
            changes["tags"] = tags
        # The stored digest may predate a change of the normalisation: compare the texts'.
        same = digest == stored.value_digest or digest == value_digest(current.value)
        if same:
            _check_same_window(current, valid_from, valid_to)
            self._check_curation(actor, current, changes)
            return self._seen(tx, actor, stored, session, changes, now)
        changes |= {
            "value": value,
            "valid_from": valid_from,
            "valid_to": valid_to,
            "source": source,
            "recorded_at": now,
            "depends_on": current.depends_on if depends_on is None else depends_on,
        }
        # A verified lesson, and a disputed one (withheld until a reviewer decides), change
        # value only through a reviewed revision: disputing first is no way around review.
        if current.trust in ("verified", "disputed"):
            # A TTL given with a proposal applies to the served lesson now: a reviewer's.
            self._check_curation(actor, current, {"expires_at": changes["expires_at"]})
            return self._propose(tx, actor, stored, digest, changes)
        held = look_alike(key, value, reads, new_address=False)
        return self._new_version(tx, actor, stored, digest, session, changes, held)

    @staticmethod
    def _check_curation(actor: Actor, current: Lesson, changes: dict[str, Any]) -> None:
        """A verified lesson's tags and expiry are a reviewer's to change, as its value is (and
        a disputed one's, which waits for a reviewer's decision): an agent's repeat sighting
        counts, but may not relabel it or set it to expire (the maintenance sweep would then
        erase it, a delete the agent may not make)."""
        if current.trust not in CURATED or actor.can("review"):
            return
        changed = [
            name
            for name in ("tags", "expires_at")
            if changes.get(name, getattr(current, name)) != getattr(current, name)
        ]
        if changed:
            raise LorestoreError(
                "forbidden",
                f"the {' and '.join(changed)} of a {current.trust} lesson change only by a "
                "reviewer",
                hint="write the same value without tags or TTL to count a sighting; ask a person "
                "to change them",
                details={"fields": changed},
            )

    @staticmethod
    def _check_writable(current: Lesson, now: str, renews: bool) -> None:
        where = f"{current.scope} / {current.key}"
        if current.status == "archived":
            raise LorestoreError(
                "archived",
                f"the lesson at {where} is archived; a write would silently bring it back",
                hint=f"restore it first: lorestore restore {current.scope} {current.key!r}",
                details={"scope": current.scope, "key": current.key},
            )
        if is_expired(current, now) and not renews:
            raise LorestoreError(
                "expired",
                f"the lesson at {where} expired at {current.expires_at}",
                hint="pass ttl_days to renew it or clear_ttl to keep it without expiry",
                details={"expires_at": current.expires_at},
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
        if session and tx.count_session(stored.pk, stored.value_digest, session, now):
            changes["seen_count"] = lesson.seen_count + 1
            if lesson.trust == "candidate" and changes["seen_count"] >= self.corroborate_at:
                changes["trust"] = transition(lesson.trust, "corroborate")
        updated = lesson.model_copy(update=changes)
        tx.save_lesson(stored.pk, updated, stored.value_digest, stored.pending_version)
        version = (lesson.version, stored.value_digest)
        detail: dict[str, Any] = {"seen_count": updated.seen_count, "trust": updated.trust}
        if updated.tags != lesson.tags:  # tags are not versioned: the audit records the change,
            # as digests only (what a hard delete erases must not stay in the append-only log)
            detail["tags"] = {"before": _digest(lesson.tags), "after": _digest(updated.tags)}
        if updated.expires_at != lesson.expires_at:  # a TTL renewed or cleared with a sighting
            detail["expires_at"] = {"before": lesson.expires_at, "after": updated.expires_at}
        self._audit(
            tx,
            actor,
            "write.seen",
            updated,
            before=version,
            after=version,
            detail=detail,
        )
        return WriteResult(result="seen", lesson=updated)

    def _new_version(
        self,
        tx: Transaction,
        actor: Actor,
        stored: StoredLesson,
        digest: str,
        session: str | None,
        changes: dict[str, Any],
        held: list[str],
    ) -> WriteResult:
        lesson = stored.lesson
        trust = transition(lesson.trust, "revise")
        if held:  # a new value near a rejected one waits for a reviewer
            trust = transition(trust, "hold")
        if stored.pending_version is not None:  # a proposal this write overtakes (a disputed
            tx.set_version_state(stored.pk, stored.pending_version, "superseded")  # lesson)
        updated = lesson.model_copy(
            update=changes
            | {
                "version": tx.max_version(stored.pk) + 1,
                "seen_count": 1,
                "trust": trust,
                "review": None,
                "pending_revision": False,
            }
        )
        tx.save_lesson(stored.pk, updated, digest, None)
        tx.insert_version(stored.pk, version_of(updated, digest, actor))
        # seen_count restarts at this version: sessions that wrote the value while an
        # earlier version served it must count again, or A -> B -> A could never corroborate.
        tx.clear_sessions(stored.pk)
        if session:
            tx.add_session(stored.pk, digest, session, changes["updated_at"])
        self._audit(
            tx,
            actor,
            "write.updated",
            updated,
            before=(lesson.version, stored.value_digest),
            after=(updated.version, digest),
            detail={"trust_before": lesson.trust} | ({"held": held} if held else {}),
            at=changes["recorded_at"],
        )
        return WriteResult(result="updated", lesson=updated, held=held)

    def _propose(
        self,
        tx: Transaction,
        actor: Actor,
        stored: StoredLesson,
        digest: str,
        changes: dict[str, Any],
    ) -> WriteResult:
        """A new value for a verified lesson waits for review; the verified one stays served."""
        lesson = stored.lesson
        pending = stored.pending_version
        # A TTL renewed or cleared with the proposal applies now, to the lesson served.
        served = lesson.model_copy(
            update={
                "updated_at": changes["updated_at"],
                "expires_at": changes["expires_at"],
                "pending_revision": True,
            }
        )
        if pending is not None:
            proposal = tx.version(stored.pk, lesson.id, pending)
            if proposal is not None and value_digest(proposal.value) == digest:
                _check_same_window(proposal, changes["valid_from"], changes["valid_to"])
                if served.expires_at != lesson.expires_at:
                    tx.save_lesson(stored.pk, served, stored.value_digest, pending)
                    version = (lesson.version, stored.value_digest)
                    self._audit(  # the expiry changed, and every change leaves an event
                        tx,
                        actor,
                        "write.expiry",
                        served,
                        before=version,
                        after=version,
                        detail={
                            "expires_at": {"before": lesson.expires_at, "after": served.expires_at}
                        },
                    )
                    return WriteResult(result="proposed", lesson=served)
                return WriteResult(result="proposed", lesson=lesson)
            tx.set_version_state(stored.pk, pending, "superseded")
        number = tx.max_version(stored.pk) + 1
        candidate = lesson.model_copy(update=changes | {"version": number})
        tx.insert_version(stored.pk, version_of(candidate, digest, actor, state="proposed"))
        tx.save_lesson(stored.pk, served, stored.value_digest, number)
        self._audit(
            tx,
            actor,
            "write.proposed",
            served,
            before=(lesson.version, stored.value_digest),
            after=(number, digest),
            detail={"superseded": pending} if pending else None,
        )
        return WriteResult(result="proposed", lesson=served)

    @staticmethod
    def _check_if_version(expected: int | None, stored: StoredLesson | None) -> None:
        if expected is None:
            return
        bounded("if_version", expected, 0, 2**31 - 1)  # 0: must not exist; else a version
        actual = stored.lesson.version if stored else 0
        if actual != expected:
            raise LorestoreError(
                "version_conflict",
                f"the lesson is at version {actual}, not {expected}",
                hint="read it again, merge your change, and retry with the current version",
                details={"expected": expected, "actual": actual},
            )
