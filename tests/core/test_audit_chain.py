"""The chain checked against its head (core.audit.check_chain): what each fault means, and
that an event appended between reading the head and reading the chain is none."""

from __future__ import annotations

from typing import Any

from lorestore.core.audit import GENESIS, AuditEntry, AuditHead, check_chain


def _chain(count: int) -> list[dict[str, Any]]:
    events, prev = [], GENESIS
    for n in range(count):
        event = AuditEntry(
            owner="user:a",
            at=f"2026-01-01T00:00:{n:02d}Z",
            actor="user:a",
            action="write.created",
            key=f"k{n}",
        ).chained(prev)
        event["id"] = n + 1
        events.append(event)
        prev = event["hash"]
    return events


def _head(events: list[dict[str, Any]]) -> AuditHead:
    return AuditHead(len(events), events[-1]["hash"])


def test_an_intact_chain_at_its_head_has_no_fault() -> None:
    chain = _chain(5)
    check = check_chain(chain, _head(chain))
    assert (check.events, check.head_events, check.first_break, check.faults) == (5, 5, None, ())
    assert check_chain([], None).faults == ()  # an owner with no events and no head


def test_an_append_after_the_head_was_read_is_no_fault() -> None:
    chain = _chain(5)
    assert check_chain(chain, _head(chain[:4])).faults == ()


def test_a_cut_tail_is_truncated_though_every_link_follows() -> None:
    chain = _chain(5)
    check = check_chain(chain[:3], _head(chain))
    assert check.first_break is None and check.faults == ("truncated",)
    assert check_chain([], _head(chain)).faults == ("truncated",)


def test_a_replaced_head_event_or_a_missing_head_is_a_mismatch() -> None:
    chain = _chain(5)
    assert check_chain(chain, AuditHead(5, "0" * 64)).faults == ("head_mismatch",)
    assert check_chain(chain, None).faults == ("head_mismatch",)


def test_a_broken_link_is_reported_with_the_head_fault() -> None:
    chain = _chain(5)
    forged = [dict(e) for e in chain]
    forged[2]["reason"] = "rewritten"
    check = check_chain(forged[:4], _head(chain))
    assert check.first_break == 3 and check.faults == ("broken", "truncated")
