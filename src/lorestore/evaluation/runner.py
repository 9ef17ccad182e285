"""Running the retrieval eval: loading its set into a fresh store through the service, with
each lesson's lifecycle applied by the real operations, then every query through
``memory_search`` (with the query's context, as an agent: recall's rules apply) and
``memory_recall``. Scoring and reporting live in ``report``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from lorestore.auth.actor import Actor, local_actor, local_agent
from lorestore.core.errors import LorestoreError
from lorestore.core.records import Lesson, Source
from lorestore.core.scope import parse_scope
from lorestore.evaluation.cases import (
    EvalLesson,
    EvalQuery,
    EvalSet,
    EvalSetup,
    Handler,
    RefusedWrite,
)
from lorestore.models import (
    ChangeParams,
    DisputeParams,
    OrgBindParams,
    OrgCreateParams,
    PolicyParams,
    ProjectAddParams,
    RecallParams,
    RejectParams,
    SearchParams,
    VerifyParams,
    WriteParams,
)
from lorestore.service import LessonService
from lorestore.storage.protocol import Store

SEARCH_LIMIT = 10
LOAD_SESSION = "eval-load"


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
        address = (lesson.owner.key, lesson.scope, lesson.key)
        return self.refs.get(address, "?" + "|".join(address))


@dataclass(frozen=True, slots=True)
class Outcome:
    """One query through one handler: the lessons served, in order, as set references."""

    query: EvalQuery
    handler: Handler
    ranked: tuple[str, ...]
    forbidden_hits: tuple[str, ...]


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
    for project in evalset.setup.projects:
        declared = {"name": project.name, "repos": project.repos}
        service.project_add(actors[project.actor], ProjectAddParams.model_validate(declared))
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
    return result.lesson.owner.key


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
    """Every query through both handlers, as an agent working for the actor it names (a
    read-and-write actor, as the stdio server and a write token are): its search applies
    recall's rules, so both are scored against the same forbidden lessons."""
    agents = {
        name: local_agent(principal=principal, session=f"eval-query-{name}")
        for name, principal in evalset.setup.actors.items()
    }
    outcomes = []
    for q in evalset.queries:
        actor = agents[q.actor]
        outcomes.append(_outcome(loaded, q, "search", _search(service, actor, q)))
        outcomes.append(_outcome(loaded, q, "recall", _recall(service, actor, q)))
    return outcomes


def _search(service: LessonService, actor: Actor, q: EvalQuery) -> list[Lesson]:
    """Search with the query's context, as an agent would: the ladder of its repository,
    branch and projects (a rung the actor may not read adds nothing)."""
    params = {"query": q.task, "limit": SEARCH_LIMIT, **q.context.model_dump(exclude_none=True)}
    if not any(q.context.model_dump(exclude_none=True).values()):
        params["scopes"] = ["global"]
    result = service.memory_search(actor, SearchParams.model_validate(params))
    return [hit.lesson for hit in result.hits]


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
    return Outcome(q, handler, ranked, tuple(hits))


def run_eval(store: Store, evalset: EvalSet) -> tuple[Loaded, list[Outcome]]:
    """Load the set into ``store`` (which must be empty) and run its queries."""
    clock = EvalClock(evalset.setup.start)
    service = LessonService(store, clock=clock)
    loaded = populate(service, clock, evalset)
    return loaded, run_queries(service, loaded, evalset)
