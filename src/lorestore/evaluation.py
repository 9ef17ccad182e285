"""The retrieval eval: its data set (``evals/``), loading it into a fresh store through the
service, with its lifecycle applied by the real operations, and running every query through
``memory_search`` and ``memory_recall``. Scoring and reporting live in ``evaluation_report``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lorestore.auth.actor import Actor, local_actor
from lorestore.core.errors import LorestoreError
from lorestore.core.records import Lesson, Source
from lorestore.core.scope import ladder, parse_scope
from lorestore.models import (
    ChangeParams,
    DisputeParams,
    OrgBindParams,
    OrgCreateParams,
    PolicyParams,
    RecallParams,
    RejectParams,
    SearchParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.protocol import Store

Handler = Literal["search", "recall"]
HANDLERS: tuple[Handler, ...] = ("search", "recall")
SEARCH_LIMIT = 10
LOAD_SESSION = "eval-load"


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class EvalLesson(_Record):
    """One lesson of the set and the lifecycle the loader gives it."""

    id: str | None = None  # defaults to the key; needed where one key lives at two scopes
    actor: str = Field(alias="as")
    scope: str
    key: str
    value: str
    tags: list[str] = []
    commit: str | None = None
    ttl_days: int | None = None
    history: list[str] = []  # earlier values, oldest first: versions 1..n
    trust: Literal["verified", "corroborated", "disputed", "rejected"] | None = None
    reason: str | None = None
    proposed: str | None = None  # a revision proposed after verification, left pending
    archived: bool = False

    @property
    def ref(self) -> str:
        return self.id or self.key

    def texts(self) -> dict[str, str]:
        """``ref@N`` -> the text of version N (history, the served value, a proposal)."""
        values = [*self.history, self.value, *([self.proposed] if self.proposed else [])]
        return {f"{self.ref}@{n}": text for n, text in enumerate(values, start=1)}


class EvalContext(_Record):
    repo: str | None = None
    branch: str | None = None
    revision: str | None = None
    project: str | None = None


class EvalQuery(_Record):
    """A task an agent brings, where it is asked, what should come back and what must not."""

    id: str
    category: str
    actor: str = Field(alias="as")
    context: EvalContext
    task: str
    expected: list[str]
    forbidden: list[str] = []
    forbidden_recall: list[str] = []  # served by search, but recall must hold them back
    why: str | None = None

    def relevant(self, handler: Handler) -> list[str]:
        held = set(self.forbidden_recall) if handler == "recall" else set()
        return [ref for ref in self.expected if ref not in held]

    def banned(self, handler: Handler) -> list[str]:
        return self.forbidden + (self.forbidden_recall if handler == "recall" else [])


class EvalOrg(_Record):
    slug: str
    name: str
    owner: str
    bindings: list[str]


class EvalPolicy(_Record):
    actor: str = Field(alias="as")
    scope: str
    revision_policy: Literal["none", "commit", "files"]


class RefusedWrite(_Record):
    """A write the store must refuse, e.g. a rejected value brought back under another key."""

    actor: str = Field(alias="as")
    copy_of: str
    scope: str
    key: str
    code: str


class EvalSetup(_Record):
    start: datetime
    write_interval_minutes: int = 1
    query_after_days: int
    actors: dict[str, str]
    orgs: list[EvalOrg] = []
    policies: list[EvalPolicy] = []
    refused_writes: list[RefusedWrite] = []


@dataclass(frozen=True, slots=True)
class EvalSet:
    setup: EvalSetup
    lessons: tuple[EvalLesson, ...]
    queries: tuple[EvalQuery, ...]

    def only(self, *, categories: Sequence[str] = (), ids: Sequence[str] = ()) -> EvalSet:
        """The same lessons with only the named categories and query ids (empty: all)."""
        chosen = tuple(
            q
            for q in self.queries
            if (not categories or q.category in categories) and (not ids or q.id in ids)
        )
        return EvalSet(self.setup, self.lessons, chosen)


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: {exc}") from exc


def load_set(directory: Path) -> EvalSet:
    """Read ``setup.json``, ``lessons.jsonl`` and ``queries.jsonl`` and check that every
    reference names a lesson (or a version of one) in the set."""
    setup = EvalSetup.model_validate_json((directory / "setup.json").read_text(encoding="utf-8"))
    lessons = tuple(EvalLesson.model_validate(d) for d in _jsonl(directory / "lessons.jsonl"))
    queries = tuple(EvalQuery.model_validate(d) for d in _jsonl(directory / "queries.jsonl"))
    evalset = EvalSet(setup, lessons, queries)
    check_set(evalset)
    return evalset


def check_set(evalset: EvalSet) -> None:
    refs = [lesson.ref for lesson in evalset.lessons]
    duplicates = sorted({r for r in refs if refs.count(r) > 1})
    if duplicates:
        raise ValueError(f"lesson ids used twice: {duplicates}")
    known = set(refs) | {t for lesson in evalset.lessons for t in lesson.texts()}
    query_ids = [q.id for q in evalset.queries]
    for q in evalset.queries:
        unknown = [r for r in q.expected + q.banned("recall") if r not in known]
        if unknown:
            raise ValueError(f"query {q.id} names unknown lessons {unknown}")
        if query_ids.count(q.id) > 1:
            raise ValueError(f"query id {q.id} used twice")
        if set(q.expected) & set(q.forbidden):
            raise ValueError(f"query {q.id} expects and forbids the same lesson")
    actors = set(evalset.setup.actors)
    named = {lesson.actor for lesson in evalset.lessons} | {q.actor for q in evalset.queries}
    strangers = named - actors
    if strangers:
        raise ValueError(f"unknown actors {sorted(strangers)}; declare them in setup.json")


class EvalClock:
    """The service's clock during an eval run: moved by the loader, never by the wall."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@dataclass
