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
