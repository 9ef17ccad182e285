"""``memory_recall``, ``memory_explain`` and ``memory_policy``: the lessons that apply to a
task, the ones held back and why, and the per-scope policies that decide it. The recall itself
is service/recaller.py's, on plain values; ``memory_recall`` gives it its validated arguments
and shapes its answer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.patterns import scope_allowed
from lorestore.core.recall import Decision, ScopePolicy
from lorestore.core.scope import parse_scope
from lorestore.core.timestamps import format_ts, normalise_ts
from lorestore.models import (
    ExplainedLesson,
    ExplainParams,
    ExplainResult,
    HeldLesson,
    OfferedLesson,
    PolicyParams,
    PolicyResult,
    RecallContext,
    RecallParams,
    RecallResult,
    RecallsParams,
    RecallsResult,
)
from lorestore.service.base import bounded
from lorestore.service.projects import ProjectOperations
from lorestore.service.recaller import (
    OWNER_DEFAULT,
    Recaller,
    RecallRequest,
    scope_policy,
    trust_label,
)
from lorestore.storage.protocol import PolicyRow, RecallRecord

# A recall holds a hundred or more lessons; pydantic-core builds each held entry from a dict
# in a third of the time model_construct takes (the fields come from stored records).
_held = HeldLesson.__pydantic_validator__.validate_python


def _covers(actor: Actor, record: RecallRecord) -> bool:
    """Whether a token confined to some scopes covers every scope a logged recall names: its
    ladder and each lesson it offered or held (the context's task text goes with them)."""
    if actor.scopes is None:
        return True
    named = {*record.context.get("ladder", []), *(e["scope"] for e in record.offered)}
    named |= {e["scope"] for e in record.held}
    return all(scope_allowed(actor.scopes, parse_scope(scope)) for scope in named)


class RecallOperations(ProjectOperations, Recaller):
    """Recall derives its project rungs from the repository (ProjectOperations)."""

    def memory_recall(self, actor: Actor, p: RecallParams) -> RecallResult:
        recalled = self.recall_lessons(actor, RecallRequest.of(p.__dict__))
        return RecallResult(
            recall_id=recalled.recall_id,
            context=RecallContext(**recalled.context),
            offered=[
                OfferedLesson(
                    lesson=recalled.records[d.candidate.lesson.id](),
                    label=_label(d),
                    tokens=d.tokens,
                    reasons=list(d.reasons),
                )
                for d in recalled.offered
            ],
            held=[
                _held(entry | {"trust": d.candidate.lesson.trust})
                for d, entry in zip(recalled.held, recalled.held_logged, strict=True)
            ],
            not_considered=recalled.not_considered,
            tokens_used=recalled.tokens_used,
            text=recalled.text,
        )

    def memory_explain(self, actor: Actor, p: ExplainParams) -> ExplainResult:
        self._require(actor, "read")
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            # Recall ids are UUIDs, written lower-case; PostgreSQL's uuid type reads any case.
            recall_id = p.recall_id.strip().lower()
            record = tx.get_recall(self._readable_owners(tx, actor), recall_id)
        if record is not None and not _covers(actor, record):
            record = None  # a confined token sees no trace of scopes beyond it, not even this
        if record is None:
            raise LorestoreError(
                "not_found",
                f"no recall {p.recall_id!r} in the recall log",
                hint="recall ids are kept for the recall-log retention period (30 days)",
            )
        return ExplainResult(
            recall_id=record.recall_id,
            at=record.at,
            actor=record.actor,
            context=record.context,
            offered=[ExplainedLesson.model_validate(e) for e in record.offered],
            held=[ExplainedLesson.model_validate(e) for e in record.held],
        )

    def memory_recalls(self, actor: Actor, p: RecallsParams) -> RecallsResult:
        """The recall log, newest first: what each recall offered and held, and why (the
        dashboard's activity and a lesson's recent recalls)."""
        self._require(actor, "read")
        since = normalise_ts(p.since, field="since") or format_ts(self.clock() - timedelta(days=1))
        limit = bounded("limit", p.limit, 1, 1000)
        lesson_id = p.lesson_id.strip().lower() if p.lesson_id else None
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            owners = self._readable_owners(tx, actor)
            records = tx.recent_recalls(owners, since, lesson_id, limit + 1)
        shown = [r for r in records[:limit] if _covers(actor, r)]

        def about(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            """A lesson's recalls carry only its own entries (memory_explain has the rest)."""
            return (
                entries
                if lesson_id is None
                else [e for e in entries if e["lesson_id"] == lesson_id]
            )

        # One validation of the whole answer: a recall offers and holds up to a hundred
        # lessons, and validating each entry on its own cost more than reading them.
        return RecallsResult.model_validate(
            {
                "recalls": [
                    {
                        "recall_id": r.recall_id,
                        "at": r.at,
                        "actor": r.actor,
                        "context": r.context,
                        "offered": about(r.offered),
                        "held": about(r.held),
                    }
                    for r in shown
                ],
                "more": len(records) > limit,
            }
        )

    def memory_policy(self, actor: Actor, p: PolicyParams) -> PolicyResult:
        setting = p.revision_policy is not None or p.require_review is not None
        scope = OWNER_DEFAULT if p.scope.strip() == OWNER_DEFAULT else parse_scope(p.scope).text
        if scope == OWNER_DEFAULT:
            self._authorise(actor, "review" if setting else "read")
            self._unconfined(actor, "the owner-wide default policy (*)")
        else:
            self._authorise(actor, "review" if setting else "read", scope)
        now = self._now()
        with self.store.transaction(write=setting, actor=actor.principal) as tx:
            owner = (
                actor.owner
                if scope == OWNER_DEFAULT
                else self._owner_for(tx, actor, scope, write=setting)
            )
            current, inherited = scope_policy(
                tx.scope_policies(owner, [scope, OWNER_DEFAULT]), scope
            )
            if setting:
                row = PolicyRow(
                    scope,
                    p.revision_policy or current.revision_policy,
                    current.require_review if p.require_review is None else p.require_review,
                )
                tx.set_policy(owner, row, by=actor.principal, at=now)
                self._audit(
                    tx,
                    actor,
                    "policy",
                    None,
                    owner=owner,  # the chain of the owner whose policy it is (an org's too)
                    reason=None,
                    detail={
                        "owner": owner,
                        "scope": scope,
                        "revision_policy": row.revision_policy,
                        "require_review": row.require_review,
                        "before": {
                            "revision_policy": current.revision_policy,
                            "require_review": current.require_review,
                        },
                    },
                )
                current, inherited = ScopePolicy(row.revision_policy, row.require_review), None  # type: ignore[arg-type]
        return PolicyResult(
            owner=owner,
            scope=scope,
            revision_policy=current.revision_policy,
            require_review=current.require_review,
            inherited_from=inherited,
        )


def _label(d: Decision) -> str:
    return trust_label(d.candidate.lesson.trust)
