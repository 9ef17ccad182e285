"""What an import may keep of a record, decided before it lands: the owner's cap on active
lessons (checked alike in an import and its dry run), the recurrence and authorship a
non-reviewer's file claims (reduced to the importer's, the claims kept as provenance), and
the ids of LoreKit lessons (derived with the store's own secret, so no one else can); and how
a record compares with what the store holds."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from lorestore.auth.actor import Actor
from lorestore.core.normalise import value_digests
from lorestore.core.records import Lesson, LessonVersion
from lorestore.portable import lorekit
from lorestore.portable.importer import Applied
from lorestore.portable.models import Format
from lorestore.portable.records import ParsedLesson, lesson_line
from lorestore.storage.protocol import Transaction

# Where a non-reviewer's file's claims are kept: an unknown field of the lesson to every
# reader of the format, so an export writes it back and another import keeps it.
CLAIMED = "claimed"


class Candidate(Protocol):
    """A lesson the import would insert: its place in the batch, owner and record."""

    @property
    def index(self) -> int: ...

    @property
    def owner(self) -> str: ...

    @property
    def parsed(self) -> ParsedLesson: ...


T = TypeVar("T", bound=Candidate)


def within_cap(
    tx: Transaction,
    new: Sequence[T],
    results: list[Applied | None],
    dry_active: Counter[str],
) -> list[T]:
    """The new lessons that fit under their owners' caps on active lessons, in file order;
    each of the others is refused (``cap_exceeded``). A real import and a dry run decide here
    alike: the count is the store's (this transaction's, the batches committed before it
    included) plus, in a dry run, ``dry_active``: the active lessons its rolled-back batches
    would have added. So the dry run refuses exactly what the import refuses. The store's own
    check (a trigger) still guards every insert, against writers racing the import."""
    room: dict[str, tuple[int, int]] = {}  # owner -> (lessons that still fit, cap)
    uncapped: set[str] = set()  # owners without a cap on active lessons (the personal store)
    kept: list[T] = []
    for entry in new:
        owner = entry.owner
        if entry.parsed.lesson.status != "active":
            kept.append(entry)
            continue
        if owner not in room and owner not in uncapped:
            caps = tx.owner_caps(owner)
            cap = caps.active_cap
            if cap is None:
                uncapped.add(owner)
            else:
                room[owner] = (cap - caps.active_lessons - dry_active[owner], cap)
        if owner in uncapped:
            kept.append(entry)
            continue
        left, cap = room[owner]
        if left > 0:
            room[owner] = (left - 1, cap)
            kept.append(entry)
            continue
        results[entry.index] = Applied(
            "refused", "cap_exceeded", f"{owner} has reached its limit of {cap} active lessons"
        )
    return kept


def as_importer(actor: Actor, parsed: ParsedLesson) -> ParsedLesson:
    """A lesson as a non-reviewer's import may land it: recurrence is counted, not claimed
    (one session, the importer's: ``seen_count`` 1), and the versions are the importer's
    writing (their ``actor``). What the file claimed is kept under ``claimed`` in the
    lesson's unknown fields. A reviewer's import keeps what the file says."""
    if actor.can("review"):
        return parsed
    lesson, principal = parsed.lesson, actor.principal
    claims: dict[str, Any] = {}
    if lesson.seen_count != 1:
        claims["seen_count"] = lesson.seen_count
    versions = parsed.versions
    if versions is not None:
        actors = {str(v.version): v.actor for v in versions if v.actor != principal}
        if actors:
            claims["actors"] = actors
        versions = tuple(
            v if v.actor == principal else v.model_copy(update={"actor": principal})
            for v in versions
        )
    if not claims:
        return parsed
    earlier = lesson.ext.get(CLAIMED)
    claimed = {**earlier, **claims} if isinstance(earlier, dict) else claims
    update = {"seen_count": 1, "ext": {**lesson.ext, CLAIMED: claimed}}
    return dataclasses.replace(parsed, lesson=lesson.model_copy(update=update), versions=versions)


def lorekit_id(secret: str, owner: str, lesson: Lesson) -> str:
    """A LoreKit lesson's id (its files have none): the same for the same owner and address in
    this store, so a tree imported again finds what the first import added, and computable by
    no one without the store's secret, so no one can take it first."""
    return _derived(secret, "lorekit", owner, lesson.scope, lesson.key)


def elsewhere_id(secret: str, owner: str, taken: str) -> str:
    """The id a lesson lands under in ``owner`` when a tenant the importer cannot see holds the
    file's id ``taken``: the same each time, and like any other id to whoever sees it."""
    return _derived(secret, "taken", owner, taken)


def _derived(secret: str, *parts: str) -> str:
    digest = hmac.new(secret.encode(), "\x1f".join(parts).encode(), hashlib.sha256).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def record_digests(parsed: ParsedLesson) -> tuple[str, ...]:
    """Every digest a store may hold for a record's served value and its pending proposal's."""
    served = parsed.digests or value_digests(parsed.lesson.value)
    proposed = [v.value for v in parsed.versions or () if v.state == "proposed"]
    if not proposed:
        return served
    return tuple(dict.fromkeys((*served, *(d for v in proposed for d in value_digests(v)))))


def same_record(
    format: Format,
    held: Lesson,
    history: list[LessonVersion] | None,
    lesson: Lesson,
    parsed: ParsedLesson,
) -> bool:
    """Whether the store holds exactly this record: the lines an export would write for
    both are the same (for LoreKit, the files). Equal fields make equal lines, which settles
    the common case of a file imported again without writing either line."""
    versions = None if parsed.versions is None else list(parsed.versions)
    if format == "jsonl" and held.__dict__ == lesson.__dict__ and versions is None:
        return True
    held_line = lesson_line(held, history)
    incoming = lesson_line(lesson, versions)
    if format == "lorekit":
        return lorekit.file_text(held_line) == lorekit.file_text(incoming)
    return held_line == incoming
