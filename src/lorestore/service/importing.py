"""Applying imported records to the store, a batch per transaction: for each lesson the
tombstone check first (the value's digest at its scope or a broader one), then an insert
that keeps ids, versions, trust and times and never overwrites; one audit event per record
that lands. A dry run does the same work and rolls the transaction back.

Lessons, the bulk of any file, go through the store a run at a time: the tombstones of a
run's values are read in one query, its lessons inserted in one statement, their versions
and audit events in one each, and the lessons the store already holds are read back in one
query to tell ``unchanged`` from ``differs``. Every other record goes one at a time, in file
order between the runs."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.audit import AuditEntry
from lorestore.core.errors import LorestoreError
from lorestore.core.owner import Owner
from lorestore.core.records import Lesson, LessonVersion
from lorestore.core.tombstones import refusing_tombstone
from lorestore.core.validation import validate_new_key
from lorestore.portable.importer import Applied, Item
from lorestore.portable.models import Format
from lorestore.portable.records import (
    ParsedForeign,
    ParsedLesson,
    policy_line,
    project_line,
    scope_of,
    tombstone_line,
)
from lorestore.service.audit import AuditChain
from lorestore.service.base import ServiceBase
from lorestore.service.corrections import rejected_value
from lorestore.service.import_checks import (
    as_importer,
    elsewhere_id,
    lorekit_id,
    record_digests,
    same_record,
    within_cap,
)
from lorestore.storage.protocol import (
    ForeignRecord,
    ImportedLesson,
    PolicyRecord,
    ProjectRepo,
    StoredLesson,
    Tombstone,
    Transaction,
)


@dataclass
class ImportContext:
    """What one import carries from batch to batch."""

    actor: Actor
    format: Format
    dry_run: bool
    # A dry run rolls every batch back; the tombstones it would have added still refuse the
    # lessons after them in the same file, and the active lessons it would have added count
    # against their owners' caps in the batches after them.
    dry_tombstones: list[Tombstone] = field(default_factory=list)
    dry_active: Counter[str] = field(default_factory=Counter)


class _DryRunDoneError(Exception):
    """Raised to roll a dry run's transaction back, carrying what it found."""

    def __init__(self, results: list[Applied]) -> None:
        self.results = results


class _Batch:
    """One transaction: owners resolved once per scope, audit chain heads kept in hand, and
    one clock reading for every event it writes (they commit together)."""

    def __init__(self, tx: Transaction, service: ImportOperations, actor: Actor) -> None:
        self.tx = tx
        self.now = service._now()
        self._service = service
        self._actor = actor
        self._owners: dict[str, str | LorestoreError] = {}
        self._chain = AuditChain(tx)
        self.added_active: Counter[str] = Counter()  # per owner, by this transaction
        self._secret: str | None = None

    def secret(self) -> str:
        """The store's secret that ids are derived with (read once per transaction)."""
        if self._secret is None:
            self._secret = self.tx.store_setting("id_secret")
            if self._secret is None:
                raise LorestoreError(
                    "storage_error",
                    "this store has no id secret (store_settings)",
                    hint="run the store's migrations: any lorestore command on it does",
                )
        return self._secret

    def owner(self, scope: str) -> str:
        if scope not in self._owners:
            try:
                owner = self._service._owner_for(self.tx, self._actor, scope, write=True)
                if owner not in self._owners.values():  # once per owner, before its lessons
                    self.tx.lock_corrections(owner, exclusive=False)
                self._owners[scope] = owner
            except LorestoreError as exc:
                self._owners[scope] = exc
        found = self._owners[scope]
        if isinstance(found, LorestoreError):
            raise found
        return found

    def audit(self, *entries: AuditEntry) -> None:
        """Chain the events onto their owners' heads, in order, and append them."""
        self._chain.append_all(list(entries))


