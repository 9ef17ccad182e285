"""Word rarity in full-text ranking, on both backends through the service: a lesson holding a
task's rare word comes before lessons holding only its common word, however strongly (in the
key and twice in the text). SQLite's BM25 counts rarity itself; PostgreSQL's ts_rank_cd does
not, and the store weighs each word's rank by its rarity among the hits (core/rarity.py)."""

from __future__ import annotations

import pytest

from lorestore.auth.actor import local_actor
from lorestore.models import RecallParams, SearchParams, WriteParams
from lorestore.service import LessonService

ME = local_actor(session="s")
SCOPE = "repo::acme/app"
COMMON = ["window", "rollback", "tags", "notify", "canary", "freeze", "approval", "schedule"]
RARE = "smoke-suite-retry"


@pytest.fixture
def written(service: LessonService) -> LessonService:
    for word in COMMON:
        value = f"Deploy {word}: each deploy of the app follows the {word} checklist."
        service.memory_write(ME, WriteParams(scope=SCOPE, key=f"deploy-{word}", value=value))
    rare = "Retry the smoke suite once before paging anyone: it is flaky on a cold cache."
    service.memory_write(ME, WriteParams(scope=SCOPE, key=RARE, value=rare))
    return service


def test_the_rare_word_ranks_first_and_the_common_matches_still_come(
    written: LessonService,
) -> None:
    result = written.memory_search(ME, SearchParams(query="flaky deploy", scopes=[SCOPE]))
    keys = [hit.lesson.key for hit in result.hits]
    assert keys[0] == RARE
    assert {f"deploy-{word}" for word in COMMON} <= set(keys)  # the control: all still found
    recall = written.memory_recall(ME, RecallParams(repo="acme/app", task="flaky deploy"))
    offered = [o.lesson.key for o in recall.offered]
    assert offered[0] == RARE and f"deploy-{COMMON[0]}" in offered


def test_one_word_still_ranks_by_where_it_is_held(written: LessonService) -> None:
    result = written.memory_search(ME, SearchParams(query="flaky", scopes=[SCOPE]))
    assert [hit.lesson.key for hit in result.hits][:1] == [RARE]
    result = written.memory_search(ME, SearchParams(query="deploy", scopes=[SCOPE]))
    assert RARE not in [hit.lesson.key for hit in result.hits]  # holds no such word


def test_two_words_said_once_beat_one_word_said_often(service: LessonService) -> None:
    """Term frequency saturates, as in BM25: the lesson that names both of the task's words
    comes before the one that repeats one of them, on both backends (PostgreSQL's ts_rank_cd
    alone grows with every occurrence). Both words are held by two lessons, equally rare."""
    lessons = {
        "timeouts": "Timeouts: raise the timeout, the timeout of each step, the timeout of the "
        "suite, the timeout of the runner, the timeout of every timeout.",
        "flaky-timeouts": "When a job is flaky with timeouts, rerun it alone first.",
        "flaky-cache": "A flaky job on a cold cache passes on its second run.",
    }
    for key, value in lessons.items():
        service.memory_write(ME, WriteParams(scope=SCOPE, key=key, value=value))
    hits = service.memory_search(ME, SearchParams(query="flaky timeout", scopes=[SCOPE])).hits
    keys = [hit.lesson.key for hit in hits]
    assert keys[0] == "flaky-timeouts"
    assert set(keys) == set(lessons)  # the control: the repeating lesson is still found
    recall = service.memory_recall(ME, RecallParams(repo="acme/app", task="flaky timeout"))
    assert [o.lesson.key for o in recall.offered][:1] == ["flaky-timeouts"]