class Loaded:
    """What the loader learnt: which stored address is which lesson of the set, the text of
    every version, and the writes the store refused as it should."""

    refs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)

    def ref_of(self, lesson: Lesson) -> str:
        ((kind, ident),) = lesson.owner.items()
        address = (f"{kind}:{ident}", lesson.scope, lesson.key)
        return self.refs.get(address, "?" + "|".join(address))


@dataclass(frozen=True, slots=True)
class Outcome:
    """One query through one handler: the lessons served, in order, as set references."""

    query: EvalQuery
    handler: Handler
    ranked: tuple[str, ...]
    forbidden_hits: tuple[str, ...]
    refused_scopes: tuple[str, ...] = ()


def actors_of(setup: EvalSetup) -> dict[str, Actor]:
    return {
        name: local_actor(principal=principal, session=f"{LOAD_SESSION}-{name}")
        for name, principal in setup.actors.items()
    }


def populate(service: LessonService, clock: EvalClock, evalset: EvalSet) -> Loaded:
    """Write the set through the service and give each lesson its lifecycle, then move the
    clock to the time the queries are asked (so short TTLs have run out)."""
    actors = actors_of(evalset.setup)
    for org in evalset.setup.orgs:
        admin = actors[org.owner]
        service.org_create(admin, OrgCreateParams(slug=org.slug, name=org.name))
        for pattern in org.bindings:
            service.org_bind(admin, OrgBindParams(org=org.slug, pattern=pattern))
    for policy in evalset.setup.policies:
        params = {"scope": policy.scope, "revision_policy": policy.revision_policy}
        service.memory_policy(actors[policy.actor], PolicyParams.model_validate(params))
    loaded = Loaded()
    step = timedelta(minutes=evalset.setup.write_interval_minutes)
    for lesson in evalset.lessons:
        clock.advance(step)
        owner = _write_lesson(service, actors[lesson.actor], lesson)
        loaded.refs[(owner, parse_scope(lesson.scope).text, lesson.key)] = lesson.ref
        loaded.texts.update(lesson.texts())
    by_ref = {lesson.ref: lesson for lesson in evalset.lessons}
    for refused in evalset.setup.refused_writes:
        loaded.refused.append(_refused_write(service, actors[refused.actor], refused, by_ref))
    clock.advance(timedelta(days=evalset.setup.query_after_days))
    return loaded


def _write(
    service: LessonService, actor: Actor, lesson: EvalLesson, value: str, **extra: Any
) -> str:
    params = {
        "scope": lesson.scope,
        "key": lesson.key,
        "value": value,
        "tags": lesson.tags,
        "source": Source(commit=lesson.commit, agent="eval"),
        **extra,
    }
    result = service.memory_write(actor, WriteParams.model_validate(params))
    ((kind, ident),) = result.lesson.owner.items()
    return f"{kind}:{ident}"


