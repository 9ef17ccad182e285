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


def first_break(events: Iterable[Mapping[str, Any]]) -> int | None:
    """The id of the first event whose stored hashes do not follow from its predecessors."""
    prev = GENESIS
    for event in events:
        if event["prev_hash"] != prev or chain_hash(prev, event) != event["hash"]:
            return int(event["id"])
        prev = event["hash"]
    return None


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
    prev, count, broken, at_head = GENESIS, 0, None, None
    for event in events:
        if broken is None and (
            event["prev_hash"] != prev or chain_hash(prev, event) != event["hash"]
        ):
            broken = int(event["id"])
        prev = event["hash"]
        count += 1
        if head is not None and count == head.events:
            at_head = prev
    faults: list[Fault] = ["broken"] if broken is not None else []
    if head is None:
        if count:
            faults.append("head_mismatch")
    elif head.events > count:
        faults.append("truncated")
    elif at_head != head.last_hash:
        faults.append("head_mismatch")
    return ChainCheck(count, broken, head.events if head else None, tuple(faults))
