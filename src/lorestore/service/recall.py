"""``memory_recall``, ``memory_explain`` and ``memory_policy``: the lessons that apply to a
task, the ones held back and why, and the per-scope policies that decide it."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.patterns import scope_allowed
from lorestore.core.recall import Candidate, Decision, ScopePolicy, render_fence, select
from lorestore.core.records import Lesson, format_ts, normalise_ts
from lorestore.core.scope import ladder, parse_scope
from lorestore.core.search import query_terms
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
    SearchParams,
)
from lorestore.service.base import bounded
from lorestore.service.projects import ProjectOperations
from lorestore.service.retrieval import hybrid_candidates
from lorestore.storage.protocol import PolicyRow, RecallRecord, Transaction

CANDIDATES_PER_RUNG = 25
OWNER_DEFAULT = "*"
# A recall holds a hundred or more lessons; pydantic-core builds each held entry from a dict
# in a third of the time model_construct takes (the fields come from stored records).
_held = HeldLesson.__pydantic_validator__.validate_python


def _policy(rows: list[PolicyRow], scope: str) -> tuple[ScopePolicy, str | None]:
    by_scope = {r.scope: r for r in rows}
    row = by_scope.get(scope) or by_scope.get(OWNER_DEFAULT)
    if row is None:
        return ScopePolicy(), None
    inherited = None if row.scope == scope else OWNER_DEFAULT
    return ScopePolicy(row.revision_policy, row.require_review), inherited  # type: ignore[arg-type]


def _covers(actor: Actor, record: RecallRecord) -> bool:
    """Whether a token confined to some scopes covers every scope a logged recall names: its
    ladder and each lesson it offered or held (the context's task text goes with them)."""
    if actor.scopes is None:
        return True
    named = {*record.context.get("ladder", []), *(e["scope"] for e in record.offered)}
    named |= {e["scope"] for e in record.held}
    return all(scope_allowed(actor.scopes, parse_scope(scope)) for scope in named)


def _logged(d: Decision) -> dict[str, Any]:
    lesson = d.candidate.lesson
    return {
        "lesson_id": lesson.id,
        "scope": lesson.scope,
        "key": lesson.key,
        "version": lesson.version,
        "reasons": list(d.reasons),
    }


class RecallOperations(ProjectOperations):
    """Recall derives its project rungs from the repository (ProjectOperations)."""

    def memory_recall(self, actor: Actor, p: RecallParams) -> RecallResult:
        self._require(actor, "read")
        budget = bounded("budget", p.budget, 100, 20_000)
        ladder(repo=p.repo, branch=p.branch, project=p.project)  # a bad context: refused first
        terms = _task_terms(p.task)
        now = self._now()
        with self.store.transaction(write=False, actor=actor.principal) as tx:
            projects, rungs = self._ladder(tx, actor, p)
            candidates, records, not_considered, retrieval = self._candidates(
                tx, actor, rungs, terms, p.task
            )
        blobs = self._blobs(candidates, p)
        selection = select(
            candidates, rungs, budget=budget, now=now, revision=p.revision, blobs=blobs
        )
        recall_id = str(uuid.uuid4())
        held = [_logged(d) for d in selection.held]
        context = RecallContext(
            repo=p.repo,
            branch=p.branch,
            revision=p.revision,
            project=p.project,
            projects=projects,
            task=p.task,
            budget=budget,
            ladder=rungs,
            at=now,
            retrieval=retrieval,
        )
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            tx.insert_recall(
                RecallRecord(
                    recall_id=recall_id,
                    owner=actor.owner,
                    at=now,
                    actor=actor.principal,
                    context=context.model_dump() | {"not_considered": not_considered},
                    offered=[_logged(d) for d in selection.offered],
                    held=held,
                )
            )
        return RecallResult(
            recall_id=recall_id,
            context=context,
            offered=[
                OfferedLesson(
                    lesson=records[d.candidate.lesson.id](),
                    label=_label(d),
                    tokens=d.tokens,
                    reasons=list(d.reasons),
                )
                for d in selection.offered
            ],
            held=[
                _held(entry | {"trust": d.candidate.lesson.trust})
                for d, entry in zip(selection.held, held, strict=True)
            ],
            not_considered=not_considered,
            tokens_used=selection.tokens_used,
            text=render_fence(
                recall_id,
                [d.candidate.lesson for d in selection.offered],
                not_considered,
                repository_known=context.repo is not None,
            ),
        )

    def _ladder(
        self, tx: Transaction, actor: Actor, p: RecallParams | SearchParams
    ) -> tuple[list[str], list[str]]:
        """The project rungs of a context (the one named, then those declared to hold its
        repository, by name) and its ladder, narrowed to the scopes a confined token covers."""
        derived = self._projects_for(tx, actor, p.repo)
        scopes = ladder(repo=p.repo, branch=p.branch, project=p.project, projects=derived)
        rungs = [s.text for s in scopes]
        if actor.scopes is not None:
            rungs = [r for r in rungs if scope_allowed(actor.scopes, parse_scope(r))]
        projects = [r.removeprefix("project::") for r in rungs if r.startswith("project::")]
        return projects, rungs

    def _candidates(
        self,
        tx: Transaction,
        actor: Actor,
        rungs: list[str],
        terms: list[str] | None,
        task: str | None,
    ) -> tuple[list[Candidate], dict[str, Callable[[], Lesson]], list[str], str]:
        """The candidates; by lesson id the full record of each (decoded when offered); the
        rungs holding lessons that are not among the candidates, which recall therefore
        neither offers nor holds (it says so rather than pass over them in silence); and how
        they were retrieved (lexical or hybrid)."""
        rungs_of = self._rungs_of(tx, actor, rungs)
        found: list[Candidate] = []
        records: dict[str, Callable[[], Lesson]] = {}
        rows, retrieval = hybrid_candidates(
            tx, list(rungs_of), terms, task, limit=CANDIDATES_PER_RUNG
        )
        for row in rows:
            rung, policy = rungs_of[(row.owner, row.head.scope)]
            found.append(Candidate(row.head, row.value_digest, rung, row.score, policy))
            records[row.head.id] = row.record
        weighed = Counter((row.owner, row.head.scope) for row in rows)
        not_considered = [
            scope
            for owner, scope in rungs_of
            if tx.has_more_lessons(owner, scope, weighed[(owner, scope)])
        ]
        return found, records, not_considered, retrieval

    def _rungs_of(
        self, tx: Transaction, actor: Actor, rungs: list[str]
    ) -> dict[tuple[str, str], tuple[int, ScopePolicy]]:
        """By (owner, scope): each rung's position in the ladder and its scope's policy. A
        rung the actor may not read (another org's territory) is left out: it adds nothing."""
        bindings = tx.bindings_for(actor.principal)
        owned: list[tuple[int, str, str]] = []
        for rung, scope in enumerate(rungs):
            try:
                owner = self._owner_for(tx, actor, scope, write=False, bindings=bindings)
            except LorestoreError:
                continue
            owned.append((rung, owner, scope))
        policies: dict[str, list[PolicyRow]] = {}  # one read per owner, for all its rungs
        for owner in dict.fromkeys(owner for _, owner, _ in owned):
            scopes = [scope for _, o, scope in owned if o == owner]
            policies[owner] = tx.scope_policies(owner, [*scopes, OWNER_DEFAULT])
        return {
            (owner, scope): (rung, _policy(policies[owner], scope)[0])
            for rung, owner, scope in owned
        }

    def _blobs(
        self, candidates: list[Candidate], p: RecallParams | SearchParams
    ) -> dict[str, str | None]:
        blobs: dict[str, str | None] = dict(p.blobs or {})
        needed = sorted(
            {
                dep.path
                for c in candidates
                if c.policy.revision_policy == "files"
                for dep in c.lesson.depends_on
                if dep.path not in blobs
            }
        )
        if needed and p.cwd and self.blob_lookup is not None:
            blobs.update(self.blob_lookup(p.cwd, needed))
        return blobs

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
            current, inherited = _policy(tx.scope_policies(owner, [scope, OWNER_DEFAULT]), scope)
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


def _task_terms(task: str | None) -> list[str] | None:
    if not task:
        return None
    try:
        return query_terms(task)
    except LorestoreError:
        return None  # a task with no searchable words still gets trusted and recent lessons


def _label(d: Decision) -> str:
    return trust_label(d.candidate.lesson.trust)


def trust_label(trust: str) -> str:
    """How a served lesson's trust is shown: verified, corroborated, unverified, disputed."""
    return "unverified" if trust == "candidate" else trust