def _write_lesson(service: LessonService, actor: Actor, lesson: EvalLesson) -> str:
    """Write every version of one lesson, then apply its trust and status; return its owner."""
    for old in lesson.history:
        _write(service, actor, lesson, old)
    owner = _write(service, actor, lesson, lesson.value, ttl_days=lesson.ttl_days)
    address = {"scope": lesson.scope, "key": lesson.key}
    reason = lesson.reason or "eval data set"
    if lesson.trust == "corroborated":
        for n in (2, 3):
            _write(service, actor, lesson, lesson.value, session=f"{LOAD_SESSION}-{n}")
    elif lesson.trust == "verified":
        service.memory_verify(actor, VerifyParams.model_validate(address))
    elif lesson.trust == "disputed":
        service.memory_dispute(actor, DisputeParams.model_validate(address | {"reason": reason}))
    elif lesson.trust == "rejected":
        service.memory_reject(actor, RejectParams.model_validate(address | {"reason": reason}))
    if lesson.proposed:
        _write(service, actor, lesson, lesson.proposed)
    if lesson.archived:
        service.memory_archive(actor, ChangeParams.model_validate(address | {"reason": reason}))
    return owner


def _refused_write(
    service: LessonService, actor: Actor, refused: RefusedWrite, by_ref: dict[str, EvalLesson]
) -> str:
    value = by_ref[refused.copy_of].value
    try:
        params = {"scope": refused.scope, "key": refused.key, "value": value}
        service.memory_write(actor, WriteParams.model_validate(params))
    except LorestoreError as error:
        if error.code == refused.code:
            return f"{refused.scope} / {refused.key}: {error.code}"
        raise
    raise LorestoreError(
        "internal",
        f"the store accepted {refused.copy_of!r} at {refused.scope} / {refused.key}; "
        f"the data set expects {refused.code}",
    )


def run_queries(service: LessonService, loaded: Loaded, evalset: EvalSet) -> list[Outcome]:
    """Every query through both handlers, as the actor it names."""
    people = {
        name: local_actor(principal=principal, session=f"eval-query-{name}")
        for name, principal in evalset.setup.actors.items()
    }
    outcomes = []
    for q in evalset.queries:
        actor = people[q.actor]
        lessons, refused = _search(service, actor, q)
        outcomes.append(_outcome(loaded, q, "search", lessons, refused))
        outcomes.append(_outcome(loaded, q, "recall", _recall(service, actor, q), ()))
    return outcomes


def _search(
    service: LessonService, actor: Actor, q: EvalQuery
) -> tuple[list[Lesson], tuple[str, ...]]:
    """Search the rungs of the query's ladder, as an agent would. A rung the actor may not
    read (another org's repository) is refused with ``forbidden``; like an agent told so, the
    eval drops that scope and asks again."""
    c = q.context
    scopes = [s.text for s in ladder(repo=c.repo, branch=c.branch, project=c.project)]
    refused: list[str] = []
    while scopes:
        try:
            params = {"query": q.task, "scopes": scopes, "limit": SEARCH_LIMIT}
            result = service.memory_search(actor, SearchParams.model_validate(params))
        except LorestoreError as error:
            scope = error.details.get("scope")
            if error.code != "forbidden" or scope not in scopes:
                raise
            scopes.remove(scope)
            refused.append(scope)
            continue
        return [hit.lesson for hit in result.hits], tuple(refused)
    return [], tuple(refused)


def _recall(service: LessonService, actor: Actor, q: EvalQuery) -> list[Lesson]:
    params = RecallParams.model_validate(q.context.model_dump() | {"task": q.task})
    return [offered.lesson for offered in service.memory_recall(actor, params).offered]


def _normal(text: str) -> str:
    return " ".join(text.split())


def _outcome(
    loaded: Loaded,
    q: EvalQuery,
    handler: Handler,
    lessons: list[Lesson],
    refused: tuple[str, ...],
) -> Outcome:
    ranked = tuple(loaded.ref_of(lesson) for lesson in lessons)
    hits: list[str] = []
    for ref, lesson in zip(ranked, lessons, strict=True):
        for banned in q.banned(handler):
            plain, _, version = banned.partition("@")
            if plain != ref:
                continue
            if not version or _normal(loaded.texts[banned]) == _normal(lesson.value):
                hits.append(banned)
    return Outcome(q, handler, ranked, tuple(hits), refused)


def run_eval(store: Store, evalset: EvalSet) -> tuple[Loaded, list[Outcome]]:
    """Load the set into ``store`` (which must be empty) and run its queries."""
    clock = EvalClock(evalset.setup.start)
    service = LessonService(store, clock=clock)
    loaded = populate(service, clock, evalset)
    return loaded, run_queries(service, loaded, evalset)
