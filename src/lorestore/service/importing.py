"""Applying imported records to the store, a batch per transaction: for each lesson the
tombstone check first (the value's digest at its scope or a broader one), then an insert
that keeps ids, versions, trust and times and never overwrites; one audit event per record
that lands. A dry run does the same work and rolls the transaction back."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.audit import GENESIS, chain_hash
from lorestore.core.errors import LorestoreError
from lorestore.core.records import Lesson, LessonVersion
from lorestore.portable import lorekit
from lorestore.portable.importer import Applied, Item
from lorestore.portable.models import Format
from lorestore.portable.records import (
    ParsedForeign,
    ParsedLesson,
    lesson_line,
    owner_object,
    policy_line,
    scope_of,
    tombstone_line,
)
from lorestore.service.base import ServiceBase
from lorestore.service.writes import check_tombstone, rejected_value
from lorestore.storage.protocol import (
    ForeignRecord,
    PolicyRecord,
    StoredLesson,
    Tombstone,
    Transaction,
)

# LoreKit lessons carry no id; theirs is derived from the owner and address, so that the
# same tree imported twice finds what the first import added.
LOREKIT_IDS = uuid.UUID("6f1c2d4e-8a57-5b0e-9c3f-2e7d41a9b8c6")
_EVENT_FIELDS = (
    "scope",
    "key",
    "lesson_id",
    "before_version",
    "after_version",
    "before_digest",
    "after_digest",
    "reason",
)


@dataclass
class ImportContext:
    """What one import carries from batch to batch."""

    actor: Actor
    format: Format
    dry_run: bool
    # A dry run rolls every batch back; the tombstones it would have added still refuse the
    # lessons after them in the same file.
    dry_tombstones: list[Tombstone] = field(default_factory=list)


class _DryRunDoneError(Exception):
    """Raised to roll a dry run's transaction back, carrying what it found."""

    def __init__(self, results: list[Applied]) -> None:
        self.results = results


class _Batch:
    """One transaction: owners resolved once per scope, audit chain heads kept in hand."""

    def __init__(self, tx: Transaction, service: ImportOperations, actor: Actor) -> None:
        self.tx = tx
        self._service = service
        self._actor = actor
        self._owners: dict[str, str | LorestoreError] = {}
        self._heads: dict[str, str] = {}

    def owner(self, scope: str) -> str:
        if scope not in self._owners:
            try:
                self._owners[scope] = self._service._owner_for(
                    self.tx, self._actor, scope, write=True
                )
            except LorestoreError as exc:
                self._owners[scope] = exc
        found = self._owners[scope]
        if isinstance(found, LorestoreError):
            raise found
        return found

    def audit(self, event: dict[str, Any]) -> None:
        owner = event["owner"]
        prev = self._heads.get(owner) or self.tx.last_audit_hash(owner) or GENESIS
        event["prev_hash"] = prev
        event["hash"] = chain_hash(prev, event)
        self.tx.append_audit(event)
        self._heads[owner] = event["hash"]


def _refused(exc: LorestoreError) -> Applied:
    return Applied("refused", exc.code, exc.message)


def _differs(what: str) -> Applied:
    return Applied(
        "differs", "target_differs", f"the store holds this {what} in another state; kept it"
    )


