"""The audit hash chain: each event's hash covers the previous hash and the event's content,
so editing, removing or reordering an event breaks every hash after it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

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