@dataclass(frozen=True, slots=True)
class _Admitted:
    """A lesson that may be written where it goes: its place in the batch, the record as
    read (``record``: its owner a placeholder, its id the file's), and where it would land:
    ``owner`` and ``id`` (derived for LoreKit), and the digests the tombstone check looks
    up. The record is not copied with them:
    ``landing()`` is the lesson as it would land, for the few that need it whole."""

    index: int
    item: Item
    parsed: ParsedLesson
    owner: str
    id: str
    # Every digest a store may hold for the served value and for a pending proposal's: the
    # tombstone check covers both.
    digests: tuple[str, ...]

    @property
    def record(self) -> Lesson:
        return self.parsed.lesson

    def landing(self) -> Lesson:
        return self.record.model_copy(update={"owner": Owner.parse(self.owner), "id": self.id})

    def imported(self) -> ImportedLesson:
        parsed = self.parsed
        return ImportedLesson(
            parsed.lesson, self.owner, self.id, parsed.digest, parsed.pending_version
        )


def _refused(exc: LorestoreError) -> Applied:
    return Applied("refused", exc.code, exc.message)


def _differs(what: str) -> Applied:
    return Applied(
        "differs", "target_differs", f"the store holds this {what} in another state; kept it"
    )


class ImportOperations(ServiceBase):
    def _import_batch(
        self,
        context: ImportContext,
        items: Sequence[Item],
        meanwhile: Callable[[], None] | None = None,
    ) -> list[Applied]:
        principal = context.actor.principal
        try:
            with self.store.transaction(write=True, actor=principal, meanwhile=meanwhile) as tx:
                batch = _Batch(tx, self, context.actor)
                results = self._import_all(batch, context, items)
                if context.dry_run:
                    raise _DryRunDoneError(results)
        except _DryRunDoneError as rolled:
            results = rolled.results
            context.dry_active.update(batch.added_active)
        return results

    def _import_all(
        self, batch: _Batch, context: ImportContext, items: Sequence[Item]
    ) -> list[Applied]:
        """Each run of lessons together, every other record on its own, in file order."""
        results: list[Applied | None] = [None] * len(items)
        run: list[tuple[int, Item]] = []
        for index, item in enumerate(items):
            if item.kind == "lesson":
                run.append((index, item))
                continue
            self._import_lessons(batch, context, run, results)
            run = []
            try:
                results[index] = self._import_record(batch, context, item)
            except LorestoreError as exc:
                results[index] = _refused(exc)
        self._import_lessons(batch, context, run, results)
        assert all(r is not None for r in results)
        return [r for r in results if r is not None]

    def _import_record(self, batch: _Batch, context: ImportContext, item: Item) -> Applied:
        value = item.value
        if isinstance(value, Tombstone):
            return self._import_tombstone(batch, context, item, value)
        if isinstance(value, PolicyRecord):
            return self._import_policy(batch, context, item, value)
        if isinstance(value, ProjectRepo):
            return self._import_project(batch, context, item, value)
        assert isinstance(value, ParsedForeign)
        return self._import_foreign(batch, context, item, value)

    def _event(
        self,
        batch: _Batch,
        context: ImportContext,
        item: Item,
        owner: str,
        action: str,
        **fields: Any,
    ) -> AuditEntry:
        """The audit event of one imported record: where it came from, never its text."""
        detail: dict[str, Any] = {"format": context.format}
        if item.incoming.line is not None:
            detail["line"] = item.incoming.line
        if item.incoming.path is not None:
            detail["path"] = item.incoming.path
        detail |= fields.pop("detail", {})
        if context.actor.session:
            detail["session"] = context.actor.session
        return AuditEntry(
            owner=owner,
            at=batch.now,
            actor=context.actor.principal,
            action=action,
            detail=detail,
            **fields,
        )

    # --- lessons ----------------------------------------------------------------------------

    def _import_lessons(
        self,
        batch: _Batch,
        context: ImportContext,
        run: list[tuple[int, Item]],
        results: list[Applied | None],
    ) -> None:
        """A run of lessons: admitted one by one, checked against tombstones and inserted
        together; a lesson whose id came earlier in the run waits for the next round, so
        that it meets the earlier one as a sequential import would."""
        if not run:
            return
        admitted: list[_Admitted] = []
        ids: set[str] = set()
        again: list[tuple[int, Item]] = []
        for index, item in run:
            try:
                entry = self._admit(batch, context, index, item)
            except LorestoreError as exc:
                results[index] = _refused(exc)
                continue
            if entry.id in ids:
                again.append((index, item))
                continue
            ids.add(entry.id)
            admitted.append(entry)
        clear = self._untombstoned(batch, context, admitted, results)
        # What the store holds under these ids is read once: a file imported again inserts
        # nothing, and its lessons are compared with these.
        stored: dict[tuple[str, str], StoredLesson] = {}
        for owner in {e.owner for e in clear}:
            ids_of_owner = [e.id for e in clear if e.owner == owner]
            for found in batch.tx.lessons_by_ids(owner, ids_of_owner):
                stored[(owner, found.lesson.id)] = found
        new = [e for e in clear if (e.owner, e.id) not in stored]
        held = [e for e in clear if (e.owner, e.id) in stored]
        held += self._insert(batch, context, new, results)
        elsewhere = self._held(batch, context, held, stored, results)
        # Under the ids derived for them; one a concurrent import of the same file inserted
        # first is compared, as above.
        taken = self._insert(batch, context, elsewhere, results)
        for entry in self._held(batch, context, taken, stored, results):
            results[entry.index] = Applied(
                "refused",
                "conflict",
                f"{entry.record.scope} / {entry.record.key} was taken by a concurrent write",
            )
        if again:
            self._import_lessons(batch, context, again, results)

    def _insert(
        self,
        batch: _Batch,
        context: ImportContext,
        new: list[_Admitted],
        results: list[Applied | None],
    ) -> list[_Admitted]:
        """Insert the lessons that fit under their owners' caps, with their versions and
        audit events; returns those whose id or address turned out to be taken. A new key
        holds no invisible character, as a write's may not (``validate_new_key``)."""
        visible = []
        for entry in new:
            try:
                validate_new_key(entry.record.key)
            except LorestoreError as error:
                results[entry.index] = Applied("refused", error.code, error.message)
                continue
            visible.append(entry)
        fresh = within_cap(batch.tx, visible, results, context.dry_active)
        pks = batch.tx.import_lessons([e.imported() for e in fresh])
        landed = [(e, pk) for e, pk in zip(fresh, pks, strict=True) if pk is not None]
        batch.added_active.update(e.owner for e, _ in landed if e.record.status == "active")
        self._land(batch, context, landed)
        for entry, _ in landed:
            results[entry.index] = _added(entry)
        return [e for e, pk in zip(fresh, pks, strict=True) if pk is None]

    def _admit(self, batch: _Batch, context: ImportContext, index: int, item: Item) -> _Admitted:
        """Permission, owner and id: what decides where a lesson would land, if anywhere."""
        parsed = item.value
        assert isinstance(parsed, ParsedLesson)
        actor, lesson = context.actor, parsed.lesson
        if lesson.trust != "candidate" and not actor.can("review"):
            raise LorestoreError(
                "forbidden",
                f"importing a {lesson.trust} lesson keeps its trust, which is a reviewer's call",
                hint="import with the review permission (a person's CLI or a review token)",
            )
        if lesson.review is not None and not actor.can("review"):
            raise LorestoreError(
                "forbidden",
                "importing a lesson with a review keeps a person's adjudication "
                f"({lesson.review.by}), which is a reviewer's to carry over",
                hint="import with the review permission, or drop the record's review",
            )
        scope = scope_of(lesson.scope)
        self._authorise(actor, "write", scope.text)
        owner = batch.owner(scope.text)
        ident = lorekit_id(batch.secret(), owner, lesson) if parsed.derive_id else lesson.id
        landing = as_importer(actor, parsed)
        return _Admitted(index, item, landing, owner, ident, record_digests(parsed))

    @staticmethod
    def _untombstoned(
        batch: _Batch,
        context: ImportContext,
        admitted: list[_Admitted],
        results: list[Applied | None],
    ) -> list[_Admitted]:
        """Tombstones first: refuse each lesson whose value (or pending proposal) a live
        tombstone rejects at its scope or a broader one, by the rule every write path uses
        (``core.tombstones``), counting those added earlier in a dry run too. A lesson that
        is itself ``rejected`` records a correction and passes."""
        wanted: dict[str, set[str]] = defaultdict(set)
        for entry in admitted:
            if entry.record.trust != "rejected":
                wanted[entry.owner].update(entry.digests)
        live: dict[tuple[str, str], list[Tombstone]] = defaultdict(list)
        for owner, digests in wanted.items():
            for tomb in batch.tx.live_tombstones(owner, sorted(digests)):
                live[(owner, tomb.value_digest)].append(tomb)
        for tomb in context.dry_tombstones:
            live[(tomb.owner, tomb.value_digest)].append(tomb)  # after the stored ones
        clear: list[_Admitted] = []
        for entry in admitted:
            found = (t for d in entry.digests for t in live.get((entry.owner, d), ()))
            rejecting = refusing_tombstone(
                found, entry.record.scope, entry.digests, trust=entry.record.trust
            )
            if rejecting is None:
                clear.append(entry)
            else:
                results[entry.index] = _refused(rejected_value(batch.tx, rejecting))
        return clear

    def _land(
        self, batch: _Batch, context: ImportContext, landed: list[tuple[_Admitted, int]]
    ) -> None:
        """The versions and the audit event of each lesson that was inserted."""
        versions: list[tuple[int, LessonVersion]] = []
        served: list[int] = []  # lessons without history: their one version is the served one
        events: list[AuditEntry] = []
        for entry, pk in landed:
            lesson, parsed = entry.record, entry.parsed
            if parsed.versions is None:
                served.append(pk)
            else:
                versions.extend((pk, version) for version in parsed.versions)
            events.append(
                self._event(
                    batch,
                    context,
                    entry.item,
                    owner=entry.owner,
                    action="import.lesson",
                    scope=lesson.scope,
                    key=lesson.key,
                    lesson_id=entry.id,
                    after_version=lesson.version,
                    after_digest=parsed.digest,
                    detail={
                        "trust": lesson.trust,
                        "status": lesson.status,
                        "versions": len(parsed.versions or (None,)),
                    },
                )
            )
        batch.tx.insert_served_versions(served, context.actor.principal)
        batch.tx.insert_versions(versions)
        actor = context.actor
        if actor.session and not actor.can("review"):
            # The one session a non-reviewer's lesson counts (as_importer) is the importer's:
            # a later sighting from it is not another.
            for entry, pk in landed:
                batch.tx.add_session(pk, entry.parsed.digest, actor.session, batch.now)
        batch.audit(*events)

    @staticmethod
    def _held(
        batch: _Batch,
        context: ImportContext,
        held: list[_Admitted],
        stored: dict[tuple[str, str], StoredLesson],
        results: list[Applied | None],
    ) -> list[_Admitted]:
        """Lessons whose id or address the store holds (``stored``: what it holds under
        their ids): the same lesson, another state of it, or another lesson at the address.
        Returned, to be inserted, are those whose id a tenant the importer cannot see holds:
        each under an id derived from it with the store's secret (``elsewhere_id``), so that
        an import says of such an id what it says of any other (no ``id_taken`` telling
        that the id, or a LoreKit lesson's address, exists elsewhere), and the same file
        imported again finds the lesson there."""
        compared: list[tuple[_Admitted, StoredLesson]] = []
        # An insert that found its id taken though the read before it did not: a concurrent
        # import committed the same lesson in between (PostgreSQL's read committed sees it
        # now). Read those ids again, so that the lesson is compared, not refused.
        late: dict[str, list[str]] = defaultdict(list)
        for entry in held:
            if (entry.owner, entry.id) not in stored:
                late[entry.owner].append(entry.id)
        for owner, ids in late.items():
            for found in batch.tx.lessons_by_ids(owner, ids):
                stored[(owner, found.lesson.id)] = found
        elsewhere: list[_Admitted] = []
        for entry in held:
            lesson = entry.record
            existing = stored.get((entry.owner, entry.id))
            if existing is None:
                existing = batch.tx.lesson_at(entry.owner, lesson.scope, lesson.key)
                moved = dataclasses.replace(
                    entry, id=elsewhere_id(batch.secret(), entry.owner, entry.id)
                )
                if existing is None:
                    elsewhere.append(moved)
                    continue
                if existing.lesson.id == moved.id:  # landed so by an earlier import
                    entry = moved
                elif not entry.parsed.derive_id:
                    results[entry.index] = Applied(
                        "refused",
                        "address_taken",
                        f"{lesson.scope} / {lesson.key} is held by another lesson "
                        f"({existing.lesson.id})",
                    )
                    continue
            compared.append((entry, existing))
        pks = [s.pk for e, s in compared if e.parsed.versions is not None]
        histories = batch.tx.versions_of(pks) if pks else {}
        for entry, existing in compared:
            history = None if entry.parsed.versions is None else histories.get(existing.pk, [])
            same = same_record(
                context.format, existing.lesson, history, entry.landing(), entry.parsed
            )
            results[entry.index] = Applied("unchanged") if same else _differs("lesson")
        return elsewhere

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
        landed = batch.tx.import_tombstone(tomb)
        if not landed and batch.tx.tombstone_by_id(tomb.owner, tomb.id) is None:
            # Its id is another tenant's: it lands as a lesson would (see _held), under an id
            # derived from it, and nothing says the id exists elsewhere.
            moved = elsewhere_id(batch.secret(), tomb.owner, tomb.id)
            tomb = dataclasses.replace(tomb, id=moved)
            landed = batch.tx.import_tombstone(tomb)
        if not landed:
            held = batch.tx.tombstone_by_id(tomb.owner, tomb.id)
            if held is None:
                return Applied("refused", "conflict", f"tombstone id {tomb.id} is taken")
            same = tombstone_line(held) == tombstone_line(tomb)
            return Applied("unchanged") if same else _differs("tombstone")
        if context.dry_run and tomb.lifted_at is None:
            context.dry_tombstones.append(tomb)
        batch.audit(
            self._event(
                batch,
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
                self._within_orgs(actor, owner)
                self._owner_for_org(batch.tx, actor, owner)
            else:
                self._unconfined(actor, "the owner-wide default policy (*)")
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
                batch,
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

    def _import_project(
        self, batch: _Batch, context: ImportContext, item: Item, record: ProjectRepo
    ) -> Applied:
        """A repository of a project, declared as project_add declares it: a reviewer's act,
        owned by whom the project's scope routes to."""
        scope = f"project::{record.project}"
        self._authorise(context.actor, "review", scope)
        record = dataclasses.replace(record, owner=batch.owner(scope))
        if not batch.tx.import_project_repo(record):
            held = next(
                r
                for r in batch.tx.project_repos([record.owner])
                if (r.project, r.repo) == (record.project, record.repo)
            )
            same = project_line(held) == project_line(record)
            return Applied("unchanged") if same else _differs("project")
        detail = {"project": record.project, "repos": [record.repo]}
        batch.audit(
            self._event(batch, context, item, record.owner, "import.project", detail=detail)
        )
        return Applied("added")

    def _owner_for_org(self, tx: Transaction, actor: Actor, org: str) -> None:
        """An owner default of an org may be set by its owners, admins and members only."""
        if self._role(tx, actor, org) not in ("owner", "admin", "member"):
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
            imported_at=batch.now,
            imported_by=actor.principal,
        )
        if not batch.tx.import_foreign(kept):
            return Applied("unchanged")
        batch.audit(
            self._event(
                batch,
                context,
                item,
                owner,
                "import.unknown",
                scope=record.scope,
                detail={"type": record.type, "digest": record.digest},
            )
        )
        return Applied("added")


def _added(entry: _Admitted) -> Applied:
    if entry.parsed.dropped_proposal:
        return Applied(
            "added",
            "proposal_not_in_file",
            "pending_revision is set but the "
            "record has no versions: imported without the proposed revision",
        )
    return Applied("added")
