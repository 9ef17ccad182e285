"""The audit chain verifier through a chain ``lorestore migrate`` carried from another store: the
``migrate.chain`` record, chained on the target's head, names the carried segment's start,
head and length; the segment keeps its own hashes; later events chain on its head. Removing,
cutting or editing any of it breaks the chain where it happened."""

from __future__ import annotations

from typing import Any

from lorestore.core.audit import CARRIED_CHAIN, GENESIS, AuditEntry, first_break


def chain(owner: str, actions: list[str], prev: str = GENESIS) -> list[dict[str, Any]]:
    events = []
    for action in actions:
        event = AuditEntry(
            owner=owner, at="2026-12-01T00:00:00.000000Z", actor=owner, action=action
        ).chained(prev)
        events.append(event)
        prev = event["hash"]
    return events


def carried(target: list[dict[str, Any]], segment: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The target's events, the record linking both heads, the segment, one later event."""
    head = target[-1]["hash"]
    record = AuditEntry(
        owner="user:a",
        at="2026-12-02T00:00:00.000000Z",
        actor="lorestore-migrate",
        action=CARRIED_CHAIN,
        detail={
            "from": segment[0]["prev_hash"],
            "head": segment[-1]["hash"],
            "events": len(segment),
            "target_head": head,
        },
    ).chained(head)
    later = chain("user:a", ["write.created"], prev=segment[-1]["hash"])
    events = [*target, record, *segment, *later]
    return [{**e, "id": i + 1} for i, e in enumerate(events)]


def test_a_carried_chain_verifies_and_every_cut_breaks_it() -> None:
    target = chain("user:a", ["sweep_expired", "sweep_archived"])
    segment = chain("user:a", ["write.created", "verify", "write.updated"])
    events = carried(target, segment)
    assert first_break(events) is None  # the positive control
    record = events[2]
    # The record removed: the segment does not follow the target's head.
    assert first_break(events[:2] + events[3:]) == 4
    # The segment cut short (its last event gone): the later event does not follow.
    assert first_break(events[:5] + events[6:]) == 7
    # The segment cut off at the end: the record's segment never ended.
    assert first_break(events[:5]) == record["id"]
    # A carried event edited.
    edited = [dict(e) for e in events]
    edited[4]["key"] = "edited"
    assert first_break(edited) == 5
    # A plain event claiming to start over at GENESIS without a record.
    assert first_break([*target, {**segment[0], "id": 3}]) == 3


def test_a_chain_carried_twice_verifies() -> None:
    """A store that was itself a migration's target, migrated again: its record and segment
    sit inside the new segment."""
    inner = carried(chain("user:a", ["x"]), chain("user:a", ["y", "z"]))
    outer_target = chain("user:a", ["sweep_expired"])
    segment = [{k: v for k, v in e.items() if k != "id"} for e in inner]
    events = carried(outer_target, segment)
    assert first_break(events) is None
