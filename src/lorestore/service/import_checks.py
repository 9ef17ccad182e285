"""What an import may keep of a record, decided before it lands: the owner's cap on active
lessons (checked alike in an import and its dry run), the recurrence and authorship a
non-reviewer's file claims (reduced to the importer's, the claims kept as provenance), and
the ids of LoreKit lessons (derived with the store's own secret, so no one else can)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from lorestore.auth.actor import Actor
from lorestore.portable.importer import Applied
from lorestore.portable.records import ParsedLesson
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
    kept: list[T] = []
    for entry in new:
        owner = entry.owner
        if entry.parsed.lesson.status != "active":
            kept.append(entry)
            continue
        if owner not in room:
            active, cap = tx.owner_cap(owner)
            room[owner] = (cap - active - dry_active[owner], cap)
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
