"""The trust state machine. Trust is a discrete state, moved only by the events below (every
change of a stored lesson's trust goes through ``transition``; a new lesson starts
``candidate``, an imported one keeps the trust its record carries); reading, listing,
searching and recall are not events and never move it.

Only a person (a ``review`` permission) causes ``verify``, ``reject`` and ``undo_reject``;
``corroborate`` comes from recurrence; ``dispute`` from anyone who may write; ``hold`` from a
write that looks like another key or a rejected value (``core/tombstones.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

from lorestore.core.errors import LorestoreError
from lorestore.core.records import Trust

TrustEvent = Literal["corroborate", "verify", "reject", "dispute", "revise", "undo_reject", "hold"]

_TRANSITIONS: dict[TrustEvent, dict[Trust, Trust]] = {
    "corroborate": {"candidate": "corroborated"},
    "verify": {
        "candidate": "verified",
        "corroborated": "verified",
        "disputed": "verified",
        "verified": "verified",
    },
    "reject": {
        "candidate": "rejected",
        "corroborated": "rejected",
        "disputed": "rejected",
        "verified": "rejected",
        "rejected": "rejected",
    },
    "dispute": {
        "candidate": "disputed",
        "corroborated": "disputed",
        "verified": "disputed",
        "disputed": "disputed",
    },
    "revise": {
        "candidate": "candidate",
        "corroborated": "candidate",
        "disputed": "candidate",
        "rejected": "candidate",
    },
    "undo_reject": {"rejected": "candidate"},
    # A write that looks like something else (a key confusable with another of its scope, a
    # value near a rejected one) is stored withheld, as a dispute, until a reviewer decides.
    "hold": {"candidate": "disputed", "corroborated": "disputed", "disputed": "disputed"},
}

_REFUSALS: dict[tuple[TrustEvent, Trust], str] = {
    ("verify", "rejected"): "a rejected value stays rejected: verifying never brings it back; "
    "a reviewer lifts the rejection with `lorestore reject SCOPE KEY --undo --reason ...`",
    ("dispute", "rejected"): "the lesson is already rejected",
    ("undo_reject", "candidate"): "the lesson is not rejected",
    ("revise", "verified"): "a verified lesson changes only through a reviewed revision",
}


def transition(current: Trust, event: TrustEvent) -> Trust:
    """The state after ``event``; raises ``conflict`` when the event does not apply."""
    target = _TRANSITIONS[event].get(current)
    if target is None:
        reason = _REFUSALS.get(
            (event, current), f"cannot {event.replace('_', ' ')} a {current} lesson"
        )
        raise LorestoreError("conflict", reason, details={"trust": current, "event": event})
    return target


# Audit actions whose resulting trust is fixed: what an event that predates trust being
# recorded in every lesson event's detail still tells.
_TRUST_AFTER: dict[str, Trust] = {
    "write.created": "candidate",
    "write.updated": "candidate",
    "verify": "verified",
    "verify.revision": "verified",
    "reject": "rejected",
    "dispute": "disputed",
}
_TRUSTS: frozenset[str] = frozenset(get_args(Trust))


def trust_as_of(events: Iterable[tuple[str, str | None]]) -> Trust | None:
    """A lesson's trust at a past time, from its audit events up to then (newest first, as
    action and the trust the event recorded); None when none of them tells (the lesson
    arrived later, or its history predates the audit)."""
    for action, recorded in events:
        if recorded in _TRUSTS:
            return recorded  # type: ignore[return-value]
        if action in _TRUST_AFTER:
            return _TRUST_AFTER[action]
    return None