class ImportOperations(ServiceBase):
    def _import_batch(self, context: ImportContext, items: Sequence[Item]) -> list[Applied]:
        try:
            with self.store.transaction(write=True, actor=context.actor.principal) as tx:
                batch = _Batch(tx, self, context.actor)
                results = [self._import_item(batch, context, item) for item in items]
                if context.dry_run:
                    raise _DryRunDoneError(results)
        except _DryRunDoneError as rolled:
            results = rolled.results
        return results

    def _import_item(self, batch: _Batch, context: ImportContext, item: Item) -> Applied:
        value = item.value
        try:
            if isinstance(value, ParsedLesson):
                return self._import_lesson(batch, context, item, value)
            if isinstance(value, Tombstone):
                return self._import_tombstone(batch, context, item, value)
            if isinstance(value, PolicyRecord):
                return self._import_policy(batch, context, item, value)
            return self._import_foreign(batch, context, item, value)
        except LorestoreError as exc:
            return _refused(exc)

    def _event(
        self, context: ImportContext, item: Item, owner: str, action: str, **fields: Any
    ) -> dict[str, Any]:
        """The audit event of one imported record: where it came from, never its text."""
        detail: dict[str, Any] = {"format": context.format}
        if item.incoming.line is not None:
            detail["line"] = item.incoming.line
        if item.incoming.path is not None:
            detail["path"] = item.incoming.path
        detail |= fields.pop("detail", {})
        if context.actor.session:
            detail["session"] = context.actor.session
        event: dict[str, Any] = dict.fromkeys(_EVENT_FIELDS)
        event |= {"owner": owner, "at": self._now(), "actor": context.actor.principal}
        return event | {"action": action, "detail": detail} | fields

    # --- lessons ----------------------------------------------------------------------------

    def _import_lesson(
        self, batch: _Batch, context: ImportContext, item: Item, parsed: ParsedLesson
    ) -> Applied:
        actor, lesson = context.actor, parsed.lesson
        if lesson.trust != "candidate" and not actor.can("review"):
            raise LorestoreError(
                "forbidden",
                f"importing a {lesson.trust} lesson keeps its trust, which is a reviewer's call",
                hint="import with the review permission (a person's CLI or a review token)",
            )
        scope = scope_of(lesson.scope)
        self._authorise(actor, "write", scope.text)
        owner = batch.owner(scope.text)
        if lesson.trust != "rejected":
            self._check_tombstones(batch.tx, context, owner, lesson.scope, parsed)
        ident = _lorekit_id(owner, lesson) if parsed.derive_id else lesson.id
        lesson = lesson.model_copy(update={"owner": owner_object(owner), "id": ident})
        pk = batch.tx.import_lesson(lesson, parsed.digest, parsed.pending_version)
        if pk is None:
            return self._lesson_held(batch.tx, context, owner, lesson, parsed)
        versions = parsed.versions or (self._served_version(lesson, parsed.digest, actor),)
        for version in versions:
            batch.tx.insert_version(pk, version.model_copy(update={"lesson_id": lesson.id}))
        batch.audit(
            self._event(
                context,
                item,
                owner=owner,
                action="import.lesson",
                scope=lesson.scope,
                key=lesson.key,
                lesson_id=lesson.id,
                after_version=lesson.version,
                after_digest=parsed.digest,
                detail={"trust": lesson.trust, "status": lesson.status, "versions": len(versions)},
            )
        )
        if parsed.dropped_proposal:
            return Applied(
                "added",
                "proposal_not_in_file",
                "pending_revision is set but the "
                "record has no versions: imported without the proposed revision",
            )
        return Applied("added")

    def _check_tombstones(
        self, tx: Transaction, context: ImportContext, owner: str, scope: str, parsed: ParsedLesson
    ) -> None:
        parsed_scope = scope_of(scope)
        digests = [parsed.digest]
        proposal = next((v for v in parsed.versions or () if v.state == "proposed"), None)
        if proposal is not None:
            digests.append(proposal.value_digest)
        ladder = {parsed_scope.text, *(s.text for s in parsed_scope.broader())}
        for digest in digests:
            check_tombstone(tx, owner, parsed_scope, digest)
            for tomb in context.dry_tombstones:
                if (tomb.owner, tomb.value_digest) == (owner, digest) and tomb.scope in ladder:
                    raise rejected_value(tomb)

    @staticmethod
    def _served_version(lesson: Lesson, digest: str, actor: Actor) -> LessonVersion:
        """A record without history lands with one version: the one it serves."""
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

    def _lesson_held(
        self,
        tx: Transaction,
        context: ImportContext,
        owner: str,
        lesson: Lesson,
        parsed: ParsedLesson,
    ) -> Applied:
        """The insert found the id or the address taken: the same lesson, another state of
        it, another lesson at the address, or an id another tenant uses."""
        existing = tx.lesson_by_id(owner, lesson.id)
        if existing is None:
            other = tx.lesson_at(owner, lesson.scope, lesson.key)
            if other is None:
                return Applied(
                    "refused",
                    "id_taken",
                    f"lesson id {lesson.id} is already used "
                    "in this store by a lesson you cannot see",
                )
            if not parsed.derive_id:
                return Applied(
                    "refused",
                    "address_taken",
                    f"{lesson.scope} / {lesson.key} is held by another lesson ({other.lesson.id})",
                )
            existing = other
        incoming = lesson_line(lesson, None if parsed.versions is None else list(parsed.versions))
        if _same(tx, context.format, existing, incoming, parsed.versions is not None):
            return Applied("unchanged")
        return _differs("lesson")

    # --- tombstones, policies, unknown records ----------------------------------------------

    def _import_tombstone(
        self, batch: _Batch, context: ImportContext, item: Item, tomb: Tombstone
    ) -> Applied:
        actor = context.actor
        if not actor.can("review"):
            raise LorestoreError(
                "forbidden",
                "importing a tombstone rejects a value, which is a reviewer's call",
                hint="import with the review permission",
            )
        self._authorise(actor, "review", tomb.scope)
        tomb = dataclasses.replace(tomb, owner=batch.owner(tomb.scope))
        if not batch.tx.import_tombstone(tomb):
            held = batch.tx.tombstone_by_id(tomb.owner, tomb.id)
            if held is None:
                return Applied("refused", "id_taken", f"tombstone id {tomb.id} is already used")
            same = tombstone_line(held) == tombstone_line(tomb)
            return Applied("unchanged") if same else _differs("tombstone")
        if context.dry_run and tomb.lifted_at is None:
            context.dry_tombstones.append(tomb)
        batch.audit(
            self._event(
                context,
                item,
                owner=tomb.owner,
                action="import.tombstone",
                scope=tomb.scope,
                lesson_id=tomb.lesson_id,
                after_digest=tomb.value_digest,
                reason=tomb.reason,
                detail={"tombstone": tomb.id, "lifted": tomb.lifted_at is not None},
            )
        )
        return Applied("added")

    def _import_policy(
        self, batch: _Batch, context: ImportContext, item: Item, record: PolicyRecord
    ) -> Applied:
        actor, scope = context.actor, record.policy.scope
        self._require(actor, "review")
        if scope == "*":
            self._authorise(actor, "review")
            writable = self._readable_owners(batch.tx, actor)
            owner = record.owner if record.owner in writable else actor.owner
            if owner != actor.owner:
                self._owner_for_org(batch.tx, actor, owner)
        else:
            self._authorise(actor, "review", scope)
            owner = batch.owner(scope)
        record = dataclasses.replace(record, owner=owner)
        if not batch.tx.import_policy(record):
            held = next(p for p in batch.tx.export_policies([owner]) if p.policy.scope == scope)
            same = policy_line(held) == policy_line(record)
            return Applied("unchanged") if same else _differs("scope policy")
        policy = record.policy
        batch.audit(
            self._event(
                context,
                item,
                owner,
                "import.policy",
                scope=None if scope == "*" else scope,
                detail={
                    "scope": scope,
                    "revision_policy": policy.revision_policy,
                    "require_review": policy.require_review,
                },
            )
        )
        return Applied("added")

    @staticmethod
    def _owner_for_org(tx: Transaction, actor: Actor, org: str) -> None:
        """An owner default of an org may be set by its owners, admins and members only."""
        roles = {m.org: m.role for m in tx.memberships(actor.principal)}
        if roles.get(org) not in ("owner", "admin", "member"):
            raise LorestoreError("forbidden", f"you may not set policies of {org}")

    def _import_foreign(
        self, batch: _Batch, context: ImportContext, item: Item, record: ParsedForeign
    ) -> Applied:
        actor = context.actor
        self._authorise(actor, "write", *([record.scope] if record.scope else []))
        owner = batch.owner(record.scope) if record.scope else actor.owner
        kept = ForeignRecord(
            owner=owner,
            digest=record.digest,
            type=record.type,
            scope=record.scope,
            record=record.record,
            imported_at=self._now(),
            imported_by=actor.principal,
        )
        if not batch.tx.import_foreign(kept):
            return Applied("unchanged")
        batch.audit(
            self._event(
                context,
                item,
                owner,
                "import.unknown",
                scope=record.scope,
                detail={"type": record.type, "digest": record.digest},
            )
        )
        return Applied("added")


def _lorekit_id(owner: str, lesson: Lesson) -> str:
    return str(uuid.uuid5(LOREKIT_IDS, f"{owner}\x1f{lesson.scope}\x1f{lesson.key}"))


def _same(
    tx: Transaction,
    format: Format,
    existing: StoredLesson,
    incoming: dict[str, Any],
    with_history: bool,
) -> bool:
    versions = tx.versions(existing.pk, existing.lesson.id) if with_history else None
    held = lesson_line(existing.lesson, versions)
    if format == "lorekit":
        return lorekit.file_text(held) == lorekit.file_text(incoming)
    return held == incoming
