"""The audit hash chain: each event's hash covers the previous hash and the event's content,
so editing, removing or reordering an event breaks every hash after it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from lorestore.core.jsontext import compact_encoder

GENESIS = "0" * 64
CHAINED_FIELDS = (
    "owner",
    "at",
    "actor",
    "action",
    "scope",
    "key",
    "lesson_id",
    "before_version",
    "after_version",
    "before_digest",
    "after_digest",
    "reason",
    "detail",
)
# One encoder for every event (json.dumps builds one per call): the text of
# json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
_canonical = compact_encoder(sort_keys=True, allow_nan=True)


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
