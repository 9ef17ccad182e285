"""Building and chaining audit events: the one place an event is made and linked onto its
owner's hash chain (``core.audit.chain_hash``), for every operation and for imports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lorestore.auth.actor import Actor
from lorestore.core.audit import GENESIS, AuditEntry
from lorestore.storage.protocol import Transaction

if TYPE_CHECKING:
    from lorestore.core.records import Lesson


def lesson_entry(
    actor: Actor,
    action: str,
    lesson: Lesson | None,
    *,
    owner: str,
    at: str,
    before: tuple[int, str] | None = None,
    after: tuple[int, str] | None = None,
    reason: str | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEntry:
    """The event of an operation by ``actor`` on ``lesson`` (None: on the store, a sweep or
    a policy), with the trust it leaves, the actor's session and who delegated to it."""
    details = dict(detail or {})
    if lesson is not None:  # trust after the event: what an as_of read reports later
        details.setdefault("trust", lesson.trust)
    if actor.session:
        details["session"] = actor.session
    if actor.delegated_by:
        details["by"] = actor.delegated_by
    return AuditEntry(
        owner=owner,
        at=at,
        actor=actor.principal,
        action=action,
        scope=lesson.scope if lesson else None,
        key=lesson.key if lesson else None,
        lesson_id=lesson.id if lesson else None,
        before_version=before[0] if before else None,
        after_version=after[0] if after else None,
        before_digest=before[1] if before else None,
        after_digest=after[1] if after else None,
        reason=reason,
        detail=details,
    )


class AuditChain:
    """The owners' chains within one transaction: each head read once, then kept in hand as
    events are appended in order."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx
        self._heads: dict[str, str] = {}

    def _link(self, entry: AuditEntry) -> dict[str, Any]:
        prev = self._heads.get(entry.owner) or self._tx.last_audit_hash(entry.owner) or GENESIS
        event = entry.chained(prev)
        self._heads[entry.owner] = event["hash"]
        return event

    def append(self, entry: AuditEntry) -> None:
        self._tx.append_audit(self._link(entry))

    def append_all(self, entries: list[AuditEntry]) -> None:
        """Many events in one statement, chained in order."""
        self._tx.append_audits([self._link(entry) for entry in entries])
