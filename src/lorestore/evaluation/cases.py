"""The retrieval eval's data set (``evals/``): the lessons with the lifecycle each is given,
the queries with what should and must not come back, and the checks run when it is loaded."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Handler = Literal["search", "recall"]


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
    # Stored and readable, but recall (and an agent's search with a context, which applies
    # recall's rules) must hold them back: disputed, shadowed, held by the revision policy.
    forbidden_recall: list[str] = []
    why: str | None = None

    def relevant(self, handler: Handler) -> list[str]:
        """The expected lessons either handler should serve (both apply recall's rules)."""
        held = set(self.forbidden_recall)
        return [ref for ref in self.expected if ref not in held]

    def banned(self, handler: Handler) -> list[str]:
        return self.forbidden + self.forbidden_recall


class EvalOrg(_Record):
    slug: str
    name: str
    owner: str
    bindings: list[str]


class EvalPolicy(_Record):
    actor: str = Field(alias="as")
    scope: str
    revision_policy: Literal["none", "commit", "files"]


class EvalProject(_Record):
    """A project declared by a person (``project_add``): its rungs are derived from the
    repository of a query's context."""

    actor: str = Field(alias="as")
    name: str
    repos: list[str]


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
    projects: list[EvalProject] = []
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
