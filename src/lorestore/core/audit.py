"""The audit hash chain: each event's hash covers the previous hash and the event's content,
so editing, removing or reordering an event breaks every hash after it; and its head (the
count and last hash the store keeps beside it), without which deleting the newest events
would leave a chain that still links."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from lorestore.core.jsontext import compact_encoder

GENESIS = "0" * 64
# One encoder for every event (json.dumps builds one per call): the text of
# json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
_canonical = compact_encoder(sort_keys=True, allow_nan=True)


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """An event about to be appended: the fields the hash chain covers (``CHAINED_FIELDS``),
    digests and never values."""

    owner: str
    at: str
    actor: str
    action: str
    scope: str | None = None
    key: str | None = None
    lesson_id: str | None = None
    before_version: int | None = None
    after_version: int | None = None
    before_digest: str | None = None
    after_digest: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def chained(self, prev_hash: str) -> dict[str, Any]:
        """The stored form: every chained field, ``prev_hash`` and the event's ``hash``."""
        event: dict[str, Any] = {name: getattr(self, name) for name in CHAINED_FIELDS}
        event["prev_hash"] = prev_hash
        event["hash"] = chain_hash(prev_hash, event)
        return event


# The fields the chain covers, in column order: AuditEntry's (one list; the stored event and
# core.records.AuditEvent, the read model, add id, prev_hash and hash).
CHAINED_FIELDS = tuple(f.name for f in fields(AuditEntry))


def chain_hash(prev_hash: str, event: Mapping[str, Any]) -> str:
    content = {name: event.get(name) for name in CHAINED_FIELDS}
    if isinstance(content["detail"], str):
        content["detail"] = json.loads(content["detail"])
    canonical = _canonical(content)
    return hashlib.sha256((prev_hash + canonical).encode("utf-8")).hexdigest()


# The action of the event ``lorestore migrate`` appends before a chain it carries from
# another store onto an owner's chain here: its detail names where the carried segment starts
# (``from``: GENESIS, or the head of a segment carried earlier), its head, how many events it
# holds and the head of the chain it was appended to. The record is chained like any event;
# the segment's events keep their own hashes, and what comes after chains on the segment's head.
CARRIED_CHAIN = "migrate.chain"


def carried(event: Mapping[str, Any]) -> tuple[str, str, int] | None:
    """(from, head, events) of a migration record; None for any other event."""
    if event.get("action") != CARRIED_CHAIN:
        return None
    detail = event.get("detail")
    if isinstance(detail, str):
        detail = json.loads(detail)
    if not isinstance(detail, dict):
        return None
    start, head, count = detail.get("from"), detail.get("head"), detail.get("events")
    if not (isinstance(start, str) and isinstance(head, str) and isinstance(count, int)):
        return None
    return start, head, count


class ChainWalk:
    """One owner's chain checked event by event, from the first (``first_break`` over a
    whole chain, ``lorestore migrate`` over a source's chain as it reads it). A migration
    record's segment must chain from the record's ``from`` to its ``head`` in exactly its
    number of events."""

    def __init__(self) -> None:
        self.head = GENESIS
        self.events = 0
        # Open segments, outermost first (a carried chain may carry one itself): the record's
        # id, the segment's head and how many of its events are still to come.
        self._segments: list[tuple[int, str, int]] = []

    def step(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` follows; the walk stays where it was when it does not."""
        if event["prev_hash"] != self.head or chain_hash(self.head, event) != event["hash"]:
            return False
        segments = []
        for record, head, left in self._segments:
            if left > 1:
                segments.append((record, head, left - 1))
            elif event["hash"] != head:
                return False
        self._segments, self.head = segments, event["hash"]
        link = carried(event)
        if link is not None and link[2] > 0:
            self.head = link[0]
            self._segments.append((int(event["id"]), link[1], link[2]))
        self.events += 1
        return True

    @property
    def open_record(self) -> int | None:
        """The id of the outermost migration record whose segment has not ended."""
        return self._segments[0][0] if self._segments else None


def first_break(events: Iterable[Mapping[str, Any]]) -> int | None:
    """The id of the first event whose stored hashes do not follow from its predecessors (a
    carried segment cut short breaks at its migration record)."""
    walk = ChainWalk()
    for event in events:
        if not walk.step(event):
            return int(event["id"])
    return walk.open_record


Fault = Literal["broken", "truncated", "head_mismatch"]


@dataclass(frozen=True, slots=True)
class AuditHead:
    """What the store keeps of an owner's chain where only an append moves it: how many
    events the chain holds and the hash of the last one."""

    events: int
    last_hash: str


@dataclass(frozen=True, slots=True)
class ChainCheck:
    """A chain checked against itself and its head: ``first_break`` is the id of the first
    event that does not follow; ``faults`` says what is wrong (empty: nothing)."""

    events: int
    first_break: int | None
    head_events: int | None
    faults: tuple[Fault, ...]


def check_chain(events: Iterable[Mapping[str, Any]], head: AuditHead | None) -> ChainCheck:
    """Recompute the chain from its first event and find its head on it: ``broken`` when a
    link does not follow, ``truncated`` when the head counts more events than are stored
    (events were deleted: the newest, or any, with what was written after relinked onto
    what was left), ``head_mismatch`` when the head is not a point of the chain otherwise
    (its event replaced, or a chain with events and no head).

    ``head`` is read before the chain: an event appended in between lies past the head,
    which then still marks a point of the chain, so a concurrent write is never a fault."""
    walk, count, broken, at_head = ChainWalk(), 0, None, None
    for event in events:
        if broken is None and not walk.step(event):
            broken = int(event["id"])
        count += 1
        if head is not None and count == head.events:
            at_head = event["hash"]  # the head is the newest event stored, carried or not
    if broken is None:
        broken = walk.open_record  # a carried segment cut short breaks at its record
    faults: list[Fault] = ["broken"] if broken is not None else []
    if head is None:
        if count:
            faults.append("head_mismatch")
    elif head.events > count:
        faults.append("truncated")
    elif at_head != head.last_hash:
        faults.append("head_mismatch")
    return ChainCheck(count, broken, head.events if head else None, tuple(faults))
