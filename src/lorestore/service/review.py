"""Adjudication by a person: verify, reject (tombstoning the value), lift a rejection, accept
or reject a proposed revision; and dispute, which anyone who may write can raise.

Verify and reject need the ``review`` permission, which an agent's token never carries and
the MCP server's agent session does not have.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.normalise import value_digest, value_digests
from lorestore.core.patterns import scope_allowed
from lorestore.core.records import Lesson, LessonVersion, Review
from lorestore.core.scope import parse_scope
from lorestore.core.tombstones import refusing_tombstone
from lorestore.core.trust import transition
from lorestore.models import (
    DisputeParams,
    LessonResult,
    RejectParams,
    ReviewItem,
    ReviewQueueParams,
    ReviewQueueResult,
    VerifyParams,
)
from lorestore.service.base import ServiceBase, address, bounded, is_served
from lorestore.service.corrections import check_tombstone
from lorestore.storage.protocol import StoredLesson, Tombstone, Transaction


def _required_reason(reason: str | None, what: str) -> str:
    if reason is None or not reason.strip():
        raise LorestoreError(
            "invalid_argument",
            f"{what} needs a reason",
            hint="say why, e.g. --reason 'the tests moved to SQLite'",
        )
    return reason.strip()


def _pending_conflict(stored: StoredLesson) -> LorestoreError:
    return LorestoreError(
        "conflict",
        f"version {stored.pending_version} of {stored.lesson.scope} / {stored.lesson.key} is a "
        "proposed revision awaiting review",
        hint="decide on it first: verify --revision accepts it, reject --revision refuses it",
        details={"pending_version": stored.pending_version},
    )


class ReviewOperations(ServiceBase):
    def memory_verify(self, actor: Actor, p: VerifyParams) -> LessonResult:
        scope, key = address(p.scope, p.key)
        self._authorise(actor, "review", scope)
        now = self._now()
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._owner_for(tx, actor, scope, write=True)
            tx.lock_corrections(owner, exclusive=False)  # accepting a revision checks tombstones
            stored = self._existing(tx, owner, scope, key)
            review = Review(by=actor.principal, at=now, note=p.note)
            if p.revision:
                return LessonResult(lesson=self._accept_revision(tx, actor, stored, review))
            lesson = stored.lesson
            trust = transition(lesson.trust, "verify")
            updated = lesson.model_copy(
                update={"trust": trust, "review": review, "updated_at": now}
            )
            tx.save_lesson(stored.pk, updated, stored.value_digest, stored.pending_version)
            version = (lesson.version, stored.value_digest)
            self._audit(
                tx,
                actor,
                "verify",
                updated,
                before=version,
                after=version,
                reason=p.note,
                detail={"trust_before": lesson.trust},
            )
        return LessonResult(lesson=updated)

    def _accept_revision(
        self, tx: Transaction, actor: Actor, stored: StoredLesson, review: Review
    ) -> Lesson:
        lesson = stored.lesson
        proposal = self._proposal(tx, stored)
        # The proposed value may have been rejected elsewhere since it was proposed.
        check_tombstone(
            tx, lesson.owner.key, parse_scope(lesson.scope), value_digests(proposal.value)
        )
        tx.set_version_state(stored.pk, proposal.version, "accepted", accepted_at=review.at)
        updated = lesson.model_copy(
            update={
                "value": proposal.value,
                "version": proposal.version,
                "tags": proposal.tags,
                "valid_from": proposal.valid_from,
                "valid_to": proposal.valid_to,
                "source": proposal.source,
                "recorded_at": review.at,
                "updated_at": review.at,
                "trust": transition(lesson.trust, "verify"),
                "review": review,
                "seen_count": 1,
                "pending_revision": False,
            }
        )
        tx.save_lesson(stored.pk, updated, proposal.value_digest, None)
        self._audit(
            tx,
            actor,
            "verify.revision",
            updated,
            before=(lesson.version, stored.value_digest),
            after=(proposal.version, proposal.value_digest),
            reason=review.note,
        )
        return updated

    @staticmethod
    def _proposal(tx: Transaction, stored: StoredLesson) -> LessonVersion:
        if stored.pending_version is None:
            raise LorestoreError(
                "conflict",
                "there is no proposed revision to decide on",
                hint="drop --revision to act on the lesson itself",
            )
        proposal = tx.version(stored.pk, stored.lesson.id, stored.pending_version)
        assert proposal is not None, "pending_version points at a missing version"
        return proposal

    def memory_reject(self, actor: Actor, p: RejectParams) -> LessonResult:
        scope, key = address(p.scope, p.key)
        self._authorise(actor, "review", scope)
        reason = _required_reason(p.reason, "a rejection" if not p.undo else "lifting a rejection")
        now = self._now()
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            owner = self._owner_for(tx, actor, scope, write=True)
            # Writes of the value that started before this rejection commit first (and its
            # copies scan sees them); those after it wait, then meet its tombstone.
            tx.lock_corrections(owner, exclusive=True)
            stored = self._existing(tx, owner, scope, key)
            review = Review(by=actor.principal, at=now, note=reason)
            if p.undo and p.revision:
                updated = self._undo_revisions(tx, actor, stored, review)
            elif p.undo:
                updated = self._undo_reject(tx, actor, stored, review)
            elif p.revision:
                updated = self._reject_revision(tx, actor, stored, review)
            else:
                if stored.pending_version is not None:
                    raise _pending_conflict(stored)
                updated, tomb = self._reject(tx, actor, stored, review)
                assert tomb is not None
                self._reject_copies(tx, actor, stored.lesson, tomb, stored.lesson.value, review)
        return LessonResult(lesson=updated)

    def _tombstone(
        self, tx: Transaction, actor: Actor, lesson: Lesson, value: str, review: Review
    ) -> Tombstone:
        """Remember a rejected value for the lesson's owner and scope (and narrower ones), by
        its digest under today's normalisation (the one every value written is checked by)."""
        tomb = Tombstone(
            id=str(uuid.uuid4()),
            owner=lesson.owner.key,
            scope=lesson.scope,
            value_digest=value_digest(value),
            reason=review.note or "",
            actor=actor.principal,
            created_at=review.at,
            lesson_id=lesson.id,
        )
        tx.insert_tombstone(tomb)
        return tomb

    def _reject(
        self,
        tx: Transaction,
        actor: Actor,
        stored: StoredLesson,
        review: Review,
        action: str = "reject",
    ) -> tuple[Lesson, Tombstone | None]:
        """Reject the lesson; for ``reject`` itself (not a copy) tombstone its value too."""
        lesson = stored.lesson
        updated = lesson.model_copy(
            update={
                "trust": transition(lesson.trust, "reject"),
                "review": review,
                "updated_at": review.at,
            }
        )
        tx.save_lesson(stored.pk, updated, stored.value_digest, None)
        tomb = (
            self._tombstone(tx, actor, lesson, lesson.value, review) if action == "reject" else None
        )
        version = (lesson.version, stored.value_digest)
        self._audit(
            tx,
            actor,
            action,
            updated,
            before=version,
            after=version,
            reason=review.note,
            detail={"trust_before": lesson.trust},
        )
        return updated, tomb

    def _reject_copies(
        self,
        tx: Transaction,
        actor: Actor,
        lesson: Lesson,
        tomb: Tombstone,
        value: str,
        review: Review,
    ) -> None:
        """The lessons already stored that ``tomb`` (just recorded for ``lesson``'s ``value``)
        refuses by the rule every write path uses (``core.tombstones``: the value, under any
        digest a store may hold for it, at the tombstone's scope or a narrower one, under any
        key) are rejected too, so the correction holds for copies written before it."""
        owner = lesson.owner.key
        copies = {
            other.lesson.id: other
            for digest in dict.fromkeys((tomb.value_digest, *value_digests(value)))
            for other in tx.lessons_with_digest(owner, digest)
        }
        for other in copies.values():
            if other.lesson.id == lesson.id or other.lesson.trust == "rejected":
                continue
            other_scope = parse_scope(other.lesson.scope)
            if not scope_allowed(actor.scopes, other_scope):
                continue  # a confined reviewer's decision stops at its token's scopes
            digests = (other.value_digest, *value_digests(other.lesson.value))
            if refusing_tombstone((tomb,), other_scope, digests) is not None:
                self._reject(tx, actor, other, review, action="reject.copy")

    def _reject_revision(
        self, tx: Transaction, actor: Actor, stored: StoredLesson, review: Review
    ) -> Lesson:
        proposal = self._proposal(tx, stored)
        tx.set_version_state(stored.pk, proposal.version, "rejected")
        tomb = self._tombstone(tx, actor, stored.lesson, proposal.value, review)
        self._reject_copies(tx, actor, stored.lesson, tomb, proposal.value, review)
        updated = stored.lesson.model_copy(
            update={"pending_revision": False, "updated_at": review.at}
        )
        tx.save_lesson(stored.pk, updated, stored.value_digest, None)
        self._audit(
            tx,
            actor,
            "reject.revision",
            updated,
            before=(proposal.version, proposal.value_digest),
            after=(updated.version, stored.value_digest),
            reason=review.note,
        )
        return updated

    def _undo_revisions(
        self, tx: Transaction, actor: Actor, stored: StoredLesson, review: Review
    ) -> Lesson:
        """Lift the tombstones this lesson left at its scope for values it no longer serves: a
        rejected revision's, or its own value rejected before a corrected one replaced it.
        Those values may be written again (the versions keep their states in the history);
        another lesson's rejection of the same value stays."""
        lesson = stored.lesson
        served = set(value_digests(lesson.value))
        revisions = [
            v for v in tx.versions(stored.pk, lesson.id) if not served & set(value_digests(v.value))
        ]
        digests = dict.fromkeys(d for v in revisions for d in value_digests(v.value))
        lifted = _lift(tx, actor, lesson, digests, review, lesson_id=lesson.id)
        if not lifted:
            raise LorestoreError(
                "not_found",
                f"no earlier value or revision of {lesson.scope} / {lesson.key} is refused here",
                hint="drop --revision to lift the rejection of the lesson itself",
            )
        updated = lesson.model_copy(update={"updated_at": review.at})
        tx.save_lesson(stored.pk, updated, stored.value_digest, stored.pending_version)
        version = (lesson.version, stored.value_digest)
        self._audit(
            tx,
            actor,
            "reject.undo",
            updated,
            before=version,
            after=version,
            reason=review.note,
            detail={
                "revisions": [v.version for v in revisions],
                "tombstones_lifted": lifted,
            },
        )
        return updated

    def _undo_reject(
        self, tx: Transaction, actor: Actor, stored: StoredLesson, review: Review
    ) -> Lesson:
        lesson = stored.lesson
        if lesson.trust != "rejected":
            raise LorestoreError(
                "conflict",
                f"{lesson.scope} / {lesson.key} is {lesson.trust}, not rejected: there is no "
                "rejection of it to lift",
                hint="to lift the rejection of one of its revisions, add --revision",
                details={"trust": lesson.trust},
            )
        trust = transition(lesson.trust, "undo_reject")
        digests = value_digests(lesson.value)
        lifted = _lift(tx, actor, lesson, digests, review)
        try:  # a rejection made further up still holds the value: lift it there, not here
            check_tombstone(tx, lesson.owner.key, parse_scope(lesson.scope), digests)
        except LorestoreError as still:
            raise LorestoreError(
                "conflict",
                f"this value is still rejected at {still.details['scope']}, which this lesson's "
                f"scope falls under: {still.message}",
                hint=still.hint,
                details=still.details,
            ) from None
        updated = lesson.model_copy(
            update={"trust": trust, "review": review, "updated_at": review.at}
        )
        tx.save_lesson(stored.pk, updated, stored.value_digest, None)
        version = (lesson.version, stored.value_digest)
        self._audit(
            tx,
            actor,
            "reject.undo",
            updated,
            before=version,
            after=version,
            reason=review.note,
            detail={"tombstones_lifted": lifted},
        )
        return updated

    def memory_dispute(self, actor: Actor, p: DisputeParams) -> LessonResult:
        scope, key = address(p.scope, p.key)
        self._authorise(actor, "write", scope)
        reason = _required_reason(p.reason, "a dispute")
        now = self._now()
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            stored = self._existing(tx, self._owner_for(tx, actor, scope, write=True), scope, key)
            lesson = stored.lesson
            if not is_served(lesson, now):
                raise LorestoreError("not_found", f"no active lesson at {scope} / {key}")
            updated = lesson.model_copy(
                update={"trust": transition(lesson.trust, "dispute"), "updated_at": now}
            )
            tx.save_lesson(stored.pk, updated, stored.value_digest, stored.pending_version)
            version = (lesson.version, stored.value_digest)
            self._audit(
                tx,
                actor,
                "dispute",
                updated,
                before=version,
                after=version,
                reason=reason,
                detail={"trust_before": lesson.trust},
            )
        return LessonResult(lesson=updated)

    def memory_review_queue(self, actor: Actor, p: ReviewQueueParams) -> ReviewQueueResult:
        scope = parse_scope(p.scope).text if p.scope else None
        self._authorise(actor, "read", *([scope] if scope else []))
        limit = bounded("limit", p.limit, 1, 200)
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            owners = (
                [self._owner_for(tx, actor, scope, write=False)]
                if scope
                else self._readable_owners(tx, actor)
            )
            rows = tx.review_queue(owners, scope, now=self._now(), limit=limit)
            # The proposed revisions in one read, not one per item (a round trip each on
            # PostgreSQL): every version of those lessons, of which the pending one is shown.
            pending = [stored.pk for _, stored in rows if stored.pending_version is not None]
            versions = tx.versions_of(pending) if pending else {}
        items = []
        for reason, stored in rows:
            proposed = next(
                (v for v in versions.get(stored.pk, []) if v.version == stored.pending_version),
                None,
            )
            items.append(
                ReviewItem.model_validate(
                    {"reason": reason, "lesson": stored.lesson, "proposed": proposed}
                )
            )
        return ReviewQueueResult(items=items)


def _lift(
    tx: Transaction,
    actor: Actor,
    lesson: Lesson,
    digests: Iterable[str],
    review: Review,
    lesson_id: str | None = None,
) -> int:
    """Lift the live tombstones of these value digests at the lesson's scope (only those
    ``lesson_id`` left, when given); how many were lifted."""
    return sum(
        tx.lift_tombstones(
            lesson.owner.key,
            lesson.scope,
            digest,
            lifted_by=actor.principal,
            at=review.at,
            reason=review.note or "",
            lesson_id=lesson_id,
        )
        for digest in digests
    )
