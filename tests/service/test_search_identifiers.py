"""Identifier-aware search on both backends, through the service: a task naming a tool by an
alias we own, or an identifier in CamelCase or snake_case, finds the lesson that spells it
another way, in search and in recall; a task sharing no word finds nothing (the control)."""

from __future__ import annotations

import pytest

from lorestore.auth.actor import local_actor
from lorestore.models import RecallParams, SearchParams, WriteParams
from lorestore.service import LessonService

ME = local_actor(session="s")
SCOPE = "repo::acme/app"
LESSONS = {
    "pg-upgrade": "Upgrading Postgres needs pg_upgrade run with the old binaries present.",
    "k8s-probes": "Kubernetes liveness probes must not call the database.",
    "retry-budget": "The retry budget of the HTTP client is five attempts per request.",
    "unrelated": "Lint the changelog before tagging a release.",
}


@pytest.fixture
def written(service: LessonService) -> LessonService:
    for key, value in LESSONS.items():
        service.memory_write(ME, WriteParams(scope=SCOPE, key=key, value=value))
    return service


def searched(service: LessonService, query: str) -> list[str]:
    result = service.memory_search(ME, SearchParams(query=query, scopes=[SCOPE]))
    return [hit.lesson.key for hit in result.hits]


def recalled(service: LessonService, task: str) -> list[str]:
    result = service.memory_recall(ME, RecallParams(repo="acme/app", task=task))
    return [o.lesson.key for o in result.offered if o.reasons[-1].startswith("relevance")]


@pytest.mark.parametrize(
    ("task", "key"),
    [
        ("postgresql major version", "pg-upgrade"),
        ("k8s pod restarts", "k8s-probes"),
        ("raise RetryBudget", "retry-budget"),
        ("where is retry_budget set", "retry-budget"),
    ],
)
def test_a_task_finds_the_lesson_that_spells_it_another_way(
    written: LessonService, task: str, key: str
) -> None:
    assert searched(written, task)[0] == key
    assert recalled(written, task)[0] == key


@pytest.mark.lexical  # the semantic pass is for exactly this (test_semantic_recall.py)
def test_a_task_sharing_no_word_finds_nothing(written: LessonService) -> None:
    assert searched(written, "mysql replica lag") == []
    assert recalled(written, "mysql replica lag") == []
