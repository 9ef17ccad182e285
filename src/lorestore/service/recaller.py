"""Recall itself, on plain values: the ladder of a context, the candidates of its rungs, the
selection (core/recall.py), the recall log. ``memory_recall`` (service/recall.py) runs it for
MCP, REST and the CLI with its validated arguments; a host's hook runs it directly
(composition.build_recall), so that a cold process per event loads no pydantic. One rule, one
place: both go through ``Recaller.recall_lessons``."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

from lorestore.auth.actor import Actor
from lorestore.core.errors import LorestoreError
from lorestore.core.patterns import scope_allowed
from lorestore.core.recall import Candidate, Decision, ScopePolicy, render_fence, select
from lorestore.core.scope import ladder, parse_scope, repository
from lorestore.core.search import query_terms
from lorestore.core.validation import unstorable
from lorestore.service.base import ServiceBase, bounded
from lorestore.service.retrieval import hybrid_candidates
from lorestore.storage.protocol import PolicyRow, RecallRecord, Transaction

if TYPE_CHECKING:
    from lorestore.core.records import Lesson

CANDIDATES_PER_RUNG = 25
OWNER_DEFAULT = "*"
DEFAULT_BUDGET = 2000


class Situation(Protocol):
    """Where a task happens, as recall and search with a context read it (a RecallRequest,
    or the validated arguments of memory_recall and memory_search)."""

    @property
    def repo(self) -> str | None: ...
    @property
    def branch(self) -> str | None: ...
    @property
    def project(self) -> str | None: ...
    @property
    def cwd(self) -> str | None: ...
    @property
    def blobs(self) -> Mapping[str, str | None] | None: ...


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """A recall's arguments (the fields of models.RecallParams). A string neither store could
    keep is refused as every operation's arguments are (core.validation.unstorable)."""

    repo: str | None = None
    branch: str | None = None
    revision: str | None = None
    project: str | None = None
    cwd: str | None = None
    task: str | None = None
    budget: int = DEFAULT_BUDGET
    blobs: Mapping[str, str | None] | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            texts = [value] if isinstance(value, str) else []
            if f.name == "blobs" and value:
                texts = [t for pair in value.items() for t in pair if isinstance(t, str)]
            for text in texts:
                why = unstorable(text)
                if why is not None:
                    raise LorestoreError(
                        "invalid_argument",
                        f"{f.name} {why}",
                        hint="lorestore stores text: remove the NUL characters or the broken "
                        "characters (a command line in another encoding makes them)",
                        details={"field": f.name},
                    )

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> RecallRequest:
        """The request of a call's arguments by name (those left out keep their defaults)."""
        return cls(**{f.name: arguments[f.name] for f in fields(cls) if f.name in arguments})


@dataclass(frozen=True, slots=True)
class Recalled:
    """What a recall decided, before any surface shapes it."""

    recall_id: str
    context: dict[str, Any]  # as logged: the fields of models.RecallContext
    offered: list[Decision]
    held: list[Decision]
    held_logged: list[dict[str, Any]]  # each held lesson as the recall log keeps it
    records: dict[str, Callable[[], Lesson]]  # by lesson id, the full record (decoded on call)
    not_considered: list[str]
    tokens_used: int
    text: str  # the fenced block for an agent's context


class Recaller(ServiceBase):
    """Recall over one store. The whole service has it (RecallOperations); a hook builds it
    alone (composition.build_recall)."""

    def recall_lessons(self, actor: Actor, p: RecallRequest) -> Recalled:
        """The lessons that apply to ``p``'s task and context, within its budget, and those
        held back with the reasons; logged in the recall log."""
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
        context = {
            "repo": p.repo,
            "branch": p.branch,
            "revision": p.revision,
            "project": p.project,
            "projects": projects,
            "task": p.task,
            "budget": budget,
            "ladder": rungs,
            "at": now,
            "retrieval": retrieval,
        }
        with self.store.transaction(write=True, actor=actor.principal) as tx:
            tx.insert_recall(
                RecallRecord(
                    recall_id=recall_id,
                    owner=actor.owner,
                    at=now,
                    actor=actor.principal,
                    context=context | {"not_considered": not_considered},
                    offered=[_logged(d) for d in selection.offered],
                    held=held,
                )
            )
        text = render_fence(
            recall_id,
            [d.candidate.lesson for d in selection.offered],
            not_considered,
            repository_known=p.repo is not None,
        )
        return Recalled(
            recall_id=recall_id,
            context=context,
            offered=selection.offered,
            held=selection.held,
            held_logged=held,
            records=records,
            not_considered=not_considered,
            tokens_used=selection.tokens_used,
            text=text,
        )

    def _ladder(self, tx: Transaction, actor: Actor, p: Situation) -> tuple[list[str], list[str]]:
        """The project rungs of a context (the one named, then those declared to hold its
        repository, by name) and its ladder, narrowed to the scopes a confined token covers."""
        derived = self._projects_for(tx, actor, p.repo)
        scopes = ladder(repo=p.repo, branch=p.branch, project=p.project, projects=derived)
        rungs = [s.text for s in scopes]
        if actor.scopes is not None:
            rungs = [r for r in rungs if scope_allowed(actor.scopes, parse_scope(r))]
        projects = [r.removeprefix("project::") for r in rungs if r.startswith("project::")]
        return projects, rungs

    def _projects_for(self, tx: Transaction, actor: Actor, repo: str | None) -> list[str]:
        """The project rungs a task's repository brings: the projects the actor's readable
        owners declared to hold it, by name."""
        if not repo:
            return []
        return project_names(tx, self._readable_owners(tx, actor), repo)

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
        ladder = list(rungs_of)
        more = tx.rungs_with_more(ladder, [weighed[rung] for rung in ladder])
        not_considered = [scope for (_, scope), left in zip(ladder, more, strict=True) if left]
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
            (owner, scope): (rung, scope_policy(policies[owner], scope)[0])
            for rung, owner, scope in owned
        }

    def _blobs(self, candidates: list[Candidate], p: Situation) -> dict[str, str | None]:
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


def project_names(tx: Transaction, owners: list[str], repo: str) -> list[str]:
    """The names of the projects these owners declared to hold ``repo``, by name, each once:
    the order of the project rungs of a ladder (docs/cli.md#project)."""
    return list(dict.fromkeys(d.project for d in tx.projects_of_repo(owners, repository(repo))))


def scope_policy(rows: list[PolicyRow], scope: str) -> tuple[ScopePolicy, str | None]:
    """The policy of ``scope`` among an owner's policy rows (its own, else the owner-wide
    default ``*``, else none), and where it was inherited from (None: its own or none)."""
    by_scope = {r.scope: r for r in rows}
    row = by_scope.get(scope) or by_scope.get(OWNER_DEFAULT)
    if row is None:
        return ScopePolicy(), None
    inherited = None if row.scope == scope else OWNER_DEFAULT
    return ScopePolicy(row.revision_policy, row.require_review), inherited  # type: ignore[arg-type]


def _logged(d: Decision) -> dict[str, Any]:
    lesson = d.candidate.lesson
    return {
        "lesson_id": lesson.id,
        "scope": lesson.scope,
        "key": lesson.key,
        "version": lesson.version,
        "reasons": list(d.reasons),
    }


def _task_terms(task: str | None) -> list[str] | None:
    if not task:
        return None
    try:
        return query_terms(task)
    except LorestoreError:
        return None  # a task with no searchable words still gets trusted and recent lessons


def trust_label(trust: str) -> str:
    """How a served lesson's trust is shown: verified, corroborated, unverified, disputed."""
    return "unverified" if trust == "candidate" else trust
